"""The element rule for bf16/fp16 values (engine/judge/elements.py) and the check's false-alarm budget
(engine/judge/family.py), on hand-made tensors (no compile)."""

from __future__ import annotations

import math

import pytest
import torch

from engine.judge import elements, family, metrics
from engine.judge.evidence import Test as ElementTest
from engine.judge.metrics import measure, operands, value_metrics
from engine.judge.oracle import judge_values
from engine.judge.verdicts import Nearer, Verdict
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


@pytest.mark.parametrize("seed", range(4))
def test_the_sign_flip_bound_is_never_below_the_resampled_tail(seed: int):
    # block counts of every shape the rule meets: a few heavy blocks, many light ones, mixed signs
    g = torch.Generator().manual_seed(seed)
    x = torch.cat([torch.randint(-3, 6, (200,), generator=g), torch.randint(-40, 90, (8,), generator=g)])
    flips = torch.randint(0, 2, (20_000, x.numel()), generator=g) * 2 - 1
    resampled = float(((flips * x).sum(1) >= x.sum()).to(torch.float64).mean())
    assert resampled <= 10 ** elements.sign_flip_log10p(x)


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
    assert j.verdict is Verdict.DIVERGENT and j.nearer is Nearer.EAGER
    assert f"compiled is off in {c.k1:,} of {m.numel:,} elements where eager is exactly right" in j.explanation
    assert (
        f"all {c.k1:,} are below eager's" in j.explanation
        and "in no element is compiled exactly right where eager is wrong" in j.explanation
    )
    # what it is if the check's budget does not keep the tests: benign, said without the element rule
    assert j.fallback is not None and j.fallback.verdict is Verdict.BENIGN


def test_reassociation_noise_in_bf16_stays_benign():
    eager, compiled, reference = reassociation()
    m = value_metrics(eager, compiled, reference)
    assert m.mismatches > 50 and m.elements is not None and m.elements.k1 > 0
    assert family.fired(m.elements.tests, family.BUDGET) == ()
    assert judge_values(m, strict=False, factor=2.0).verdict is Verdict.BENIGN


def test_a_tie_on_a_rounding_midpoint_counts_for_neither_side():
    # a hand-written RMSNorm in bf16: 20 of 4M references sat exactly halfway between two bf16 values; eager's
    # tie-break was counted as "exactly right" and the exactness test fired on them
    g = torch.Generator().manual_seed(0)
    base = (torch.rand(4096, generator=g, dtype=torch.float64) + 1).bfloat16().to(torch.float64)
    reference = base + elements.spacing(base, torch.bfloat16) / 2  # every one a midpoint
    eager = elements.round_once(reference, torch.bfloat16).bfloat16()  # ties to even
    step = elements.spacing(base, torch.bfloat16)
    compiled = torch.where(eager.to(torch.float64) == base, base + step, base).bfloat16()  # the other neighbour
    m = value_metrics(eager, compiled, reference)
    assert m.mismatches == 4096 and m.elements is not None
    assert m.elements.k1 == 0 and m.elements.k2 == 0 and m.elements.ties == 4096
    assert judge_values(m, strict=False, factor=2.0).verdict is Verdict.BENIGN


def test_the_float32_twin_makes_the_near_ties_of_an_ill_conditioned_gelu_ties():
    # bf16 gelu, std 2 (issue #31): the flagged elements sit 0.011 steps from a midpoint, where 1 + erf(x / sqrt 2)
    # cancels and the float32 error of either implementation is thousands of float32 ULPs
    from engine.child.opmath import Float32Arithmetic

    x = (torch.randn(512, 1024, generator=torch.Generator().manual_seed(0)) * 2).bfloat16()
    eager = torch.nn.functional.gelu(x)
    # what compiled's kernel does: the same formula with a different fp32 erf (here: via erfc, rounded to fp32)
    compiled = (0.5 * x.float() * torch.special.erfc(-x.double() / math.sqrt(2)).float()).bfloat16()
    reference = torch.nn.functional.gelu(x.double())
    with Float32Arithmetic():
        twin = torch.nn.functional.gelu(x.double())
    assert twin.dtype == torch.float64 and not torch.equal(twin, reference)  # computed in float32
    without = measure(operands(eager, compiled, reference)).elements
    counted = measure(operands(eager, compiled, reference, twin)).elements
    assert without is not None and counted is not None and counted.twin and not without.twin
    assert counted.ties >= without.ties > 0
    for elements_ in (without, counted):
        assert family.fired(elements_.tests, family.BUDGET) == ()


