"""float16 ((a + b) * c + d) * 0.1 + a * a: five rounding steps in eager, one in the compiled kernel."""
import torch


def fn(a, b, c, d):
    return ((a + b) * c + d) * 0.1 + a * a


def inputs():
    return tuple(torch.randn(4096).to(torch.float16) for _ in range(4))
