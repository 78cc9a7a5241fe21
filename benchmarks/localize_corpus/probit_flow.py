"""A probit normalizing flow: uniform probabilities to normal quantiles, sqrt(2) * erfinv(2p - 1). Near p = 1 the
compiled CPU erfinv loses digits (pytorch#198133)."""

import math

import torch


def fn(p):
    return math.sqrt(2.0) * torch.erfinv(2 * p - 1)


def inputs():
    p = torch.tensor([0.995, 0.99995, 0.9999995, 0.99999995, 0.99999997, 0.02, 0.75, 0.95])
    return (p,)
