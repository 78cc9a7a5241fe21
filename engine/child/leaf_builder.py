"""Turn one call's finished runs into judged leaves: outputs, mutated inputs, updated module state, gradients.

Each leaf pairs eager with compiled (and the fp64 reference) by name, is measured (engine.judge.metrics,
engine.judge.summary) and judged (engine.judge.oracle); what viewers need of it is kept as a StoredLeaf.

Apart from comparison.py, which runs the call: building reads finished runs and runs nothing, and the
comparison builds twice when the faithful reference replaces the plain one.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Protocol

import numpy as np
import torch

from engine.child.leaves import ABSENT, dense, flatten, layout_of
from engine.child.uninitialized import Undefined
from engine.judge import oracle
from engine.judge.metrics import LOW_PRECISION, Operands, bitwise_equal, operands
from engine.judge.oracle import Judgement
from engine.judge.summary import summarize
from engine.judge.verdicts import LeafKind, Symptom, Verdict
from engine.judge.witness import FaithfulReference
from engine.result import LeafResult


class JudgingSettings(Protocol):
    """What the builder reads of a call's settings (comparison.CallSettings), named here so that this module
    need not import the one that imports it."""

    strict: bool
    factor: float
    noise_ulps: float
    max_stored_elements: int

    def note(self, text: str) -> None: ...


@dataclass(frozen=True)
class StoredLeaf:
    """What is kept of a compared leaf for viewers: its operands (still on their device) unless it is
    above the storage limit, and the check's summary of it (engine.judge.summary)."""

    operands: Operands | None
    summary: dict[str, np.ndarray]


