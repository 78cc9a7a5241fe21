import torch


def fn(x):
    y = torch.cos(x) * 2
    print("graph break here")
    return (y + 1).relu()


def inputs():
    return (torch.randn(16),)
