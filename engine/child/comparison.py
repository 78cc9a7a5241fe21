"""Compare one call of a program, eager against compiled, leaf by leaf, with an fp64 reference.

Runs inside the worker. Eager and compiled start from identical state: the same RNG seed, deep-cloned
inputs, and the modules' parameters and buffers restored between the runs.

This module sequences a call's runs and decides which reference judges it (the plain fp64 one, or the
faithful one where values differ); its parts live beside it: errors.py (how a run fails), seeding.py,
gradients.py (the backward half of every run), reference.py (the fp64 runs) and leaf_builder.py (the
judged leaves).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

from engine.child import casting, faithful, gradients
from engine.child.errors import StageError, stage_error
from engine.child.leaf_builder import LeafBuilder, StoredLeaf
from engine.child.leaves import UnsupportedOutput
from engine.child.reference import EagerRerun, Reference, fp64_reference
from engine.child.seeding import drew, rng_states, seed_everything
from engine.judge.verdicts import ErrorKind, Verdict
from engine.result import LeafResult, ScalarRounding


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


@dataclass
class CallOutcome:
    leaves: list[LeafResult]
    arrays: dict[str, StoredLeaf]  # by leaf name
    low_precision: bool
    drew_random: bool = False  # eager's call advanced the default generator: the program draws random numbers
    roundings: tuple[ScalarRounding, ...] = ()  # the Python scalars the faithful fp64 reference rounded as eager does
    random_ops: tuple[str, ...] = ()  # ops tagged nondeterministic_seeded that advanced a generator in eager's run (rng's evidence)


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
        e_args, e_kwargs = gradients.requiring_grad((e_args, e_kwargs))
    seed_everything(seed)
    seeded = rng_states()
    try:
        e_out = eager_fn(*e_args, **e_kwargs)
        drew_random = drew(seeded)
        e_state = casting.snapshot(casting.module_state(modules))
        e_grads = gradients.backward(e_out, (e_args, e_kwargs), casting.module_state(modules), seed) if settings.backward else {}
    except StageError:
        raise
    except BaseException as exc:
        raise stage_error(ErrorKind.EAGER, exc, "the program raised when run eagerly") from None
    casting.restore(live_state, saved)

    settings.emit("compiling" if settings.compiled_calls == 0 else "compiled run")
    c_args, c_kwargs = (args, kwargs)
    if settings.backward:
        c_args, c_kwargs = gradients.requiring_grad(casting.clone_tree(pristine))
    seed_everything(seed)
    try:
        c_out = compiled_fn(*c_args, **c_kwargs)
        settings.compiled_calls += 1
        c_state = casting.snapshot(casting.module_state(modules))
        c_grads = gradients.backward(c_out, (c_args, c_kwargs), casting.module_state(modules), seed) if settings.backward else {}
    except StageError:
        raise
    except BaseException as exc:
        raise stage_error(ErrorKind.COMPILE, exc, settings.compiled_failure) from None

    ref: Reference | None = None
    if settings.fp64_reference:
        settings.emit("fp64 reference")
        try:
            ref = fp64_reference(eager_fn, pristine, seed, (live_state, saved, c_state), backward=settings.backward)
        except Exception as exc:  # the reference is best-effort: many ops have no float64 kernel
            settings.note(f"fp64 reference unavailable ({type(exc).__name__}: {str(exc)[:200]}); value drift judged by tolerances")

    def build(reference: Reference | None, what: str | None = None, plain: dict[str, tuple[float | None, float | None]] | None = None) -> LeafBuilder:
        builder = LeafBuilder(settings, prefix, what, plain)
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
    trace: faithful.Trace | None = None
    if ref is not None and not settings.strict and any(_drifts(leaf) for leaf in builder.leaves):
        # values differ: is the plain reference the program eager ran? (its scalar roundings, its random draws)
        settings.emit("faithful reference")
        states = (live_state, saved, c_state)
        try:
            trace = faithful.trace_eager(EagerRerun(eager_fn, pristine, seed, states, backward=settings.backward))
            mode = faithful.FaithfulMode(trace)
            faithful_ref = fp64_reference(eager_fn, pristine, seed, states, backward=settings.backward, mode=mode) if trace.changes_reference else None
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
    random_ops: tuple[str, ...] = ()
    if drew_random and any(leaf.mismatches for leaf in builder.leaves):  # the evidence an rng verdict needs: which ops drew
        if trace is None:
            try:
                trace = faithful.trace_eager(EagerRerun(eager_fn, pristine, seed, (live_state, saved, c_state), backward=settings.backward))
            except Exception as exc:  # best-effort: without it no difference is called rng
                settings.note(f"eager's random draws could not be traced ({type(exc).__name__}: {str(exc)[:200]})")
        random_ops = tuple(trace.random_ops) if trace is not None else ()
    return CallOutcome(builder.leaves, builder.arrays, builder.low_precision, drew_random, roundings, random_ops), c_out


def _drifts(leaf: LeafResult) -> bool:
    """Values differ where a reference judged them (not bit-identical, not a structural or exact-dtype verdict)."""
    return leaf.mismatches > 0 and leaf.eager_ref_rms is not None and leaf.verdict in (Verdict.BENIGN, Verdict.DIVERGENT)
