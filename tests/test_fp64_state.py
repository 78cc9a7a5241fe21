"""The fp64 reference without a float64 copy (engine/child/fp64.py) computes what the copy computes, bit for bit.

In-process, eager only: the mode against `casting.fp64_program` (copy.deepcopy(module).double()) on the same
cast inputs and seed.
"""

from __future__ import annotations

import torch

from engine.child import casting
from engine.child.fp64 import Fp64State
from engine.child.leaves import flatten, map_tensors


def _both(module: torch.nn.Module, *inputs: torch.Tensor) -> tuple[dict, dict, Fp64State]:
    """The module's output under the mode and on a float64 copy, as leaves by name."""
    args = map_tensors(inputs, casting.to_fp64_tensor)
    params = list(module.parameters())
    buffers = list(module.buffers())
    mode = Fp64State(params, buffers)
    torch.manual_seed(0)
    with torch.no_grad(), mode:
        cast = module(*args)
    copy = casting.fp64_program(module)
    torch.manual_seed(0)
    with torch.no_grad():
        copied = copy(*map_tensors(inputs, casting.to_fp64_tensor))
    return dict(flatten(cast)), dict(flatten(copied)), mode


def _identical(a: dict, b: dict) -> None:
    assert list(a) == list(b)
    for name in a:
        if isinstance(a[name], torch.Tensor):
            assert a[name].dtype == b[name].dtype == torch.float64 or a[name].dtype == b[name].dtype, name
            assert torch.equal(a[name], b[name]), name
        else:
            assert a[name] == b[name], name


class Branchy(torch.nn.Module):
    """Reads its weight's dtype, its transpose and `.data`, as model code does."""

    def __init__(self) -> None:
        super().__init__()
        self.weight = torch.nn.Parameter(torch.randn(8, 8, dtype=torch.bfloat16))
        self.register_buffer("scale", torch.full((8,), 0.5, dtype=torch.bfloat16))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.to(self.weight.dtype)  # float64 in the reference, as on the copy
        if self.weight.dtype == torch.bfloat16:  # the copy does not take this branch
            x = x.bfloat16()
        y = x @ self.weight.T + x @ self.weight.data
        self.scale.mul_(2)  # lands in the buffer's shadow
        return (y * self.scale).float() * self.scale.float()


def test_dtype_reads_views_and_data_compute_as_on_the_copy():
    torch.manual_seed(0)
    module = Branchy()
    weight, scale = module.weight.detach().clone(), module.scale.clone()
    cast, copied, mode = _both(module, torch.randn(4, 8))
    _identical(cast, copied)
    assert cast["out"].dtype == torch.float32  # the program's own explicit cast is kept
    assert torch.equal(module.weight, weight) and torch.equal(module.scale, scale)  # the originals are never written
    assert torch.equal(mode.shadow_of(module.scale), scale.double() * 2)


def test_batchnorm_in_training_updates_the_shadows_not_the_buffers():
    torch.manual_seed(0)
    bn = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3), torch.nn.BatchNorm2d(4)).train()
    before = {k: v.clone() for k, v in bn.state_dict().items()}
    x = torch.randn(2, 3, 8, 8)
    cast, copied, mode = _both(bn, x)
    _identical(cast, copied)
    copy = casting.fp64_program(bn)
    with torch.no_grad():
        copy(casting.to_fp64_tensor(x))
    for name, buffer in bn[1].named_buffers():
        assert torch.equal(mode.shadow_of(buffer), dict(copy[1].named_buffers())[name]), name
    assert all(torch.equal(v, before[k]) for k, v in bn.state_dict().items())
    assert set(mode.shadows) <= {id(b) for b in bn.buffers()}  # no parameter is kept in float64


def test_a_transformers_llama_in_bf16_gives_the_copy_s_logits_and_cache():
    import pytest

    transformers = pytest.importorskip("transformers")
    torch.manual_seed(0)
    config = transformers.LlamaConfig(
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        vocab_size=1000,
        max_position_embeddings=128,
    )
    model = transformers.LlamaForCausalLM(config).eval().to(torch.bfloat16)
    cast, copied, _ = _both(model, torch.randint(0, 1000, (2, 16)))
    assert "out.cache.layers[1].values" in cast
    _identical(cast, copied)


def test_sequence_factories_compute_in_float64_in_the_reference():
    # the dtype a program names for arange/linspace/logspace is the precision it wants, not a computation to
    # model: eager's bf16 arange gives 4096 for element 4,113, and a reference that kept bf16 agreed with it
    from engine.child.faithful import ExactSequences

    with ExactSequences():
        seq = torch.arange(0, 10000, dtype=torch.bfloat16)
        spaced = torch.linspace(-1, 1, 7, dtype=torch.float16)
        counted = torch.arange(5)
    assert seq.dtype == torch.float64 and seq[4113].item() == 4113.0
    assert spaced.dtype == torch.float64 and counted.dtype == torch.int64
    assert torch.arange(0, 10000, dtype=torch.bfloat16)[4113].item() != 4113.0  # outside the mode: bf16 as asked


def test_inputs_that_are_views_of_one_storage_stay_views_of_one_float64_storage():
    ring = torch.ones(8)
    state, window, apart = casting.fp64_tree((ring[:4], ring[2:6], torch.ones(3)))[:3]
    assert state.dtype == window.dtype == torch.float64
    state.mul_(2)  # the write through one window is seen through the other, as in eager (pytorch#139789)
    assert window.tolist() == [2.0, 2.0, 1.0, 1.0] and ring.tolist() == [1.0] * 8
    assert (state.stride(), window.storage_offset()) == ((1,), 2) and apart.untyped_storage() is not None
    assert apart.untyped_storage().data_ptr() != state.untyped_storage().data_ptr()
    odd = torch.arange(10.0)[::2]  # a strided input keeps its strides over its storage
    (wide,) = casting.fp64_tree((odd,))
    assert (wide.stride(), wide.tolist()) == ((2,), [0.0, 2.0, 4.0, 6.0, 8.0])
