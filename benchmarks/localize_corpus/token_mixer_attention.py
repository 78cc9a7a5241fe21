"""A token mixer whose keys are stored (batch, seq, heads, dim): scores take k.permute(0, 2, 3, 1). Inductor's
attention pattern matcher takes it for k.transpose(-2, -1) and rewrites it into SDPA (pytorch#195320)."""

import torch
import torch.nn as nn


class Mixer(nn.Module):
    def __init__(self, heads=4):
        super().__init__()
        self.heads = heads
        self.temperature = 2.0

    def forward(self, q, k, v):
        scores = torch.matmul(q, k.permute(0, 2, 3, 1)).div(self.temperature)
        return scores.softmax(dim=-1).matmul(v)


fn = Mixer().eval()


def inputs():
    # queries (batch, heads, seq, dim); keys and values as stored (batch, seq, heads, dim), heads == seq
    return (torch.randn(1, 4, 4, 8), torch.randn(1, 4, 4, 8), torch.randn(1, 4, 4, 8))
