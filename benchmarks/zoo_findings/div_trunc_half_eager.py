"""Eager's bf16/fp16 `torch.div(a, b, rounding_mode="trunc")` of two tensors divides in bf16/fp16 and truncates
the rounded quotient: 262 / 3.28125 = 79.85 truncates to 79, eager gives 80 (the quotient rounded to 80.0 first).
Compiled computes in float32 and gives 79, the exact answer. The tensor-scalar path widens and is right. The same
root as floor_divide's #193754 (open), which names floor division only. Eager is the wrong side."""

import sys

import torch


def f(a, b):
    return torch.div(a, b, rounding_mode="trunc")


torch.manual_seed(0)
a = (torch.rand(100000) * 300).bfloat16()
b = (torch.rand(100000) * 20 + 0.5).bfloat16()
eager, compiled = f(a, b), torch.compile(f)(a, b)
exact = f(a.double(), b.double()).bfloat16()
x, y = torch.full((16,), 262.0, dtype=torch.bfloat16), torch.full((16,), 3.28125, dtype=torch.bfloat16)
print("262 / 3.28125 = 79.85 truncated: eager", f(x, y)[0].item(), "| compiled", torch.compile(f)(x, y)[0].item())
wrong = int((eager != exact).sum()), int((compiled != exact).sum())
print(f"bf16, 100,000 pairs: eager wrong in {wrong[0]}, compiled wrong in {wrong[1]}")
sys.exit(1 if bool((eager != exact).any()) else 0)
