"""Dropout under torch.compile draws from Inductor's own RNG (Philox-based), not ATen's CPU generator."""
import torch
import torch.nn.functional as F


def fn(x):
    return F.dropout(x, p=0.5, training=True)


def inputs():
    return (torch.ones(64, 64),)