class LeafBuilder:
    """The judged leaves of one call, built group by group (outputs, mutations, state, gradients), and the
    stored arrays of those that have elements."""

    def __init__(
        self,
        settings: JudgingSettings,
        prefix: str,
        faithful: str | None = None,
        plain: dict[str, tuple[float | None, float | None]] | None = None,
        undefined: Undefined | None = None,
        twin: Any = None,
    ) -> None:
        self.settings = settings
        self.prefix = prefix
        self.faithful = faithful  # what the faithful reference did differently, when the reference is that one
        self.plain = plain or {}  # leaf name -> eager's error (RMS, max) against the plain fp64 reference
        self.undefined = undefined or Undefined()  # output elements that are uninitialized memory: not compared
        # the reference computed in float32 (engine/child/opmath.py), leaf by leaf: the element rule's tie band
        self.twins = twin_leaves(twin) if twin is not None else {}
        self.leaves: list[LeafResult] = []
        self.arrays: dict[str, StoredLeaf] = {}
        self.low_precision = False

    def outputs(self, e_out: Any, c_out: Any, r_out: Any) -> None:
        e_leaves = dict(flatten(e_out))
        c_leaves = dict(flatten(c_out))
        r_leaves = dict(flatten(r_out)) if r_out is not None else {}
        if list(e_leaves) != list(c_leaves):
            only_e = [k for k in e_leaves if k not in c_leaves]
            only_c = [k for k in c_leaves if k not in e_leaves]
            self._structural(
                "out",
                LeafKind.OUTPUT,
                (Symptom.TYPE,),
                f"output structure differs: only eager has {only_e or 'nothing'}, only compiled has "
                f"{only_c or 'nothing'}",
            )
        for name in e_leaves:
            if name in c_leaves:
                self.leaf(
                    name,
                    LeafKind.OUTPUT,
                    e_leaves[name],
                    c_leaves[name],
                    r_leaves.get(name),
                    undefined=self.undefined.masks.get(name),
                )

    def mutations(self, pristine: Any, eager_inputs: Any, compiled_inputs: Any, ref_inputs: Any) -> None:
        """Every input leaf a run changed: a tensor written in place or re-bound (a cache's `keys` replaced by a
        longer one), a leaf that appeared or went, any other value that changed (a cache's token count)."""
        before = _input_leaves(pristine)
        eager = _input_leaves(eager_inputs)
        compiled = _input_leaves(compiled_inputs)
        ref = _input_leaves(ref_inputs) if ref_inputs is not None else {}
        for path in dict.fromkeys([*before, *eager, *compiled]):
            original, e, c = before.get(path, ABSENT), eager.get(path, ABSENT), compiled.get(path, ABSENT)
            r = ref.get(path)
            if all(isinstance(v, torch.Tensor) for v in (original, e, c)):
                self._changed_pair(f"input {path}", LeafKind.MUTATED_INPUT, original, e, c, r, "mutated")
                continue
            e_changed, c_changed = not _same_leaf(original, e), not _same_leaf(original, c)
            if not (e_changed or c_changed):
                continue
            detail = ""
            if e_changed != c_changed:
                detail = (
                    f"{'eager' if e_changed else 'compiled'} changed it but {'compiled' if e_changed else 'eager'} did "
                    "not"
                )
            self.leaf(
                f"input {path}",
                LeafKind.MUTATED_INPUT,
                e,
                c,
                r if isinstance(r, torch.Tensor) else None,
                (Symptom.MUTATION,) if detail else (),
                detail,
            )

    def state(
        self,
        saved: dict[str, torch.Tensor],
        e_state: dict[str, torch.Tensor],
        c_state: dict[str, torch.Tensor],
        r_state: dict[str, torch.Tensor],
    ) -> None:
        for name, original in saved.items():
            e, c = e_state.get(name), c_state.get(name)
            if e is None or c is None:
                continue
            self._changed_pair(f"state {name}", LeafKind.STATE, original, e, c, r_state.get(name), "updated")

    def gradients(
        self, e_grads: dict[str, torch.Tensor], c_grads: dict[str, torch.Tensor], r_grads: dict[str, torch.Tensor]
    ) -> None:
        for name in sorted(set(e_grads) | set(c_grads)):
            e, c = e_grads.get(name), c_grads.get(name)
            if e is None or c is None:
                side = "eager" if e is not None else "compiled"
                self._structural(
                    f"grad {name}", LeafKind.GRADIENT, (Symptom.TYPE,), f"only {side} computed a gradient for {name}"
                )
                continue
            self.leaf(f"grad {name}", LeafKind.GRADIENT, e, c, r_grads.get(name))

    def unrestorable_write(self, name: str) -> None:
        """Compiled wrote to a parameter kept without a copy (engine/child/state.py); eager did not."""
        detail = (
            f"compiled wrote to {name} in place but eager did not (its value before the call was not kept, so only the "
            "fact is shown)"
        )
        self._structural(f"state {name}", LeafKind.STATE, (Symptom.MUTATION,), detail)

    def _changed_pair(
        self,
        name: str,
        kind: LeafKind,
        original: torch.Tensor,
        e: torch.Tensor,
        c: torch.Tensor,
        r: torch.Tensor | None,
        verb: str,
    ) -> None:
        e_changed, c_changed = _changed(original, e), _changed(original, c)
        if not (e_changed or c_changed):
            return
        extra: tuple[Symptom, ...] = ()
        detail = ""
        if e_changed != c_changed:
            extra = (Symptom.MUTATION,)
            detail = (
                f"{'eager' if e_changed else 'compiled'} {verb} it in place but {'compiled' if e_changed else 'eager'} "
                "did not"
            )
        self.leaf(name, kind, e, c, r, extra, detail)

    def _structural(self, name: str, kind: LeafKind, symptoms: tuple[Symptom, ...], detail: str) -> None:
        j = oracle.judge_structure(symptoms, detail)
        self.leaves.append(
            LeafResult(
                name=self.prefix + name, kind=kind, verdict=j.verdict, explanation=j.explanation, symptoms=j.symptoms
            )
        )

    def leaf(
        self,
        name: str,
        kind: LeafKind,
        e: Any,
        c: Any,
        r: Any,
        extra: tuple[Symptom, ...] = (),
        detail: str = "",
        undefined: torch.Tensor | None = None,
    ) -> None:
        full = self.prefix + name
        e_t, c_t, r_t = _as_tensor(e), _as_tensor(c), _as_tensor(r)
        # a sparse tensor's values are compared in their dense form; its layout is a structural fact of its own,
        # and it has no strides to compare
        layout = layout_of(e_t) if e_t is not None else None
        c_layout = layout_of(c_t) if c_t is not None else None
        e_t, c_t, r_t = (dense(t) if t is not None else None for t in (e_t, c_t, r_t))
        if e_t is None or c_t is None:
            self.leaves.append(_non_tensor_leaf(full, kind, e, c, extra, detail))
            return
        if e_t.dtype in LOW_PRECISION or c_t.dtype in LOW_PRECISION:
            self.low_precision = True
        structure = _Structure.of(e_t, c_t, layout, c_layout, extra, detail)
        if Symptom.SHAPE in structure.symptoms or Symptom.DTYPE in structure.symptoms:
            j = oracle.judge_structure(tuple(structure.symptoms), "; ".join(structure.problems))
            self.leaves.append(LeafResult(full, kind, j.verdict, j.explanation, j.symptoms, **structure.common))  # type: ignore[arg-type]
            return
        if e_t.device != c_t.device:
            c_t = c_t.to(e_t.device)
        if layout is None and c_layout is None and oracle.significant_strides(e_t) != oracle.significant_strides(c_t):
            structure.symptoms.append(Symptom.STRIDE)
            structure.problems.append(_layout_problem(e_t, c_t))
        ops, unwritten = self._operands(name, e_t, c_t, r_t, undefined)
        metrics, summary = summarize(ops, _dtype_name(e_t.dtype))
        j = self._judge(full, metrics)
        said = _LeafVerdict.of(j, structure, layout)
        if unwritten:
            sentence = self._unwritten(unwritten, e_t.numel())
            whole = unwritten == e_t.numel() and said.verdict is Verdict.MATCH
            said = replace(said, explanation=sentence if whole else f"{sentence}; {said.explanation}")
        stored = self._store(full, e_t.numel(), ops, summary)
        self.leaves.append(_value_leaf(full, kind, said, j, metrics, unwritten, stored, structure.common))

    def _operands(
        self, name: str, e_t: torch.Tensor, c_t: torch.Tensor, r_t: torch.Tensor | None, undefined: torch.Tensor | None
    ) -> tuple[Operands, int]:
        """The operands judged (the reference where it lines up, the float32 twin where there is a reference), and
        how many elements nobody wrote: those take eager's bits on every side, so only the others are judged."""
        r_t = r_t if r_t is not None and r_t.shape == e_t.shape else None
        twin = self.twins.get(name)
        twin = dense(twin) if isinstance(twin, torch.Tensor) and r_t is not None else None
        unwritten = 0
        if undefined is not None and undefined.shape == e_t.shape:
            undefined = undefined.to(e_t.device)
            unwritten = int(undefined.sum())
            c_t = torch.where(undefined, e_t, c_t)
            r_t = torch.where(undefined, e_t.to(r_t.dtype), r_t) if r_t is not None else None
            twin = torch.where(undefined.to(twin.device), r_t.to(twin.dtype), twin) if twin is not None else None
        return operands(e_t, c_t, r_t, twin), unwritten

    def _judge(self, full: str, metrics: Any) -> Judgement:
        """The element rule on the leaf's values, against the faithful reference where that one judges."""
        note = None
        if self.faithful is not None:
            plain_rms, plain_max = self.plain.get(full, (None, None))
            note = FaithfulReference(self.faithful, plain_rms, plain_max)
        return oracle.judge_values(
            metrics,
            strict=self.settings.strict,
            factor=self.settings.factor,
            noise_ulps=self.settings.noise_ulps,
            faithful=note,
        )

    def _store(self, full: str, numel: int, ops: Operands, summary: dict[str, np.ndarray]) -> str | None:
        """Keep the leaf's arrays for viewers (only the summary above the storage limit); its name, if it has any."""
        if not numel:
            return None
        keep = numel <= self.settings.max_stored_elements
        self.arrays[full] = StoredLeaf(ops if keep else None, summary)
        if not keep:
            self.settings.note(
                f"{full}: {numel} elements exceed the storage limit of {self.settings.max_stored_elements}; "
                "only the check's summary was kept (the heatmap's blocks of the slice through the worst element, "
                "the worst elements, the ULP histogram)"
            )
        return full

    def _unwritten(self, count: int, numel: int) -> str:
        """What the leaf's verdict leaves out: elements of memory the program never wrote."""
        ops = ", ".join(self.undefined.ops)
        if count == numel:
            return (
                f"all {numel} values are uninitialized memory ({ops}, written by neither run): their bytes are "
                "whatever the allocator left, so only shape, dtype and strides are compared"
            )
        return (
            f"{count} of {numel} values are uninitialized memory ({ops}, never written): not compared, the other "
            f"{numel - count} are"
        )


