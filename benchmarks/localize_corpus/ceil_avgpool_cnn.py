"""A small CNN trained with AvgPool2d(ceil_mode=True): the last window of each row overhangs the input. The
compiled backward divides it by the full kernel size (pytorch#198119)."""

import torch
import torch.nn as nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, padding=1)
        self.pool = nn.AvgPool2d(3, stride=2, ceil_mode=True)
        self.head = nn.Linear(8 * 4 * 4, 10)

    def forward(self, x):
        h = torch.relu(self.conv(x))
        h = self.pool(h)
        return self.head(h.flatten(1))


fn = Net().eval()


def inputs():
    return (torch.randn(2, 3, 8, 8),)
