"""torch.remainder(-6, -2): eager gives -0.0 (the divisor's sign, as Python's math.fmod-based % does for floats),
Inductor's C++ kernel gives +0.0. Same in float32 and bfloat16."""

import torch


def f(x, y):
    return torch.remainder(x, y)


for dtype in (torch.float32, torch.bfloat16):
    x = torch.tensor([-6.0, 6.0, -6.0, 6.0] * 4, dtype=dtype)
    y = torch.tensor([-2.0, -2.0, 2.0, 2.0] * 4, dtype=dtype)
    e, c = f(x, y), torch.compile(f)(x, y)
    print(
        dtype,
        "eager",
        e[:4].tolist(),
        "compiled",
        c[:4].tolist(),
        "signbit differs:",
        (torch.signbit(e) != torch.signbit(c)).any().item(),
    )
print("python: -6.0 % -2.0 =", -6.0 % -2.0, " 6.0 % -2.0 =", 6.0 % -2.0)
