import torch


def fn(q, k, v):
    return torch.matmul(q, k.permute(0, 2, 3, 1)).div(2.0).softmax(dim=-1).matmul(v)


def inputs():
    return (torch.randn(1, 4, 4, 8), torch.randn(1, 4, 4, 8), torch.randn(1, 4, 4, 8))
