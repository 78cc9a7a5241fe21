"""The verdict rules: from measured differences to match / benign / divergent, with the numbers behind each.

Invariants the rules keep:
- `match` means bit-identical (NaN payloads and signed zeros included) and nothing else.
- Any structural difference (shape, dtype, stride, NaN/inf/signed-zero pattern, one-sided mutation,
  output structure) is `divergent`, in default and strict mode alike.
- Finite value drift is judged three-way against an fp64 reference: compiled is `benign` while it is no
  further from the reference than `factor` times eager's distance plus a noise floor of `noise_ulps` ULPs
  of the output's magnitude, both in RMS and in the worst element. Reassociation noise stays benign: a
  different summation order (Inductor's CPU reductions vs eager's cascade sum) costs up to ~23 such ULPs
  on a 2^20-element sum, while the real bugs of the sample gallery sit at 50 to 10^7.
- `strict` turns every bit difference into `divergent`.
"""

from __future__ import annotations

from dataclasses import dataclass

from engine.judge.metrics import ValueMetrics
from engine.judge.verdicts import Symptom, Verdict


@dataclass(frozen=True)
class Judgement:
    verdict: Verdict
    symptoms: tuple[Symptom, ...]
    explanation: str


def judge_values(m: ValueMetrics, *, strict: bool, factor: float, noise_ulps: float = 32.0) -> Judgement:
    """Judge two same-shaped, same-dtype tensors from their metrics."""
    if m.mismatches == 0:
        return Judgement(Verdict.MATCH, (), f"bit-identical over {m.numel} element(s)")
    where = f" (worst at {list(m.worst_index)}: eager {m.eager_value}, compiled {m.compiled_value})" if m.worst_index is not None else ""
    special = _special_value_symptoms(m)
    if special:
        parts = []
        if m.nan_mismatches:
            parts.append(f"{m.nan_mismatches} NaN position(s) differ")
        if m.inf_mismatches:
            parts.append(f"{m.inf_mismatches} infinity position(s) or sign(s) differ")
        if m.signed_zero_mismatches:
            parts.append(f"{m.signed_zero_mismatches} zero(s) differ in sign")
        return Judgement(Verdict.DIVERGENT, special, f"{'; '.join(parts)} of {m.numel}{where}")
    if m.exact_dtype:
        return Judgement(
            Verdict.DIVERGENT,
            (Symptom.VALUE,),
            f"{m.mismatches} of {m.numel} exact (integer/bool) element(s) differ, max abs {m.max_abs:g}{where}",
        )
    drift = f"{m.mismatches} of {m.numel} element(s) differ, max {m.max_ulp:g} ULP, max abs {m.max_abs:.3g}"
    if m.max_ulp == 0:
        payload = "only NaN payloads differ"
        if strict:
            return Judgement(Verdict.DIVERGENT, (Symptom.BITS,), f"strict: {payload} in {m.mismatches} element(s)")
        return Judgement(Verdict.BENIGN, (), f"{payload} in {m.mismatches} element(s); values are identical")
    if strict:
        return Judgement(Verdict.DIVERGENT, (Symptom.BITS,), f"strict: {drift}{where}")
    if m.compiled_ref_rms is None or m.eager_ref_rms is None:
        if m.within_default_tolerance:
            return Judgement(Verdict.BENIGN, (), f"{drift}; no fp64 reference, but within torch.testing's default tolerances")
        return Judgement(
            Verdict.DIVERGENT, (Symptom.VALUE,), f"{drift}; no fp64 reference, and beyond torch.testing's default tolerances{where}"
        )
    return _judge_against_reference(m, factor, noise_ulps, drift, where)


def _judge_against_reference(m: ValueMetrics, factor: float, noise_ulps: float, drift: str, where: str) -> Judgement:
    assert m.eager_ref_rms is not None and m.compiled_ref_rms is not None
    assert m.eager_ref_max is not None and m.compiled_ref_max is not None
    rms_floor = noise_ulps * m.eps * (m.ref_rms or 0.0)
    max_floor = noise_ulps * m.eps * (m.ref_max or 0.0)
    rms_ok = m.compiled_ref_rms <= factor * m.eager_ref_rms + rms_floor
    max_ok = m.compiled_ref_max <= factor * m.eager_ref_max + max_floor
    vs = (
        f"against fp64, compiled's error is {m.compiled_ref_rms:.3g} RMS / {m.compiled_ref_max:.3g} max "
        f"vs eager's {m.eager_ref_rms:.3g} / {m.eager_ref_max:.3g}"
    )
    if rms_ok and max_ok:
        return Judgement(Verdict.BENIGN, (), f"{drift}; {vs}, within {factor:g}x plus {noise_ulps:g} ULPs of the output's magnitude: reassociation noise")
    worse = _ratio(m.compiled_ref_rms, m.eager_ref_rms) if not rms_ok else _ratio(m.compiled_ref_max, m.eager_ref_max)
    return Judgement(Verdict.DIVERGENT, (Symptom.VALUE,), f"{drift}; {vs}: compiled is {worse} further from fp64{where}")


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
