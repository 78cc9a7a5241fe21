"""What PyTorch's own accuracy checks say about a job, beside our verdict.

Two rules, each as PyTorch applies it:

- `same`: the dynamo benchmark harness (benchmarks/dynamo/common.py, `check_accuracy`) calls
  `torch._dynamo.utils.same(eager, compiled, fp64_outputs, tol=1e-3, equal_nan=True, cos_similarity=False)`
  for Hugging Face inference (huggingface.py's tolerance; 1e-2 in training). `same` passes when
  `allclose(eager, compiled, rtol=atol=tol)`, or else when compiled's RMS error against fp64 is within a
  multiplier (2; 3 for fp16/bf16 and small tensors) of eager's plus tol/10. It ignores strides.
- `opinfo`: the inductor OpInfo test (test/inductor/test_torchinductor_opinfo.py, `check_model`) compares
  compiled against a reference cast to the output's dtype with `assertEqual(rtol, atol, equal_nan=True,
  exact_dtype=True)`: fp32 rtol 1.3e-5 atol 1.5e-5, other dtypes assertEqual's defaults (bf16 1.6e-2 / 1e-5,
  fp16 1e-3 / 1e-5), per-op overrides from the test's own table; mutated inputs too, strides not.

Both are computed here from what the check stored (engine.arrays: eager, compiled and the fp64 reference of
every leaf up to the storage limit), so they see the very tensors our verdict saw. The OpInfo test's reference
is not fp64 but eager on the inputs upcast to fp32; a source that can re-make its samples hands that
reference in (a PyTorchReference: app.sweep.sources.opinfo re-makes op_db's samples with the check's seed
and proves them the same by eager's output, bit for bit). Where it cannot, the check's fp64 reference
stands in, and the result says for how many leaves: the two differ where fp32 itself cancels (cov).

Importing this module imports neither torch nor numpy; `judge` imports torch when it runs.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

PASS, FAIL, UNAVAILABLE = "pass", "fail", "n/a"
SAME, OPINFO = "same", "opinfo"
HARNESS_TOL = 1e-3  # huggingface.py inference (timm's too); training 1e-2
HARNESS_TRAINING_TOL = 1e-2
MAX_LISTED = 20  # disagreeing leaves kept per job (all are counted)


@dataclass(frozen=True)
class AccuracyRule:
    """Which of PyTorch's checks judges a job, with its tolerances (None: assertEqual's default for the dtype)."""

    kind: str  # SAME or OPINFO
    tol: float | None = None  # same()
    rtol: float | None = None  # opinfo
    atol: float | None = None
    values: bool = True  # opinfo: False where the test compares metadata only (`assert_equal: False`: empty, randn)

    def __post_init__(self) -> None:
        if self.kind not in (SAME, OPINFO):
            raise ValueError(f"an accuracy rule is {SAME!r} or {OPINFO!r}, not {self.kind!r}")

    def describe(self) -> str:
        if self.kind == SAME:
            return (
                f"torch._dynamo.utils.same(tol={self.tol:g}, equal_nan=True) against fp64, as the dynamo benchmark"
                " harness"
            )
        if not self.values:
            return (
                "the inductor OpInfo test's metadata check (shape, dtype, strides, layout; it compares no values of"
                " this op)"
            )
        tolerances = (
            "assertEqual's defaults for the dtype"
            if self.rtol is None and self.atol is None
            else f"rtol={self.rtol:g}, atol={self.atol:g}"
        )
        return (
            f"the inductor OpInfo test's assertEqual ({tolerances}, equal_nan=True, exact dtype) against its reference"
            " cast to the output's dtype"
        )


def harness_rule(backward: bool = False) -> AccuracyRule:
    return AccuracyRule(SAME, tol=HARNESS_TRAINING_TOL if backward else HARNESS_TOL)


@dataclass(frozen=True)
class PyTorchCheck:
    """PyTorch's verdict on one job: pass, fail, or n/a (the check ended in an error, or nothing comparable)."""

    rule: str  # AccuracyRule.describe()
    status: str  # PASS, FAIL or UNAVAILABLE
    compared: int = 0  # leaves judged
    failed: tuple[str, ...] = ()  # leaves it fails (all of them)
    unjudged: tuple[str, ...] = ()  # leaves it could not judge (arrays above the storage limit)
    # per leaf, our verdict against theirs: "divergent|pass" -> count, over every judged leaf
    crosstab: Mapping[str, int] = field(default_factory=dict)
    # the leaves where one side flags and the other does not: (leaf, our verdict, theirs), at most MAX_LISTED
    disagreements: tuple[tuple[str, str, str], ...] = ()
    note: str = ""


@dataclass(frozen=True)
class PyTorchReference:
    """PyTorch's own reference for a job's leaves, where a source can make it (by leaf name)."""

    values: Mapping[str, Any] = field(
        default_factory=dict
    )  # the test's reference (opinfo: eager on fp32-upcast inputs)
    eager: Mapping[str, Any] = field(
        default_factory=dict
    )  # eager's output as re-made here: the samples are the check's when it matches
    # the samples (their keys in the program's input dict, e.g. "sample[3]") on which the op draws random numbers:
    # the test compares no values of their outputs or of the inputs they mutate
    random_samples: frozenset[str] = frozenset()
    uncompared: frozenset[str] = frozenset()  # leaves the check has and PyTorch's does not compare (kwargs it mutates)
    describe: str = ""

    def random(self, leaf: str) -> bool:
        return any(f"['{key}']" in leaf for key in self.random_samples)


