"""A bf16 convolution whose weight is a module-level tensor, not a module's parameter (issue #31)."""
import torch
import torch.nn.functional as F

WEIGHT = (torch.randn(64, 32, 3, 3) * 0.06).to(torch.bfloat16)
BIAS = torch.zeros(64, dtype=torch.bfloat16)


def fn(x):
    return F.conv2d(x, WEIGHT, BIAS, padding=1)


def inputs():
    return (torch.randn(8, 32, 64, 64).to(torch.bfloat16),)
