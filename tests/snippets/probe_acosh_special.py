"""torch.acosh on ordinary inputs: compiled matches eager, until a huge finite value overflows (pytorch#... acosh_large_overflow)."""
import torch

fn = torch.acosh


def inputs():
    # 64 elements so the vectorized loop is used; all in [1.5, ~5]: no special value unless a probe adds one
    return (torch.randn(64).abs() + 1.5,)
