"""var_mean (and std_mean) of an empty tensor: eager's mean is NaN, compiled's 0.0, in bf16 and fp32."""

import torch


def f(x):
    return torch.var_mean(x, dim=None), x.mean()


for dtype in (torch.bfloat16, torch.float32):
    x = torch.empty(0, dtype=dtype)
    print(dtype, "eager:", f(x), "compiled:", torch.compile(f)(x))
