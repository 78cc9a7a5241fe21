"""Row sums of a 256 x 256 float32 matrix: Inductor adds in a different order than ATen."""
import torch


def fn(x):
    return x.sum(dim=1)


def inputs():
    return (torch.randn(256, 256) * 100 + 3,)
