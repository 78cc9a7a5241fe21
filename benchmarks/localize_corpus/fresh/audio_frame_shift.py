"""An audio frame buffer shifted by one frame in place before features are taken (pytorch#197829)."""
import torch
import torch.nn as nn


class FrameBuffer(nn.Module):
    def __init__(self, bins=12):
        super().__init__()
        self.proj = nn.Linear(bins, 4)

    def forward(self, frames):
        frames[1:] = frames[:-1].clone()
        return self.proj(frames.abs().log1p())


fn = FrameBuffer().eval()


def inputs():
    return (torch.rand(7, 5, 12),)
