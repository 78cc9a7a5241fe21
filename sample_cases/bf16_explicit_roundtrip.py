"""An explicit .bfloat16().float() round trip (e.g. to simulate quantization) is removed by Inductor."""
import torch


def fn(a, b):
    q = (a * 3.3).bfloat16().float()  # the user asks for bf16 rounding here
    return q + b


def inputs():
    return (torch.randn(4096), torch.randn(4096))
