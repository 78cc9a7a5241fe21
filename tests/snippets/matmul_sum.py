import torch


def fn(x, w):
    return (x @ w).sum(-1), torch.softmax(x, dim=-1)


def inputs():
    return torch.randn(64, 256), torch.randn(256, 128)
