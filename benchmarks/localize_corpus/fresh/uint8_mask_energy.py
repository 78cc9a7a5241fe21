"""Energy of a negated uint8 mask in two crops: uint8 arithmetic wraps in eager, compiled promotes (pytorch#187018)."""
import torch


def fn(mask):
    neg = -mask.abs()
    return torch.cat([neg, neg]).sum()


def inputs():
    return (torch.tensor([201, 230, 255, 130], dtype=torch.uint8),)
