"""Teaching: .item() on a tensor splits the function into two graphs with a Python branch in between."""
import torch


def fn(x):
    y = torch.tanh(x) * 2
    if y.sum().item() > 0:  # data-dependent Python control flow: graph break here
        return y.exp()
    return y.neg().exp()


def inputs():
    return (torch.randn(64),)
