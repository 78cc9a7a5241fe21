import torch


def fn(x, empty):
    k = x.view(2, 16, 4, 16).transpose(1, 2)
    return torch.cat([empty, k], dim=-2)


torch.manual_seed(0)
x = torch.randn(2, 16, 64)
empty = torch.empty(2, 4, 0, 16)
eager = fn(x, empty)
compiled = torch.compile(fn)(x, empty)
print("strides: eager", eager.stride(), "| compiled", compiled.stride())
# exits 1 while the bug is present, 0 once it is fixed
raise SystemExit(1 if eager.stride() != compiled.stride() else 0)
