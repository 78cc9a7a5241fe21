"""fmod/remainder of a bf16 tensor by a Python float: eager rounds 1.7 to bf16 (1.703125), Inductor keeps 1.7."""
import torch


def fn(x):
    return torch.fmod(x, 1.7), torch.remainder(x, 1.7)


def inputs():
    x = torch.linspace(-6, 6, 64).to(torch.bfloat16)
    x[:2] = torch.tensor([1.703125, -1.703125])  # bf16(1.7): eager divides exactly, Inductor does not
    return (x,)
