"""Compare one call of a program, eager against compiled, leaf by leaf, with an fp64 reference.

Runs inside the worker. Eager and compiled start from identical state: the same RNG seed, deep-copied
inputs, and the modules' parameters and buffers restored between the runs (engine/child/state.py).

This module sequences a call's runs and decides which reference judges it (the plain fp64 one, or the
faithful one where values differ); its parts live beside it: errors.py (how a run fails), seeding.py,
gradients.py (the backward half of every run), state.py (the module state across the runs), reference.py
(the fp64 runs) and leaf_builder.py (the judged leaves).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch

from engine.child import casting, faithful, gradients, uninitialized
from engine.child.errors import StageError, stage_error
from engine.child.leaf_builder import LeafBuilder, StoredLeaf
from engine.child.leaves import UncopyableInput, UnsupportedOutput, dense, flatten, tensors_of
from engine.child.reference import CallState, EagerRerun, Reference, float32_twin, fp64_reference
from engine.child.seeding import drew, rng_states, seed_everything
from engine.child.state import COPIED_PARAMETER_BYTES, StateGuard
from engine.judge.metrics import bitwise_equal
from engine.judge.verdicts import ErrorKind, Verdict
from engine.result import LeafResult, ScalarRounding


@dataclass(kw_only=True)
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
    output_goes_on: bool = False  # compiled's output goes back to the program (a verbatim repro): its graph stays
    state_changed: bool = False  # a call changed the module state: a re-check must load the program afresh

    def note(self, text: str) -> None:
        if text not in self.notes:
            self.notes.append(text)


@dataclass
class CallOutcome:
    leaves: list[LeafResult]
    arrays: dict[str, StoredLeaf]  # by leaf name
    low_precision: bool
    drew_random: bool = False  # eager's call advanced the default generator: the program draws random numbers
    roundings: tuple[ScalarRounding, ...] = ()  # the Python scalars the faithful fp64 reference rounded as eager does
    random_ops: tuple[
        str, ...
    ] = ()  # ops tagged nondeterministic_seeded that advanced a generator in eager's run (rng's evidence)
    round_trips: tuple[
        tuple[str, str], ...
    ] = ()  # (ATen producer -> consumer, dtype): eager's low-precision roundings between fusible ops
    # per output leaf, the round trips ("producer -> consumer") and the draws among its own ancestors in eager's ATen
    # ops (engine/child/faithful.py); None where no trace ran
    leaf_round_trips: dict[str, tuple[str, ...]] | None = None
    leaf_draws: dict[str, tuple[str, ...]] | None = None


@dataclass(frozen=True)
class JudgedBy:
    """The reference the leaves are judged against: the plain fp64 one, or the faithful one with what it did
    differently (`what`) and eager's error against the plain one, leaf by leaf (`plain`: name -> RMS, max)."""

    reference: Reference | None
    what: str | None = None
    plain: dict[str, tuple[float | None, float | None]] | None = None


@dataclass(frozen=True)
class _EagerRun:
    inputs: tuple[tuple[Any, ...], dict[str, Any]]  # eager's copy of (args, kwargs), after the call
    out: Any
    grads: dict[str, torch.Tensor]
    drew_random: bool  # the call advanced the default generator
    changed: list[str]  # module state the call wrote
    state: dict[str, torch.Tensor]  # eager's values of that state


@dataclass(frozen=True)
class _CompiledRun:
    inputs: tuple[tuple[Any, ...], dict[str, Any]]
    out: Any
    grads: dict[str, torch.Tensor]
    lost: list[str]  # state written in place whose value before the call was not kept
    after: dict[str, torch.Tensor]  # compiled's values of the state it wrote (and kept a copy of)


@dataclass(frozen=True)
class _Call:
    """The runs of one call, and what every building of its leaves (once per reference) reads."""

    eager_fn: Callable[..., Any]
    pristine: Any  # (args, kwargs) as they were before the call
    seed: int
    state: CallState
    eager: _EagerRun
    compiled: _CompiledRun
    settings: CallSettings
    prefix: str

    def rerun(self) -> EagerRerun:
        return EagerRerun(self.eager_fn, self.pristine, self.seed, self.state, backward=self.settings.backward)

    def named(self, out: Any) -> list[tuple[str, torch.Tensor]]:
        """The output leaves as the builder names them."""
        return [(self.prefix + name, t) for name, t in tensors_of(out, "out")]

    def build(
        self, judged_by: JudgedBy, undefined: uninitialized.Undefined | None = None, twin: Reference | None = None
    ) -> LeafBuilder:
        settings, guard, written = self.settings, self.state.guard, self.state.written
        builder = LeafBuilder(settings, self.prefix, judged_by.what, judged_by.plain, undefined, twin)
        r = judged_by.reference or Reference()
        try:
            builder.outputs(self.eager.out, self.compiled.out, r.out)
            builder.mutations(self.pristine, self.eager.inputs, self.compiled.inputs, r.inputs)
        except UnsupportedOutput as exc:
            raise StageError(ErrorKind.SNIPPET, f"the program's output cannot be compared: {exc}") from None
        saved = {name: guard.before[name] for name in written}
        after_eager = {name: self.eager.state.get(name, guard.before[name]) for name in written}
        after_compiled = {name: self.compiled.after.get(name, guard.before[name]) for name in written}
        builder.state(saved, after_eager, after_compiled, r.state)
        for name in self.compiled.lost:
            builder.unrestorable_write(name)
        if settings.backward:
            builder.gradients(self.eager.grads, self.compiled.grads, r.grads)
        return builder


