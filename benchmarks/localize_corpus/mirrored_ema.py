"""A mirrored update of parameter tensors with a foreach op: each tensor adds its own reversal. The
compiled foreach kernel reads rows it is writing (pytorch#198033)."""

import torch


def fn(a, b):
    torch._foreach_add_([a, b], [a.flip(0), b.flip(0)])
    return a.sum() + b.sum()


def inputs():
    return (torch.rand(8, 8), torch.rand(4, 16))
