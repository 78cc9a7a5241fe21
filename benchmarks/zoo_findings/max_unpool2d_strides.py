import torch
import torch.nn.functional as F


def fn(x, indices):
    return F.max_unpool2d(x, indices, 2)


torch.manual_seed(0)
x = torch.randn(1, 4, 3, 3).to(memory_format=torch.channels_last)
indices = F.max_pool2d(torch.randn(1, 4, 6, 6), 2, return_indices=True)[1].to(memory_format=torch.channels_last)
eager = fn(x, indices)
compiled = torch.compile(fn)(x, indices)
print("strides: eager", eager.stride(), "| compiled", compiled.stride())
# exits 1 while the bug is present, 0 once it is fixed
raise SystemExit(1 if eager.stride() != compiled.stride() else 0)
