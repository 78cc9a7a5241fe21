"""The module state across one call's runs: what was there before, what each run changed, putting it back.

Eager, compiled and the fp64 reference must each start from the state the call started from, and a
change one of them makes (BatchNorm's running statistics, a cache registered as a buffer, a parameter
written in place) is a leaf to compare. Copying the whole state before the call and after each run, as
this once did, cost three copies of the weights: more than the model itself for an LLM. So:

- buffers are copied before the call (they are what programs update), and so are the parameters while
  they are small (at most COPIED_PARAMETER_BYTES in all);
- the other parameters are watched without a copy: their version counter (every in-place op bumps it,
  Inductor's kernels too) and a CRC of their bytes (a write through `.data` bumps no counter);
- after a run, only the tensors that changed are copied, and only those are put back.

A watched parameter that eager changed cannot be put back for compiled: the call is refused with a
message that says so. One that only compiled changed is reported as such (its value before is gone).
"""

from __future__ import annotations

import zlib
from collections.abc import Iterable
from dataclasses import dataclass

import torch

from engine.child.leaves import dense
from engine.judge.metrics import bitwise_equal

COPIED_PARAMETER_BYTES = 64 << 20  # parameters up to this size (all together) are copied; above, watched
_CRC_CHUNK = 64 << 20  # bytes a GPU tensor is brought to the host in, for its CRC


@dataclass(frozen=True)
class _Mark:
    """A tensor's identity at one moment: changes to any of these mean it was written or re-shaped."""

    version: int
    data_ptr: int
    shape: tuple[int, ...]
    stride: tuple[int, ...]
    dtype: torch.dtype
    crc: int | None  # of the bytes, for tensors kept without a copy


def _mark(t: torch.Tensor, with_crc: bool) -> _Mark:
    if t.layout != torch.strided:  # a sparse tensor has neither one data pointer nor strides: its values say it all
        return _Mark(t._version, 0, tuple(t.shape), (), t.dtype, crc(dense(t)) if with_crc else None)
    return _Mark(t._version, t.data_ptr(), tuple(t.shape), tuple(t.stride()), t.dtype, crc(t) if with_crc else None)


def crc(t: torch.Tensor) -> int:
    """CRC-32 of a tensor's bytes in its logical order (a GPU tensor comes to the host a chunk at a time)."""
    flat = t.detach().reshape(-1)
    if flat.numel() == 0:
        return 0
    raw = (
        flat.view(torch.uint8)
        if flat.element_size() == 1
        else flat.view({2: torch.int16, 4: torch.int32, 8: torch.int64}.get(flat.element_size(), torch.uint8))
    )
    value = 0
    step = max(1, _CRC_CHUNK // raw.element_size())
    for start in range(0, raw.numel(), step):
        chunk = raw[start : start + step]
        value = zlib.crc32(chunk.cpu().numpy() if chunk.device.type != "cpu" else chunk.numpy(), value)
    return value


class StateGuard:
    """The state of `live` (every parameter and buffer by name) as one call found it, and each run's changes."""

    def __init__(self, live: dict[str, torch.Tensor], copied_parameter_bytes: int | None = None) -> None:
        self.live = live
        limit = COPIED_PARAMETER_BYTES if copied_parameter_bytes is None else copied_parameter_bytes
        parameter_bytes = sum(t.numel() * t.element_size() for t in live.values() if isinstance(t, torch.nn.Parameter))
        copy_parameters = parameter_bytes <= limit
        self.before: dict[str, torch.Tensor] = {
            name: t.detach().clone()
            for name, t in live.items()
            if copy_parameters or not isinstance(t, torch.nn.Parameter)
        }
        self._marks = {name: _mark(t, with_crc=name not in self.before) for name, t in live.items()}
        self.ever_changed = False  # any run changed something: a re-check cannot reuse this state as it stands

    @property
    def watched(self) -> list[str]:
        """The tensors kept without a copy."""
        return [name for name in self.live if name not in self.before]

    def changed(self) -> list[str]:
        """The names whose tensor differs now from the state before the call."""
        found = []
        for name, t in self.live.items():
            old = self._marks[name]
            if name in self.before:
                saved = self.before[name]
                moved = tuple(t.shape) != tuple(saved.shape) or t.dtype != saved.dtype or t.layout != saved.layout
                if moved or not bool(bitwise_equal(dense(saved), dense(t.detach())).all()):
                    found.append(name)
            elif _mark(t, with_crc=True) != old:
                found.append(name)
        if found:
            self.ever_changed = True
        return found

    def copies(self, names: Iterable[str]) -> dict[str, torch.Tensor]:
        """The current values of `names`, copied (they are about to be put back)."""
        return {name: self.live[name].detach().clone() for name in names}

    def put_back(self, names: Iterable[str], values: dict[str, torch.Tensor] | None = None) -> None:
        """Put `values` (by default the state before the call) into the live tensors of `names`, in place,
        so the compiled callable keeps the tensor objects it guards on."""
        source = self.before if values is None else values
        with torch.no_grad():
            for name in names:
                old = source.get(name)
                if old is None:
                    old = self.before.get(name)
                if old is None:
                    continue
                t = self.live[name]
                if t.shape != old.shape:
                    t.resize_(old.shape)
                t.copy_(old)
                t.grad = None

    def value_before(self, name: str) -> torch.Tensor:
        """The tensor as the call found it: its copy, or the live tensor itself when it is unchanged."""
        return self.before.get(name, self.live[name])
