"""Llama from a small config (4 layers, 256 wide, 8 heads, 2 KV heads), random weights, bf16, 2 x 64 tokens,
cache off."""

import torch
from transformers import LlamaConfig, LlamaForCausalLM

torch.manual_seed(0)
config = LlamaConfig(
    num_hidden_layers=4,
    hidden_size=256,
    intermediate_size=688,
    num_attention_heads=8,
    num_key_value_heads=2,
    vocab_size=8192,
    max_position_embeddings=256,
    use_cache=False,
)
fn = LlamaForCausalLM(config).to(torch.bfloat16).eval()


def inputs():
    return (torch.randint(0, 8192, (2, 64)),)
