import torch
import torch.nn.functional as F


def fn(x, y):
    return F.dropout(x, p=1.0, training=True), F.dropout(y, p=0.5, training=True)


def inputs():
    return (torch.randn(4), torch.randn(8))
