"""`hf:[SIZE][+cache][:ARCH,...]`: Hugging Face transformers architectures built from their configs.

Each architecture is a config and a model class of `transformers`, built with random weights (no hub
access, nothing downloaded) in eval mode, and inputs of the kind it takes (token ids, pixels, audio,
mel features, or encoder and decoder ids). SIZE `small` (the default: 2 layers, 64 wide, a 1000-token
vocabulary; seconds per check, what tests use) or `base`: the shape of a real small checkpoint where
there is one (gpt2, bert-base, SmolLM-135M for Llama, t5-small, whisper-tiny, ...; the program names
it), else the architecture's own shape scaled to 12 layers of 768 (the program says "scaled").

Decoders run with `use_cache=False` by default: with the cache on, every decoder's KV-cache leaves are
divergent on strides for one known reason (Inductor's `cat` decomposition keeps the key's transposed
layout: the gallery's `cat_empty_stride`), which would hide whatever else a job has. `+cache` writes the
programs with the cache on, separate files (the engine compares the `DynamicCache` as any object).

The harness's rule is PyTorch's check for these jobs: `same(tol=1e-3)` against fp64 (huggingface.py's
inference tolerance). The dtype is the sweep's `--dtype` (or a `--matrix dtype=none,bf16` axis): the
engine casts the model and the floating inputs, as a user's `model.to(torch.bfloat16)` would.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from app.sweep.pytorch_check import HARNESS_TOL, SAME, AccuracyRule
from app.sweep.sources.base import Selection, Source, ZooError, ZooProgram, missing, pick

SIZES = ("small", "base")
SMALL_VOCAB = 1000


@dataclass(frozen=True)
class Architecture:
    name: str
    title: str
    config: str  # the transformers config class
    model: str  # the model class
    small: Mapping[str, Any]  # config keyword arguments, small
    base: Mapping[str, Any]  # config keyword arguments, realistic
    base_is: str  # the checkpoint whose shape `base` has, or "scaled"
    # "ids", "pixels", "audio", "seq2seq" (encoder and decoder ids) or "speech2seq" (mel features and decoder ids)
    inputs: str
    cache: bool = False  # a decoder: `use_cache` applies
    notes: str = ""
    base_inputs: Mapping[str, int] = field(
        default_factory=dict
    )  # sizes of the base inputs (default: batch 1, 128 tokens, 224 pixels)


# scaled: the architecture's own ratios at 12 layers of 768, where no small real checkpoint exists
_SCALED = dict(
    hidden_size=768,
    intermediate_size=2048,
    num_hidden_layers=12,
    num_attention_heads=12,
    vocab_size=32000,
    max_position_embeddings=2048,
)
_SMALL_DECODER = dict(
    hidden_size=64,
    intermediate_size=128,
    num_hidden_layers=2,
    num_attention_heads=4,
    num_key_value_heads=2,
    vocab_size=SMALL_VOCAB,
    max_position_embeddings=128,
)

ARCHITECTURES: tuple[Architecture, ...] = (
    Architecture(
        "gpt2",
        "GPT-2",
        "GPT2Config",
        "GPT2LMHeadModel",
        dict(n_layer=2, n_embd=64, n_head=4, n_positions=128, vocab_size=SMALL_VOCAB, bos_token_id=1, eos_token_id=2),
        {},
        "gpt2 (124M)",
        "ids",
        cache=True,
    ),
    Architecture(
        "bert",
        "BERT",
        "BertConfig",
        "BertModel",
        dict(hidden_size=64, num_hidden_layers=2, num_attention_heads=4, intermediate_size=128, vocab_size=SMALL_VOCAB),
        {},
        "bert-base-uncased (110M)",
        "ids",
    ),
    Architecture(
        "vit",
        "ViT",
        "ViTConfig",
        "ViTModel",
        dict(
            hidden_size=64,
            num_hidden_layers=2,
            num_attention_heads=4,
            intermediate_size=128,
            image_size=32,
            patch_size=8,
        ),
        {},
        "vit-base-patch16-224 (86M)",
        "pixels",
    ),
    Architecture(
        "llama",
        "Llama",
        "LlamaConfig",
        "LlamaForCausalLM",
        _SMALL_DECODER,
        dict(
            hidden_size=576,
            intermediate_size=1536,
            num_hidden_layers=30,
            num_attention_heads=9,
            num_key_value_heads=3,
            vocab_size=49152,
            max_position_embeddings=2048,
            tie_word_embeddings=True,
        ),
        "SmolLM-135M",
        "ids",
        cache=True,
    ),
    Architecture(
        "t5",
        "T5",
        "T5Config",
        "T5ForConditionalGeneration",
        dict(d_model=64, d_ff=128, d_kv=16, num_layers=2, num_decoder_layers=2, num_heads=4, vocab_size=SMALL_VOCAB),
        {},
        "t5-small (60M)",
        "seq2seq",
        cache=True,
    ),
    Architecture(
        "whisper",
        "Whisper",
        "WhisperConfig",
        "WhisperForConditionalGeneration",
        dict(
            d_model=64,
            encoder_layers=2,
            decoder_layers=2,
            encoder_attention_heads=4,
            decoder_attention_heads=4,
            encoder_ffn_dim=128,
            decoder_ffn_dim=128,
            num_mel_bins=16,
            max_source_positions=32,
            max_target_positions=32,
            vocab_size=SMALL_VOCAB,
            pad_token_id=0,
            bos_token_id=1,
            eos_token_id=2,
            decoder_start_token_id=1,
        ),
        {},
        "whisper-tiny (39M)",
        "speech2seq",
        cache=True,
        notes="its special tokens must lie inside the vocabulary",
        base_inputs=dict(mel_bins=80, frames=3000),
    ),
    Architecture(
        "distilbert",
        "DistilBERT",
        "DistilBertConfig",
        "DistilBertModel",
        dict(dim=64, n_layers=2, n_heads=4, hidden_dim=128, vocab_size=SMALL_VOCAB),
        {},
        "distilbert-base-uncased (66M)",
        "ids",
    ),
    Architecture(
        "roberta",
        "RoBERTa",
        "RobertaConfig",
        "RobertaModel",
        dict(hidden_size=64, num_hidden_layers=2, num_attention_heads=4, intermediate_size=128, vocab_size=SMALL_VOCAB),
        dict(
            vocab_size=50265,
            max_position_embeddings=514,
            type_vocab_size=1,
            pad_token_id=1,
            bos_token_id=0,
            eos_token_id=2,
        ),
        "roberta-base (125M)",
        "ids",
    ),
    Architecture(
        "bart",
        "BART",
        "BartConfig",
        "BartForConditionalGeneration",
        dict(
            d_model=64,
            encoder_layers=2,
            decoder_layers=2,
            encoder_attention_heads=4,
            decoder_attention_heads=4,
            encoder_ffn_dim=128,
            decoder_ffn_dim=128,
            vocab_size=SMALL_VOCAB,
            max_position_embeddings=128,
        ),
        dict(
            d_model=768,
            encoder_layers=6,
            decoder_layers=6,
            encoder_attention_heads=12,
            decoder_attention_heads=12,
            encoder_ffn_dim=3072,
            decoder_ffn_dim=3072,
        ),
        "bart-base (140M)",
        "seq2seq",
        cache=True,
    ),
    Architecture(
        "mistral",
        "Mistral",
        "MistralConfig",
        "MistralForCausalLM",
        {**_SMALL_DECODER, "sliding_window": 8},
        {**_SCALED, "num_key_value_heads": 4, "sliding_window": 4096},
        "scaled",
        "ids",
        cache=True,
        notes="a sliding window shorter than the small inputs, so that it masks",
    ),
    Architecture(
        "qwen2",
        "Qwen2",
        "Qwen2Config",
        "Qwen2ForCausalLM",
        _SMALL_DECODER,
        dict(
            hidden_size=896,
            intermediate_size=4864,
            num_hidden_layers=24,
            num_attention_heads=14,
            num_key_value_heads=2,
            vocab_size=151936,
            max_position_embeddings=32768,
            tie_word_embeddings=True,
        ),
        "Qwen2.5-0.5B (494M)",
        "ids",
        cache=True,
    ),
    Architecture(
        "gemma",
        "Gemma",
        "GemmaConfig",
        "GemmaForCausalLM",
        {**_SMALL_DECODER, "head_dim": 16},
        {**_SCALED, "num_key_value_heads": 1, "head_dim": 64},
        "scaled",
        "ids",
        cache=True,
    ),
    Architecture(
        "opt",
        "OPT",
        "OPTConfig",
        "OPTForCausalLM",
        dict(
            hidden_size=64,
            ffn_dim=128,
            num_hidden_layers=2,
            num_attention_heads=4,
            vocab_size=SMALL_VOCAB,
            max_position_embeddings=128,
            word_embed_proj_dim=64,
        ),
        {},
        "opt-125m",
        "ids",
        cache=True,
    ),
    Architecture(
        "phi",
        "Phi",
        "PhiConfig",
        "PhiForCausalLM",
        {k: v for k, v in _SMALL_DECODER.items() if k != "num_key_value_heads"},
        {**_SCALED, "intermediate_size": 3072},
        "scaled",
        "ids",
        cache=True,
        notes="partial rotary embedding",
    ),
    Architecture(
        "mixtral",
        "Mixtral (mixture of experts)",
        "MixtralConfig",
        "MixtralForCausalLM",
        {**_SMALL_DECODER, "num_local_experts": 4, "num_experts_per_tok": 2},
        {**_SCALED, "num_key_value_heads": 4, "num_local_experts": 8, "num_experts_per_tok": 2},
        "scaled",
        "ids",
        cache=True,
    ),
    Architecture(
        "gpt_neox",
        "GPT-NeoX",
        "GPTNeoXConfig",
        "GPTNeoXForCausalLM",
        {k: v for k, v in _SMALL_DECODER.items() if k != "num_key_value_heads"},
        dict(
            hidden_size=512,
            num_hidden_layers=6,
            num_attention_heads=8,
            intermediate_size=2048,
            vocab_size=50304,
            rotary_pct=0.25,
            max_position_embeddings=2048,
        ),
        "pythia-70m",
        "ids",
        cache=True,
    ),
    Architecture(
        "resnet",
        "ResNet",
        "ResNetConfig",
        "ResNetModel",
        dict(embedding_size=16, hidden_sizes=[16, 32], depths=[1, 1], layer_type="basic"),
        {},
        "resnet-50 (25M)",
        "pixels",
    ),
    Architecture(
        "convnext",
        "ConvNeXt",
        "ConvNextConfig",
        "ConvNextModel",
        dict(hidden_sizes=[16, 32], depths=[1, 1], num_stages=2),
        {},
        "convnext-tiny-224 (28M)",
        "pixels",
    ),
    Architecture(
        "swin",
        "Swin Transformer",
        "SwinConfig",
        "SwinModel",
        dict(image_size=32, patch_size=4, embed_dim=16, depths=[1, 1], num_heads=[2, 2], window_size=4),
        {},
        "swin-tiny-patch4-window7-224 (28M)",
        "pixels",
    ),
    Architecture(
        "wav2vec2",
        "Wav2Vec2",
        "Wav2Vec2Config",
        "Wav2Vec2Model",
        dict(
            hidden_size=64,
            num_hidden_layers=2,
            num_attention_heads=4,
            intermediate_size=128,
            conv_dim=(32, 32),
            conv_stride=(5, 2),
            conv_kernel=(10, 3),
            num_conv_pos_embeddings=16,
            num_conv_pos_embedding_groups=4,
        ),
        {},
        "wav2vec2-base (95M)",
        "audio",
    ),
)
NAMES = tuple(a.name for a in ARCHITECTURES)

_TEMPLATE = '''"""hf: {title} ({model}) built from its config with random weights, no download; {size} (transformers {version}).

