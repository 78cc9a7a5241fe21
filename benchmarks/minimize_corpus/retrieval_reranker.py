"""A cross-encoder reranker: query and passage tokens share one sequence; pre-norm blocks with a hand-written
RMSNorm, layer scale on each residual, and a relevance score read off the first token."""

import math
from dataclasses import dataclass, fields

import torch
import torch.nn.functional as F
from torch import nn


@dataclass(frozen=True)
class RerankerConfig:
    vocab: int = 96
    d_model: int = 32
    n_heads: int = 4
    n_layers: int = 1
    mlp_ratio: float = 2.0
    p_drop: float = 0.1
    rms_eps: float = 1e-6
    layer_scale_init: float = 0.5
    max_positions: int = 16

    @classmethod
    def from_dict(cls, raw):
        known = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in raw.items() if k in known})


class RMSNorm(nn.Module):
    def __init__(self, dim, eps):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        return self.weight * x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps)


class SelfAttention(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.h = cfg.n_heads
        self.d = cfg.d_model // cfg.n_heads
        self.qkv = nn.Linear(cfg.d_model, 3 * cfg.d_model, bias=False)
        self.proj = nn.Linear(cfg.d_model, cfg.d_model)
        self.p_drop = cfg.p_drop

    def forward(self, x):
        b, n, c = x.shape
        q, k, v = self.qkv(x).split(c, dim=-1)
        q = q.view(b, n, self.h, self.d).transpose(1, 2)
        k = k.view(b, n, self.h, self.d)
        v = v.view(b, n, self.h, self.d).transpose(1, 2)
        scores = q @ k.permute(0, 2, 3, 1) / math.sqrt(self.d)
        weights = F.dropout(scores.softmax(dim=-1), p=self.p_drop, training=self.training)
        ctx = (weights @ v).transpose(1, 2).contiguous().view(b, n, c)
        return self.proj(ctx)


class Block(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        hidden = int(cfg.d_model * cfg.mlp_ratio)
        self.norm1 = RMSNorm(cfg.d_model, cfg.rms_eps)
        self.attn = SelfAttention(cfg)
        self.norm2 = RMSNorm(cfg.d_model, cfg.rms_eps)
        self.mlp = nn.Sequential(nn.Linear(cfg.d_model, hidden), nn.SiLU(), nn.Linear(hidden, cfg.d_model))
        self.gamma1 = nn.Parameter(torch.full((cfg.d_model,), cfg.layer_scale_init))
        self.gamma2 = nn.Parameter(torch.full((cfg.d_model,), cfg.layer_scale_init))
        self.drop = nn.Dropout(cfg.p_drop)

    def forward(self, x):
        x = x + self.drop(self.gamma1 * self.attn(self.norm1(x)))
        return x + self.drop(self.gamma2 * self.mlp(self.norm2(x)))


class Reranker(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.cfg = cfg
        self.tok = nn.Embedding(cfg.vocab, cfg.d_model)
        self.pos = nn.Embedding(cfg.max_positions, cfg.d_model)
        self.blocks = nn.ModuleList(Block(cfg) for _ in range(cfg.n_layers))
        self.norm = RMSNorm(cfg.d_model, cfg.rms_eps)
        self.score = nn.Linear(cfg.d_model, 1)

    def forward(self, ids):
        positions = torch.arange(ids.shape[1], device=ids.device)
        x = self.tok(ids) + self.pos(positions)
        for block in self.blocks:
            x = block(x)
        return self.score(self.norm(x)[:, 0]).squeeze(-1)

    @torch.no_grad()
    def rank(self, ids):
        return self(ids).argsort(descending=True)


config = RerankerConfig.from_dict({"vocab": 96, "d_model": 32, "n_heads": 4, "tokenizer": "wordpiece"})
model = Reranker(config).eval()
fn = model


def inputs():
    # one query-passage pair of 4 tokens (4 heads)
    return (torch.randint(0, config.vocab, (1, 4)),)
