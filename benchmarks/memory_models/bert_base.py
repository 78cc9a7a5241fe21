"""BERT-base (12 layers, 768 wide, 110M parameters: 418 MiB in fp32), random weights, batch 2 x 128 tokens."""

import torch
from transformers import BertConfig, BertModel

torch.manual_seed(0)
fn = BertModel(BertConfig()).eval()


def inputs():
    return (torch.randint(0, 30522, (2, 128)),)