@dataclass
class _Judgement:
    """The leaves as last built, and what built them; each refinement of the reference rebuilds them."""

    builder: LeafBuilder
    judged_by: JudgedBy
    twin: Reference | None = None  # the reference computed in float32: the element rule's tie band
    trace: faithful.Trace | None = None  # eager's ATen ops, traced once where a refinement needs them
    roundings: tuple[ScalarRounding, ...] = ()


def compare_call(
    eager_fn: Callable[..., Any],
    compiled_fn: Callable[..., Any],
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    seed: int,
    settings: CallSettings,
    prefix: str = "",
) -> tuple[CallOutcome, Any]:
    """Run eager on a copy of the inputs, compiled on `args` themselves, fp64 on cast copies; return the
    comparison and compiled's output.

    What is copied is what a run could change: the inputs once for eager (and once more only when eager
    changed its copy, so that compiled's can be compared with the inputs as they were), the module state
    as engine/child/state.py decides. Outputs are detached as soon as they are made, unless gradients are
    compared, so no autograd graph keeps its saved activations alive.
    """
    guard = StateGuard(casting.module_state(casting.reachable_modules(eager_fn)))
    eager = _run_eager(eager_fn, args, kwargs, seed, settings, guard)
    # eager's copy is the inputs as they were unless eager changed it; only then is another copy needed
    pristine = casting.clone_tree((args, kwargs)) if _inputs_changed((args, kwargs), eager.inputs) else eager.inputs
    compiled = _run_compiled(compiled_fn, (args, kwargs), pristine, seed, settings, guard)
    state = CallState(guard, frozenset([*eager.changed, *compiled.after]), compiled.after)
    call = _Call(eager_fn, pristine, seed, state, eager, compiled, settings, prefix)

    reference = _plain_reference(call)
    settings.emit("comparing")
    judgement = _Judgement(call.build(JudgedBy(reference)), JudgedBy(reference))
    if reference is not None and not settings.strict and any(_drifts(leaf) for leaf in judgement.builder.leaves):
        _judge_faithfully(call, judgement)
    differ = any(leaf.mismatches for leaf in judgement.builder.leaves)
    random_ops = _random_ops(call, judgement) if eager.drew_random and differ else ()
    if differ and (judgement.trace is None or judgement.trace.uninitialized):
        _leave_out_uninitialized(call, judgement)
    builder, trace = judgement.builder, judgement.trace
    outcome = CallOutcome(
        builder.leaves,
        builder.arrays,
        builder.low_precision,
        drew_random=eager.drew_random,
        roundings=judgement.roundings,
        random_ops=random_ops,
        round_trips=tuple(trace.round_trips.items()) if trace is not None else (),
        leaf_round_trips=dict(trace.leaf_round_trips) if trace is not None else None,
        leaf_draws=dict(trace.leaf_draws) if trace is not None else None,
    )
    return outcome, compiled.out


def _run_eager(
    eager_fn: Callable[..., Any],
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    seed: int,
    settings: CallSettings,
    guard: StateGuard,
) -> _EagerRun:
    """Eager's run on its own copy of the inputs; the module state it wrote is copied, then put back."""
    settings.emit("eager")
    try:
        e_args, e_kwargs = casting.clone_tree((args, kwargs))
    except (UncopyableInput, UnsupportedOutput) as exc:
        raise StageError(ErrorKind.SNIPPET, f"the program's inputs cannot be compared: {exc}") from None
    if settings.backward:
        e_args, e_kwargs = gradients.requiring_grad((e_args, e_kwargs))
    seed_everything(seed)
    seeded = rng_states()
    try:
        e_out = eager_fn(*e_args, **e_kwargs)
        drew_random = drew(seeded)
        e_grads = gradients.backward(e_out, (e_args, e_kwargs), guard.live, seed) if settings.backward else {}
    except StageError:
        raise
    except BaseException as exc:
        raise stage_error(ErrorKind.EAGER, exc, "the program raised when run eagerly") from None
    try:  # before the compile, which costs more than everything else: an output that cannot be compared is refused now
        e_tensors = tensors_of(e_out, "out")
    except UnsupportedOutput as exc:
        raise StageError(ErrorKind.SNIPPET, f"the program's output cannot be compared: {exc}") from None
    if not settings.backward:
        _drop_graph(e_tensors)
    e_changed = guard.changed()
    lost = [name for name in e_changed if name in guard.watched]
    if lost:
        raise StageError(
            ErrorKind.SNIPPET,
            f"the program wrote to {', '.join(lost[:3])} in place when run eagerly; its parameters are above "
            f"{COPIED_PARAMETER_BYTES >> 20} MiB, so the check keeps no copy of them to give compiled the same start "
            "(write to a buffer instead: buffers are always copied)",
        )
    e_state = guard.copies(e_changed)
    guard.put_back(e_changed)
    return _EagerRun((e_args, e_kwargs), e_out, e_grads, drew_random, e_changed, e_state)


