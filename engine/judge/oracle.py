"""The verdict rules: from measured differences to match / benign / eager-inaccurate / divergent, with the numbers.

Invariants the rules keep:
- `match` means bit-identical (NaN payloads and signed zeros included) and nothing else.
- Any structural difference (shape, dtype, stride, NaN/inf/signed-zero pattern, one-sided mutation,
  output structure) is `divergent`, in default and strict mode alike, unless a reference shows compiled on
  the exact side at every differing element: then `eager-inaccurate`. The same holds for integer values.
- Finite value drift is judged three-way against an fp64 reference: compiled is `benign` while it is no
  further from the reference than `factor` times eager's distance plus a noise floor, both in RMS and in
  the worst element; the mirror of that rule (eager beyond `factor` times compiled's plus the floor) is
  `eager-inaccurate`: compiled is nearer the exact value.
- A bf16/fp16 value the leaf-wide rule calls noise is still `divergent` when a test of the element rule
  (engine/judge/elements.py) finds compiled one-sided beyond the check's false-alarm budget; the budget is
  the whole check's (engine/judge/family.py), so a value judged alone gets a provisional verdict, and the
  Judgement carries what it becomes if the check's decision drops its tests (`fallback`).
- Every judged value says which side is nearer the exact value (`nearer`).
- `strict` turns every bit difference into `divergent`.

docs/oracle.md gives the reasoning and the figures measured by benchmarks/oracle_calibration.py.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Any

from engine.judge import elements, family
from engine.judge.evidence import Fallback, Test
from engine.judge.metrics import ValueMetrics
from engine.judge.verdicts import Nearer, Symptom, Verdict, Witness
from engine.judge.witness import FaithfulReference

FP32_EPS = 2.0**-23  # bf16/fp16 ops compute in fp32 (opmath): their reassociation noise is fp32's
OUTPUT_ROUNDINGS = 1.0  # ...and each side then rounds once to the output dtype: at most one output ULP apart


@dataclass(frozen=True)
class Judgement:
    verdict: Verdict
    symptoms: tuple[Symptom, ...]
    explanation: str
    witness: Witness | None = None
    nearer: Nearer | None = None
    tests: tuple[Test, ...] = ()  # the element rule's tests, for the check-level decision
    fallback: Fallback | None = None  # set when the verdict came from the element rule alone


EAGER_SIDE = "eager's kernel is less accurate here; compiled is nearer the exact value"


def noise_floor_scale(m: ValueMetrics, noise_ulps: float) -> float:
    """The noise floor per unit of the output's magnitude, in the precision the computation ran in.

    fp32/fp64 outputs: `noise_ulps` ULPs of their dtype. bf16/fp16 outputs: `noise_ulps` fp32 ULPs (the opmath
    the values were computed in) plus one ULP of the output dtype (the one rounding each side performs).
    """
    if m.low_precision:
        return noise_ulps * FP32_EPS + OUTPUT_ROUNDINGS * m.eps
    return noise_ulps * m.eps


def judge_values(
    m: ValueMetrics,
    *,
    strict: bool,
    factor: float,
    noise_ulps: float = 32.0,
    faithful: FaithfulReference | None = None,
    budget: float = family.BUDGET,
) -> Judgement:
    """Judge two same-shaped, same-dtype tensors from their metrics; `faithful` when `m`'s reference is the faithful
    one; `budget`: the share of the false-alarm budget this value's element tests may use (all of it, judged alone)."""
    if m.mismatches == 0:
        return Judgement(Verdict.MATCH, (), f"bit-identical over {m.numel} element(s)")
    where = _worst_at(m)
    special = _special_value_symptoms(m)
    if special == (Symptom.SIGNED_ZERO,) and not strict and _zero_signs_are_order(m):
        return _beside_zero_signs(m, factor, noise_ulps, faithful, budget)
    if special:
        return _special_values(m, special, where, strict)
    if m.exact_dtype:
        what = f"{m.mismatches} of {m.numel} exact (integer/bool) element(s) differ, max abs {m.max_abs:g}{where}"
        return _by_reference(m, (Symptom.VALUE,), what, m.mismatches, strict)
    drift = f"{m.mismatches} of {m.numel} element(s) differ, max {m.max_ulp:g} ULP, max abs {m.max_abs:.3g}"
    if m.max_ulp == 0:
        payload = "only NaN payloads differ"
        if strict:
            return Judgement(Verdict.DIVERGENT, (Symptom.BITS,), f"strict: {payload} in {m.mismatches} element(s)")
        return Judgement(Verdict.BENIGN, (), f"{payload} in {m.mismatches} element(s); values are identical")
    if strict:
        return Judgement(Verdict.DIVERGENT, (Symptom.BITS,), f"strict: {drift}{where}")
    if m.compiled_ref_rms is None or m.eager_ref_rms is None:
        return _judge_by_tolerance(m, factor, noise_ulps, drift, where)
    return _judge_against_reference(m, factor, noise_ulps, drift, where, faithful, budget)


