"""dst[:] = src[:]; src.add_(1): Inductor copies the *updated* src into dst."""
import torch


def fn(dst, src):
    dst[0:, :] = src[0:, :]  # copy src -> dst through a full-slice view
    src.add_(1)  # then mutate src in place
    return src


def inputs():
    return (torch.zeros(3, 4), torch.arange(12.0).view(3, 4))
