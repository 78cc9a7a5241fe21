"""With dynamic shapes, Python's `round(v, 2)` of a float computed from a size (`round(x.shape[0] / 7, 2)`) is
printed by Inductor's C++ backend as `std::nearbyint(1e2 * v) * 1e-2`: multiplying by 1e-2 (not exactly 1/100)
misses Python's correctly rounded result by one double step for many sizes (n = 100: Python 14.29, compiled
14.290000000000001). backend="eager" and "aot_eager" give Python's value; Inductor's Triton and MPS printers
use the same formula."""

import sys

import torch


def scale(x):
    return x * round(x.shape[0] / 7, 2)


compiled = torch.compile(scale, dynamic=True)
x = torch.ones(100, dtype=torch.float64)
eager, got = scale(x)[0].item(), compiled(x)[0].item()
print("n = 100: python round(100 / 7, 2) =", round(100 / 7, 2), "| eager", eager, "| compiled", got)
differ = [n for n in range(8, 200) if compiled(torch.ones(n, dtype=torch.float64))[0].item() != round(n / 7, 2)]
print(f"sizes 8..199 where compiled differs from Python: {len(differ)} of 192 (first: {differ[:6]})")
sys.exit(1 if got != eager else 0)
