"""A bf16 sensor encoder (#31, #35): `t // STEP` buckets, `remainder(t, PERIOD)` phase, attention, a GELU MLP."""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F

STEP, PERIOD, BUCKETS, WIDTH = 0.1, 0.7, 64, 32


class PhaseEmbed(nn.Module):
    def __init__(self, width):
        super().__init__()
        self.bucket = nn.Embedding(BUCKETS, width)
        self.phase = nn.Linear(2, width)

    def forward(self, t):
        bucket = t // STEP
        phase = torch.remainder(t, PERIOD) / PERIOD * (2 * math.pi)
        angle = torch.stack([phase.sin(), phase.cos()], -1)
        return self.bucket(bucket.long().clamp(0, BUCKETS - 1)) + self.phase(angle)


class SensorEncoder(nn.Module):
    def __init__(self, width=WIDTH, heads=4):
        super().__init__()
        self.heads = heads
        self.embed = PhaseEmbed(width)
        self.value = nn.Linear(3, width)
        self.qkv = nn.Linear(width, 3 * width)
        self.out = nn.Linear(width, width)
        self.norm1, self.norm2 = nn.LayerNorm(width), nn.LayerNorm(width)
        self.mlp = nn.Sequential(nn.Linear(width, 4 * width), nn.GELU(), nn.Linear(4 * width, width))
        self.head = nn.Linear(width, 1)

    def attend(self, x):
        b, n, d = x.shape
        q, k, v = self.qkv(x).reshape(b, n, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4)
        att = F.softmax(q @ k.transpose(-1, -2) / math.sqrt(d // self.heads), dim=-1)
        return self.out((att @ v).transpose(1, 2).reshape(b, n, d))

    def forward(self, readings, t):
        x = self.value(readings) + self.embed(t)
        x = x + self.attend(self.norm1(x))
        x = x + self.mlp(self.norm2(x))
        return x  # per-step embeddings (the pooled prediction would be self.head(x.mean(1)))


torch.manual_seed(0)
fn = SensorEncoder().eval().to(torch.bfloat16)


def inputs():
    # times on a 0.1 grid with jitter, as a sensor logs them; bf16 like the model
    t = (torch.arange(48).float() * 0.1 + torch.rand(48) * 0.02).clamp(max=4.7)
    t = t.expand(2, 48).contiguous().to(torch.bfloat16)
    readings = torch.randn(2, 48, 3).to(torch.bfloat16)
    return readings, t
