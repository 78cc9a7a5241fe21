"""Hashing 64-bit ids through their int32 halves: the halves are mixed into a fresh tensor, then the id table is
cleared in place. Compiled reads the table after the clear (pytorch#198101)."""

import torch


def fn(ids):
    mixed = ids.view(torch.int32) * 31
    mixed.add_(7)
    ids[:, 1:3] = 0
    return mixed.view(torch.int64)


def inputs():
    return (torch.arange(-20, 20, dtype=torch.int64).reshape(5, 8),)
