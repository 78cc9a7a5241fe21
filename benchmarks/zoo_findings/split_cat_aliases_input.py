"""`torch.cat(torch.split(x, sizes, dim), dim)` is a new tensor in eager; compiled, Inductor's split/cat elimination
returns the input tensor itself, so the output aliases the input and writing into the output writes into the
caller's x (CPU, contiguous x; a transposed x is copied and is not affected)."""

import sys

import torch


def regroup(x):
    return torch.cat(torch.split(x, [2, 3], dim=1), dim=1)


x = torch.zeros(4, 5)
eager = regroup(x)
compiled = torch.compile(regroup)(x)
print("output is the input: eager", eager.data_ptr() == x.data_ptr(), "| compiled", compiled.data_ptr() == x.data_ptr())
compiled.add_(1.0)  # the caller updates what it believes is its own copy
print("input after writing into the compiled output:", x[0].tolist())
sys.exit(1 if bool(x.any()) else 0)
