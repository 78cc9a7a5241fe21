"""hf:small's DistilBERT (as `divergence sweep hf:small:distilbert` writes it): 2 layers of 64, random weights, fp32.

Its LayerNorms' row means cancel (terms ~0.03, means ~5e-4): compiled's another summation order is 300 ULPs of the
mean and a fraction of one of its terms'."""

import torch
from transformers import DistilBertConfig, DistilBertModel

config = DistilBertConfig(dim=64, n_layers=2, n_heads=4, hidden_dim=128, vocab_size=1000)
fn = DistilBertModel(config).eval()


def inputs():
    return (torch.randint(0, 1000, (2, 16)),)
