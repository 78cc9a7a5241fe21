"""The program computed in float64 without a float64 copy of its modules.

The fp64 reference is the program with its modules cast to float64 (`copy.deepcopy(module).double()`) on
inputs cast to float64. For an LLM that copy is four times its bf16 weights, and the deep copy of the
original briefly adds one more: a 1.1B-parameter model would need some 13 GB for it alone.

`Fp64State` computes the same thing without the copy. It is a TorchFunctionMode, so it sees every torch
call the program makes with its arguments as the program passes them:
- a floating parameter is cast to float64 for that call only and dropped after it, so at most the
  operands of one op exist in float64 at a time (a parameter any run writes to is a buffer here);
- a buffer gets a float64 shadow the first time it is touched; in-place updates (running statistics, a
  cache) land in the shadow, later reads see them, and the shadows are the reference's state after the
  call; the originals are never written;
- reading `.dtype` of a floating parameter or buffer says float64, so `x.to(self.weight.dtype)` and
  `if self.weight.dtype == torch.float16` take the branch the copy takes;
- everything the program computes keeps the dtype it asks for, explicit casts included, as in the copy.

Measured bit-identical to the copy on every leaf (outputs and KV caches) of GPT-2, Llama, T5, Whisper,
ViT and BERT from transformers, fp32 and bf16, and on BatchNorm's buffers in training mode
(tests/test_fp64_state.py holds a few of these). A program that reaches its weights some other way (a
tensor it took from `.data` earlier and kept) sees them uncast; where that makes the run fail, the
reference falls back to the copy (engine/child/reference.py).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import torch
import torch.utils._pytree as pytree
from torch.overrides import TorchFunctionMode

_TensorBase = torch._C.TensorBase
# getters that return the tensor's values in another view: they compute on the float64 values
_VALUE_GETTERS = {_TensorBase.T, _TensorBase.mT, _TensorBase.H, _TensorBase.mH, _TensorBase.real, _TensorBase.imag}
# methods that read only metadata: casting a weight to answer them would cost a copy for nothing
_METADATA = {
    torch.Tensor.size,
    torch.Tensor.dim,
    torch.Tensor.numel,
    torch.Tensor.stride,
    torch.Tensor.is_contiguous,
    torch.Tensor.storage_offset,
    torch.Tensor.__len__,
    torch.Tensor.is_floating_point,
    torch.Tensor.is_complex,
    torch.Tensor.get_device,
    torch.Tensor.nelement,
    torch.Tensor.ndimension,
}


def fp64_dtype(dtype: torch.dtype) -> torch.dtype:
    """What `module.double()` makes of a tensor of this dtype: floating becomes float64, the rest stays."""
    return torch.float64 if dtype.is_floating_point else dtype


class Fp64State(TorchFunctionMode):
    """While active, the program's parameters and buffers compute as float64 (see the module's docstring).

    `sources` gives, for a live tensor, the values the reference must start from instead (the state before
    the call, where a run since changed it). Parameters are cast detached, so no autograd graph keeps the
    float64 casts alive; a backward through the reference takes the copy (engine/child/reference.py).
    """

    def __init__(
        self,
        parameters: Iterable[torch.Tensor],
        buffers: Iterable[torch.Tensor],
        sources: dict[int, torch.Tensor] | None = None,
    ) -> None:
        super().__init__()
        self._parameters = {id(t): t for t in parameters}
        self._buffers = {id(t): t for t in buffers}
        for ident in list(self._parameters):
            if ident in self._buffers:  # a parameter that a run writes to: shadowed like a buffer
                del self._parameters[ident]
        self._sources = dict(sources or {})
        self.shadows: dict[int, torch.Tensor] = {}

    def shadow_of(self, t: torch.Tensor) -> torch.Tensor:
        """The reference's value of a buffer: its shadow, or the value it started from cast to float64."""
        found = self.shadows.get(id(t))
        if found is not None:
            return found
        start = self._sources.get(id(t), t).detach()
        return start.to(fp64_dtype(start.dtype)) if start.is_floating_point() else start.clone()

    def _state(self, t: Any) -> bool:
        return isinstance(t, torch.Tensor) and (id(t) in self._parameters or id(t) in self._buffers)

    def _up(self, t: Any) -> Any:
        if not isinstance(t, torch.Tensor):
            return t
        ident = id(t)
        if ident in self._parameters:
            if not t.is_floating_point() or t.dtype == torch.float64:
                return t
            return t.detach().to(torch.float64)
        if ident in self._buffers:
            shadow = self.shadows.get(ident)
            if shadow is None:
                start = self._sources.get(ident, t).detach()
                shadow = start.to(torch.float64) if start.is_floating_point() else start.clone()
                self.shadows[ident] = shadow
            return shadow
        return t

    def __torch_function__(
        self, func: Any, types: Any, args: tuple[Any, ...] = (), kwargs: dict[str, Any] | None = None
    ) -> Any:
        kwargs = kwargs or {}
        if getattr(func, "__name__", "") == "__get__":  # a property read: t.dtype, t.T, t.shape, t.grad
            owner = getattr(func, "__self__", None)
            if args and self._state(args[0]):
                if owner is _TensorBase.dtype:
                    return fp64_dtype(func(*args, **kwargs))
                if owner is _TensorBase.data:
                    return self._up(args[0]).detach()
                if owner in _VALUE_GETTERS:
                    return func(self._up(args[0]), *args[1:], **kwargs)
            return func(*args, **kwargs)
        if func in _METADATA:
            return func(*args, **kwargs)
        args, kwargs = pytree.tree_map(self._up, (args, kwargs))
        return func(*args, **kwargs)
