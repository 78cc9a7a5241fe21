"""torch.acosh on large finite float32 values: compiled returns inf, eager is finite."""
import torch

fn = torch.acosh


def inputs():
    # upstream values plus a few ordinary ones; 16 elements reach the vectorized loop
    x = torch.tensor([5e22, 9e25, 7e21, 2.0, 1e19, 1e20, 1e30, 3e38,
                      1.5, 10.0, 1e5, 1.0, 4.0, 1e10, 1e18, 2e19])
    return (x,)
