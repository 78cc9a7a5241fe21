"""Teaching: a conv block on a channels_last input; the output keeps NHWC strides in eager and compiled."""
import torch
import torch.nn as nn


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(8, 16, 3, padding=1)
        self.bn = nn.BatchNorm2d(16)

    def forward(self, x):
        return torch.relu(self.bn(self.conv(x)))


fn = Block().eval()


def inputs():
    return (torch.randn(2, 8, 16, 16).to(memory_format=torch.channels_last),)