Written by `divergence sweep {pattern}`.{notes}
"""
import torch
from transformers import {config}, {model}

config = {config}({kwargs})
{body}


def inputs():
    return ({inputs},)
'''  # noqa: E501  (the program's own docstring line)


def programs(selection: Selection) -> Sequence[ZooProgram]:
    if importlib.util.find_spec("transformers") is None:
        raise missing("transformers", "hf")
    version = importlib.metadata.version("transformers")
    size, cache = _flavour(selection.flavour)
    wanted = pick(NAMES, selection.items, "architecture") if selection.items else list(NAMES)
    by_name = {a.name: a for a in ARCHITECTURES}
    return [_program(by_name[name], size, cache, version) for name in wanted]


def _flavour(flavour: str) -> tuple[str, bool]:
    size, _, extra = flavour.partition("+")
    if size not in SIZES or extra not in ("", "cache"):
        raise ZooError(f"hf: the flavour is a size ({' or '.join(SIZES)}), optionally with +cache, not {flavour!r}")
    return size, extra == "cache"


def _program(arch: Architecture, size: str, cache: bool, version: str) -> ZooProgram:
    kwargs = dict(arch.small if size == "small" else arch.base)
    if arch.cache:
        kwargs["use_cache"] = cache
    described = (
        "small config (seconds per check)"
        if size == "small"
        else (
            f"the shape of {arch.base_is}"
            if arch.base_is != "scaled"
            else "its shape scaled to 12 layers of 768 (no small real checkpoint)"
        )
    )
    notes = []
    if arch.cache:
        notes.append(
            f"use_cache={cache}: "
            + (
                "its outputs carry the KV cache object."
                if cache
                else "its outputs carry no KV cache object (`+cache` writes the cached variant)."
            )
        )
    if arch.notes:
        notes.append(arch.notes[0].upper() + arch.notes[1:] + ".")
    body, call_inputs = _call(arch, size, kwargs)
    text = _TEMPLATE.format(
        title=arch.title,
        model=arch.model,
        size=described,
        version=version,
        pattern=f"hf:{size}{'+cache' if cache and arch.cache else ''}:{arch.name}",
        notes="".join(f"\n{n}" for n in notes),
        config=arch.config,
        kwargs=", ".join(f"{k}={v!r}" for k, v in kwargs.items()),
        body=body,
        inputs=call_inputs,
    )
    name = arch.name + ("+cache" if cache and arch.cache else "")
    info = {
        "architecture": arch.name,
        "size": size,
        "shape_of": arch.base_is if size == "base" else "small config",
        "use_cache": cache if arch.cache else None,
    }
    options = {} if size == "small" else {"timeout_s": 1800.0, "memory_limit_mb": 20000}
    return ZooProgram(name, text, AccuracyRule(SAME, tol=HARNESS_TOL), options, info)


def _call(arch: Architecture, size: str, kwargs: Mapping[str, Any]) -> tuple[str, str]:
    """The program's model and fn, and its inputs' expression."""
    small = size == "small"
    batch, tokens = (2, 16) if small else (1, 128)
    vocab = kwargs.get("vocab_size", SMALL_VOCAB if small else None)
    ids = f"torch.randint(0, {vocab if vocab else 'config.vocab_size'}, ({batch}, {tokens}))"
    decoder_ids = f"torch.randint(0, {vocab if vocab else 'config.vocab_size'}, ({batch}, {tokens // 2}))"
    if arch.inputs in ("ids", "pixels", "audio"):
        if arch.inputs == "pixels":
            side = kwargs.get("image_size", 32 if small else 224)
            value = f"torch.randn({batch}, 3, {side}, {side})"
        elif arch.inputs == "audio":
            value = f"torch.randn({batch}, {1600 if small else 16000})"
        else:
            value = ids
        return f"fn = {arch.model}(config).eval()", value
    if arch.inputs == "seq2seq":
        body = (
            f"model = {arch.model}(config).eval()\n\n\ndef fn(input_ids, decoder_input_ids):\n"
            "    return model(input_ids=input_ids, decoder_input_ids=decoder_input_ids)"
        )
        return body, f"{ids}, {decoder_ids}"
    mel_bins = kwargs.get("num_mel_bins", arch.base_inputs.get("mel_bins", 80))
    frames = (
        2 * kwargs["max_source_positions"] if "max_source_positions" in kwargs else arch.base_inputs.get("frames", 3000)
    )
    body = (
        f"model = {arch.model}(config).eval()\n\n\ndef fn(input_features, decoder_input_ids):\n"
        "    return model(input_features=input_features, decoder_input_ids=decoder_input_ids)"
    )
    return body, f"torch.randn({batch}, {mel_bins}, {frames}), {decoder_ids}"


SOURCE = Source(
    prefix="hf",
    summary=(
        "Hugging Face architectures from their configs, random weights: hf:[small|base][+cache][:ARCH,...]"
        f" ({', '.join(NAMES)})"
    ),
    flavours=("small", "base", "small+cache", "base+cache"),
    programs=programs,
    needs="transformers",
)
