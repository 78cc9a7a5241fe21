"""A Llama-style block (RMSNorm, gated SiLU MLP) behind an inference wrapper that unpacks its output."""

import math
from dataclasses import dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F


@dataclass(frozen=True)
class BlockArgs:
    dim: int = 32
    n_heads: int = 4
    hidden_dim: int = 64
    norm_eps: float = 1e-6
    dropout: float = 0.05
    rope_theta: float = 10000.0
    max_seq_len: int = 16


class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


class Attention(nn.Module):
    def __init__(self, args: BlockArgs):
        super().__init__()
        self.n_heads = args.n_heads
        self.head_dim = args.dim // args.n_heads
        self.wq = nn.Linear(args.dim, args.dim, bias=False)
        self.wk = nn.Linear(args.dim, args.dim, bias=False)
        self.wv = nn.Linear(args.dim, args.dim, bias=False)
        self.wo = nn.Linear(args.dim, args.dim, bias=False)
        self.attn_dropout = nn.Dropout(args.dropout)
        self.softmax_scale = 1 / math.sqrt(self.head_dim)

    def forward(self, x):
        bsz, seqlen, _ = x.shape
        xq = self.wq(x).view(bsz, seqlen, self.n_heads, self.head_dim)
        xk = self.wk(x).view(bsz, seqlen, self.n_heads, self.head_dim)
        xv = self.wv(x).view(bsz, seqlen, self.n_heads, self.head_dim)
        xq, xv = xq.transpose(1, 2), xv.transpose(1, 2)
        scores = (xq @ xk.permute(0, 2, 3, 1)) * self.softmax_scale
        scores = self.attn_dropout(F.softmax(scores.float(), dim=-1).type_as(xq))
        output = (scores @ xv).transpose(1, 2).contiguous().view(bsz, seqlen, -1)
        return self.wo(output)


class FeedForward(nn.Module):
    def __init__(self, args: BlockArgs):
        super().__init__()
        self.w1 = nn.Linear(args.dim, args.hidden_dim, bias=False)
        self.w2 = nn.Linear(args.hidden_dim, args.dim, bias=False)
        self.w3 = nn.Linear(args.dim, args.hidden_dim, bias=False)

    def forward(self, x):
        return self.w2(F.silu(self.w1(x)) * self.w3(x))


class TransformerBlock(nn.Module):
    def __init__(self, args: BlockArgs):
        super().__init__()
        self.attention = Attention(args)
        self.feed_forward = FeedForward(args)
        self.attention_norm = RMSNorm(args.dim, args.norm_eps)
        self.ffn_norm = RMSNorm(args.dim, args.norm_eps)
        self.resid_dropout = nn.Dropout(args.dropout)

    def forward(self, x):
        h = x + self.resid_dropout(self.attention(self.attention_norm(x)))
        return h + self.resid_dropout(self.feed_forward(self.ffn_norm(h))), h


class InferenceWrapper(nn.Module):
    """What a serving stack puts around a block: eval mode, no autograd, the hidden state only."""

    def __init__(self, block: nn.Module):
        super().__init__()
        self.block = block.eval()

    @torch.no_grad()
    def forward(self, x):
        out, _residual = self.block(x)
        return out

    def warmup(self, shape):
        return self(torch.zeros(shape))


args = BlockArgs()
wrapper = InferenceWrapper(TransformerBlock(args))


def fn(x):
    return wrapper(x)


def inputs():
    # a single sequence of 4 positions (as many as heads)
    return (torch.randn(1, 4, args.dim),)
