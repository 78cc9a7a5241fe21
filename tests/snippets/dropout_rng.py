import torch


def fn(x):
    return torch.nn.functional.dropout(x, p=0.5, training=True) * 3


def inputs():
    return (torch.randn(64, 64),)
