"""A patch gain for a spectrogram: one column in every five is boosted in place through an unfold view whose windows
leave gaps. Compiled zeroes every column no window covers (pytorch#198102)."""

import torch
import torch.nn as nn


class PatchGain(nn.Module):
    def __init__(self, bins: int = 10, step: int = 5):
        super().__init__()
        self.step = step
        self.head = nn.Linear(bins, 3)

    def forward(self, spec):
        anchors = spec.unfold(1, 1, self.step)
        anchors.mul_(2.0)
        return self.head(torch.tanh(spec))


fn = PatchGain().eval()


def inputs():
    torch.manual_seed(0)
    return (torch.randn(4, 10),)
