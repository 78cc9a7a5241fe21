"""Float floor division: eager gives 1.0 // 0.1 == 9.0 (like Python), Inductor gives 10.0."""
import torch


def fn(a, b):
    return a // b, torch.div(a, b, rounding_mode="floor")


def inputs():
    a = torch.tensor([1.0, 0.5, 6.0, 1.0, 7.0, -1.0])
    b = torch.tensor([0.1, 0.1, 0.2, 1 / 3, 2.0, 0.1])
    return (a, b)