def test_a_small_value_off_by_less_than_a_step_is_a_tie_and_one_off_by_many_is_not():
    # fp16 elu (issue #31): compiled computes exp(x) - 1, eager expm1; near x = 0 the float32 error of exp(x) - 1 is
    # ULPs of 1, a quarter of an fp16 step of the result, and it flips roundings at the midpoints only: noise
    x = (torch.randn(1024, 1024, generator=torch.Generator().manual_seed(1))).half()
    eager = torch.nn.functional.elu(x)
    x32 = x.float()
    compiled = torch.where(x32 > 0, x32, torch.exp(x32) - 1).half()
    reference = torch.nn.functional.elu(x.double())
    m = value_metrics(eager, compiled, reference)
    assert m.mismatches > 10 and judge_values(m, strict=False, factor=2.0).verdict is Verdict.BENIGN
    # a bf16 sigmoid gate as 1 - sigmoid(-x) for x << 0: the same float32 error of ULPs of 1, but the values are 1e-8
    # and compiled's are many of their own steps off (or 0): not a rounding at a midpoint, a wrong value. (In fp16 the
    # same values are subnormal, one step is 6e-8, and the same error is one step: noise, as elu's is.)
    h = (torch.randn(256, 128, generator=torch.Generator().manual_seed(2)) * 16).float()
    eager = torch.sigmoid(h).bfloat16()
    compiled = torch.where(h < 0, 1 - torch.sigmoid(-h), torch.sigmoid(h)).bfloat16()
    m = value_metrics(eager, compiled, torch.sigmoid(h.double()))
    assert judge_values(m, strict=False, factor=2.0).verdict is Verdict.DIVERGENT


def test_where_the_float32_twin_measures_an_error_of_steps_a_side_that_many_steps_off_is_a_tie():
    # fp16 gelu at std 2 (issue #31): in the tail 1 + erf(x / sqrt 2) cancels, and another float32 erf (here through
    # erfc) moves the result by several fp16 steps. The twin (ATen's float32 run) measures that error, so both sides
    # within it of the reference are ties; without a twin the floor's guessed scale does not reach, and it fires
    x = (torch.randn(1024, 1024, generator=torch.Generator().manual_seed(4)) * 2).half()

    def gelu(t: torch.Tensor, erf) -> torch.Tensor:
        return 0.5 * t * (1 + erf(t * 0.7071067811865476))

    x32 = x.float()
    eager, compiled = gelu(x32, torch.erf).half(), gelu(x32, lambda z: 1 - torch.erfc(z)).half()
    reference, twin = gelu(x.double(), torch.erf), gelu(x32, torch.erf).double()
    with_twin = measure(operands(eager, compiled, reference, twin))
    assert with_twin.elements is not None and with_twin.elements.k1 == 0 and with_twin.elements.ties > 1000
    assert judge_values(with_twin, strict=False, factor=2.0).verdict is Verdict.BENIGN
    assert (
        judge_values(value_metrics(eager, compiled, reference), strict=False, factor=2.0).verdict is Verdict.DIVERGENT
    )


def test_the_direction_test_needs_its_effect_against_the_other_side():
    # the bf16 gelu: 2,091 elements where compiled is off and all below eager, but 29,324 the other way
    # round: compiled is the more often exact side, the benign signature
    counts = elements.ElementCounts("bfloat16", 4_194_304, 2_091, 29_324, 2_091, 43_261, 0, 0, 0.511, 0.511, None)
    lean = ElementTest("direction", -300.0, 4, effect=counts.k1 >= elements.ONE_SIDED * counts.k2)
    assert not lean.effect and family.fired((lean,), family.BUDGET) == ()


def test_a_column_where_compiled_is_off_is_found_and_a_column_where_it_is_rarely_exact_is_not():
    eager, compiled, reference = reassociation((256, 128), seed=1)
    compiled = compiled.clone()
    compiled[:, 17] = torch.nextafter(eager[:, 17], torch.full_like(eager[:, 17], math.inf))  # one column one step up
    m = value_metrics(eager, compiled, reference)
    j = judge_values(m, strict=False, factor=2.0)
    assert (
        j.verdict is Verdict.DIVERGENT
        and "column" in j.explanation
        and "column 17 of the last dimension" in j.explanation
    )
    # log_softmax in bf16 (issue #31): compiled exact in 453,788 elements, eager in 19; a column holding 8 of the
    # 19 must not fire against a leaf that favours compiled
    eager, compiled, reference = reassociation((256, 128), seed=2)
    exact = elements.round_once(reference, torch.bfloat16).bfloat16()
    compiled = exact.clone()  # compiled exact everywhere eager is not...
    eager = torch.nextafter(exact, torch.full_like(exact, math.inf))  # ...eager one step up everywhere
    eager[:8, 5], compiled[:8, 5] = (
        exact[:8, 5],
        torch.nextafter(exact[:8, 5], torch.full_like(exact[:8, 5], -math.inf)),
    )
    m = value_metrics(eager, compiled, reference)
    assert m.elements is not None and m.elements.k1 == 8 and m.elements.k2 > 30_000
    column = m.elements.test("column")
    assert column is not None and not column.effect
    assert judge_values(m, strict=False, factor=2.0).verdict is not Verdict.DIVERGENT


