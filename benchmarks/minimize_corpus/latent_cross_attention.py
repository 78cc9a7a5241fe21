"""A Perceiver-style resampler: learned latents cross-attend to the input tokens, then a small MLP head."""

from types import SimpleNamespace
from typing import NamedTuple

import torch
from torch import nn
from torch.nn import functional as F

cfg = SimpleNamespace(
    input_dim=24,
    latent_dim=32,
    num_latents=4,
    num_heads=4,
    dropout=0.2,
    ff_mult=2,
    out_dim=6,
    norm_eps=1e-5,
    use_bias=True,
)


class ResamplerOutput(NamedTuple):
    prediction: torch.Tensor
    latents: torch.Tensor


class CrossAttention(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.num_heads = cfg.num_heads
        self.head_dim = cfg.latent_dim // cfg.num_heads
        self.to_q = nn.Linear(cfg.latent_dim, cfg.latent_dim, bias=cfg.use_bias)
        self.to_k = nn.Linear(cfg.input_dim, cfg.latent_dim, bias=cfg.use_bias)
        self.to_v = nn.Linear(cfg.input_dim, cfg.latent_dim, bias=cfg.use_bias)
        self.to_out = nn.Sequential(nn.Linear(cfg.latent_dim, cfg.latent_dim), nn.Dropout(cfg.dropout))
        self.attn_dropout = nn.Dropout(cfg.dropout)
        self.scale = self.head_dim**-0.5

    def forward(self, latents, context):
        b, n, _ = latents.shape
        m = context.shape[1]
        q = self.to_q(latents).reshape(b, n, self.num_heads, self.head_dim).permute(0, 2, 1, 3)
        k = self.to_k(context).reshape(b, m, self.num_heads, self.head_dim)
        v = self.to_v(context).reshape(b, m, self.num_heads, self.head_dim).permute(0, 2, 1, 3)
        sim = torch.matmul(q, k.permute(0, 2, 3, 1)) * self.scale
        attn = self.attn_dropout(sim.softmax(dim=-1))
        out = torch.matmul(attn, v).permute(0, 2, 1, 3).reshape(b, n, -1)
        return self.to_out(out)


class FeedForward(nn.Module):
    def __init__(self, dim, mult, dropout):
        super().__init__()
        self.net = nn.Sequential(
            nn.LayerNorm(dim),
            nn.Linear(dim, dim * mult),
            nn.GELU(),
            nn.Dropout(dropout),
            nn.Linear(dim * mult, dim),
        )

    def forward(self, x):
        return self.net(x)


class Resampler(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.latents = nn.Parameter(torch.randn(cfg.num_latents, cfg.latent_dim) / cfg.latent_dim**0.5)
        self.norm_latents = nn.LayerNorm(cfg.latent_dim, eps=cfg.norm_eps)
        self.norm_context = nn.LayerNorm(cfg.input_dim, eps=cfg.norm_eps)
        self.cross = CrossAttention(cfg)
        self.ff = FeedForward(cfg.latent_dim, cfg.ff_mult, cfg.dropout)
        self.head = nn.Linear(cfg.latent_dim, cfg.out_dim)

    def forward(self, tokens):
        latents = self.latents.unsqueeze(0).expand(tokens.shape[0], -1, -1)
        latents = latents + self.cross(self.norm_latents(latents), self.norm_context(tokens))
        latents = latents + self.ff(latents)
        return ResamplerOutput(self.head(latents.mean(dim=1)), latents)

    def extra_repr(self):
        return f"latents={tuple(self.latents.shape)}"


def count_parameters(module):
    return sum(p.numel() for p in module.parameters() if p.requires_grad)


model = Resampler(cfg)
model.eval()
fn = model


def inputs():
    # one sequence of 4 input tokens; 4 latents and 4 heads
    return (torch.randn(1, 4, cfg.input_dim),)
