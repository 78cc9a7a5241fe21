"""The element rule for bf16/fp16 leaves (engine/judge/elements.py), on hand-made tensors (no compile)."""

from __future__ import annotations

import dataclasses
import math

import pytest
import torch

from engine.judge import elements, metrics
from engine.judge.metrics import operands, value_metrics
from engine.judge.oracle import judge_values
from engine.judge.verdicts import Verdict
from tests import reference_metrics


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_rounding_once_is_correct_where_rounding_through_fp32_is_not(dtype):
    # every value of the dtype, and the midpoints between neighbours nudged by a quarter of an fp64 ulp either way
    every = torch.arange(-(2**15), 2**15, dtype=torch.int32).to(torch.int16).view(dtype)
    every = every[torch.isfinite(every)].to(torch.float64).unique()
    mid = (every[1:] + every[:-1]) / 2
    probes = torch.cat([every, mid, torch.nextafter(mid, mid + 1), torch.nextafter(mid, mid - 1)])
    probes = probes[probes.abs() < torch.finfo(dtype).max]
    mine = elements.round_once(probes, dtype)
    assert torch.equal(mine, reference_metrics.correctly_rounded(probes, dtype))
    if dtype is torch.bfloat16:  # r.to(bf16) rounds twice, via fp32: the reason for round_once
        assert not torch.equal(mine, probes.to(dtype).to(torch.float64))


def test_the_binomial_tail_equals_the_summed_probabilities():
    def summed(k: int, n: int, p: float) -> float:
        terms = [
            math.lgamma(n + 1)
            - math.lgamma(j + 1)
            - math.lgamma(n - j + 1)
            + j * math.log(p)
            + (n - j) * math.log1p(-p)
            for j in range(k, n + 1)
        ]
        top = max(terms)
        return (top + math.log(sum(math.exp(t - top) for t in terms))) / math.log(10)

    for k, n, p in [
        (108, 108, 0.5),
        (18, 18, 0.5),
        (6000, 11453, 0.5),
        (40, 43, 0.3),
        (3, 4, 0.5),
        (20, 100, 0.1),
        (61365, 64317, 0.5),
    ]:
        assert elements.log10_binomial_tail(k, n, p) == pytest.approx(summed(k, n, p), abs=1e-6)


def scalar_fault(shape: tuple[int, ...] = (64, 96), seed: int = 0) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """remainder(t, 0.7) on bf16, as Inductor computes it (0.7 kept in fp32) against eager (0.7 rounded to bf16)."""
    g = torch.Generator().manual_seed(seed)
    t = (torch.rand(shape, generator=g, dtype=torch.float64) * 1.3).bfloat16()
    t = torch.where(t == 0.69921875, torch.full_like(t, 0.6875), t)  # no period wrap: the one-step part alone
    eager = torch.remainder(t, 0.7)
    compiled = torch.remainder(t.float(), 0.7).bfloat16()
    reference = torch.remainder(t.double(), float(torch.tensor(0.7, dtype=torch.bfloat16)))  # eager's semantics in fp64
    return eager, compiled, reference