@dataclass
class _Structure:
    """What a leaf's two tensors say before their values: the fields every leaf result carries (`common`), and
    the structural differences, each symptom with its sentence."""

    common: dict[str, Any]
    symptoms: list[Symptom]
    problems: list[str]

    @classmethod
    def of(
        cls,
        e_t: torch.Tensor,
        c_t: torch.Tensor,
        layout: str | None,
        c_layout: str | None,
        extra: tuple[Symptom, ...],
        detail: str,
    ) -> _Structure:
        shape, c_shape = tuple(e_t.shape), tuple(c_t.shape)
        dtype, c_dtype = _dtype_name(e_t.dtype), _dtype_name(c_t.dtype)
        common = dict(
            shape=shape,
            compiled_shape=c_shape,
            dtype=dtype,
            compiled_dtype=c_dtype,
            stride=None if layout else tuple(e_t.stride()),
            compiled_stride=None if c_layout else tuple(c_t.stride()),
            layout=layout,
            compiled_layout=c_layout,
            numel=e_t.numel(),
        )
        structure = cls(common, list(extra), [detail] if detail else [])
        if layout != c_layout:
            structure.symptoms.append(Symptom.LAYOUT)
            structure.problems.append(_layout_kind_problem(layout, c_layout))
        if shape != c_shape:
            structure.symptoms.append(Symptom.SHAPE)
            structure.problems.append(f"shape {list(shape)} vs compiled {list(c_shape)}")
        if e_t.dtype != c_t.dtype:
            structure.symptoms.append(Symptom.DTYPE)
            structure.problems.append(f"dtype {dtype} vs compiled {c_dtype}")
        return structure


