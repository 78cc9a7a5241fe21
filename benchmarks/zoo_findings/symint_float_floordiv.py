"""With dynamic shapes, a size floor-divided by a Python float (`x.shape[0] // 0.1`) gives floor(n / 0.1), not
Python's `n // 0.1`: for n = 29 Python gives 289.0 (0.1 is a little more than 1/10) and compiled 290.0. The
tensor form of this rounding (`1.0 // 0.1` on tensors, #197895) is Inductor's lowering; this is the size
arithmetic traced by AOTAutograd (aot_eager differs too, backend="eager" and dynamic=False agree)."""

import sys

import torch


def buckets(x):
    return x * (x.shape[0] // 0.1)


x = torch.ones(29)
eager = buckets(x)[0].item()
compiled = torch.compile(buckets, dynamic=True)(x)[0].item()
print("python 29 // 0.1 =", 29 // 0.1, "| eager", eager, "| compiled", compiled)
sys.exit(1 if compiled != eager else 0)
