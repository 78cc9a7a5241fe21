"""Which output elements are uninitialized memory: values no program defines, so no comparison may judge them.

`torch.empty` and its family hand back memory as the allocator left it. A program that returns such memory
unwritten (op_db's samples of `empty`, `new_empty_strided`, ...) gives whatever bytes were there: eager's and
compiled's differ from run to run, and calling that a divergence is a false alarm on the program, not a fault
of the compiler (PyTorch's own OpInfo test compares only these ops' shape, dtype and strides). Most programs
write such memory before it matters (`empty(...).bernoulli_(p)`, an output buffer filled by `copy_`): those
elements are defined and stay judged.

How, with evidence and no table of "ops that write everything": eager's call runs twice more under
`Poisoned`, a dispatch mode that fills every fresh uninitialized tensor with the dtype's largest value in one
run and its smallest in the other. An output element that differs between the two runs depends on memory
nobody wrote; the rest do not. The first run notes whether any such op ran at all, so a program without one
costs a single re-run (and none where the faithful trace already watched the call and saw none).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch
from torch.utils._python_dispatch import TorchDispatchMode

from engine.child.faithful import uninitialized_op
from engine.child.leaves import UnsupportedOutput, dense, tensors_of
from engine.judge.metrics import bitwise_equal


@dataclass(frozen=True)
class Undefined:
    """The output elements that are uninitialized memory, by leaf name (True: undefined), and the ops that made it."""

    masks: dict[str, torch.Tensor] = field(default_factory=dict)
    ops: tuple[str, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.masks)


class Poisoned(TorchDispatchMode):
    """Fills the output of every uninitialized-memory op with the dtype's largest (`high`) or smallest value."""

    def __init__(self, high: bool) -> None:
        super().__init__()
        self.high = high
        self.ops: dict[str, None] = {}  # an ordered set: the ops that ran, named as ATen names them

    def __torch_dispatch__(
        self, func: Any, types: Any, args: tuple[Any, ...] = (), kwargs: dict[str, Any] | None = None
    ) -> Any:
        out = func(*args, **(kwargs or {}))
        name = uninitialized_op(func)
        if name is not None and isinstance(out, torch.Tensor) and out.layout == torch.strided:
            self.ops[name] = None
            with torch.no_grad():
                out.fill_(_extreme(out.dtype, self.high))
        return out


def _extreme(dtype: torch.dtype, high: bool) -> Any:
    """The value a poisoned run fills with: far apart between the two runs, so that almost any use shows it."""
    if dtype == torch.bool:
        return high
    if dtype.is_floating_point or dtype.is_complex:
        info = torch.finfo(dtype)
        return info.max if high else info.min
    info = torch.iinfo(dtype)
    return info.max if high else info.min


def undefined_elements(rerun: Callable[[], Any]) -> Undefined:
    """The output elements of eager's call that depend on uninitialized memory (none: an empty `Undefined`).

    `rerun` runs eager's call once more exactly as the first time (engine/child/reference.EagerRerun).
    """
    high = Poisoned(high=True)
    with high:
        first = _leaves(rerun())
    if not high.ops:
        return Undefined()
    low = Poisoned(high=False)
    with low:
        second = _leaves(rerun())
    masks = {}
    for name, a in first.items():
        b = second.get(name)
        if b is None or b.shape != a.shape or b.dtype != a.dtype:
            continue
        differs = ~bitwise_equal(a, b)
        if bool(differs.any()):
            masks[name] = differs
    return Undefined(masks, tuple(high.ops))


def _leaves(out: Any) -> dict[str, torch.Tensor]:
    try:
        return {name: dense(t.detach()).clone() for name, t in tensors_of(out, "out")}
    except UnsupportedOutput:  # refused when the leaves are built; nothing to say here
        return {}
