"""Inductor's joint-graph pattern scatter_upon_const_tensor rewrites `torch.zeros(...).scatter_(dim, index, value)`
(a one-hot built by hand) into a pointwise `where(index == arange)`, which has no bounds check: an index out of
range (5 for 3 classes, or -1) raises in eager and gives a silent all-zero row when compiled (CPU)."""

import sys

import torch


def one_hot(labels):
    return torch.zeros(4, 3).scatter_(1, labels.unsqueeze(1), 1.0)


labels = torch.tensor([0, 2, 1, 5])  # 5 is not a class
try:
    one_hot(labels)
    eager = "returns"
except RuntimeError as exc:
    eager = f"raises: {exc}"
try:
    compiled = f"returns {torch.compile(one_hot)(labels).tolist()}"
except RuntimeError as exc:
    compiled = f"raises: {str(exc).splitlines()[0]}"
print("eager   :", eager)
print("compiled:", compiled)
sys.exit(1 if eager.startswith("raises") and compiled.startswith("returns") else 0)
