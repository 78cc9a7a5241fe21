"""A streaming normalizer that scales a running state in place and adds a window of the same buffer.

The first call gets two separate tensors; the second gets two overlapping windows of one ring buffer. Compiled
reuses the first call's graph, which assumed no aliasing (pytorch#139789)."""

import torch


class Normalizer(torch.nn.Module):
    def __init__(self, gain: float = 2.0):
        super().__init__()
        self.gain = gain

    def forward(self, state, window):
        state.mul_(self.gain)
        return state + window


model = Normalizer().eval()
step = torch.compile(model, backend="aot_eager")

with torch.no_grad():
    step(torch.ones(4), torch.ones(4))
    ring = torch.ones(8)
    out = step(ring[:4], ring[2:6])
