"""A ring buffer handed to a step both whole and as its tail (a view one row in): the buffer is advanced in place,
then the tail's first row is returned (a view, for the caller's log) with its readout. Compiled returns the buffer's
first row as that view instead (pytorch#198095)."""

import torch
import torch.nn as nn


class RingStep(nn.Module):
    def __init__(self, width: int = 6):
        super().__init__()
        self.readout = nn.Linear(width, 2)

    def forward(self, ring, tail):
        ring.add_(100.0)
        newest = tail[0]
        return newest, self.readout(newest)


fn = RingStep().eval()


def inputs():
    torch.manual_seed(0)
    ring = torch.randn(4, 6)
    return (ring, ring[1:])