def reassociation(shape: tuple[int, ...] = (64, 96), seed: int = 0) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Each side's own accumulated error (a third of a bf16 step, independent) before its one rounding: both sides
    inexact now and then, neither leaning, as in a deep bf16 program."""
    g = torch.Generator().manual_seed(seed)
    reference = torch.randn(shape, generator=g, dtype=torch.float64)
    step = elements.spacing(reference, torch.bfloat16)
    eager = (reference + torch.randn(shape, generator=g, dtype=torch.float64) * step / 3).bfloat16()
    compiled = (reference + torch.randn(shape, generator=g, dtype=torch.float64) * step / 3).bfloat16()
    return eager, compiled, reference


def test_a_one_step_scalar_fault_is_divergent_and_the_sentence_says_which_elements():
    eager, compiled, reference = scalar_fault()
    m = value_metrics(eager, compiled, reference)
    j = judge_values(m, strict=False, factor=2.0)
    c = m.elements
    assert c is not None and c.k1 > 100 and c.k2 == 0 and c.k1_up == 0  # below eager wherever it differs
    assert m.compiled_ref_max is not None and m.compiled_ref_max < 0.001  # far inside the leaf-wide floor (0.0055)
    assert j.verdict is Verdict.DIVERGENT
    assert f"compiled is off in {c.k1:,} of {m.numel:,} elements where eager is exactly right" in j.explanation
    assert (
        f"all {c.k1:,} are below eager's" in j.explanation
        and "in no element is compiled exactly right where eager is wrong" in j.explanation
    )


def test_reassociation_noise_in_bf16_stays_benign():
    eager, compiled, reference = reassociation()
    m = value_metrics(eager, compiled, reference)
    assert m.mismatches > 50 and m.elements is not None and m.elements.k1 > 0
    assert elements.find(m.elements) is None
    assert judge_values(m, strict=False, factor=2.0).verdict is Verdict.BENIGN


def test_one_row_off_by_one_step_is_found_by_the_region_test():
    eager, compiled, reference = reassociation((256, 128), seed=1)
    compiled = compiled.clone()
    compiled[17] = torch.nextafter(eager[17], torch.full_like(eager[17], math.inf))  # one row one step up from eager
    m = value_metrics(eager, compiled, reference)
    found = elements.find(m.elements)
    assert found is not None and "row" in found.tests and "row [17]" in found.sentence


def test_the_chunked_counts_equal_the_whole_tensor_ones(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(metrics, "CHUNK_ELEMENTS_CPU", 1000)  # many chunks, rows split across them
    eager, compiled, reference = reassociation((48, 40, 96), seed=2)
    compiled = compiled.clone()
    compiled[5, 7] = torch.nextafter(eager[5, 7], torch.full_like(eager[5, 7], -math.inf))
    compiled[..., 3] = torch.nextafter(eager[..., 3], torch.full_like(eager[..., 3], math.inf))
    compiled[0, 0, 0] = math.nan  # not counted: a NaN is structural
    mine = metrics.measure(operands(eager, compiled, reference)).elements
    assert mine is not None and mine.regions and mine.k2 > 0
    assert mine == reference_metrics.element_counts(eager, compiled, reference)


def test_fp32_leaves_get_no_element_counts():
    eager, compiled, reference = reassociation()
    assert value_metrics(eager.float(), compiled.float(), reference).elements is None


def test_a_fault_where_eager_is_never_exact_is_found_by_distance_and_said_so():
    # eager one step off everywhere (it rounded an input), compiled two steps off the same way in a third of them
    g = torch.Generator().manual_seed(3)
    reference = torch.rand(4096, generator=g, dtype=torch.float64) + 1
    exact = reference.bfloat16()
    eager = torch.nextafter(exact, torch.full_like(exact, 3.0))
    compiled = eager.clone()
    compiled[::3] = torch.nextafter(eager[::3], torch.full_like(eager[::3], 3.0))
    m = value_metrics(eager, compiled, reference)
    found = elements.find(m.elements)
    assert m.elements is not None and m.elements.k1 == 0 and found is not None and found.tests == ("distance",)
    assert found.sentence.startswith(
        f"over all {m.mismatches:,} differing elements of 4,096, compiled is further from the reference than eager in {m.mismatches:,}"
    )


def test_a_nearly_balanced_leaf_is_not_flagged_however_many_elements_it_has():
    # hf:base Llama in bf16 (a real vocabulary, 6.3M logits): one hidden state feeds a whole row, so its
    # elements are not independent and tiny imbalances reach any probability; a fault is one-sided
    share = 670_781 / (670_781 + 646_509)
    row = elements.Region(
        "row", (0, 19), 49_152, 5_895, 4_693, 64, elements.log10_binomial_tail(5_895, 10_588, share) + math.log10(64)
    )
    balanced = elements.ElementCounts(
        "bfloat16", 6_291_456, 670_781, 646_509, 2_845_679, 2_728_308, 335_000, 335_000, 0.5, 2470.0, None, (row,)
    )
    assert (
        balanced.sign_log10p < elements.SIGN_LOG10P
        and balanced.worse_log10p < elements.SIGN_LOG10P
        and row.log10p < elements.REGION_LOG10P
    )
    assert elements.find(balanced) is None
    one_sided = elements.Region(
        "row", (0, 19), 49_152, 12_000, 4_693, 64, elements.log10_binomial_tail(12_000, 16_693, share) + math.log10(64)
    )
    assert elements.find(dataclasses.replace(balanced, regions=(one_sided,))).tests == ("row",)
