"""floor_divide_off_by_one with irrelevant code around it, for the minimizer's end-to-end test."""
import math
import os
import torch


def helper(t):
    return t * 2


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a, b, c):
        scale = math.sqrt(4.0)
        if scale > 0:
            q = torch.div(a, b, rounding_mode="floor")
        else:
            q = a
        extra = torch.relu(c) + 1
        return q, extra


fn = Net()


def inputs():
    a = torch.tensor([1.0, 0.5, 6.0, 1.0, 7.0, -1.0])
    b = torch.tensor([0.1, 0.1, 0.2, 1 / 3, 2.0, 0.1])
    c = torch.randn(4, 8)
    return (a, b, c)
