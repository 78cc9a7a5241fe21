"""Scores in a hyperbolic embedding: distances grow to 1e20-1e30 for far-apart points, and acosh of them overflows
to inf in the vectorized CPU kernel (pytorch#183768)."""

import torch
import torch.nn as nn


class Scorer(nn.Module):
    def __init__(self, dim=8):
        super().__init__()
        self.scale = nn.Parameter(torch.ones(dim))

    def forward(self, u, v):
        gap = ((u - v) * self.scale).pow(2).sum(-1)
        arg = 1 + 2 * gap
        return -torch.acosh(arg)


fn = Scorer().eval()


def inputs():
    u = torch.randn(32, 8) * torch.logspace(0, 14, 32).unsqueeze(-1)
    return (u, torch.zeros(32, 8))
