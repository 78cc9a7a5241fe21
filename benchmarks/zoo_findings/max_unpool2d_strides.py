"""max_unpool2d of a channels-last input: eager returns a channels-last output, Inductor a contiguous one (equal values)."""

import torch
import torch.nn.functional as F


def f(x, indices):
    return F.max_unpool2d(x, indices, 2)


x = torch.randn(1, 4, 3, 3).to(memory_format=torch.channels_last)
_, indices = F.max_pool2d(torch.randn(1, 4, 6, 6), 2, return_indices=True)
indices = indices.to(memory_format=torch.channels_last)
e, c = f(x, indices), torch.compile(f)(x, indices)
print("values equal:", torch.equal(e, c), "| strides: eager", e.stride(), "compiled", c.stride())
