"""The models people run: GPT-2, Llama (bf16) and T5 from transformers, small configs with random weights.

Their outputs are ModelOutput dataclasses holding a KV cache, a plain object (transformers' DynamicCache:
`out.cache.layers[i].keys`). Every cache tensor comes back from compiled in another memory layout than
eager's (strides only; the values are noise): Inductor's decomposition of `cat([empty, k])`, which the
cache's first update is, returns k's transposed layout where eager's cat returns a contiguous tensor
(sample_cases/cat_empty_stride.py). A `.view()` that works on eager's cache raises on compiled's, so the
verdict is divergent, with the stride symptom alone, and the explanation says it is the layout.
"""

from __future__ import annotations

import pytest

from engine import LeafKind, Symptom, Verdict

pytest.importorskip("transformers")

GPT2 = """
import torch
from transformers import GPT2Config, GPT2LMHeadModel

torch.manual_seed(0)
config = GPT2Config(n_layer=2, n_embd=64, n_head=4, n_positions=128, vocab_size=1000, eos_token_id=2, bos_token_id=1)
fn = GPT2LMHeadModel(config).eval()


def inputs():
    return (torch.randint(0, 1000, (2, 16)),)
"""

LLAMA = """
import torch
from transformers import LlamaConfig, LlamaForCausalLM

torch.manual_seed(0)
config = LlamaConfig(hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
                     num_key_value_heads=2, vocab_size=1000, max_position_embeddings=128)
fn = LlamaForCausalLM(config).eval()


def inputs():
    return (torch.randint(0, 1000, (2, 16)),)
"""

T5 = """
import torch
from transformers import T5Config, T5ForConditionalGeneration

torch.manual_seed(0)
config = T5Config(d_model=64, d_ff=128, d_kv=16, num_layers=2, num_decoder_layers=2, num_heads=4, vocab_size=1000)
model = T5ForConditionalGeneration(config).eval()


def fn(input_ids, decoder_input_ids):
    return model(input_ids=input_ids, decoder_input_ids=decoder_input_ids)


def inputs():
    return torch.randint(0, 1000, (2, 16)), torch.randint(0, 1000, (2, 8))
"""

DECODE_STEP = """
import torch
from transformers import DynamicCache, LlamaConfig, LlamaForCausalLM

torch.manual_seed(0)
config = LlamaConfig(hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
                     num_key_value_heads=2, vocab_size=1000, max_position_embeddings=128)
model = LlamaForCausalLM(config).eval()


def fn(input_ids, cache):
    return model(input_ids=input_ids, past_key_values=cache, use_cache=True).logits


def inputs():
    cache = DynamicCache(config=config)
    with torch.no_grad():
        model(input_ids=torch.randint(0, 1000, (2, 12)), past_key_values=cache, use_cache=True)
    return torch.randint(0, 1000, (2, 1)), cache
"""


def _cache_leaves(r) -> list:
    return [leaf for leaf in r.leaves if ".layers[" in leaf.name and leaf.name.endswith((".keys", ".values"))]


def _divergent_in_layout_only(r, cache_leaves: int, logits: tuple[Verdict, ...]) -> None:
    assert r.verdict is Verdict.DIVERGENT, r.explanation
    cache = _cache_leaves(r)
    assert len(cache) == cache_leaves
    assert all(leaf.verdict is Verdict.DIVERGENT and leaf.symptoms[0] is Symptom.STRIDE for leaf in cache)
    assert all(
        set(leaf.symptoms) <= {Symptom.STRIDE, Symptom.VALUE} for leaf in cache
    )  # values differ by noise, not judged apart
    assert all(leaf.verdict is not Verdict.DIVERGENT for leaf in r.leaves if leaf not in cache)
    assert r.leaf("out.logits").verdict in logits
    assert r.explanation.startswith("divergent: out.cache.") and "memory layout differs" in r.explanation
    assert "in eager (contiguous)" in r.explanation and "compiled (not contiguous), same shape" in r.explanation


@pytest.mark.slow
def test_gpt2(check):
    r = check(GPT2)
    _divergent_in_layout_only(r, 4, (Verdict.BENIGN, Verdict.MATCH))
    # the cause is known (the gallery's cat_empty_stride): the first sentence says so, before any figure
    from app.cli.report import render

    first = render(r).splitlines()[0]
    assert first.startswith(
        "VERDICT: DIVERGENT — looks like the known `cat` with an empty tensor layout issue, https://"
    ), first
    assert "Localize, then Minimize" not in render(r).splitlines()[1]


@pytest.mark.slow
def test_llama_in_bf16(check):
    r = check(LLAMA, dtype="bf16")
    _divergent_in_layout_only(r, 4, (Verdict.PRECISION_CAST, Verdict.BENIGN))
    assert r.leaf("out.cache.layers[0].keys").dtype == "bfloat16"


@pytest.mark.slow
def test_t5_and_its_encoder_decoder_cache(check):
    r = check(T5)
    _divergent_in_layout_only(r, 8, (Verdict.BENIGN, Verdict.MATCH))
    assert r.leaf("out.cache.cross_attention_cache.layers[1].values").shape == (2, 4, 16, 16)


@pytest.mark.slow
def test_a_decode_step_extends_its_own_copy_of_the_cache(check):
    r = check(DECODE_STEP)
    assert r.verdict in (Verdict.BENIGN, Verdict.MATCH), r.explanation
    mutated = [leaf for leaf in r.leaves if leaf.kind is LeafKind.MUTATED_INPUT]
    assert [leaf.name for leaf in mutated] == [
        f"input args[1].layers[{i}].{kv}" for i in (0, 1) for kv in ("keys", "values")
    ]
    assert all(
        leaf.shape == leaf.compiled_shape == (2, 2, 13, 16) for leaf in mutated
    )  # 12 prompt tokens + 1, once each
    assert r.leaf("out").max_abs < 1e-5
