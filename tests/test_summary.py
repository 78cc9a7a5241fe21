"""The chunked, on-device comparison against the whole-tensor one it replaced, and the check's summaries
against what the app computes from the stored arrays (hand-made tensors, no compile)."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest
import torch

from app.web import heatmap as hm
from engine.judge import metrics
from engine.judge.metrics import operands
from engine.judge.summary import summarize
from tests import reference_metrics

RMS_FIELDS = {"ref_rms", "eager_ref_rms", "compiled_ref_rms"}  # sums in another order: relative 1e-12


def noisy(
    shape: tuple[int, ...], dtype: torch.dtype = torch.float32, seed: int = 0
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Reassociation-like noise on a third of the elements, one bad region, and a NaN, an inf, a signed zero,
    a NaN on both sides and ties of the worst values across chunks."""
    g = torch.Generator().manual_seed(seed)
    ref = torch.randn(shape, generator=g, dtype=torch.float64)
    eager = ref.to(dtype)
    compiled = eager.clone()
    flat, eflat = compiled.view(-1), eager.view(-1)
    if dtype.is_floating_point:
        moved = torch.rand(flat.numel(), generator=g) < 0.3
        flat[moved] = torch.nextafter(flat[moved], torch.tensor(math.inf, dtype=dtype))
        compiled[tuple(slice(s // 3, s // 3 + max(1, s // 20)) for s in shape)] *= 1.01
        flat[7], flat[13], flat[-5] = math.nan, math.inf, math.inf
        eflat[11], flat[11] = 0.0, -0.0
        eflat[17] = flat[17] = math.nan
        eflat[-3], flat[-3] = 1.0, 2.0  # the same large error at both ends: the first must win
        eflat[3], flat[3] = 1.0, 2.0
    else:
        flat[::7] += 1
    return eager, compiled, ref


CASES = {  # shape, dtype, with an fp64 reference
    "2-D": ((300, 310), torch.float32, True),
    "2-D without fp64": ((300, 310), torch.float32, False),
    "3-D": ((3, 200, 290), torch.float32, True),  # the slice through the worst element, pooled after the first pass
    "1-D": ((70_000,), torch.float32, True),
    "bf16": ((300, 300), torch.bfloat16, True),
    "fp16": ((260, 260), torch.float16, True),
    "fp64": ((250, 260), torch.float64, True),
    "int": ((300, 300), torch.int64, False),
}


@pytest.fixture(autouse=True)
def small_chunks(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(metrics, "CHUNK_ELEMENTS_CPU", 4096)  # many chunks, on the thread pool


@pytest.mark.parametrize("name", list(CASES))
def test_metrics_equal_the_whole_tensor_reference_and_summaries_what_the_app_computes(name: str):
    eager, compiled, ref = noisy(*CASES[name][:2])
    ref = ref if CASES[name][2] and eager.dtype.is_floating_point else None
    dtype = str(eager.dtype).removeprefix("torch.")
    new, summary = summarize(operands(eager, compiled, ref), dtype)
    old, arrays = reference_metrics.compare_values(eager, compiled, ref)
    for field in dataclasses.fields(old):
        a, b = getattr(old, field.name), getattr(new, field.name)
        if field.name in RMS_FIELDS and a is not None:
            assert b == pytest.approx(a, rel=1e-12), field.name
        else:
            assert a == b, field.name
    stored = {k: v for k, v in arrays.items() if k != "ulp"}  # what a run keeps: values only
    shape = tuple(summary["shape"])
    spec = hm.default_spec(shape, new.worst_index)
    assert hm.summary_metrics(summary) == hm.available_metrics(stored)
    for metric in hm.available_metrics(stored):
        mine = hm.summary_pooled(summary, metric, spec, shape)
        theirs = hm.heatmap(stored, metric, spec, dtype=dtype).pooled
        assert mine is not None and theirs.pooled and mine.block == theirs.block and mine.shape == theirs.shape
        assert np.array_equal(mine.value, theirs.value, equal_nan=True), metric
        assert np.array_equal(mine.worst_row, theirs.worst_row) and np.array_equal(mine.worst_col, theirs.worst_col), (
            metric
        )
        sliced = hm.take_slice(stored, spec)
        for key, values in (mine.hover or {}).items():
            assert np.array_equal(values, sliced[key][mine.worst_row, mine.worst_col], equal_nan=True), (metric, key)
        assert repr(hm.summary_worst(summary, metric, shape, dtype)) == repr(
            hm.worst_elements(stored, metric, 10, dtype)
        ), metric  # NaN values too
    assert np.array_equal(
        summary["histogram"], hm.ulp_counts(arrays["ulp"], hm.bits_identical(arrays["eager"], arrays["compiled"]))
    )


def test_a_small_leaf_has_no_pooled_map_but_its_worst_elements():
    eager, compiled, ref = noisy((8, 8))
    _, summary = summarize(operands(eager, compiled, ref), "float32")
    assert "pool.slice" not in summary and summary["worst.abs.position"].size == 10
