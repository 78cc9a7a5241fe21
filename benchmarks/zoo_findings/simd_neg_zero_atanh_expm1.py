"""Inductor's vectorized CPU kernels compute atanh and expm1 with Sleef (Vectorized<float>::atanh / expm1),
which return +0.0 for -0.0; eager (and C's atanh/expm1, and Inductor's own scalar code for a short tail) keep
-0.0. The sign matters downstream: 1/atanh(x) is -inf in eager and +inf compiled. elu/celu/selu inherit it
through expm1 (the elu case of #189799). float32, CPU, any input holding -0.0 in a vectorized stretch."""

import sys

import torch


def f(x):
    return torch.atanh(x), torch.expm1(x), 1.0 / torch.atanh(x)


x = torch.full((64,), -0.0)
eager = f(x)
compiled = torch.compile(f)(x)
for name, e, c in zip(("atanh", "expm1", "1/atanh"), eager, compiled, strict=True):
    print(f"{name:8s} of -0.0: eager {e[0].item()} | compiled {c[0].item()}")
differ = any(bool((torch.signbit(e) != torch.signbit(c)).any()) for e, c in zip(eager, compiled, strict=True))
sys.exit(1 if differ else 0)
