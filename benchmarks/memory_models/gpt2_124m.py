"""GPT-2 small (12 layers, 768 wide, 124M parameters: 475 MiB in fp32), random weights, 1 x 128 tokens, with its
KV cache."""

import torch
from transformers import GPT2Config, GPT2LMHeadModel

torch.manual_seed(0)
fn = GPT2LMHeadModel(GPT2Config()).eval()


def inputs():
    return (torch.randint(0, 50257, (1, 128)),)
