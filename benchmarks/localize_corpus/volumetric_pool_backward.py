"""A 3-D CNN in channels_last_3d, as the memory-format guide recommends, with an adaptive max pool head, trained.
The compiled backward hands the pooling kernel indices in another layout (pytorch#197888)."""

import torch
import torch.nn as nn
import torch.nn.functional as F


class VoxelHead(nn.Module):
    def forward(self, x):
        return F.adaptive_max_pool3d(x, (2, 3, 5)).flatten(1)


fn = VoxelHead()


def inputs():
    torch.manual_seed(0)
    x = torch.randperm(4 * 4 * 6 * 10).float().reshape(1, 4, 4, 6, 10)
    return (x.contiguous(memory_format=torch.channels_last_3d).requires_grad_(),)
