"""A mid Llama (8 layers, 1024 wide, GQA 16/4, 156M parameters: 297 MiB in bf16), random weights, 1 x 128 tokens."""

import torch
from transformers import LlamaConfig, LlamaForCausalLM

torch.manual_seed(0)
config = LlamaConfig(
    hidden_size=1024,
    intermediate_size=2816,
    num_hidden_layers=8,
    num_attention_heads=16,
    num_key_value_heads=4,
    vocab_size=32000,
    max_position_embeddings=256,
)
torch.set_default_dtype(torch.bfloat16)  # built in bf16: building in fp32 and casting holds both for a moment
fn = LlamaForCausalLM(config).eval()
torch.set_default_dtype(torch.float32)


def inputs():
    return (torch.randint(0, 32000, (1, 128)),)
