"""The verdict rules: from measured differences to match / benign / divergent, with the numbers behind each.

Invariants the rules keep:
- `match` means bit-identical (NaN payloads and signed zeros included) and nothing else.
- Any structural difference (shape, dtype, stride, NaN/inf/signed-zero pattern, one-sided mutation,
  output structure) is `divergent`, in default and strict mode alike.
- Finite value drift is judged three-way against an fp64 reference: compiled is `benign` while it is no
  further from the reference than `factor` times eager's distance plus a noise floor, both in RMS and in
  the worst element; the sentence names the reference (the witness) that decided.
- `strict` turns every bit difference into `divergent`.

The reference, and why it is not taken on trust. The plain fp64 reference (the program and its inputs cast
to float64) models accuracy, not what eager computes: where eager rounds a Python scalar to a bf16/fp16
operand (`torch.remainder(x_bf16, 0.7)` divides by 0.69921875) or draws random numbers (which depend on the
dtype), eager is far from it for reasons that are the program's meaning, and a compiled result that drops
the rounding looks *closer*, so the three-way rule passed real bugs as noise. Wherever values differ, the
check therefore re-runs eager under a dispatch mode that asks eager which scalars it rounds and records its
draws (engine/child/faithful.py), and when it found either, judges against the **faithful reference**: the
fp64 run with those scalars rounded and those draws replayed (witness `faithful-fp64`). When eager is more
than PLAIN_INVALID_RATIO (engine/judge/witness.py) times further from the plain reference than from the
faithful one, the sentence says the plain reference does not model the program. The extra cost is one eager
re-run plus one fp64 re-run, only for checks whose values differ, and no compile.

Constants, each from a measurement (torch 2.13 CPU, 2-core x86-64):
- `factor` 2 and `noise_ulps` 32 (fp32/fp64 outputs: ULPs of the output's magnitude): a different summation
  order (Inductor's CPU reductions vs eager's cascade sum) costs up to ~23 such ULPs on a 2^20-element sum,
  while the real bugs of the sample gallery sit at 50 to 10^7.
- Low-precision outputs (bf16/fp16): `noise_ulps` ULPs of **fp32** (FP32_EPS: the opmath such ops compute
  in) plus OUTPUT_ROUNDINGS = 1 ULP of the output dtype (each side rounds once), not 32 ULPs of bf16 (25%
  of the magnitude). Honest noise stays well inside it: a bf16 transformer block (4x128x256) differs in
  50,266 elements, compiled's worst error against fp64 is 0.0148 (0.47 bf16 ULP of the largest output) and
  eager's 0.0228; the bf16/fp16 chains of the gallery have compiled 0.0039-0.028 from fp64, eager 0.0126-0.040.
- PLAIN_INVALID_RATIO 4: eager's worst error against the plain over the faithful reference is 1.0-2.6 for
  a benign bf16 program with four rounded scalars (clamp/add/sub/gt, 3 seeds), and 44 (the bf16 forecaster
  with `remainder` by 0.7), 436 (`remainder(x_bf16, 1.7)`) and 2.1e6 (`x + rand_like(x)`) where the plain
  reference models another program. It only words the sentence; the faithful reference decides either way.
- The rounding question (engine/child/faithful.py): on a pointwise op of one tensor, eager is asked on every
  finite value of the dtype; elsewhere on the op's own operands, where the neighbouring value must change
  enough elements that not rounding would have shown EXPECTED_FLIPS = 8 differences (P(none) ~ e^-8):
  layer_norm's eps of 1e-5 moves one bf16 output in 10^5 and is left alone.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from engine.judge import elements
from engine.judge.metrics import ValueMetrics
from engine.judge.verdicts import Symptom, Verdict, Witness
from engine.judge.witness import FaithfulReference

FP32_EPS = 2.0**-23  # bf16/fp16 ops compute in fp32 (opmath): their reassociation noise is fp32's
OUTPUT_ROUNDINGS = 1.0  # ...and each side then rounds once to the output dtype: at most one output ULP apart


@dataclass(frozen=True)
class Judgement:
    verdict: Verdict
    symptoms: tuple[Symptom, ...]
    explanation: str
    witness: Witness | None = None


def noise_floor_scale(m: ValueMetrics, noise_ulps: float) -> float:
    """The noise floor per unit of the output's magnitude, in the precision the computation ran in.

    fp32/fp64 outputs: `noise_ulps` ULPs of their dtype. bf16/fp16 outputs: `noise_ulps` fp32 ULPs (the opmath
    the values were computed in) plus one ULP of the output dtype (the one rounding each side performs).
    """
    if m.low_precision:
        return noise_ulps * FP32_EPS + OUTPUT_ROUNDINGS * m.eps
    return noise_ulps * m.eps


def judge_values(
    m: ValueMetrics, *, strict: bool, factor: float, noise_ulps: float = 32.0, faithful: FaithfulReference | None = None
) -> Judgement:
    """Judge two same-shaped, same-dtype tensors from their metrics; `faithful` when `m`'s reference is the faithful one."""
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
            return Judgement(Verdict.BENIGN, (), f"{drift}; no fp64 reference, but within torch.testing's default tolerances", Witness.TOLERANCE)
        return Judgement(
            Verdict.DIVERGENT,
            (Symptom.VALUE,),
            f"{drift}; no fp64 reference, and beyond torch.testing's default tolerances{where}",
            Witness.TOLERANCE,
        )
    return _judge_against_reference(m, factor, noise_ulps, drift, where, faithful)


def _judge_against_reference(
    m: ValueMetrics, factor: float, noise_ulps: float, drift: str, where: str, faithful: FaithfulReference | None
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
    if rms_ok and max_ok:
        finding = elements.find(m.elements) if m.elements is not None else None
        if finding is not None:
            # within the floor as a whole, but one-sided element by element: a fault of a step or a few
            return Judgement(
                Verdict.DIVERGENT,
                (Symptom.VALUE,),
                f"{drift}; {lead}{finding.sentence} (the {' and '.join(finding.tests)} test{'s' if len(finding.tests) > 1 else ''} of the element rule; "
                f"compiled's error is {m.compiled_ref_rms:.3g} RMS / {m.compiled_ref_max:.3g} max vs eager's {m.eager_ref_rms:.3g} / {m.eager_ref_max:.3g}, "
                f"within {factor:g}x plus {floor} of the output's magnitude, so the leaf-wide rule alone would call it noise)",
                witness,
            )
        return Judgement(Verdict.BENIGN, (), f"{drift}; {vs}, within {factor:g}x plus {floor} of the output's magnitude: reassociation noise", witness)
    worse = _ratio(m.compiled_ref_rms, m.eager_ref_rms) if not rms_ok else _ratio(m.compiled_ref_max, m.eager_ref_max)
    beyond = f", beyond {factor:g}x eager's error plus {max_floor:.3g} of noise" if faithful is not None else ""
    return Judgement(Verdict.DIVERGENT, (Symptom.VALUE,), f"{drift}; {vs}: compiled is {worse} further from {'fp64' if faithful is None else 'that reference'}{beyond}{where}", witness)


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
    return tuple(s for n, s in zip(t.shape, t.stride()) if n > 1)


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
