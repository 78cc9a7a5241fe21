"""Time-of-day features: timestamps in hours bucketed into tenths of an hour with a float floor division. Compiled
computes floor(t / 0.1), which lands one bucket above Python's and eager's `t // 0.1` (pytorch#197895)."""

import torch
import torch.nn as nn

TENTH = 0.1


class TimeFeatures(nn.Module):
    def __init__(self, buckets=64, width=8):
        super().__init__()
        self.table = nn.Embedding(buckets, width)

    def forward(self, hours):
        bucket = hours // TENTH
        return self.table(bucket.long().clamp(0, 63)), bucket


fn = TimeFeatures().eval()


def inputs():
    return (torch.tensor([1.0, 0.3, 0.7, 1.2, 2.9, 5.0, 0.1, 4.4]),)
