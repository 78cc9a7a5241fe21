"""GPT-2 from a small config (4 layers, 256 wide, 8 heads), random weights, bf16, 2 x 64 tokens, cache off."""

import torch
from transformers import GPT2Config, GPT2LMHeadModel

torch.manual_seed(0)
config = GPT2Config(n_layer=4, n_embd=256, n_head=8, vocab_size=8192, n_positions=256, use_cache=False)
fn = GPT2LMHeadModel(config).to(torch.bfloat16).eval()


def inputs():
    return (torch.randint(0, 8192, (2, 64)),)
