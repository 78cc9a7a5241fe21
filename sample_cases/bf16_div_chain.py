"""bfloat16 chain with two divisions: the intermediate bf16 roundings disappear in the fused kernel."""
import torch


def fn(a, b, c, d):
    return (a / (b.abs() + 1) + c) / (d.abs() + 1)


def inputs():
    return tuple(torch.randn(4096).to(torch.bfloat16) for _ in range(4))
