"""torch.erf of small arguments: the vectorized C++ kernel has only absolute accuracy."""
import torch

fn = torch.erf


def inputs():
    # 64 elements so the vectorized loop body is used (short tensors go through the scalar tail)
    vals = [1e-8, 1e-7, 2e-7, 5e-7, 1e-6, 1e-5, 1e-4, 1e-3]
    return (torch.tensor(vals * 8),)
