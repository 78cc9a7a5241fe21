"""A small Linear layer: its weight fixes the input width, so grown sizes make eager itself raise."""
import torch

torch.manual_seed(0)
fn = torch.nn.Linear(16, 8)


def inputs():
    return (torch.randn(4, 16),)
