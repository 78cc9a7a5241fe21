"""The fp64 reference runs of a call, and the eager re-run that the faithful reference's trace watches.

The plain reference is the program in float64 on inputs cast to float64; the faithful one is the same run
under faithful.FaithfulMode (eager's scalar roundings and random draws). Both start from the module state
eager started from, not compiled's result, and leave compiled's state in place, since the compiled
callable carries its own state into the next call.

The program computes in float64 through engine/child/fp64.py's mode, each weight cast as an op uses it,
so the reference costs the float64 operands of one op at a time, not a float64 copy of the model. With
--backward (the mode casts detached), or where the mode's run fails, it runs on a float64 copy of the
modules as before: `casting.fp64_program`.

Apart from comparison.py, which decides whether a reference runs and which one judges: this module only
runs them, and engine/child/faithful.py says what the faithful one does differently.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch

from engine.child import casting, gradients
from engine.child.faithful import exact_float64
from engine.child.fp64 import Fp64State
from engine.child.seeding import seed_everything
from engine.child.state import StateGuard

COPY_FALLBACK_BYTES = 2 << 30  # a float64 copy of the modules up to this size may stand in where the mode's run fails


@dataclass
class Reference:
    """The fp64 run's outputs, inputs after the call (mutations), module state after it, gradients."""

    out: Any = None
    inputs: Any = None
    state: dict[str, torch.Tensor] = field(default_factory=dict)
    grads: dict[str, torch.Tensor] = field(default_factory=dict)


@dataclass(frozen=True)
class CallState:
    """The module state once compiled has run: the guard (the state before the call), the names any run
    changed, and compiled's values of those it changed, which stay live for the next call."""

    guard: StateGuard
    written: frozenset[str]
    compiled_after: dict[str, torch.Tensor]

    def to_before(self) -> None:
        self.guard.put_back(self.compiled_after)

    def to_after(self, also: list[str] = ()) -> None:
        self.guard.put_back([*self.compiled_after, *also], self.compiled_after)


def fp64_reference(
    eager_fn: Callable[..., Any],
    pristine: Any,
    seed: int,
    state: CallState,
    *,
    backward: bool,
    note: Callable[[str], None],
    mode: Any = None,
) -> Reference:
    """The program in float64 on cast inputs, from the state eager started from (not compiled's result)."""
    with exact_float64():
        return _reference(eager_fn, pristine, seed, state, backward=backward, note=note, mode=mode)


def float32_twin(
    eager_fn: Callable[..., Any],
    pristine: Any,
    seed: int,
    state: CallState,
    *,
    backward: bool,
    note: Callable[[str], None],
    mode: Any = None,
) -> Reference:
    """The same run as fp64_reference, every op computed in float32 (engine/child/opmath.py): the element rule's
    measure of the computation's own float32 error. `mode` must be a fresh one (a faithful mode replays draws)."""
    from engine.child.opmath import Float32Arithmetic

    with Float32Arithmetic():
        return fp64_reference(eager_fn, pristine, seed, state, backward=backward, note=note, mode=mode)


def _reference(
    eager_fn: Callable[..., Any],
    pristine: Any,
    seed: int,
    state: CallState,
    *,
    backward: bool,
    note: Callable[[str], None],
    mode: Any,
) -> Reference:
    if backward:
        return _on_a_copy(eager_fn, pristine, seed, state, backward=True, mode=mode)
    try:
        return _cast_per_use(eager_fn, pristine, seed, state, mode)
    except Exception as exc:
        size = sum(t.numel() * 8 for t in state.guard.live.values() if t.is_floating_point())
        if size > COPY_FALLBACK_BYTES:
            raise
        note(
            "the fp64 reference ran on a float64 copy of the modules: computing it with each weight cast as used "
            f"failed ({type(exc).__name__}: {str(exc)[:160]})"
        )
        return _on_a_copy(eager_fn, pristine, seed, state, backward=False, mode=mode)


def _cast_per_use(eager_fn: Callable[..., Any], pristine: Any, seed: int, state: CallState, mode: Any) -> Reference:
    live = state.guard.live
    parameters = [t for t in live.values() if isinstance(t, torch.nn.Parameter)]
    parameters += casting.reachable_tensors(eager_fn)  # globals, closures, plain objects: cast as weights are
    shadowed = [t for name, t in live.items() if not isinstance(t, torch.nn.Parameter) or name in state.written]
    sources = {id(live[name]): state.guard.value_before(name) for name in state.compiled_after}
    upcast = Fp64State(parameters, shadowed, sources)
    r_inputs = casting.fp64_tree(pristine)
    seed_everything(seed)
    with upcast, mode if mode is not None else contextlib.nullcontext():
        r_out = eager_fn(*r_inputs[0], **r_inputs[1])
    r_state = {name: upcast.shadow_of(live[name]) for name in state.written}
    return Reference(r_out, r_inputs, r_state, {})


def _on_a_copy(
    eager_fn: Callable[..., Any], pristine: Any, seed: int, state: CallState, *, backward: bool, mode: Any
) -> Reference:
    state.to_before()
    try:
        ref_fn = casting.fp64_program(eager_fn)
    finally:
        state.to_after()  # the compiled callable carries its own state into the next call
    r_inputs = casting.fp64_tree(pristine)
    if backward:
        r_inputs = gradients.requiring_grad(r_inputs)
    seed_everything(seed)
    with mode if mode is not None else contextlib.nullcontext():
        r_out = ref_fn(*r_inputs[0], **r_inputs[1])
        ref_state = casting.module_state(casting.reachable_modules(ref_fn))
        r_state = {name: ref_state[name].detach().clone() for name in state.written if name in ref_state}
        r_grads = gradients.backward(r_out, r_inputs, ref_state, seed) if backward else {}
    return Reference(r_out, r_inputs, r_state, r_grads)


class EagerRerun:
    """Eager's call once more, exactly as the first time (same state, inputs and seed), then compiled's state back."""

    def __init__(
        self, eager_fn: Callable[..., Any], pristine: Any, seed: int, state: CallState, *, backward: bool
    ) -> None:
        self.eager_fn, self.pristine, self.seed, self.state, self.backward = eager_fn, pristine, seed, state, backward

    def __call__(self) -> Any:
        self.state.to_before()
        try:
            args, kwargs = casting.clone_tree(self.pristine)
            if self.backward:
                args, kwargs = gradients.requiring_grad((args, kwargs))
            seed_everything(self.seed)
            out = self.eager_fn(*args, **kwargs)
            if self.backward:
                gradients.backward(out, (args, kwargs), self.state.guard.live, self.seed)
            return out
        finally:
            self.state.to_after(self.state.guard.changed())
