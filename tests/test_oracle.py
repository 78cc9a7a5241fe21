"""Element-wise metrics and verdict rules, on hand-made tensors (no compile)."""

import math

import pytest
import torch

from engine.judge.metrics import bitwise_equal, compare_values, ordered_bits, ulp_distance
from engine.judge.oracle import judge_values
from engine.judge.verdicts import Symptom, Verdict


def judge(eager, compiled, ref=None, strict=False, factor=2.0):
    metrics, arrays = compare_values(eager, compiled, ref)
    return judge_values(metrics, strict=strict, factor=factor), metrics, arrays


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float32, torch.float64])
def test_next_float_is_one_ulp_in_every_float_dtype(dtype):
    x = torch.tensor([1.0, -3.5, 0.0, 1e-3], dtype=dtype)
    up = torch.nextafter(x, torch.full_like(x, math.inf))
    assert ulp_distance(x, up).tolist() == [1.0, 1.0, 1.0, 1.0]


def test_ulp_distance_across_zero_counts_both_sides():
    a = torch.tensor([torch.finfo(torch.float32).tiny * 0 + 1.4e-45])  # smallest subnormal
    assert ulp_distance(a, -a).item() == 2.0


def test_signed_zeros_are_zero_ulp_apart_but_not_bitwise_equal():
    pos, neg = torch.tensor([0.0]), torch.tensor([-0.0])
    assert ulp_distance(pos, neg).item() == 0 and not bitwise_equal(pos, neg).item()


def test_ordered_bits_is_monotonic():
    x = torch.linspace(-10, 10, 1001)
    assert bool((ordered_bits(x)[1:] > ordered_bits(x)[:-1]).all())


def test_nan_against_nan_is_zero_ulp_and_against_number_is_infinite():
    d = ulp_distance(torch.tensor([math.nan, math.nan]), torch.tensor([math.nan, 1.0]))
    assert d.tolist() == [0.0, math.inf]


def test_identical_tensors_match():
    x = torch.randn(100)
    assert judge(x, x.clone())[0].verdict is Verdict.MATCH


def test_one_ulp_is_benign_by_default_and_divergent_when_strict():
    x = torch.randn(64, dtype=torch.float64).float()
    y = x.clone()
    y[3] = torch.nextafter(y[3], torch.tensor(math.inf))
    ref = x.double()
    default, metrics, _ = judge(x, y, ref)
    assert (default.verdict, metrics.max_ulp, metrics.mismatches) == (Verdict.BENIGN, 1.0, 1)
    assert judge(x, y, ref, strict=True)[0].verdict is Verdict.DIVERGENT


def test_allclose_blind_signed_zero_is_divergent():
    j, m, _ = judge(torch.tensor([0.0, 1.0]), torch.tensor([-0.0, 1.0]), torch.tensor([0.0, 1.0], dtype=torch.float64))
    assert (j.verdict, j.symptoms, m.signed_zero_mismatches) == (Verdict.DIVERGENT, (Symptom.SIGNED_ZERO,), 1)


def test_a_zero_sign_the_reference_gives_neither_side_everywhere_is_evaluation_order_not_evidence():
    """batch norm's x * scale + shift: zeros of either sign, the float64 run siding with compiled at some and with
    eager at none: the zeros' signs are left out and the rest of the value is judged as usual."""
    r = torch.tensor([0.0, 0.0, 1e-30, 2.0], dtype=torch.float64)
    eager, compiled = torch.tensor([-0.0, -0.0, -0.0, 2.0]), torch.tensor([0.0, 0.0, 0.0, 2.0])
    j, m, _ = judge(eager, compiled, r)
    assert (j.verdict, m.signed_zero_mismatches, m.compiled_right, m.eager_right) == (Verdict.BENIGN, 3, 2, 0)
    assert "not evidence" in j.explanation
    far = torch.tensor([0.0, 0.0, 0.0, 2.5])  # beside them, a value far from the reference is still divergent
    assert judge(eager, far, r)[0].verdict is Verdict.DIVERGENT
    # a sign the reference gives eager at every differing zero (x + 0 with x = -0, remainder's sign) stays evidence
    signed = torch.tensor([-0.0, -0.0, -0.0, 2.0], dtype=torch.float64)
    assert judge(eager, compiled, signed)[0].verdict is Verdict.DIVERGENT


def test_new_nan_is_divergent_even_without_reference():
    j, m, _ = judge(torch.tensor([1.0, 2.0]), torch.tensor([1.0, math.nan]))
    assert (j.verdict, m.nan_mismatches, m.worst_index) == (Verdict.DIVERGENT, 1, (1,))


