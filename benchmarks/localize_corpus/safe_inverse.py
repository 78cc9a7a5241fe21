"""A 'safe' inverse that rounds up, adds a zero bias and takes the reciprocal: ceil(-0.5) is -0.0, and -0.0 + 0.0 is
+0.0 in IEEE 754; compiled keeps -0.0, so the reciprocal's infinity flips sign (pytorch#189799)."""

import torch
import torch.nn as nn


class SafeInverse(nn.Module):
    def forward(self, x):
        v = torch.ceil(x)
        v = v + torch.zeros_like(v)
        return torch.reciprocal(v)


fn = SafeInverse().eval()


def inputs():
    return (torch.tensor([-0.5, -0.1, -0.9, 1.5, 2.2]),)
