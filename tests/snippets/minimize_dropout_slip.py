"""A module in eval mode whose divergence is a float floor division; removing `.eval()` adds a dropout divergence."""
import torch
import torch.nn as nn

CFG = {"width": 8, "bucket": 0.1, "dropout": 0.5}


class Bucketer(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.bucket = cfg["bucket"]
        self.drop = nn.Dropout(cfg["dropout"])

    def forward(self, seconds):
        return self.drop(seconds // self.bucket)


fn = Bucketer(CFG).eval()


def inputs():
    return (torch.tensor([1.0, 0.5, 6.0, 0.3, 7.0, 2.2, 0.7, 1.1] * 4),)
