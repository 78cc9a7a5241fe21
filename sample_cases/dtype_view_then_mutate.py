"""A value computed from x.view(int32) is evaluated after a later in-place write to x."""
import torch


def fn(x):
    y = x.view(torch.int32) * 2  # reads x (as int32 pairs) into a fresh tensor
    y.sub_(-4)  # in-place update of the intermediate
    x[:, 2:5] = 2  # mutate the input afterwards
    return y.view(torch.int64)  # must reflect x BEFORE the mutation


def inputs():
    return (torch.arange(-12, 12, dtype=torch.int64).reshape(4, 6),)