def _special_values(m: ValueMetrics, special: tuple[Symptom, ...], where: str, strict: bool) -> Judgement:
    """NaN, infinity or signed-zero positions differ: judged by which side the reference takes."""
    parts = []
    if m.nan_mismatches:
        parts.append(f"{m.nan_mismatches} NaN position(s) differ")
    if m.inf_mismatches:
        parts.append(f"{m.inf_mismatches} infinity position(s) or sign(s) differ")
    if m.signed_zero_mismatches:
        parts.append(f"{m.signed_zero_mismatches} zero(s) differ in sign")
    # an element NaN on one side and infinite on the other is in both counts: the sides are judged per element
    elements = m.special_elements or m.nan_mismatches + m.inf_mismatches + m.signed_zero_mismatches
    both = m.nan_mismatches + m.inf_mismatches + m.signed_zero_mismatches - elements
    in_all = f" ({elements} element(s): {both} NaN on one side and infinite on the other)" if both > 0 else ""
    what = f"{'; '.join(parts)} of {m.numel}{in_all}{where}"
    return _by_reference(m, special, what, elements, strict)


def _judge_by_tolerance(m: ValueMetrics, factor: float, noise_ulps: float, drift: str, where: str) -> Judgement:
    """No fp64 reference: torch.testing's default tolerances, then what rounding gives values of this size."""
    if m.within_default_tolerance:
        return Judgement(
            Verdict.BENIGN,
            (),
            f"{drift}; no fp64 reference, but within torch.testing's default tolerances",
            Witness.TOLERANCE,
        )
    rounding = rounding_bound(m, factor, noise_ulps)
    if rounding is not None and m.max_abs <= rounding:
        return Judgement(
            Verdict.BENIGN,
            (),
            f"{drift}; no float64 answer could be made, and the two differ by at most {m.max_abs:.3g}, within "
            f"what rounding gives values of this size ({rounding:.3g}: {factor:g}x plus one times the noise floor "
            f"of the largest, {m.magnitude:.3g}): without a float64 answer that cannot be told from rounding, so "
            "it is not called a bug",
            Witness.TOLERANCE,
        )
    return Judgement(
        Verdict.DIVERGENT,
        (Symptom.VALUE,),
        f"{drift}; no float64 answer could be made, and the difference is beyond torch.testing's default "
        f"tolerances and beyond what rounding gives values of this size{where}",
        Witness.TOLERANCE,
    )


def _worst_at(m: ValueMetrics) -> str:
    if m.worst_index is None:
        return ""
    return f" (worst at {list(m.worst_index)}: eager {m.eager_value}, compiled {m.compiled_value})"


def _zero_signs_are_order(m: ValueMetrics) -> bool:
    """Whether the zeros that differ in sign are evaluation-order noise: the float64 reference (the program's own ops
    in float64, where IEEE 754 gives a zero the same sign in any precision whenever an op specifies it) sides with
    neither eager nor compiled at every one of them. docs/oracle.md says why."""
    differing = m.signed_zero_mismatches
    if m.compiled_right is None or m.eager_right is None or m.nan_mismatches or m.inf_mismatches:
        return False
    return m.eager_right < differing and m.compiled_right < differing


def _beside_zero_signs(
    m: ValueMetrics, factor: float, noise_ulps: float, faithful: FaithfulReference | None, budget: float
) -> Judgement:
    """The value judged without its zeros' signs (evaluation-order noise), which the explanation still names."""
    n = m.signed_zero_mismatches
    said = (
        f"{n} zero(s) differ in sign, and the float64 reference sides with compiled at {m.compiled_right} and with "
        f"eager at {m.eager_right}: a zero's sign from arithmetic follows the order a kernel evaluates it in, not "
        "evidence"
    )
    if m.mismatches <= n:
        return Judgement(Verdict.BENIGN, (), f"only the signs of zeros differ: {said}")
    rest = dataclasses.replace(
        m, mismatches=m.mismatches - n, signed_zero_mismatches=0, compiled_right=None, eager_right=None
    )
    j = judge_values(rest, strict=False, factor=factor, noise_ulps=noise_ulps, faithful=faithful, budget=budget)
    return dataclasses.replace(j, explanation=f"{j.explanation}; {said}")


