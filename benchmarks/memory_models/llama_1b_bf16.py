"""TinyLlama-1.1B's shape (22 layers, 2048 wide, 5632 MLP, 32 heads, 4 KV heads, 32000 vocab: 1,100,048,384 parameters,
2.05 GiB in bf16), random weights, 1 x 128 tokens, with its KV cache."""

import torch
from transformers import LlamaConfig, LlamaForCausalLM

torch.manual_seed(0)
config = LlamaConfig(
    hidden_size=2048,
    intermediate_size=5632,
    num_hidden_layers=22,
    num_attention_heads=32,
    num_key_value_heads=4,
    vocab_size=32000,
    max_position_embeddings=2048,
)
torch.set_default_dtype(torch.bfloat16)  # built in bf16: building in fp32 and casting holds 4.4 + 2.2 GB for a moment
fn = LlamaForCausalLM(config).eval()
torch.set_default_dtype(torch.float32)


def inputs():
    return (torch.randint(0, 32000, (1, 128)),)
