"""A decimating front end: the signal, handed over as a strided view of a stereo buffer, is offset in place, then
every second sample of it is taken by position with as_strided_copy. Compiled reads the positions as if the offset
signal were contiguous (pytorch#133512)."""

import torch
import torch.nn as nn


class Decimator(nn.Module):
    def __init__(self, offset: float = 1.0, taps: int = 3):
        super().__init__()
        self.offset = offset
        self.taps = taps
        self.gain = nn.Parameter(torch.full((taps,), 0.5))

    def forward(self, signal):
        signal.add_(self.offset)
        picked = torch.as_strided_copy(signal, (self.taps,), (2,))
        return picked * self.gain


fn = Decimator().eval()


def inputs():
    stereo = torch.arange(10.0)
    return (stereo[::2],)
