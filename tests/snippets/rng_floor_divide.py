"""A real bug (float floor division, pytorch#197895) behind a random draw: only fallback_random separates them."""
import torch
import torch.nn.functional as F


def fn(x, a, b):
    return F.dropout(x, 0.5, training=True) + a // b


def inputs():
    a = torch.tensor([1.0, 0.5, 6.0, 1.0, 7.0, -1.0]).repeat(8)
    b = torch.tensor([0.1, 0.1, 0.2, 1 / 3, 2.0, 0.1]).repeat(8)
    return torch.ones(48), a, b