def _by_reference(m: ValueMetrics, symptoms: tuple[Symptom, ...], what: str, differing: int, strict: bool) -> Judgement:
    """Integers, NaN/inf positions, signs of zero: divergent, unless the reference shows compiled right at every
    differing element (eager's kernel is then the side that is off)."""
    if m.compiled_right is None or m.eager_right is None:
        return Judgement(Verdict.DIVERGENT, symptoms, what)
    said = f"{what}; the float64 reference agrees with compiled at {m.compiled_right} and with eager at {m.eager_right}"
    if not strict and differing and m.compiled_right == differing:
        return Judgement(Verdict.EAGER_INACCURATE, symptoms, f"{EAGER_SIDE}: {said}", None, Nearer.COMPILED)
    nearer = Nearer.EAGER if m.eager_right else Nearer.NEITHER
    if m.eager_right and not m.compiled_right:
        said += ": compiled is the side that is off"
    return Judgement(Verdict.DIVERGENT, symptoms, said, None, nearer)


def rounding_bound(m: ValueMetrics, factor: float, noise_ulps: float) -> float | None:
    """Without a reference, the largest difference between eager and compiled that rounding explains.

    With a reference, a value is benign while |c - r| <= factor |e - r| + floor, the floor being the noise floor
    (noise_floor_scale) at the value's largest magnitude; a correctly rounded eager is within the floor itself,
    |e - r| <= floor. So a benign compiled value is within (factor + 1) floors of eager's: any difference up to
    that can be rounding, and one beyond it cannot. The magnitude is eager's, standing in for the reference's."""
    if m.magnitude is None or not math.isfinite(m.magnitude) or m.exact_dtype:
        return None
    return (factor + 1.0) * noise_floor_scale(m, noise_ulps) * m.magnitude


def _judge_against_reference(
    m: ValueMetrics,
    factor: float,
    noise_ulps: float,
    drift: str,
    where: str,
    faithful: FaithfulReference | None,
    budget: float,
) -> Judgement:
    assert m.eager_ref_rms is not None and m.compiled_ref_rms is not None
    assert m.eager_ref_max is not None and m.compiled_ref_max is not None
    scale = noise_floor_scale(m, noise_ulps)
    rms_floor = scale * (m.ref_rms or 0.0)
    max_floor = scale * (m.ref_max or 0.0)
    rms_ok = m.compiled_ref_rms <= factor * m.eager_ref_rms + rms_floor
    max_ok = m.compiled_ref_max <= factor * m.eager_ref_max + max_floor
    lead = "against fp64, " if faithful is None else faithful.lead(m.eager_ref_max, max_floor)
    witness = Witness.FP64 if faithful is None else Witness.FAITHFUL
    vs = (
        f"{lead}compiled's error is {m.compiled_ref_rms:.3g} RMS / {m.compiled_ref_max:.3g} max "
        f"vs eager's {m.eager_ref_rms:.3g} / {m.eager_ref_max:.3g}"
    )
    floor = f"{noise_ulps:g} fp32 ULPs and one output ULP" if m.low_precision else f"{noise_ulps:g} ULPs"
    if not (rms_ok and max_ok):
        worse = (
            _ratio(m.compiled_ref_rms, m.eager_ref_rms) if not rms_ok else _ratio(m.compiled_ref_max, m.eager_ref_max)
        )
        beyond = f", beyond {factor:g}x eager's error plus {max_floor:.3g} of noise" if faithful is not None else ""
        return Judgement(
            Verdict.DIVERGENT,
            (Symptom.VALUE,),
            f"{drift}; {vs}: compiled is {worse} further from {'fp64' if faithful is None else 'that reference'}"
            f"{beyond}{where}",
            witness,
            Nearer.EAGER,
        )
    tests = m.elements.tests if m.elements is not None else ()
    otherwise = _leaf_wide(m, factor, drift, vs, floor, rms_floor, max_floor)
    fired = family.fired(tests, budget)
    if not fired:
        symptoms = (Symptom.VALUE,) if otherwise.verdict is Verdict.EAGER_INACCURATE else ()
        return Judgement(otherwise.verdict, symptoms, otherwise.explanation, witness, otherwise.nearer, tests)
    assert m.elements is not None
    names = [t.name for t in fired]
    finding = elements.describe(m.elements, column="column" in names)
    return Judgement(
        Verdict.DIVERGENT,
        (Symptom.VALUE,),
        f"{drift}; {lead}{finding} (the {' and '.join(names)} test{'s' if len(names) > 1 else ''} of the element "
        f"rule; compiled's error is {m.compiled_ref_rms:.3g} RMS / {m.compiled_ref_max:.3g} max vs eager's "
        f"{m.eager_ref_rms:.3g} / {m.eager_ref_max:.3g}, within {factor:g}x plus {floor} of the output's magnitude, "
        "so the leaf-wide rule alone would call it noise)",
        witness,
        Nearer.EAGER,
        tests,
        otherwise,
    )


