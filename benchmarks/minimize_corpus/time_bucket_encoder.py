"""An event encoder: timestamps are bucketed with float floor division, embedded and mixed by residual MLP blocks."""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable

import torch
import torch.nn as nn
import torch.nn.functional as F


@dataclass
class EncoderConfig:
    vocab_size: int = 64
    n_buckets: int = 128
    bucket_seconds: float = 0.1
    width: int = 32
    hidden: int = 64
    n_blocks: int = 2
    dropout: float = 0.1
    layer_norm_eps: float = 1e-5
    make_norm: Callable[[int], nn.Module] = nn.LayerNorm
    tags: list[str] = field(default_factory=lambda: ["events", "v2"])


def init_weights(module: nn.Module) -> None:
    """Truncated-normal init as in the training script (unused at inference)."""
    if isinstance(module, nn.Linear):
        nn.init.trunc_normal_(module.weight, std=0.02)
        if module.bias is not None:
            nn.init.zeros_(module.bias)


def count_parameters(model: nn.Module) -> int:
    return sum(p.numel() for p in model.parameters() if p.requires_grad)


class MLP(nn.Module):
    def __init__(self, cfg: EncoderConfig):
        super().__init__()
        self.fc1 = nn.Linear(cfg.width, cfg.hidden)
        self.fc2 = nn.Linear(cfg.hidden, cfg.width)
        self.drop = nn.Dropout(cfg.dropout)
        self.activation_name = "gelu"

    def forward(self, x):
        return self.drop(self.fc2(F.gelu(self.fc1(x))))


class ResidualBlock(nn.Module):
    def __init__(self, cfg: EncoderConfig):
        super().__init__()
        self.norm = cfg.make_norm(cfg.width)
        self.mlp = MLP(cfg)
        self.scale = 1.0

    def forward(self, x):
        return x + self.mlp(self.norm(x))


class TimeBuckets(nn.Module):
    """Seconds since the session started -> bucket ids of `bucket_seconds` each."""

    def __init__(self, cfg: EncoderConfig):
        super().__init__()
        self.bucket_seconds = cfg.bucket_seconds
        self.n_buckets = cfg.n_buckets

    def forward(self, seconds):
        buckets = seconds // self.bucket_seconds
        return buckets.long().clamp(0, self.n_buckets - 1)


class EventEncoder(nn.Module):
    def __init__(self, cfg: EncoderConfig):
        super().__init__()
        self.cfg = cfg
        self.token_embedding = nn.Embedding(cfg.vocab_size, cfg.width)
        self.time_embedding = nn.Embedding(cfg.n_buckets, cfg.width)
        self.buckets = TimeBuckets(cfg)
        self.blocks = nn.ModuleList([ResidualBlock(cfg) for _ in range(cfg.n_blocks)])
        self.final_norm = nn.LayerNorm(cfg.width, eps=cfg.layer_norm_eps)
        self.head = nn.Linear(cfg.width, 1)
        self.embedding_dropout = nn.Dropout(cfg.dropout)

    def embed(self, tokens, seconds):
        h = self.token_embedding(tokens) + self.time_embedding(self.buckets(seconds))
        return self.embedding_dropout(h)

    def forward(self, tokens, seconds, return_hidden: bool = False):
        h = self.embed(tokens, seconds)
        for block in self.blocks:
            h = block(h)
        h = self.final_norm(h)
        score = self.head(h).squeeze(-1)
        if return_hidden:
            return score, h
        return score


def build(cfg: EncoderConfig | None = None) -> EventEncoder:
    cfg = cfg or EncoderConfig()
    model = EventEncoder(cfg)
    return model.eval()


def log_summary(model: nn.Module) -> str:
    return f"{type(model).__name__}: {count_parameters(model)} parameters, {math.log10(count_parameters(model)):.1f} log10"


fn = build()


def inputs():
    tokens = torch.randint(0, 64, (2, 8))
    # inter-event times from the log, in seconds
    seconds = torch.tensor([[1.0, 0.5, 6.0, 0.3, 7.0, 2.2, 0.7, 1.1],
                            [0.2, 1.0, 3.3, 0.6, 5.0, 0.9, 1.2, 4.0]])
    return (tokens, seconds)