def disagrees(our_verdict: str | None, their_status: str | None) -> bool:
    """One side calls the result a bug and the other does not: ours `divergent` where PyTorch's passes, or
    PyTorch's failing where ours is anything but `divergent` (match, benign, or a drift whose mechanism it
    names: precision-cast, rng). An error is no judgement."""
    if our_verdict in (None, "error") or their_status not in (PASS, FAIL):
        return False
    return (our_verdict == "divergent") == (their_status == PASS)


def judge(rule: AccuracyRule, run_dir: Path | str, reference: PyTorchReference | None = None) -> PyTorchCheck:
    """PyTorch's verdict on the check stored in `run_dir` (its result.json and arrays); `reference`: PyTorch's
    own reference for its leaves where the source can make it, in place of the check's fp64 one."""
    from engine.judge.verdicts import LeafKind, Verdict
    from engine.result import CheckResult

    description = rule.describe()
    try:
        result = CheckResult.load(Path(run_dir))
    except (OSError, ValueError, KeyError, TypeError) as exc:
        return PyTorchCheck(description, UNAVAILABLE, note=f"the check's result cannot be read ({exc})")
    if result.verdict is Verdict.ERROR:
        return PyTorchCheck(description, UNAVAILABLE, note="the check ended in an error: nothing to compare")
    kinds = {LeafKind.OUTPUT}
    if rule.kind == OPINFO:
        kinds.add(LeafKind.MUTATED_INPUT)  # check_model compares the inputs after the runs too
    elif result.options.backward:
        kinds.add(LeafKind.GRADIENT)  # the harness's training mode compares gradients
    compare = _Comparer(rule, reference or PyTorchReference())
    compare.no_fp64 = any("fp64 reference unavailable" in n for n in result.notes)
    tally = _Tally()
    for leaf in result.leaves:
        if leaf.kind not in kinds or (
            leaf.shape is None and leaf.eager_value == "None" and leaf.compiled_value == "None"
        ):
            continue  # same() walks a ModelOutput's fields that are set: a field None on both sides is no leaf of its
        if reference is not None and leaf.name in reference.uncompared:
            continue
        tally.add(leaf, compare.leaf(result, leaf))
    if not tally.compared:
        return PyTorchCheck(
            description, UNAVAILABLE, unjudged=tuple(tally.unjudged), note="no output it can compare was stored"
        )
    return PyTorchCheck(
        description,
        FAIL if tally.failed else PASS,
        tally.compared,
        tuple(tally.failed),
        tuple(tally.unjudged),
        tally.crosstab,
        tuple(tally.disagreements),
        "; ".join(_notes(rule, reference, compare, tally.unjudged)),
    )


@dataclass
class _Tally:
    """PyTorch's outcome on each leaf, gathered: what PyTorchCheck reports."""

    compared: int = 0
    failed: list[str] = field(default_factory=list)
    unjudged: list[str] = field(default_factory=list)  # leaves whose arrays were not stored
    crosstab: dict[str, int] = field(default_factory=dict)  # "our verdict|theirs" -> leaves
    disagreements: list[tuple[str, str, str]] = field(default_factory=list)  # the first MAX_LISTED

    def add(self, leaf: Any, outcome: bool | None) -> None:
        if outcome is None:
            self.unjudged.append(leaf.name)
            return
        self.compared += 1
        theirs = PASS if outcome else FAIL
        if not outcome:
            self.failed.append(leaf.name)
        key = f"{leaf.verdict.value}|{theirs}"
        self.crosstab[key] = self.crosstab.get(key, 0) + 1
        if disagrees(leaf.verdict.value, theirs) and len(self.disagreements) < MAX_LISTED:
            self.disagreements.append((leaf.name, leaf.verdict.value, theirs))


def _notes(
    rule: AccuracyRule, reference: PyTorchReference | None, compare: _Comparer, unjudged: list[str]
) -> list[str]:
    notes = []
    if rule.kind == OPINFO and rule.values:
        own = f"{compare.own} leaves against {reference.describe}" if reference is not None and compare.own else ""
        fp64 = f"{compare.fp64} against the check's fp64 reference cast to the output's dtype" if compare.fp64 else ""
        notes.append("reference: " + "; ".join(x for x in (own, fp64) if x))
    if compare.no_fp64 and rule.kind == SAME:
        notes.append("no fp64 reference: same() with cos_similarity=True, as the harness where its fp64 run fails")
    if unjudged:
        notes.append(f"{len(unjudged)} leaves not judged (their arrays were above the storage limit)")
    return notes


