"""A voxel classifier in channels_last_3d with an adaptive max pool, trained (pytorch#197888)."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Voxels(nn.Module):
    def forward(self, x):
        pooled = F.adaptive_max_pool3d(x, (2, 3, 5))
        return pooled.flatten(1).sum(-1)


fn = Voxels()


def inputs():
    torch.manual_seed(3)
    x = torch.randperm(2 * 4 * 6 * 10).float().reshape(1, 2, 4, 6, 10)
    return (x.contiguous(memory_format=torch.channels_last_3d).requires_grad_(),)
