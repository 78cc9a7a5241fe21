"""A streaming frame encoder: the caller's state buffer keeps the last raw frame; the frame is then centred in place."""
from dataclasses import dataclass, field

import torch
import torch.nn as nn
import torch.nn.functional as F


@dataclass
class StreamConfig:
    frame_size: int = 4
    width: int = 16
    n_layers: int = 2
    n_heads: int = 2
    dropout: float = 0.1
    centre: float = 1.0
    history: int = 3
    names: list = field(default_factory=lambda: ["mic0", "mic1", "mic2"])


def frame_energy(frames: torch.Tensor) -> torch.Tensor:
    """Diagnostics only."""
    return frames.pow(2).mean(-1)


class GatedMLP(nn.Module):
    def __init__(self, width: int, dropout: float):
        super().__init__()
        self.norm = nn.LayerNorm(width)
        self.gate = nn.Linear(width, 2 * width)
        self.proj = nn.Linear(width, width)
        self.drop = nn.Dropout(dropout)

    def forward(self, x):
        a, b = self.gate(self.norm(x)).chunk(2, dim=-1)
        return x + self.drop(self.proj(a * F.gelu(b)))


class FrameAttention(nn.Module):
    def __init__(self, cfg: StreamConfig):
        super().__init__()
        self.norm = nn.LayerNorm(cfg.width)
        self.attn = nn.MultiheadAttention(cfg.width, cfg.n_heads, dropout=cfg.dropout, batch_first=True)

    def forward(self, x):
        h = self.norm(x)
        out, _ = self.attn(h, h, h, need_weights=False)
        return x + out


class StreamEncoder(nn.Module):
    def __init__(self, cfg: StreamConfig):
        super().__init__()
        self.cfg = cfg
        self.embed = nn.Linear(cfg.frame_size, cfg.width)
        self.layers = nn.ModuleList()
        for _ in range(cfg.n_layers):
            self.layers.append(FrameAttention(cfg))
            self.layers.append(GatedMLP(cfg.width, cfg.dropout))
        self.out_norm = nn.LayerNorm(cfg.width)
        self.readout = nn.Linear(cfg.width, 1)
        self.centre = cfg.centre
        self.step = 0

    def forward(self, frames, state):
        # keep the raw frames for the next call, then centre them in place (the caller reuses the buffer)
        state[0:, :] = frames[0:, :]
        frames.sub_(self.centre)
        h = self.embed(frames)[None]
        for layer in self.layers:
            h = layer(h)
        return self.readout(self.out_norm(h)).squeeze(-1).squeeze(0)

    def reset_state(self, batch: int) -> torch.Tensor:
        return torch.zeros(batch, self.cfg.frame_size)


def build(cfg: StreamConfig = StreamConfig()) -> StreamEncoder:
    encoder = StreamEncoder(cfg)
    encoder.eval()
    return encoder


fn = build()


def inputs():
    frames = torch.arange(12.0).view(3, 4)
    state = torch.zeros(3, 4)
    return (frames, state)
