"""A small seasonal forecaster in bf16: patch embedding, two pre-norm transformer blocks, a seasonal head.

One line is the bug: `torch.remainder(t_future, self.cfg.period)` with a Python float period (pytorch#186875).
"""
import math
from dataclasses import dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F


@dataclass
class Config:
    history: int = 48
    horizon: int = 12
    patch: int = 8
    width: int = 64
    heads: int = 4
    blocks: int = 2
    period: float = 0.7  # the seasonal period, in the normalised time unit
    dropout: float = 0.1


class PatchEmbed(nn.Module):
    def __init__(self, cfg: Config):
        super().__init__()
        self.cfg = cfg
        self.proj = nn.Linear(cfg.patch, cfg.width)
        self.pos = nn.Parameter(torch.randn(cfg.history // cfg.patch, cfg.width) * 0.02)

    def forward(self, series):
        b, t = series.shape
        patches = series.reshape(b, t // self.cfg.patch, self.cfg.patch)
        return self.proj(patches) + self.pos


class Attention(nn.Module):
    def __init__(self, cfg: Config):
        super().__init__()
        self.heads = cfg.heads
        self.qkv = nn.Linear(cfg.width, 3 * cfg.width)
        self.out = nn.Linear(cfg.width, cfg.width)
        self.drop = nn.Dropout(cfg.dropout)

    def forward(self, x):
        b, n, d = x.shape
        q, k, v = self.qkv(x).reshape(b, n, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4)
        att = (q @ k.transpose(-1, -2)) / math.sqrt(d // self.heads)
        att = self.drop(att.softmax(-1))
        return self.out((att @ v).transpose(1, 2).reshape(b, n, d))


class Block(nn.Module):
    def __init__(self, cfg: Config):
        super().__init__()
        self.norm1 = nn.LayerNorm(cfg.width)
        self.attn = Attention(cfg)
        self.norm2 = nn.LayerNorm(cfg.width)
        self.mlp = nn.Sequential(nn.Linear(cfg.width, 2 * cfg.width), nn.GELU(), nn.Linear(2 * cfg.width, cfg.width), nn.Dropout(cfg.dropout))

    def forward(self, x):
        x = x + self.attn(self.norm1(x))
        return x + self.mlp(self.norm2(x))


def _unused_smoothing(x, alpha=0.3):  # kept from an older version of the model
    out = [x[:, 0]]
    for i in range(1, x.shape[1]):
        out.append(alpha * x[:, i] + (1 - alpha) * out[-1])
    return torch.stack(out, 1)


class Forecaster(nn.Module):
    def __init__(self, cfg: Config):
        super().__init__()
        self.cfg = cfg
        self.embed = PatchEmbed(cfg)
        self.blocks = nn.ModuleList(Block(cfg) for _ in range(cfg.blocks))
        self.norm = nn.LayerNorm(cfg.width)
        self.head = nn.Linear(cfg.width * (cfg.history // cfg.patch), cfg.horizon)
        self.season = nn.Linear(cfg.horizon, cfg.horizon)

    def forward(self, series, t_future):
        scale = series.abs().amax(-1, keepdim=True) + 1e-3
        x = self.embed(series / scale)
        for block in self.blocks:
            x = block(x)
        trend = self.head(self.norm(x).flatten(1))
        phase = torch.remainder(t_future, self.cfg.period)  # where in the season each future step falls
        seasonal = self.season(phase / self.cfg.period)  # 0 at the season's start, 1 at its end
        return (trend + seasonal) * scale


torch.manual_seed(0)
cfg = Config()
fn = Forecaster(cfg).eval().to(torch.bfloat16)


def inputs():
    steps = torch.arange(cfg.history, dtype=torch.float32)
    series = torch.sin(steps / 5).repeat(2, 1) + 0.1 * torch.randn(2, cfg.history)
    t_future = (cfg.history + torch.arange(cfg.horizon, dtype=torch.float32)).repeat(2, 1) / 10
    return series.to(torch.bfloat16), t_future.to(torch.bfloat16)