def test_nan_on_one_side_and_inf_on_the_other_is_one_element_judged_by_the_reference():
    # conv2d on inputs with infinities (sweep derive=special): where the float64 reference takes compiled's infinity
    # and eager gives NaN, compiled is right at every differing element: eager's kernel is the side that is off
    eager, compiled = torch.tensor([math.nan, 1.0, 2.0]), torch.tensor([math.inf, 1.0, 2.0])
    ref = torch.tensor([math.inf, 1.0, 2.0], dtype=torch.float64)
    j, m, _ = judge(eager, compiled, ref)
    assert (m.nan_mismatches, m.inf_mismatches, m.special_elements) == (1, 1, 1)
    assert (j.verdict, j.nearer.value) == (Verdict.EAGER_INACCURATE, "compiled"), j.explanation
    assert "1 element(s): 1 NaN on one side and infinite on the other" in j.explanation


def test_compiled_losing_a_nan_the_reference_and_eager_give_is_divergent_and_says_compiled_is_off():
    # a NaN of the float64 reference comes from an inf - inf or inf * 0 of the inputs: every order of evaluation gives
    # it, so a compiled infinity there is compiled's error
    eager, compiled = torch.tensor([math.nan, math.nan, 3.0]), torch.tensor([-math.inf, -4.5e19, 3.0])
    ref = torch.tensor([math.nan, math.nan, 3.0], dtype=torch.float64)
    j, m, _ = judge(eager, compiled, ref)
    assert m.special_elements == 2
    assert (j.verdict, j.nearer.value) == (Verdict.DIVERGENT, "eager"), j.explanation
    assert j.explanation.endswith("compiled is the side that is off"), j.explanation


def test_inf_sign_flip_is_divergent():
    assert judge(torch.tensor([math.inf]), torch.tensor([-math.inf]))[0].symptoms == (Symptom.INF,)


def test_compiled_far_worse_than_eager_against_fp64_is_divergent():
    ref = torch.randn(1000, dtype=torch.float64)
    eager = ref.float()
    compiled = (ref * (1 + 1e-3)).float()
    j, _, _ = judge(eager, compiled, ref)
    assert j.verdict is Verdict.DIVERGENT and "further from fp64" in j.explanation


def test_compiled_as_close_to_fp64_as_eager_is_benign():
    ref = torch.randn(1000, dtype=torch.float64)
    noise = torch.randn(1000, dtype=torch.float64) * 1e-7
    eager, compiled = (ref + noise).float(), (ref - noise).float()
    assert judge(eager, compiled, ref)[0].verdict is Verdict.BENIGN


def test_integer_difference_is_divergent():
    j, m, _ = judge(torch.tensor([1, 2, 3]), torch.tensor([1, 2, 4]))
    assert (j.verdict, m.max_abs) == (Verdict.DIVERGENT, 1.0)


def test_without_reference_tolerance_decides():
    x = torch.randn(10) + 3.0
    assert judge(x, x * (1 + 5e-7))[0].verdict is Verdict.BENIGN
    assert judge(x, x + 1.0)[0].verdict is Verdict.DIVERGENT


def test_bfloat16_arrays_are_stored_exactly_as_float32():
    x = torch.randn(8).bfloat16()
    _, _, arrays = judge(x, x.clone())
    assert arrays["eager"].dtype.name == "float32" and torch.equal(torch.from_numpy(arrays["eager"]).bfloat16(), x)


def test_complex_values_are_compared_as_pairs():
    z = torch.randn(4, dtype=torch.complex64)
    w = z.clone()
    w[1] = w[1] + 1j
    j, m, _ = judge(z, w)
    assert (j.verdict, m.mismatches) == (Verdict.DIVERGENT, 1)


def test_summation_order_noise_below_the_floor_is_benign_but_not_above():
    ref = torch.full((1,), 1000.0, dtype=torch.float64)
    eager = ref.float()
    ulp = 1000.0 * torch.finfo(torch.float32).eps
    assert judge(eager, (ref + 20 * ulp).float(), ref)[0].verdict is Verdict.BENIGN
    assert judge(eager, (ref + 80 * ulp).float(), ref)[0].verdict is Verdict.DIVERGENT
    assert judge(eager, (ref + 20 * ulp).float(), ref, factor=2.0)[1].max_ulp > 1


def test_the_low_precision_noise_floor_is_one_output_ulp_not_32():
    # bf16 values are computed in fp32 and rounded once: eager and compiled may round apart by one ULP
    ref = torch.linspace(1, 1.9, 256, dtype=torch.float64)
    exact = ref.bfloat16()
    off_by_one = torch.nextafter(exact, torch.full_like(exact, 2.0))
    four_apart = exact.float().add(4 * 2.0**-7).bfloat16()  # 4 ULPs at [1, 2): 32 bf16 ULPs would have hidden it
    # eager one step off where compiled is exact (compiled skipped a rounding): within the floor, and not one-sided
    assert judge(off_by_one, exact, ref)[0].verdict is Verdict.BENIGN
    assert judge(exact, four_apart, ref)[0].verdict is Verdict.DIVERGENT
