"""A contrast score of uint8 images: negated absolute pixel values of two views, summed. uint8 wraps around in
eager; compiled promotes through std::abs (pytorch#187018)."""

import torch


def fn(img):
    y = -img.abs()
    return torch.cat([y, y]).sum()


def inputs():
    return (torch.tensor([200, 200, 180, 250], dtype=torch.uint8),)
