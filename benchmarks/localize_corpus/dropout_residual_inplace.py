"""A pre-norm block that doubles its dropped-out input in place. In eval mode F.dropout returns its input itself,
so `h += h` writes the caller's tensor; compiled drops that write (pytorch#195422)."""

import torch
import torch.nn as nn
import torch.nn.functional as F


class Block(nn.Module):
    def __init__(self, width=16, p=0.1):
        super().__init__()
        self.p = p
        self.proj = nn.Linear(width, width)

    def forward(self, x):
        h = F.dropout(x, self.p, self.training)
        h += h
        return self.proj(h)


fn = Block().eval()


def inputs():
    return (torch.randn(3, 16),)