def _leaf_wide(
    m: ValueMetrics, factor: float, drift: str, vs: str, floor: str, rms_floor: float, max_floor: float
) -> Fallback:
    """The leaf-wide rule's verdict where compiled is within its bound: reassociation noise, or eager-inaccurate
    where eager is the one beyond it (what stands unless the element rule's tests fire)."""
    assert m.eager_ref_rms is not None and m.compiled_ref_rms is not None
    assert m.eager_ref_max is not None and m.compiled_ref_max is not None
    eager_rms_ok = m.eager_ref_rms <= factor * m.compiled_ref_rms + rms_floor
    eager_max_ok = m.eager_ref_max <= factor * m.compiled_ref_max + max_floor
    if eager_rms_ok and eager_max_ok:
        return Fallback(
            Verdict.BENIGN,
            f"{drift}; {vs}, within {factor:g}x plus {floor} of the output's magnitude: reassociation noise",
            _nearer(m),
        )
    further = (
        _ratio(m.eager_ref_rms, m.compiled_ref_rms) if not eager_rms_ok else _ratio(m.eager_ref_max, m.compiled_ref_max)
    )
    return Fallback(
        Verdict.EAGER_INACCURATE,
        f"{EAGER_SIDE}: {drift}; {vs}: eager is {further} further, beyond {factor:g}x compiled's error plus "
        f"{floor} of the output's magnitude",
        Nearer.COMPILED,
    )


def _nearer(m: ValueMetrics) -> Nearer:
    """Which side is nearer the reference, in words a benign value can carry: the side whose RMS and worst errors are
    both smaller (and, with element counts, nearer in more elements); neither when they disagree."""
    assert m.eager_ref_rms is not None and m.compiled_ref_rms is not None
    assert m.eager_ref_max is not None and m.compiled_ref_max is not None
    counts = m.elements
    if (
        m.compiled_ref_rms < m.eager_ref_rms
        and m.compiled_ref_max <= m.eager_ref_max
        and (counts is None or counts.better >= counts.worse)
    ):
        return Nearer.COMPILED
    if (
        m.eager_ref_rms < m.compiled_ref_rms
        and m.eager_ref_max <= m.compiled_ref_max
        and (counts is None or counts.worse >= counts.better)
    ):
        return Nearer.EAGER
    return Nearer.NEITHER


def _ratio(a: float, b: float) -> str:
    return f"{a / b:.3g}x" if b > 0 else "infinitely"


def _special_value_symptoms(m: ValueMetrics) -> tuple[Symptom, ...]:
    found = []
    if m.nan_mismatches:
        found.append(Symptom.NAN)
    if m.inf_mismatches:
        found.append(Symptom.INF)
    if m.signed_zero_mismatches:
        found.append(Symptom.SIGNED_ZERO)
    return tuple(found)


def significant_strides(t: Any) -> tuple[int, ...]:
    """Strides that matter: those of dimensions longer than one (torch is free to choose the rest)."""
    if t.numel() <= 1:
        return ()
    return tuple(s for n, s in zip(t.shape, t.stride(), strict=True) if n > 1)


def judge_structure(symptoms: tuple[Symptom, ...], detail: str) -> Judgement:
    """A leaf that cannot be compared element by element, or whose layout or mutation differs."""
    return Judgement(Verdict.DIVERGENT, symptoms, detail)


def summarize(verdict: Verdict, leaf_lines: list[tuple[str, Verdict, str]]) -> str:
    """One sentence for the whole check, led by its worst leaf."""
    if not leaf_lines:
        return "the program returned nothing to compare"
    counts: dict[Verdict, int] = {}
    for _, v, _ in leaf_lines:
        counts[v] = counts.get(v, 0) + 1
    tally = ", ".join(f"{n} {v.value}" for v, n in sorted(counts.items(), key=lambda kv: -kv[0].severity))
    if verdict is Verdict.MATCH:
        return f"all {len(leaf_lines)} compared leaves are bit-identical"
    name, _, why = next(line for line in leaf_lines if line[1] is verdict)
    return f"{verdict.value}: {name}: {why} ({len(leaf_lines)} leaves: {tally})"
