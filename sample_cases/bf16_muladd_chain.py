"""bfloat16 (a * b + c) * d - a: eager rounds to bf16 after every op, Inductor keeps float32 in registers."""
import torch


def fn(a, b, c, d):
    return (a * b + c) * d - a


def inputs():
    return tuple(torch.randn(4096).to(torch.bfloat16) for _ in range(4))
