"""torch.var_mean on data with a large mean: eager CPU accumulates in double, Inductor in float32."""
import torch


def fn(x):
    return torch.var_mean(x, dim=1)


def inputs():
    # rows drawn from N(1e5, 1): the variance is 1, tiny next to the mean
    return (torch.randn(16, 4096) + 1e5,)
