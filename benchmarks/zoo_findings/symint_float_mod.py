"""With dynamic shapes, a size taken modulo a float (`x.shape[0] % 2.5`, a Python float remainder) fails to compile
on CPU: Inductor's C++ kernel emits `(static_cast<double>(ks0)) % 2.5`, and C++ has no `%` for doubles
("invalid operands of types 'double' and 'double' to binary 'operator%'"). Eager and dynamic=False run."""

import sys

import torch


def phase(x):
    return x * (x.shape[0] % 2.5)  # 5 % 2.5 == 0.0, 6 % 2.5 == 1.0


x = torch.ones(6)
print("eager   :", phase(x)[:3].tolist())
try:
    print("compiled:", torch.compile(phase, dynamic=True)(x)[:3].tolist())
    failed = False
except Exception as exc:
    reason = next((line for line in str(exc).splitlines() if "error:" in line), str(exc).splitlines()[0])
    print("compiled raises:", type(exc).__name__, reason.strip()[:160])
    failed = True
sys.exit(1 if failed else 0)