@dataclass(frozen=True)
class _LeafVerdict:
    """A value leaf's verdict: the element rule's, unless its structure differs (then DIVERGENT, the structure
    first, and `values_verdict` keeps what the values alone would say)."""

    verdict: Verdict
    symptoms: tuple[Symptom, ...]
    explanation: str
    fallback: Any
    values_verdict: Verdict | None

    @classmethod
    def of(cls, j: Judgement, structure: _Structure, layout: str | None) -> _LeafVerdict:
        if structure.symptoms:
            values = "" if j.verdict is Verdict.MATCH else f"; values: {j.explanation}"
            # the structure decides, whatever the element tests: no fallback
            symptoms = (*structure.symptoms, *j.symptoms)
            return cls(Verdict.DIVERGENT, symptoms, "; ".join(structure.problems) + values, None, j.verdict)
        explanation = f"{j.explanation} ({layout} on both sides, compared in dense form)" if layout else j.explanation
        return cls(j.verdict, tuple(j.symptoms), explanation, j.fallback, None)


def _non_tensor_leaf(full: str, kind: LeafKind, e: Any, c: Any, extra: tuple[Symptom, ...], detail: str) -> LeafResult:
    """A leaf that is not a tensor on both sides: equal values match, anything else is a type difference."""
    if _same_leaf(e, c) and not extra:
        return LeafResult(full, kind, Verdict.MATCH, f"equal ({e!r})", eager_value=repr(e), compiled_value=repr(c))
    why = detail or f"eager gave {type(e).__name__} {e!r:.80}, compiled gave {type(c).__name__} {c!r:.80}"
    return LeafResult(
        full,
        kind,
        Verdict.DIVERGENT,
        why,
        (*extra, Symptom.TYPE),
        eager_value=repr(e)[:200],
        compiled_value=repr(c)[:200],
    )


