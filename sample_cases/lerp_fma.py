"""torch.lerp on large-magnitude endpoints: both sides round differently, neither is closer to fp64."""
import torch


def fn(a, b, w):
    return torch.lerp(a, b, w)


def inputs():
    return (torch.randn(4096), torch.randn(4096) * 1e4, torch.rand(4096))
