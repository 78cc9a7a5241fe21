"""The reference's float32 twin: the same float64 run, with every ATen op computed in float32.

A bf16/fp16 kernel computes in float32 (its opmath) and rounds once to the output dtype. Whether an element's
rounding is evidence depends on how far the float32 computation may stray from the exact value there: where the
reference lies closer than that to a rounding midpoint, either side may land on either neighbour (a tie;
engine/judge/elements.py). That distance is the float32 error of the computation, and it is measured here by
doing the computation in float32: `Float32Arithmetic` is a dispatch mode under which every ATen op whose operands
are float64 runs on float32 copies of them, and its float32 results come back as float64 (the program goes on
as in the float64 run: the same ops, the same dtypes it sees). The difference to the float64 reference, element
by element, is ATen's own float32 error of the same program, ill-conditioned places (erf near -1 inside a gelu,
a sum that cancels) included.

What it leaves alone: views (they compute nothing, and a copy would break their aliasing), explicit dtype
conversions (`.to(torch.bfloat16)` rounds as the program asks; a float64 factory stays exact), and ops on no
float64 operand. An op that writes into a float64 operand writes the float32 result back into it.
"""

from __future__ import annotations

from typing import Any

import torch
import torch.utils._pytree as pytree
from torch.utils._python_dispatch import TorchDispatchMode

_CONVERSIONS = {
    torch.ops.aten._to_copy.default,
    torch.ops.aten.to.dtype,
    torch.ops.aten.to.dtype_layout,
    torch.ops.aten.to.device,
    torch.ops.aten.to.other,
    torch.ops.prims.convert_element_type.default,
}


def _aliases(func: Any) -> tuple[bool, list[int]]:
    """(whether an output aliases an input without writing it: a view; the positions of arguments it writes)."""
    schema = func._schema
    view = any(r.alias_info is not None and not r.alias_info.is_write for r in schema.returns)
    written = [i for i, a in enumerate(schema.arguments) if a.alias_info is not None and a.alias_info.is_write]
    return view, written


def _down(x: Any) -> Any:
    return x.to(torch.float32) if isinstance(x, torch.Tensor) and x.dtype == torch.float64 else x


def _up(x: Any) -> Any:
    return x.to(torch.float64) if isinstance(x, torch.Tensor) and x.dtype == torch.float32 else x


class Float32Arithmetic(TorchDispatchMode):
    """While active, ATen ops on float64 tensors compute in float32 (see the module's docstring)."""

    def __torch_dispatch__(
        self, func: Any, types: Any, args: tuple[Any, ...] = (), kwargs: dict[str, Any] | None = None
    ) -> Any:
        kwargs = kwargs or {}
        flat = pytree.tree_leaves((args, kwargs))
        if func in _CONVERSIONS or not any(isinstance(x, torch.Tensor) and x.dtype == torch.float64 for x in flat):
            return func(*args, **kwargs)
        if "dtype" in kwargs and kwargs["dtype"] is not None:  # a factory or a reduction told its dtype: as asked
            return func(*args, **kwargs)
        view, written = _aliases(func)
        if view:
            return func(*args, **kwargs)
        names = [a.name for a in func._schema.arguments]
        targets = [args[i] if i < len(args) else kwargs.get(names[i]) for i in written]
        low_args, low_kwargs = pytree.tree_map(_down, (args, kwargs))
        out = func(*low_args, **low_kwargs)
        if written:
            low_targets = [low_args[i] if i < len(low_args) else low_kwargs.get(names[i]) for i in written]
            for target, low in zip(targets, low_targets, strict=True):
                if isinstance(target, torch.Tensor) and isinstance(low, torch.Tensor) and target is not low:
                    target.copy_(low)
            # an op that writes returns what it wrote: the float64 originals
            if isinstance(out, torch.Tensor) and len(targets) == 1 and isinstance(targets[0], torch.Tensor):
                return targets[0]
        return pytree.tree_map(_up, out)
