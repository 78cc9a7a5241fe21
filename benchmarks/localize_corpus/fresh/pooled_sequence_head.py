"""A 1-D sequence classifier trained with AvgPool1d(ceil_mode=True); the compiled backward divides the last,
overhanging window by the full kernel (pytorch#198119)."""
import torch
import torch.nn as nn


class Head(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv1d(4, 6, 3, padding=1)
        self.pool = nn.AvgPool1d(3, stride=2, ceil_mode=True)

    def forward(self, x):
        return self.pool(torch.tanh(self.conv(x))).mean(-1)


fn = Head()


def inputs():
    return (torch.randn(2, 4, 10, requires_grad=True),)
