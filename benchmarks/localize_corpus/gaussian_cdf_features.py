"""Gaussian CDF features of tiny residuals: 0.5 * (1 + erf(r / sqrt 2)). The vectorized CPU erf returns 0 for
arguments below about 1e-6 (pytorch#198183)."""

import math

import torch


def fn(residual):
    z = residual / math.sqrt(2.0)
    return torch.erf(z) * 1e6


def inputs():
    vals = torch.tensor([1e-8, 1e-7, 2e-7, 5e-7, 1e-6, 1e-5, 1e-4, 1e-3])
    return (vals.repeat(8),)