def _value_leaf(
    full: str,
    kind: LeafKind,
    said: _LeafVerdict,
    j: Judgement,
    metrics: Any,
    unwritten: int,
    stored: str | None,
    common: dict[str, Any],
) -> LeafResult:
    return LeafResult(
        full,
        kind,
        said.verdict,
        said.explanation,
        tuple(said.symptoms),
        mismatches=metrics.mismatches,
        unwritten=unwritten,
        max_abs=metrics.max_abs,
        max_rel=metrics.max_rel,
        max_ulp=metrics.max_ulp,
        nan_mismatches=metrics.nan_mismatches,
        inf_mismatches=metrics.inf_mismatches,
        signed_zero_mismatches=metrics.signed_zero_mismatches,
        eager_ref_rms=metrics.eager_ref_rms,
        compiled_ref_rms=metrics.compiled_ref_rms,
        eager_ref_max=metrics.eager_ref_max,
        compiled_ref_max=metrics.compiled_ref_max,
        worst_index=metrics.worst_index,
        eager_value=metrics.eager_value,
        compiled_value=metrics.compiled_value,
        reference_value=metrics.ref_value,
        arrays=stored,
        witness=j.witness,
        nearer=j.nearer,
        tests=j.tests,
        fallback=said.fallback,
        values_verdict=said.values_verdict,
        **common,  # type: ignore[arg-type]
    )


def twin_leaves(twin: Any) -> dict[str, Any]:
    """The float32 twin's values by the names leaves are built under (outputs, mutated inputs, state, gradients);
    `twin` is an engine.child.reference.Reference."""
    found: dict[str, Any] = dict(flatten(twin.out)) if twin.out is not None else {}
    if twin.inputs is not None:
        found.update({f"input {path}": v for path, v in _input_leaves(twin.inputs).items()})
    found.update({f"state {name}": v for name, v in (twin.state or {}).items()})
    found.update({f"grad {name}": v for name, v in (twin.grads or {}).items()})
    return found


def _as_tensor(value: Any) -> torch.Tensor | None:
    """Tensors as themselves (detached); Python numbers as 0-d tensors so they get the same rules."""
    if isinstance(value, torch.Tensor):
        return value.detach()
    if isinstance(value, bool):
        return torch.tensor(value)
    if isinstance(value, int):
        return torch.tensor(value, dtype=torch.int64) if -(2**63) <= value < 2**63 else None
    if isinstance(value, float):
        return torch.tensor(value, dtype=torch.float64)
    if isinstance(value, complex):
        return torch.tensor(value, dtype=torch.complex128)
    return None


def _input_leaves(inputs: Any) -> dict[str, Any]:
    return dict(flatten(inputs[0], "args") + flatten(inputs[1], "kwargs"))


def _same_leaf(a: Any, b: Any) -> bool:
    """Two leaves that are not both tensors: the same type and equal (a Value by its key)."""
    if type(a) is not type(b) or isinstance(a, torch.Tensor):
        return False
    if isinstance(a, float) and a != a and b != b:  # NaN is the same NaN here: an input scalar nobody changed
        return True
    try:
        return bool(a == b)
    except Exception:  # an __eq__ that raises or answers with an array
        return False


def _layout_problem(e: torch.Tensor, c: torch.Tensor) -> str:
    """The same shape in another memory layout: a real difference (a `.view()` that works on eager's output can
    raise on compiled's), and said so in plain words."""

    def layout(t: torch.Tensor) -> str:
        return "contiguous" if t.is_contiguous() else "not contiguous"

    return (
        f"memory layout differs: strides {list(e.stride())} in eager ({layout(e)}), {list(c.stride())} compiled "
        f"({layout(c)}), same shape"
    )


def _layout_kind_problem(eager: str | None, compiled: str | None) -> str:
    """Eager and compiled gave tensors of different layouts (a sparse one and a dense one): code that works on
    one (`.indices()`, `.crow_indices()`, `.view()`) raises on the other, whatever the values."""

    def kind(layout: str | None) -> str:
        return f"a {layout} tensor" if layout else "a strided (dense) tensor"

    return (
        f"tensor layout differs: eager gives {kind(eager)}, compiled gives {kind(compiled)}; their values are compared "
        "in dense form"
    )


def _changed(before: torch.Tensor, after: torch.Tensor) -> bool:
    if before.shape != after.shape or before.dtype != after.dtype or before.layout != after.layout:
        return True
    return not bool(bitwise_equal(dense(before.detach()).cpu(), dense(after.detach()).cpu()).all())


def _dtype_name(dtype: torch.dtype) -> str:
    return str(dtype).removeprefix("torch.")
