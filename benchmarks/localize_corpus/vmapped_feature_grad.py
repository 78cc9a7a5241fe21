"""Per-example gradients of a feature-selection score: vmap(grad_and_value) over a batch, compiled with dynamic
shapes. The backward scatters through an expanded index (pytorch#188084)."""

import torch
from torch.func import grad_and_value, vmap

D = 4
SELECT = torch.tensor([0, 2])
WEIGHT = torch.tensor([1.0, -1.0], dtype=torch.float64)


def score(x):
    stacked = torch.stack([x[..., k] for k in range(D)], dim=-1)
    return (torch.index_select(stacked, -1, SELECT) * WEIGHT).sum(-1).reshape(())


fn = vmap(grad_and_value(score))
compile_kwargs = {"fullgraph": True, "dynamic": True}


def inputs():
    return (torch.randn(4, D, dtype=torch.float64),)
