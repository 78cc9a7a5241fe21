"""A ratio head: ELU activations divided by a gate that is exactly zero for padded steps. Tiny negative inputs give
-0.0 in eager (so -inf) and +0.0 compiled (so nan) (pytorch#189801)."""

import torch
import torch.nn as nn
import torch.nn.functional as F


class RatioHead(nn.Module):
    def __init__(self, alpha=0.52):
        super().__init__()
        self.alpha = alpha

    def forward(self, x, gate):
        act = F.elu(x, alpha=self.alpha)
        return torch.div(act, gate)


fn = RatioHead().eval()


def inputs():
    x = torch.tensor([-1e-8, -1e-9, -1e-10, -1e-20, -1e-30, -1e-38, 0.5, -0.5])
    return (x, torch.tensor([0.0] * 6 + [1.0, 1.0]))
