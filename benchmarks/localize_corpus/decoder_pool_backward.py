"""A decoder stage trained end to end: upsample, crop, conv, 3x3 max pool and a skip selected by a mask. The
compiled gradients are wrong (pytorch#185509)."""

import torch
import torch.nn as nn
import torch.nn.functional as F


class DecoderStage(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3, padding=1)

    def forward(self, x, mask):
        y = F.interpolate(x, scale_factor=(1.5, 1.25), mode="bilinear", align_corners=False)
        y = y[:, :, 1:7, 1:8]
        conv = self.conv(y)
        pool = F.max_pool2d(conv, kernel_size=3, stride=1, padding=1)
        return torch.where(mask, conv, pool)


fn = DecoderStage()


def inputs():
    torch.manual_seed(1)
    return (torch.randn(2, 3, 6, 8, requires_grad=True), torch.rand(2, 4, 6, 7) > 0.5)
