"""A bf16 seasonal feature: the phase of each timestamp within a period of 0.7 (a Python float). Eager rounds 0.7
to bf16, Inductor keeps it in fp32 (pytorch#186875)."""

import math

import torch
import torch.nn as nn


class Seasonal(nn.Module):
    def __init__(self, period=0.7, width=8):
        super().__init__()
        self.period = period
        self.proj = nn.Linear(2, width)

    def forward(self, t):
        phase = torch.remainder(t, self.period)
        angle = phase * (2 * math.pi / self.period)
        return self.proj(torch.stack([angle.sin(), angle.cos()], -1)), phase


fn = Seasonal().eval().to(torch.bfloat16)


def inputs():
    t = torch.sort(torch.rand(4, 64) * 3).values
    return (t.to(torch.bfloat16),)
