import torch


def fn(x, index, src):
    # a 0-d scatter_reduce: Inductor's kernel copies `y` into the result's buffer, then aten.scatter_reduce_ finishes
    # it in place; the value the node computes is the buffer after that fallback, not after the copy
    y = torch.maximum(x, x * 0.5)
    return y.scatter_reduce(0, index, src, reduce="amax", include_self=False) + 1


def inputs():
    return torch.tensor(-2.0), torch.tensor(0), torch.tensor(-10.5)
