"""A bf16 sensor encoder that returns one pooled prediction per sequence (issue #31's pooled model).

Timestamps become time buckets with float floor division (`t // STEP`) and a phase (`remainder(t, PERIOD)`);
attention and a GELU MLP mix the steps, and the sequence is mean-pooled into one prediction.
"""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

STEP = 0.1  # seconds per time bucket
PERIOD = 0.7  # the sensor's duty cycle, in seconds
WIDTH, HEADS, BUCKETS = 64, 4, 64


def time_features(t):
    bucket = t // STEP
    phase = torch.remainder(t, PERIOD) / PERIOD
    return bucket.clamp(0, BUCKETS - 1), phase


class SensorEncoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.value_proj = nn.Linear(3, WIDTH)
        self.time_proj = nn.Linear(3, WIDTH)
        self.norm1 = nn.LayerNorm(WIDTH)
        self.qkv = nn.Linear(WIDTH, 3 * WIDTH)
        self.out = nn.Linear(WIDTH, WIDTH)
        self.norm2 = nn.LayerNorm(WIDTH)
        self.mlp = nn.Sequential(nn.Linear(WIDTH, 4 * WIDTH), nn.GELU(), nn.Linear(4 * WIDTH, WIDTH))
        self.head = nn.Linear(WIDTH, 1)

    def attention(self, x):
        b, n, d = x.shape
        q, k, v = self.qkv(x).reshape(b, n, 3, HEADS, d // HEADS).permute(2, 0, 3, 1, 4)
        weights = (q @ k.transpose(-1, -2) / math.sqrt(d // HEADS)).softmax(-1)
        return self.out((weights @ v).transpose(1, 2).reshape(b, n, d))

    def forward(self, t, values):
        bucket, phase = time_features(t)
        angle = 2 * math.pi * phase
        time = torch.stack([bucket / 8, angle.sin(), angle.cos()], -1)
        h = self.value_proj(values) + self.time_proj(time)
        h = h + self.attention(self.norm1(h))
        h = h + self.mlp(self.norm2(h))
        return self.head(h).squeeze(-1).mean(-1)  # one pooled prediction per sequence


fn = SensorEncoder().to(torch.bfloat16).eval()


def inputs():
    # timestamps on a 0.1 s grid, as the logger writes them
    t = (torch.arange(48).float() * 0.1).repeat(4, 1).to(torch.bfloat16)
    values = torch.randn(4, 48, 3).to(torch.bfloat16)
    return t, values
