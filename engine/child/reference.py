"""The fp64 reference runs of a call, and the eager re-run that the faithful reference's trace watches.

The plain reference is the program cast to float64 on cast inputs; the faithful one is the same run
under faithful.FaithfulMode (eager's scalar roundings and random draws). Both start from the module
state eager started from, not compiled's result, and hand compiled's state back, since the compiled
callable carries its own state into the next call.

Apart from comparison.py, which decides whether a reference runs and which one judges: this module only
runs them, and engine/child/faithful.py says what the faithful one does differently.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from typing import Any, Callable

import torch

from engine.child import casting, gradients
from engine.child.leaves import map_tensors
from engine.child.seeding import seed_everything


@dataclass
class Reference:
    """The fp64 run's outputs, inputs after the call (mutations), module state after it, gradients."""

    out: Any = None
    inputs: Any = None
    state: dict[str, torch.Tensor] = field(default_factory=dict)
    grads: dict[str, torch.Tensor] = field(default_factory=dict)


States = tuple[dict[str, torch.Tensor], dict[str, torch.Tensor], dict[str, torch.Tensor]]  # live, before the call, after compiled's


def fp64_reference(
    eager_fn: Callable[..., Any], pristine: Any, seed: int, states: States, *, backward: bool, mode: Any = None
) -> Reference:
    """The program cast to float64 on cast inputs, from the state eager started from (not compiled's result)."""
    live, before, after = states
    casting.restore(live, before)
    try:
        ref_fn = casting.fp64_program(eager_fn)
    finally:
        casting.restore(live, after)  # the compiled callable carries its own state into the next call
    r_inputs = map_tensors(pristine, casting.to_fp64_tensor)
    if backward:
        r_inputs = gradients.requiring_grad(r_inputs)
    seed_everything(seed)
    with mode if mode is not None else contextlib.nullcontext():
        r_out = ref_fn(*r_inputs[0], **r_inputs[1])
        ref_modules = casting.reachable_modules(ref_fn)
        r_state = casting.snapshot(casting.module_state(ref_modules))
        r_grads = gradients.backward(r_out, r_inputs, casting.module_state(ref_modules), seed) if backward else {}
    return Reference(r_out, r_inputs, r_state, r_grads)


class EagerRerun:
    """Eager's call once more, exactly as the first time (same state, inputs and seed), then compiled's state back."""

    def __init__(self, eager_fn: Callable[..., Any], pristine: Any, seed: int, states: States, *, backward: bool) -> None:
        self.eager_fn, self.pristine, self.seed, self.states, self.backward = eager_fn, pristine, seed, states, backward

    def __call__(self) -> Any:
        live, before, after = self.states
        casting.restore(live, before)
        try:
            args, kwargs = casting.clone_tree(self.pristine)
            if self.backward:
                args, kwargs = gradients.requiring_grad((args, kwargs))
            seed_everything(self.seed)
            out = self.eager_fn(*args, **kwargs)
            if self.backward:
                gradients.backward(out, (args, kwargs), casting.module_state(casting.reachable_modules(self.eager_fn)), self.seed)
            return out
        finally:
            casting.restore(live, after)
