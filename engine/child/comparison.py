"""Compare one call of a program, eager against compiled, leaf by leaf, with an fp64 reference.

Runs inside the worker. Eager and compiled start from identical state: the same RNG seed, deep-cloned
inputs, and the modules' parameters and buffers restored between the runs.
"""

from __future__ import annotations

import contextlib
import random
import re
import traceback
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np
import torch

from engine.child import casting, faithful
from engine.child.leaves import UnsupportedOutput, flatten, map_tensors, tensors_of
from engine.judge import oracle
from engine.judge.metrics import LOW_PRECISION, Operands, bitwise_equal, operands
from engine.judge.summary import summarize
from engine.judge.verdicts import ErrorKind, LeafKind, Symptom, Verdict
from engine.judge.witness import FaithfulReference
from engine.result import LeafResult, ScalarRounding


class StageError(BaseException):
    """A stage of the check failed. A BaseException, so a snippet's `except Exception` cannot swallow it."""

    def __init__(self, kind: ErrorKind, message: str, tb: str = "") -> None:
        super().__init__(message)
        self.kind = kind
        self.message = message
        self.tb = tb


_TORCH_ADVICE = re.compile(r"\s*Set TORCHDYNAMO_VERBOSE=1 for the internal stack trace.*?(?=\n\n|$)", re.S)


def stage_error(kind: ErrorKind, exc: BaseException, what: str) -> StageError:
    # torch's "Set TORCHDYNAMO_VERBOSE=1 ..." advice names settings of a worker the user does not run; the
    # traceback beside the message has the stack it offers
    text = _TORCH_ADVICE.sub("", f"{type(exc).__name__}: {exc}").rstrip()
    if isinstance(exc, MemoryError) or "can't allocate memory" in text or "out of memory" in text.lower():
        kind = ErrorKind.MEMORY
    if isinstance(exc, SystemExit):
        text = f"the snippet called sys.exit({exc.code!r})"
    return StageError(kind, f"{what}: {text}", "".join(traceback.format_exception(exc)))


@dataclass
class CallSettings:
    """What every compared call of one check shares."""

    strict: bool
    factor: float
    noise_ulps: float
    backward: bool
    fp64_reference: bool
    max_stored_elements: int
    emit: Callable[[str], None]
    notes: list[str] = field(default_factory=list)
    compiled_calls: int = 0
    compiled_failure: str = "the compiled program raised (eager did not)"

    def note(self, text: str) -> None:
        if text not in self.notes:
            self.notes.append(text)


@dataclass(frozen=True)
class StoredLeaf:
    """What is kept of a compared leaf for viewers: its operands (still on their device) unless it is
    above the storage limit, and the check's summary of it (engine.judge.summary)."""

    operands: Operands | None
    summary: dict[str, np.ndarray]


@dataclass
class CallOutcome:
    leaves: list[LeafResult]
    arrays: dict[str, StoredLeaf]  # by leaf name
    low_precision: bool
    drew_random: bool = False  # eager's call advanced the default generator: the program draws random numbers
    roundings: tuple[ScalarRounding, ...] = ()  # the Python scalars the faithful fp64 reference rounded as eager does


def rng_states() -> list[torch.Tensor]:
    """The default generators' states (CPU, and CUDA once initialised): a draw changes them."""
    states = [torch.default_generator.get_state()]
    if torch.cuda.is_available() and torch.cuda.is_initialized():
        states.extend(torch.cuda.get_rng_state_all())
    return states


def _drew(before: list[torch.Tensor]) -> bool:
    after = rng_states()
    return len(after) != len(before) or any(not torch.equal(a, b) for a, b in zip(after, before))


def seed_everything(seed: int) -> None:
    torch.manual_seed(seed)
    random.seed(seed)
    try:
        import numpy.random

        numpy.random.seed(seed % (2**32))
    except ImportError:  # numpy is optional for snippets
        pass