def _run_compiled(
    compiled_fn: Callable[..., Any],
    inputs: tuple[tuple[Any, ...], dict[str, Any]],
    pristine: Any,
    seed: int,
    settings: CallSettings,
    guard: StateGuard,
) -> _CompiledRun:
    """Compiled's run on the inputs themselves (on a copy of them as they were, where gradients are compared)."""
    settings.emit("compiling" if settings.compiled_calls == 0 else "compiled run")
    c_args, c_kwargs = inputs
    if settings.backward:
        c_args, c_kwargs = gradients.requiring_grad(casting.clone_tree(pristine))
    seed_everything(seed)
    try:
        c_out = compiled_fn(*c_args, **c_kwargs)
        settings.compiled_calls += 1
        c_grads = gradients.backward(c_out, (c_args, c_kwargs), guard.live, seed) if settings.backward else {}
    except StageError:
        raise
    except BaseException as exc:
        raise stage_error(ErrorKind.COMPILE, exc, settings.compiled_failure) from None
    if not settings.backward and not settings.output_goes_on:
        try:
            _drop_graph(tensors_of(c_out, "out"))
        except UnsupportedOutput:  # said when the leaves are built
            pass
    c_changed = guard.changed()
    c_lost = [name for name in c_changed if name in guard.watched]  # its value before the call is gone
    c_after = guard.copies(name for name in c_changed if name not in guard.watched)
    settings.state_changed = settings.state_changed or guard.ever_changed
    return _CompiledRun((c_args, c_kwargs), c_out, c_grads, c_lost, c_after)


def _plain_reference(call: _Call) -> Reference | None:
    """The program run in float64 (best-effort: many ops have no float64 kernel); None where nothing floats."""
    settings = call.settings
    if not (settings.fp64_reference and _any_floating(call.pristine, call.state.guard.live, call.eager.out)):
        return None
    settings.emit("fp64 reference")
    try:
        return _reference(call, fp64_reference)
    except Exception as exc:  # the reference is best-effort: many ops have no float64 kernel
        settings.note(
            f"fp64 reference unavailable ({type(exc).__name__}: {str(exc)[:200]}); value drift judged by tolerances"
        )
        return None


def _reference(call: _Call, run: Callable[..., Reference], mode: Any = None) -> Reference:
    """The call's program run again from its pristine inputs by `run` (fp64_reference or float32_twin), under `mode`
    (a FaithfulMode replaying eager's roundings and draws) when given."""
    settings = call.settings
    return run(
        call.eager_fn, call.pristine, call.seed, call.state, backward=settings.backward, note=settings.note, mode=mode
    )


def _judge_faithfully(call: _Call, judgement: _Judgement) -> None:
    """Values differ: judge them against the program eager ran (its scalar roundings, its random draws) and, where
    a bf16/fp16 value differs, with the computation's own float32 error (the element rule's tie band)."""
    settings = call.settings
    settings.emit("faithful reference")
    faithful_ref = _faithful_reference(call, judgement)
    if any(_drifts(leaf) and leaf.dtype in _LOW for leaf in judgement.builder.leaves):
        settings.emit("float32 twin")
        trace = judgement.trace if faithful_ref is not None else None
        try:
            judgement.twin = _reference(call, float32_twin, faithful.FaithfulMode(trace) if trace is not None else None)
        except Exception as exc:  # best-effort: without it the band is its floor
            settings.note(
                f"the float32 twin of the reference failed ({type(exc).__name__}: {str(exc)[:200]}); "
                "ties are judged by the floor of the band alone"
            )
    if faithful_ref is not None or judgement.twin is not None:
        settings.emit("comparing")
        judgement.builder = call.build(judgement.judged_by, None, judgement.twin)


