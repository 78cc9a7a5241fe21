"""Unpacking block-floating-point weights: fp16 mantissas scaled by fp32 exponents with ldexp. Eager promotes to
fp32; compiled returns fp16 (pytorch#197091)."""

import torch


def fn(mantissa, exponent):
    w = torch.ldexp(mantissa, exponent)
    return w


def inputs():
    return (torch.randn(6, 8).half(), torch.randint(-3, 4, (6, 8)).float())
