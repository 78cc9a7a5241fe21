"""An anomaly scorer for barometric windows: raw readings in pascals (~1e5) are standardized per window with
var_mean, summarized by a strided conv encoder with residual blocks and LayerNorm, and scored by a small head."""

from typing import NamedTuple

import torch
from torch import nn

ATMOSPHERE_PA = 101_325.0


class ScorerConfig(NamedTuple):
    window: int = 2048
    channels: int = 8
    width: int = 16
    kernel: int = 8
    blocks: int = 2
    eps: float = 1e-5
    dropout: float = 0.1
    head_hidden: int = 32


class Standardize(nn.Module):
    """Per-window z-scores: the encoder sees shape, not the weather's absolute pressure."""

    def __init__(self, eps: float):
        super().__init__()
        self.eps = eps

    def forward(self, x):
        var, mean = torch.var_mean(x, dim=-1, keepdim=True)
        return (x - mean) / torch.sqrt(var + self.eps), var.squeeze(-1)


class ResBlock(nn.Module):
    def __init__(self, width: int, dropout: float):
        super().__init__()
        self.norm = nn.LayerNorm(width)
        self.ff = nn.Sequential(
            nn.Linear(width, 2 * width), nn.GELU(), nn.Dropout(dropout), nn.Linear(2 * width, width)
        )

    def forward(self, x):
        return x + self.ff(self.norm(x))


class Encoder(nn.Module):
    def __init__(self, cfg: ScorerConfig):
        super().__init__()
        self.conv = nn.Conv1d(cfg.channels, cfg.width, kernel_size=cfg.kernel, stride=cfg.kernel)
        self.blocks = nn.Sequential(*[ResBlock(cfg.width, cfg.dropout) for _ in range(cfg.blocks)])
        self.norm = nn.LayerNorm(cfg.width)

    def forward(self, z):
        h = self.conv(z).transpose(1, 2)
        return self.norm(self.blocks(h)).mean(dim=1)


class AnomalyScorer(nn.Module):
    def __init__(self, cfg: ScorerConfig = ScorerConfig()):  # noqa: B008  (a NamedTuple: immutable)
        super().__init__()
        self.cfg = cfg
        self.standardize = Standardize(cfg.eps)
        self.encoder = Encoder(cfg)
        self.head = nn.Sequential(
            nn.Linear(cfg.width + cfg.channels, cfg.head_hidden),
            nn.ReLU(),
            nn.Dropout(cfg.dropout),
            nn.Linear(cfg.head_hidden, 1),
        )

    def forward(self, readings):
        z, var = self.standardize(readings)
        features = torch.cat([self.encoder(z), torch.log1p(var)], dim=-1)
        return {"score": self.head(features).squeeze(-1), "window_var": var}

    def is_anomalous(self, readings, threshold=0.0):
        return self(readings)["score"] > threshold


def synthetic_windows(n: int, cfg: ScorerConfig = ScorerConfig()) -> torch.Tensor:  # noqa: B008
    drift = torch.linspace(-50.0, 50.0, cfg.window)
    return ATMOSPHERE_PA + drift + 20.0 * torch.randn(n, cfg.channels, cfg.window)


scorer = AnomalyScorer()
scorer.eval()
fn = scorer


def inputs():
    # one window of 2048 readings from 8 barometers
    return (synthetic_windows(1),)