def _faithful_reference(call: _Call, judgement: _Judgement) -> Reference | None:
    """The fp64 reference replaying eager's scalar roundings and draws (judgement.trace: eager's ops, traced);
    None where the trace changes nothing or fails (the plain reference judges then)."""
    settings = call.settings
    try:
        judgement.trace = faithful.trace_eager(call.rerun(), call.named)
        mode = faithful.FaithfulMode(judgement.trace)
        reference = _reference(call, fp64_reference, mode) if judgement.trace.changes_reference else None
    except Exception as exc:  # best-effort, like the plain reference: a program may refuse a dispatch mode
        settings.note(
            f"the faithful fp64 reference failed ({type(exc).__name__}: {str(exc)[:200]}); judged against the plain one"
        )
        return None
    if reference is not None:
        if mode.unmatched:
            settings.note(
                "the faithful fp64 reference could not replay eager's draw for "
                f"{', '.join(sorted(set(mode.unmatched)))}"
            )
        plain = {leaf.name: (leaf.eager_ref_rms, leaf.eager_ref_max) for leaf in judgement.builder.leaves}
        judgement.judged_by = JudgedBy(reference, judgement.trace.describe(), plain)
        judgement.roundings = tuple(judgement.trace.roundings)
    return reference


def _random_ops(call: _Call, judgement: _Judgement) -> tuple[str, ...]:
    """The ops that drew random numbers in eager's run: the evidence an rng verdict needs (none where eager's
    ops cannot be traced)."""
    if judgement.trace is None:
        try:
            judgement.trace = faithful.trace_eager(call.rerun(), call.named)
        except Exception as exc:  # best-effort: without it no difference is called rng
            call.settings.note(f"eager's random draws could not be traced ({type(exc).__name__}: {str(exc)[:200]})")
    return tuple(judgement.trace.random_ops) if judgement.trace is not None else ()


def _leave_out_uninitialized(call: _Call, judgement: _Judgement) -> None:
    """Values differ: are some of them memory the program never wrote? Those are not compared (a trace that saw
    no such op says no, and this is not asked)."""
    try:
        undefined = uninitialized.undefined_elements(call.rerun())
    except Exception as exc:  # best-effort, like the faithful trace: every element stays judged
        call.settings.note(f"uninitialized memory could not be looked for ({type(exc).__name__}: {str(exc)[:200]})")
        return
    if undefined:
        call.settings.emit("comparing")
        judgement.builder = call.build(judgement.judged_by, undefined, judgement.twin)


def _drop_graph(tensors: list[tuple[str, torch.Tensor]]) -> None:
    """Detach a run's output tensors in place: their autograd graph, and the activations it saved, go now."""
    for _, t in tensors:
        if t.grad_fn is not None:
            try:
                t.detach_()
            except RuntimeError:  # a view cannot be detached in place: its graph lives as long as it does
                pass


def _inputs_changed(original: Any, copy: Any) -> bool:
    """Whether a run changed its copy of the inputs: a tensor written, re-bound or re-shaped, any other leaf changed."""
    before, after = flatten(original, "in"), flatten(copy, "in")
    if [name for name, _ in before] != [name for name, _ in after]:
        return True
    for (_, a), (_, b) in zip(before, after, strict=True):
        if isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor):
            if a.shape != b.shape or a.dtype != b.dtype or a.layout != b.layout:
                return True
            # a sparse tensor has no strides: its values, in dense form, are what a run could have changed
            if a.layout == torch.strided and a.stride() != b.stride():
                return True
            try:
                if not bool(bitwise_equal(dense(a.detach()), dense(b.detach())).all()):
                    return True
            except (
                UnsupportedOutput
            ):  # a layout with no dense form: copy again; building its leaf says why it cannot be compared
                return True
        elif type(a) is not type(b) or isinstance(a, torch.Tensor) or isinstance(b, torch.Tensor):
            return True
        else:
            try:
                if not bool(a == b):
                    return True
            except Exception:
                return True
    return False


def _any_floating(*trees: Any) -> bool:
    """Whether a floating or complex tensor is anywhere in them: without one, fp64 would recompute the same integers."""
    return any(t.is_floating_point() or t.is_complex() for tree in trees for _, t in tensors_of(tree, "x"))


_LOW = ("bfloat16", "float16")


def _drifts(leaf: LeafResult) -> bool:
    """Values differ where a reference can judge them: floating drift against it, or integers that differ (the
    faithful reference says which side a scalar rounding puts right), not a structural verdict."""
    judged = leaf.eager_ref_rms is not None or (leaf.dtype is not None and not _floating(leaf.dtype))
    return (
        leaf.mismatches > 0
        and judged
        and not leaf.structural
        and leaf.verdict in (Verdict.BENIGN, Verdict.DIVERGENT, Verdict.EAGER_INACCURATE)
    )


def _floating(dtype: str) -> bool:
    return dtype.startswith(("float", "bfloat", "complex"))
