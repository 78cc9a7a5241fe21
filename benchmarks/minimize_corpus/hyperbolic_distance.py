"""Hyperbolic (Lorentz-model) item embeddings scored against a query by geodesic distance, with an MLP encoder."""
import math
from dataclasses import dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F


@dataclass(frozen=True)
class HyperConfig:
    n_items: int = 64
    in_features: int = 16
    dim: int = 8
    hidden: int = 32
    curvature: float = 1.0
    dropout: float = 0.1
    temperature: float = 1.0
    min_norm: float = 1e-7


def lorentz_inner(u: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    """<u, v>_L = -u0 v0 + sum_i ui vi."""
    prod = u * v
    return prod[..., 1:].sum(-1) - prod[..., 0]


def expmap0(x: torch.Tensor, c: float) -> torch.Tensor:
    """Map a tangent vector at the origin onto the hyperboloid."""
    norm = x.norm(dim=-1, keepdim=True).clamp_min(1e-7)
    sqrt_c = math.sqrt(c)
    time = torch.cosh(sqrt_c * norm) / sqrt_c
    space = torch.sinh(sqrt_c * norm) * x / (sqrt_c * norm)
    return torch.cat([time, space], dim=-1)


def project(x: torch.Tensor) -> torch.Tensor:
    """Unused: re-project onto the hyperboloid after an optimizer step."""
    space = x[..., 1:]
    time = torch.sqrt(1 + (space * space).sum(-1, keepdim=True))
    return torch.cat([time, space], dim=-1)


class Encoder(nn.Module):
    def __init__(self, cfg: HyperConfig):
        super().__init__()
        self.norm = nn.LayerNorm(cfg.in_features)
        self.fc1 = nn.Linear(cfg.in_features, cfg.hidden)
        self.fc2 = nn.Linear(cfg.hidden, cfg.dim)
        self.drop = nn.Dropout(cfg.dropout)

    def forward(self, x):
        return self.fc2(self.drop(F.gelu(self.fc1(self.norm(x)))))


class HyperbolicScorer(nn.Module):
    def __init__(self, cfg: HyperConfig):
        super().__init__()
        self.cfg = cfg
        self.encoder = Encoder(cfg)
        self.item_tangent = nn.Embedding(cfg.n_items, cfg.dim)
        self.bias = nn.Parameter(torch.zeros(cfg.n_items))

    def distance(self, u, v):
        # -<u, v>_L >= 1 on the hyperboloid; far-apart points give very large arguments
        z = (-lorentz_inner(u, v)).clamp_min(1 + 1e-7)
        return torch.acosh(z)

    def antipodal_distance(self, radii):
        """Distance between the points at spatial radius r on opposite sides of the origin."""
        time = torch.sqrt(1 + radii * radii)
        return torch.acosh((time * time + radii * radii).clamp_min(1 + 1e-7))

    def forward(self, features, item_ids, radii):
        query = expmap0(self.encoder(features), self.cfg.curvature)
        items = expmap0(self.item_tangent(item_ids), self.cfg.curvature)
        near = self.distance(query[:, None, :], items[None, :, :])
        far = self.antipodal_distance(radii)
        logits = -near / self.cfg.temperature + self.bias[item_ids]
        return logits, far


def build() -> HyperbolicScorer:
    torch.manual_seed(0)
    return HyperbolicScorer(HyperConfig()).eval()


def anchor_pairs(norms):
    """Pairs of far-apart anchor points on the hyperboloid (time coordinate first)."""
    space = torch.stack([norms, torch.zeros_like(norms)], dim=-1)
    time = torch.sqrt(1 + norms * norms)[..., None]
    a = torch.cat([time, space], dim=-1)
    b = torch.cat([time, -space], dim=-1)
    return torch.stack([a, b], dim=1)


fn = build()


def inputs():
    features = torch.randn(4, 16)
    item_ids = torch.arange(8)
    radii = torch.tensor([3e9, 1e10, 4e10, 2.0, 5e9, 1e4, 7e10, 1e15, 10.0, 3e11, 1e12, 2e13, 1e5, 6e9, 8e14, 5.0])
    return (features, item_ids, radii)