def compare_call(
    eager_fn: Callable[..., Any],
    compiled_fn: Callable[..., Any],
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    seed: int,
    settings: CallSettings,
    prefix: str = "",
) -> tuple[CallOutcome, Any]:
    """Run eager on clones, compiled on `args` themselves, fp64 on cast clones; return the comparison and compiled's output."""
    modules = casting.reachable_modules(eager_fn)
    live_state = casting.module_state(modules)
    saved = casting.snapshot(live_state)
    pristine = casting.clone_tree((args, kwargs))

    settings.emit("eager")
    e_args, e_kwargs = casting.clone_tree(pristine)
    if settings.backward:
        e_args, e_kwargs = _requiring_grad((e_args, e_kwargs))
    seed_everything(seed)
    seeded = rng_states()
    try:
        e_out = eager_fn(*e_args, **e_kwargs)
        drew_random = _drew(seeded)
        e_state = casting.snapshot(casting.module_state(modules))
        e_grads = _backward(e_out, (e_args, e_kwargs), casting.module_state(modules), seed) if settings.backward else {}
    except StageError:
        raise
    except BaseException as exc:
        raise stage_error(ErrorKind.EAGER, exc, "the program raised when run eagerly") from None
    casting.restore(live_state, saved)

    settings.emit("compiling" if settings.compiled_calls == 0 else "compiled run")
    c_args, c_kwargs = (args, kwargs)
    if settings.backward:
        c_args, c_kwargs = _requiring_grad(casting.clone_tree(pristine))
    seed_everything(seed)
    try:
        c_out = compiled_fn(*c_args, **c_kwargs)
        settings.compiled_calls += 1
        c_state = casting.snapshot(casting.module_state(modules))
        c_grads = _backward(c_out, (c_args, c_kwargs), casting.module_state(modules), seed) if settings.backward else {}
    except StageError:
        raise
    except BaseException as exc:
        raise stage_error(ErrorKind.COMPILE, exc, settings.compiled_failure) from None

    ref: Reference | None = None
    if settings.fp64_reference:
        settings.emit("fp64 reference")
        try:
            ref = _fp64_reference(eager_fn, pristine, seed, settings, (live_state, saved, c_state))
        except Exception as exc:  # the reference is best-effort: many ops have no float64 kernel
            settings.note(f"fp64 reference unavailable ({type(exc).__name__}: {str(exc)[:200]}); value drift judged by tolerances")

    def build(reference: Reference | None, what: str | None = None, plain: dict[str, tuple[float | None, float | None]] | None = None) -> _LeafBuilder:
        builder = _LeafBuilder(settings, prefix, what, plain)
        r = reference or Reference()
        try:
            builder.outputs(e_out, c_out, r.out)
        except UnsupportedOutput as exc:
            raise StageError(ErrorKind.SNIPPET, f"the program's output cannot be compared: {exc}") from None
        builder.mutations(pristine, (e_args, e_kwargs), (c_args, c_kwargs), r.inputs)
        builder.state(saved, e_state, c_state, r.state)
        if settings.backward:
            builder.gradients(e_grads, c_grads, r.grads)
        return builder

    settings.emit("comparing")
    builder = build(ref)
    roundings: tuple[ScalarRounding, ...] = ()
    if ref is not None and not settings.strict and any(_drifts(leaf) for leaf in builder.leaves):
        # values differ: is the plain reference the program eager ran? (its scalar roundings, its random draws)
        settings.emit("faithful reference")
        states = (live_state, saved, c_state)
        try:
            trace = faithful.trace_eager(_EagerRerun(eager_fn, pristine, seed, settings, states))
            mode = faithful.FaithfulMode(trace)
            faithful_ref = _fp64_reference(eager_fn, pristine, seed, settings, states, mode) if trace.changes_reference else None
        except Exception as exc:  # best-effort, like the plain reference: a program may refuse a dispatch mode
            settings.note(f"the faithful fp64 reference failed ({type(exc).__name__}: {str(exc)[:200]}); judged against the plain one")
        else:
            if faithful_ref is not None:
                if mode.unmatched:
                    settings.note(f"the faithful fp64 reference could not replay eager's draw for {', '.join(sorted(set(mode.unmatched)))}")
                plain = {l.name: (l.eager_ref_rms, l.eager_ref_max) for l in builder.leaves}
                settings.emit("comparing")
                builder = build(faithful_ref, trace.describe(), plain)
                roundings = tuple(trace.roundings)
    return CallOutcome(builder.leaves, builder.arrays, builder.low_precision, drew_random, roundings), c_out