class _Comparer:
    """One leaf at a time, rebuilt from the stored arrays into tensors of the leaf's own dtype."""

    def __init__(self, rule: AccuracyRule, reference: PyTorchReference) -> None:
        import torch

        self.torch = torch
        self.rule = rule
        self.reference = reference
        self.own = self.fp64 = 0  # leaves judged against the source's own reference, and against fp64
        self.no_fp64 = False  # the check could not make its fp64 reference

    def leaf(self, result: Any, leaf: Any) -> bool | None:
        """True: passes; False: fails; None: cannot be judged from what was stored."""
        from engine.judge.verdicts import Symptom, Verdict

        if leaf.shape is None:  # a non-tensor leaf (a Python object, a string): both rules ask for equality
            return leaf.verdict is Verdict.MATCH and not leaf.symptoms
        structural = {Symptom.SHAPE, Symptom.DTYPE, Symptom.TYPE}
        if structural & set(leaf.symptoms):
            return False  # same() and assertEqual both fail a shape or dtype mismatch (same() raises on shapes)
        if leaf.numel == 0:
            return True
        if self.rule.kind == OPINFO and (
            not self.rule.values or self.reference.random(leaf.name) or leaf.verdict is Verdict.RNG
        ):
            # the test compares no values where they are undefined (empty) or random (it finds an op tagged
            # nondeterministic_seeded and passes assert_equal=False): shape, dtype, strides and layout only
            return Symptom.STRIDE not in leaf.symptoms
        arrays = result.load_arrays(leaf)
        if "eager" not in arrays or "compiled" not in arrays:
            return None
        eager = self._tensor(arrays["eager"], leaf.dtype, leaf.shape)
        compiled = self._tensor(
            arrays["compiled"], leaf.compiled_dtype or leaf.dtype, leaf.compiled_shape or leaf.shape
        )
        ref = self._tensor(arrays["ref"], _wide(leaf.dtype), leaf.shape) if "ref" in arrays else None
        if self.rule.kind == SAME:
            return self._same(eager, compiled, ref)
        return self._assert_equal(leaf.name, eager, compiled, ref)

    def _same(self, eager: Any, compiled: Any, ref: Any) -> bool:
        """The dynamo benchmark harness's accuracy check (torch._dynamo.utils.same)."""
        from torch._dynamo.utils import same

        # the harness switches to cosine similarity where it cannot make an fp64 reference (check_accuracy)
        cosine = ref is None and self.no_fp64
        try:
            return bool(
                same(
                    eager,
                    compiled,
                    fp64_ref=ref,
                    tol=self.rule.tol,
                    equal_nan=True,
                    cos_similarity=cosine,
                    log_error=lambda *a, **k: None,
                )
            )
        except Exception:  # the harness counts an exception in same() as fail_accuracy
            return False

    def _assert_equal(self, name: str, eager: Any, compiled: Any, ref: Any) -> bool:
        """The inductor OpInfo test's assertEqual: against the source's own reference where it makes one, else the
        check's fp64 reference (or eager), cast to the output's dtype."""
        expected = self._own(name, eager)
        if expected is None:
            self.fp64 += 1
            expected = ref if ref is not None else eager
        else:
            self.own += 1
        expected = (
            expected.to(compiled.dtype) if expected.dtype.is_floating_point or expected.dtype.is_complex else expected
        )
        try:
            self.torch.testing.assert_close(
                compiled,
                expected,
                rtol=self.rule.rtol,
                atol=self.rule.atol,
                equal_nan=True,
                check_dtype=True,
                check_stride=False,
            )
        except AssertionError:
            return False
        return True

    def _own(self, name: str, eager: Any) -> Any:
        """The source's reference for this leaf, if it has one and its eager run is the check's, bit for bit."""
        value, again = self.reference.values.get(name), self.reference.eager.get(name)
        if value is None or again is None or again.shape != eager.shape or again.dtype != eager.dtype:
            return None
        if again.dtype.is_floating_point:  # NaN where eager has NaN, the same numbers elsewhere
            same = self.torch.equal(again.isnan(), eager.isnan()) and self.torch.equal(
                again.nan_to_num(0.0), eager.nan_to_num(0.0)
            )
        else:
            same = self.torch.equal(again, eager)
        return value if same else None

    def _tensor(self, array: Any, dtype: str | None, shape: tuple[int, ...]) -> Any:
        """A stored array as the leaf's tensor: its dtype (bfloat16 is stored as float32, complex as pairs of reals)
        and its shape (a 0-d leaf is stored with one dimension)."""
        torch = self.torch
        import numpy as np

        t = torch.from_numpy(np.array(array))
        target = getattr(torch, dtype or "", None)
        if isinstance(target, torch.dtype) and target.is_complex:
            t = torch.view_as_complex(
                t.to(torch.float64 if target == torch.complex128 else torch.float32).contiguous()
            ).to(target)
        elif isinstance(target, torch.dtype):
            t = t.to(target)
        return t.reshape(shape) if t.numel() == int(np.prod(shape)) else t


def _wide(dtype: str | None) -> str:
    """The reference's dtype: fp64 (complex128 for a complex leaf)."""
    return "complex128" if dtype and dtype.startswith("complex") else "float64"
