"""Input derivations for probes: the same program fed special values, other layouts or awkward sizes.

Runs inside the worker (it needs torch). Every derivation is a pure function of the original inputs and a
seed, so a probe that fails replays exactly from the seed stored in its options. A derivation that
finds nothing to change raises `NotApplicable`: the probe would only repeat the plain check.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import torch

from engine.child.leaves import map_tensors


class NotApplicable(Exception):
    """The derivation has nothing to change in these inputs."""


def special_values(dtype: torch.dtype) -> list[float]:
    """The values that break kernels: signed zeros, infinities, NaN, subnormals, huge magnitudes."""
    info = torch.finfo(dtype)
    subnormal = info.smallest_normal / 8  # below the normal range: flushed by FTZ/DAZ code paths
    return [
        0.0,
        -0.0,
        math.inf,
        -math.inf,
        math.nan,
        subnormal,
        -subnormal,
        info.max / 2,
        -info.max / 2,
        math.sqrt(info.max) * 2,
    ]


def derive(kind: str, args: tuple[Any, ...], seed: int) -> tuple[Any, ...]:
    """The inputs of probe `kind`, derived from `args`; raises NotApplicable when nothing would change."""
    changed = [False]
    generator = torch.Generator().manual_seed(seed * 7919 + 17)

    def apply(fn: Callable[[torch.Tensor], torch.Tensor | None]) -> Callable[[torch.Tensor], torch.Tensor]:
        def one(t: torch.Tensor) -> torch.Tensor:
            if t.layout != torch.strided:  # strides, views and flat writes are a strided tensor's; a sparse one is kept
                return t
            out = fn(t.detach())
            if out is None:
                return t
            changed[0] = True
            return out.requires_grad_(t.requires_grad) if t.is_leaf and out.is_floating_point() else out

        return one

    if kind == "odd_sizes":
        derived = _odd_sizes(args, changed)
    else:
        transform = _TRANSFORMS[kind]
        derived = map_tensors(args, apply(lambda t: transform(t, generator)))
    if not changed[0]:
        raise NotApplicable(_WHY_NOT[kind])
    return derived


def _special(t: torch.Tensor, generator: torch.Generator) -> torch.Tensor | None:
    """About a quarter of the elements replaced by special values, each value at least once where it fits."""
    if not t.is_floating_point() or t.numel() == 0:
        return None
    values = torch.tensor(special_values(t.dtype), dtype=torch.float64)
    flat = t.detach().reshape(-1).clone()
    n = flat.numel()
    count = min(n, max(len(values), n // 4))
    positions = torch.randperm(n, generator=generator)[:count]
    picks = torch.cat(
        [torch.arange(len(values)), torch.randint(len(values), (max(0, count - len(values)),), generator=generator)]
    )[:count]
    flat[positions.to(flat.device)] = values[picks].to(flat.dtype).to(flat.device)
    return _same_layout(flat.reshape(t.shape), t)


def _transposed(t: torch.Tensor, generator: torch.Generator) -> torch.Tensor | None:
    """Same values, column-major memory: the last two dimensions' strides swapped."""
    if t.dim() < 2 or t.shape[-1] < 2 or t.shape[-2] < 2:
        return None
    return t.transpose(-1, -2).contiguous().transpose(-1, -2)


def _noncontiguous(t: torch.Tensor, generator: torch.Generator) -> torch.Tensor | None:
    """Same values, every other element of a buffer twice as wide: last-dimension stride 2."""
    if t.dim() < 1 or t.numel() < 2:
        return None
    wide = torch.zeros((*t.shape[:-1], 2 * t.shape[-1]), dtype=t.dtype, device=t.device)
    view = wide[..., ::2]
    view.copy_(t)
    return view


def _channels_last(t: torch.Tensor, generator: torch.Generator) -> torch.Tensor | None:
    """Same values, channels-last memory (NHWC for 4-d, NDHWC for 5-d): what a vision model's tensors are
    after `model.to(memory_format=torch.channels_last)`, and what Inductor's layout choices must respect."""
    formats = {4: torch.channels_last, 5: torch.channels_last_3d}
    memory_format = formats.get(t.dim())
    if memory_format is None or t.numel() == 0 or t.is_contiguous(memory_format=memory_format):
        return None  # another rank, or strides that are channels-last already (one channel, 1x1 images)
    return t.contiguous(memory_format=memory_format)


def _expanded(t: torch.Tensor, generator: torch.Generator) -> torch.Tensor | None:
    """The first slice along dimension 0 broadcast over it (stride 0): values repeat, memory is shared."""
    if t.dim() < 1 or t.shape[0] < 2:
        return None
    return t[:1].clone().expand(t.shape)


def _offset(t: torch.Tensor, generator: torch.Generator) -> torch.Tensor | None:
    """Same values and strides, starting 3 elements into its storage: misaligned for vector loads."""
    if t.numel() == 0:
        return None
    base = torch.zeros(t.numel() + 3, dtype=t.dtype, device=t.device)
    view = base[3:].view(t.shape)
    view.copy_(t)
    return view


def _odd_sizes(args: tuple[Any, ...], changed: list[bool]) -> tuple[Any, ...]:
    """Every even dimension size s becomes s + 1 (the same mapping in every input, so shapes stay compatible).

    New positions repeat existing values cyclically, so index tensors stay in range where they were.
    A program whose own parameters fix a size then raises eagerly, and the probe is not applicable.
    """

    def grow(t: torch.Tensor) -> torch.Tensor:
        if t.layout != torch.strided:  # growing its indices too is another program: a sparse input is kept
            return t
        out = t.detach()
        for dim, size in enumerate(t.shape):
            if size >= 2 and size % 2 == 0:
                index = torch.arange(size + 1, device=t.device) % size
                out = out.index_select(dim, index)
                changed[0] = True
        if out is t.detach():
            return t
        return out.requires_grad_(t.requires_grad) if t.is_leaf and out.is_floating_point() else out

    return map_tensors(args, grow)


def _same_layout(values: torch.Tensor, like: torch.Tensor) -> torch.Tensor:
    """`values` in a tensor with `like`'s sizes and strides, so only the values change."""
    if like.is_contiguous():
        return values.contiguous()
    out = torch.empty_strided(like.shape, like.stride(), dtype=like.dtype, device=like.device)
    out.copy_(values)
    return out


_TRANSFORMS: dict[str, Callable[[torch.Tensor, torch.Generator], torch.Tensor | None]] = {
    "special": _special,
    "transposed": _transposed,
    "noncontiguous": _noncontiguous,
    "channels_last": _channels_last,
    "expanded": _expanded,
    "offset": _offset,
}

_WHY_NOT = {
    "special": "no floating-point tensor input to put special values into",
    "transposed": "no input with two dimensions longer than one to transpose",
    "noncontiguous": "no tensor input with two or more elements",
    "channels_last": "no 4-d or 5-d input whose strides channels-last memory would change",
    "expanded": "no input whose first dimension is longer than one",
    "offset": "no non-empty tensor input",
    "odd_sizes": "no input has an even dimension size to make odd",
}