def test_blocks_that_flip_together_are_one_piece_of_evidence():
    # 64 rows of 1,000 elements, each row wholly "compiled off" or wholly "eager off" (one hidden state per row, as
    # a row of logits): counted element by element a binomial tail would be astronomically small; by rows it is not
    g = torch.Generator().manual_seed(4)
    reference = torch.rand(64, 1000, generator=g, dtype=torch.float64) + 1
    exact = elements.round_once(reference, torch.bfloat16).bfloat16()
    off = torch.nextafter(exact, torch.full_like(exact, 3.0))
    compiled_off = torch.zeros(64, 1, dtype=torch.bool)
    compiled_off[:45] = True  # 45 rows against 19: k1 : k2 = 2.4, past the effect
    eager = torch.where(compiled_off, exact, off)
    compiled = torch.where(compiled_off, off, exact)
    m = value_metrics(eager, compiled, reference)
    c = m.elements
    assert c is not None and c.k1 > 44_900 and c.k2 > 18_900 and c.blocks == 64  # a few near-ties aside
    exactness = c.test("exactness")
    assert exactness is not None and exactness.effect and exactness.log10p > -3  # z = 26 / 8 rows' worth
    assert judge_values(m, strict=False, factor=2.0).verdict is not Verdict.DIVERGENT


def test_the_chunked_counts_equal_the_whole_tensor_ones(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(metrics, "CHUNK_ELEMENTS_CPU", 1000)  # many chunks, rows split across them
    eager, compiled, reference = reassociation((48, 40, 96), seed=2)
    compiled = compiled.clone()
    compiled[5, 7] = torch.nextafter(eager[5, 7], torch.full_like(eager[5, 7], -math.inf))
    compiled[..., 3] = torch.nextafter(eager[..., 3], torch.full_like(eager[..., 3], math.inf))
    compiled[0, 0, 0] = math.nan  # not counted: a NaN is structural
    mine = metrics.measure(operands(eager, compiled, reference)).elements
    theirs = reference_metrics.element_counts(eager, compiled, reference)
    assert mine is not None and mine.k2 > 0 and mine.column is not None
    assert [t.name for t in mine.tests] == [t.name for t in theirs.tests]
    for a, b in zip(mine.tests, theirs.tests, strict=True):
        assert (a.multiplicity, a.effect) == (b.multiplicity, b.effect) and a.log10p == pytest.approx(
            b.log10p, abs=1e-9
        )
    assert mine == theirs.__class__(**{**theirs.__dict__, "tests": mine.tests})


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
    assert m.elements is not None and m.elements.k1 == 0
    assert [t.name for t in family.fired(m.elements.tests, family.BUDGET)] == ["distance"]
    j = judge_values(m, strict=False, factor=2.0)
    assert j.verdict is Verdict.DIVERGENT
    assert f"compiled is further from the reference than eager in {m.mismatches:,}" in j.explanation


def test_the_budget_is_split_over_every_value_and_stage_of_the_check():
    strong = ElementTest("exactness", -7.0, 1, True)  # fires alone (threshold log10(1e-3 / 4) = -3.6) and among 1,000
    weak = ElementTest("exactness", -4.0, 1, True)  # fires alone, not among 1,000 values
    alone = family.decide([family.Item("out", family.Stage.OUTPUT, (weak,))])
    assert alone.fired("out") == (weak,) and alone.divergent
    many = [family.Item(f"node {i}", family.Stage.INSIDE, (weak,)) for i in range(1000)]
    crowd = family.decide([family.Item("out", family.Stage.OUTPUT, (strong,)), *many])
    assert crowd.fired("out") == (strong,) and not any(crowd.fired(f"node {i}") for i in range(1000))
    assert sum(crowd.shares.values()) == pytest.approx(family.BUDGET)
    assert crowd.share("out") == pytest.approx(family.BUDGET * family.OUTPUT_SHARE)
    without_effect = ElementTest("exactness", -50.0, 1, False)
    assert family.decide([family.Item("out", family.Stage.OUTPUT, (without_effect,))]).divergent is False
    with pytest.raises(ValueError, match="unique"):
        family.decide([family.Item("a", family.Stage.OUTPUT, (weak,)), family.Item("a", family.Stage.INSIDE, (weak,))])


def test_a_test_of_many_hypotheses_pays_for_each():
    one = ElementTest("column", -5.0, 1, True)
    many = ElementTest("column", -5.0, 4096, True)
    assert family.fired((one,), family.BUDGET) == (one,) and family.fired((many,), family.BUDGET) == ()


def test_a_fault_in_consecutive_elements_of_a_short_value_keeps_its_power():
    # the event encoder's phase (4 sequences of 96 sorted times): the fault sits where t >= 0.7, in the last third of
    # each row; with fewer rows than MIN_BLOCKS each element is its own block, so a run of faulty neighbours is not
    # one piece of evidence
    g = torch.Generator().manual_seed(5)
    t = (torch.rand(4, 96, generator=g, dtype=torch.float64) * 1.3).sort(-1).values.bfloat16()
    t = torch.where(t == 0.69921875, torch.full_like(t, 0.6875), t)
    eager = torch.remainder(t, 0.7)
    compiled = torch.remainder(t.float(), 0.7).bfloat16()
    reference = torch.remainder(t.double(), float(torch.tensor(0.7, dtype=torch.bfloat16)))
    m = value_metrics(eager, compiled, reference)
    assert m.elements is not None and m.elements.blocks == 384 and m.elements.k1 > 50
    assert judge_values(m, strict=False, factor=2.0, budget=family.BUDGET / 2).verdict is Verdict.DIVERGENT
