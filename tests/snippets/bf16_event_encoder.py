"""Issue #24's program: a bf16 event encoder whose phase feature is `remainder(t, 0.7)`, returned beside the
encoding. Inductor keeps 0.7 in fp32 where eager rounds it to bf16 (0.69921875): the phase is one or a few
of its own steps low in a fifth of the elements, far inside the leaf-wide noise floor."""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class EventEncoder(nn.Module):
    def __init__(self, width=32):
        super().__init__()
        self.value, self.phase = nn.Linear(4, width), nn.Linear(2, width)
        self.norm = nn.LayerNorm(width)
        self.mlp = nn.Sequential(nn.Linear(width, 4 * width), nn.GELU(), nn.Linear(4 * width, width))

    def forward(self, feats, t):
        phase = torch.remainder(t, 0.7)
        angle = phase / 0.7 * (2 * math.pi)
        x = self.value(feats) + self.phase(torch.stack([angle.sin(), angle.cos()], -1))
        return x + self.mlp(self.norm(x)), phase


torch.manual_seed(0)
fn = EventEncoder().eval().to(torch.bfloat16)


def inputs():
    t = torch.sort(torch.rand(4, 128) * 1.3, -1).values.to(torch.bfloat16)
    # no time sits on a period wrap, where the scalar's rounding moves a whole period: only the one-step part
    t = torch.where(t == 0.69921875, torch.full_like(t, 0.6875), t)
    return torch.randn(4, 128, 4).to(torch.bfloat16), t