@dataclass
class Reference:
    """The fp64 run's outputs, inputs after the call (mutations), module state after it, gradients."""

    out: Any = None
    inputs: Any = None
    state: dict[str, torch.Tensor] = field(default_factory=dict)
    grads: dict[str, torch.Tensor] = field(default_factory=dict)


States = tuple[dict[str, torch.Tensor], dict[str, torch.Tensor], dict[str, torch.Tensor]]  # live, before the call, after compiled's


def _fp64_reference(eager_fn: Callable[..., Any], pristine: Any, seed: int, settings: CallSettings, states: States, mode: Any = None) -> Reference:
    """The program cast to float64 on cast inputs, from the state eager started from (not compiled's result)."""
    live, before, after = states
    casting.restore(live, before)
    try:
        ref_fn = casting.fp64_program(eager_fn)
    finally:
        casting.restore(live, after)  # the compiled callable carries its own state into the next call
    r_inputs = map_tensors(pristine, casting.to_fp64_tensor)
    if settings.backward:
        r_inputs = _requiring_grad(r_inputs)
    seed_everything(seed)
    with mode if mode is not None else contextlib.nullcontext():
        r_out = ref_fn(*r_inputs[0], **r_inputs[1])
        ref_modules = casting.reachable_modules(ref_fn)
        r_state = casting.snapshot(casting.module_state(ref_modules))
        r_grads = _backward(r_out, r_inputs, casting.module_state(ref_modules), seed) if settings.backward else {}
    return Reference(r_out, r_inputs, r_state, r_grads)


class _EagerRerun:
    """Eager's call once more, exactly as the first time (same state, inputs and seed), then compiled's state back."""

    def __init__(self, eager_fn: Callable[..., Any], pristine: Any, seed: int, settings: CallSettings, states: States) -> None:
        self.eager_fn, self.pristine, self.seed, self.settings, self.states = eager_fn, pristine, seed, settings, states

    def __call__(self) -> Any:
        live, before, after = self.states
        casting.restore(live, before)
        try:
            args, kwargs = casting.clone_tree(self.pristine)
            if self.settings.backward:
                args, kwargs = _requiring_grad((args, kwargs))
            seed_everything(self.seed)
            out = self.eager_fn(*args, **kwargs)
            if self.settings.backward:
                _backward(out, (args, kwargs), casting.module_state(casting.reachable_modules(self.eager_fn)), self.seed)
            return out
        finally:
            casting.restore(live, after)


def _drifts(leaf: LeafResult) -> bool:
    """Values differ where a reference judged them (not bit-identical, not a structural or exact-dtype verdict)."""
    return leaf.mismatches > 0 and leaf.eager_ref_rms is not None and leaf.verdict in (Verdict.BENIGN, Verdict.DIVERGENT)


def _requiring_grad(tree: Any) -> Any:
    def mark(t: torch.Tensor) -> torch.Tensor:
        if t.is_floating_point() or t.is_complex():
            return t.detach().requires_grad_(True)
        return t

    return map_tensors(tree, mark)


def _backward(out: Any, inputs: Any, state: dict[str, torch.Tensor], seed: int) -> dict[str, torch.Tensor]:
    """Backpropagate a fixed random cotangent; return the gradients of inputs and parameters."""
    outs = [t for _, t in flatten(out) if isinstance(t, torch.Tensor) and t.requires_grad]
    if not outs:
        return {}
    gen = torch.Generator().manual_seed(seed + 1)
    with torch.utils._python_dispatch._disable_current_modes():  # the harness's draw: no faithful trace records it
        cotangents = [torch.randn(t.shape, generator=gen, dtype=torch.float64).to(dtype=t.dtype, device=t.device) for t in outs]
    torch.autograd.backward(outs, cotangents)
    grads: dict[str, torch.Tensor] = {}
    for path, t in tensors_of(inputs[0], "args") + tensors_of(inputs[1], "kwargs"):
        if t.grad is not None:
            grads[path] = t.grad.detach().clone()
    for name, t in state.items():
        if isinstance(t, torch.nn.Parameter) and t.grad is not None:
            grads[name] = t.grad.detach().clone()
            t.grad = None
    return grads


