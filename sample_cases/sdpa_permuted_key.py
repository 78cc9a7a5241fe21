"""Hand-written attention with K permuted (0, 2, 3, 1): Inductor's SDPA pattern treats it as key.transpose(-2, -1)."""
import torch


def fn(q, k, v):
    # k is laid out (batch, seq, heads, dim); permute(0, 2, 3, 1) gives (batch, heads, dim, seq)
    scores = torch.matmul(q, k.permute(0, 2, 3, 1)).div(2.0)
    return scores.softmax(dim=-1).matmul(v)


def inputs():
    # heads == seq so that the wrongly matched pattern still has valid shapes
    return (torch.randn(1, 4, 4, 8), torch.randn(1, 4, 4, 8), torch.randn(1, 4, 4, 8))
