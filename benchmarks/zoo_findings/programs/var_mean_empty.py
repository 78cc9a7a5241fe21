import torch


def fn(x):
    return torch.var_mean(x)


def inputs():
    return (torch.empty(0),)