class _LeafBuilder:
    def __init__(self, settings: CallSettings, prefix: str, faithful: str | None = None, plain: dict[str, tuple[float | None, float | None]] | None = None) -> None:
        self.settings = settings
        self.prefix = prefix
        self.faithful = faithful  # what the faithful reference did differently, when the reference is that one
        self.plain = plain or {}  # leaf name -> eager's error (RMS, max) against the plain fp64 reference
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
                f"output structure differs: only eager has {only_e or 'nothing'}, only compiled has {only_c or 'nothing'}",
            )
        for name in e_leaves:
            if name in c_leaves:
                self.leaf(name, LeafKind.OUTPUT, e_leaves[name], c_leaves[name], r_leaves.get(name))

    def mutations(self, pristine: Any, eager_inputs: Any, compiled_inputs: Any, ref_inputs: Any) -> None:
        before = dict(tensors_of(pristine[0], "args") + tensors_of(pristine[1], "kwargs"))
        eager = dict(tensors_of(eager_inputs[0], "args") + tensors_of(eager_inputs[1], "kwargs"))
        compiled = dict(tensors_of(compiled_inputs[0], "args") + tensors_of(compiled_inputs[1], "kwargs"))
        ref = dict(tensors_of(ref_inputs[0], "args") + tensors_of(ref_inputs[1], "kwargs")) if ref_inputs is not None else {}
        for path, original in before.items():
            e, c = eager.get(path), compiled.get(path)
            if e is None or c is None:
                continue
            self._changed_pair(f"input {path}", LeafKind.MUTATED_INPUT, original, e, c, ref.get(path), "mutated")

    def state(self, saved: dict[str, torch.Tensor], e_state: dict[str, torch.Tensor], c_state: dict[str, torch.Tensor], r_state: dict[str, torch.Tensor]) -> None:
        for name, original in saved.items():
            e, c = e_state.get(name), c_state.get(name)
            if e is None or c is None:
                continue
            self._changed_pair(f"state {name}", LeafKind.STATE, original, e, c, r_state.get(name), "updated")

    def gradients(self, e_grads: dict[str, torch.Tensor], c_grads: dict[str, torch.Tensor], r_grads: dict[str, torch.Tensor]) -> None:
        for name in sorted(set(e_grads) | set(c_grads)):
            e, c = e_grads.get(name), c_grads.get(name)
            if e is None or c is None:
                side = "eager" if e is not None else "compiled"
                self._structural(f"grad {name}", LeafKind.GRADIENT, (Symptom.TYPE,), f"only {side} computed a gradient for {name}")
                continue
            self.leaf(f"grad {name}", LeafKind.GRADIENT, e, c, r_grads.get(name))

    def _changed_pair(self, name: str, kind: LeafKind, original: torch.Tensor, e: torch.Tensor, c: torch.Tensor, r: torch.Tensor | None, verb: str) -> None:
        e_changed, c_changed = _changed(original, e), _changed(original, c)
        if not (e_changed or c_changed):
            return
        extra: tuple[Symptom, ...] = ()
        detail = ""
        if e_changed != c_changed:
            extra = (Symptom.MUTATION,)
            detail = f"{'eager' if e_changed else 'compiled'} {verb} it in place but {'compiled' if e_changed else 'eager'} did not"
        self.leaf(name, kind, e, c, r, extra, detail)

    def _structural(self, name: str, kind: LeafKind, symptoms: tuple[Symptom, ...], detail: str) -> None:
        j = oracle.judge_structure(symptoms, detail)
        self.leaves.append(LeafResult(name=self.prefix + name, kind=kind, verdict=j.verdict, explanation=j.explanation, symptoms=j.symptoms))

    def leaf(
        self,
        name: str,
        kind: LeafKind,
        e: Any,
        c: Any,
        r: Any,
        extra: tuple[Symptom, ...] = (),
        detail: str = "",
    ) -> None:
        full = self.prefix + name
        e_t, c_t, r_t = _as_tensor(e), _as_tensor(c), _as_tensor(r)
        if e_t is None or c_t is None:
            same = type(e) is type(c) and e == c
            if same and not extra:
                self.leaves.append(LeafResult(full, kind, Verdict.MATCH, f"equal ({e!r})", eager_value=repr(e), compiled_value=repr(c)))
            else:
                why = detail or f"eager gave {type(e).__name__} {e!r:.80}, compiled gave {type(c).__name__} {c!r:.80}"
                self.leaves.append(
                    LeafResult(full, kind, Verdict.DIVERGENT, why, (*extra, Symptom.TYPE), eager_value=repr(e)[:200], compiled_value=repr(c)[:200])
                )
            return
        shape, c_shape = tuple(e_t.shape), tuple(c_t.shape)
        dtype, c_dtype = _dtype_name(e_t.dtype), _dtype_name(c_t.dtype)
        stride, c_stride = tuple(e_t.stride()), tuple(c_t.stride())
        if e_t.dtype in LOW_PRECISION or c_t.dtype in LOW_PRECISION:
            self.low_precision = True
        common = dict(shape=shape, compiled_shape=c_shape, dtype=dtype, compiled_dtype=c_dtype, stride=stride, compiled_stride=c_stride, numel=e_t.numel())
        structural = list(extra)
        problems = [detail] if detail else []
        if shape != c_shape:
            structural.append(Symptom.SHAPE)
            problems.append(f"shape {list(shape)} vs compiled {list(c_shape)}")
        if e_t.dtype != c_t.dtype:
            structural.append(Symptom.DTYPE)
            problems.append(f"dtype {dtype} vs compiled {c_dtype}")
        if Symptom.SHAPE in structural or Symptom.DTYPE in structural:
            j = oracle.judge_structure(tuple(structural), "; ".join(problems))
            self.leaves.append(LeafResult(full, kind, j.verdict, j.explanation, j.symptoms, **common))  # type: ignore[arg-type]
            return
        if e_t.device != c_t.device:
            c_t = c_t.to(e_t.device)
        if _significant_strides(e_t) != _significant_strides(c_t):
            structural.append(Symptom.STRIDE)
            problems.append(f"strides {list(stride)} vs compiled {list(c_stride)}")
        ops = operands(e_t, c_t, r_t if r_t is not None and r_t.shape == e_t.shape else None)
        metrics, summary = summarize(ops, dtype)
        note = None
        if self.faithful is not None:
            plain_rms, plain_max = self.plain.get(full, (None, None))
            note = FaithfulReference(self.faithful, plain_rms, plain_max)
        j = oracle.judge_values(metrics, strict=self.settings.strict, factor=self.settings.factor, noise_ulps=self.settings.noise_ulps, faithful=note)
        verdict, symptoms, explanation = j.verdict, j.symptoms, j.explanation
        if structural:
            verdict = Verdict.DIVERGENT
            symptoms = (*structural, *symptoms)
            explanation = "; ".join(problems) + ("" if j.verdict is Verdict.MATCH else f"; values: {j.explanation}")
        stored = None
        if e_t.numel():
            stored = full
            keep = e_t.numel() <= self.settings.max_stored_elements
            self.arrays[full] = StoredLeaf(ops if keep else None, summary)
            if not keep:
                self.settings.note(
                    f"{full}: {e_t.numel()} elements exceed the storage limit of {self.settings.max_stored_elements}; only the check's "
                    "summary was kept (the heatmap's blocks of the slice through the worst element, the worst elements, the ULP histogram)"
                )
        self.leaves.append(
            LeafResult(
                full,
                kind,
                verdict,
                explanation,
                tuple(symptoms),
                mismatches=metrics.mismatches,
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
                arrays=stored,
                witness=j.witness,
                **common,  # type: ignore[arg-type]
            )
        )


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


def _changed(before: torch.Tensor, after: torch.Tensor) -> bool:
    if before.shape != after.shape or before.dtype != after.dtype:
        return True
    return not bool(bitwise_equal(before.detach().cpu(), after.detach().cpu()).all())


def _significant_strides(t: torch.Tensor) -> tuple[int, ...]:
    """Strides that matter: those of dimensions longer than one (torch is free to choose the rest)."""
    if t.numel() <= 1:
        return ()
    return tuple(s for n, s in zip(t.shape, t.stride()) if n > 1)


def _dtype_name(dtype: torch.dtype) -> str:
    return str(dtype).removeprefix("torch.")
