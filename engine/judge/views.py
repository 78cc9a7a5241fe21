"""What a viewer of stored arrays shares with the check that summarised them, without torch.

The check (engine.judge.summary, in the worker) pools the default slice of every large leaf exactly as the
app's heatmap would, so that the app can show it without reading the leaf: both sides take the slice,
the block shape under the browser's byte budget and the metric names from here. The app and the notebook
view also compute ULP distances from stored values here (a run stores values, not distances).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

METRICS = ("abs", "rel", "ulp", "ratio")  # app.web.heatmap.Metric's values
MAX_SIDE = 512
BYTES_BUDGET = 1_800_000  # leaves room under the 2 MB goal for the layout and the axis labels
POOLED_HOVER_CHANNELS = 4  # a block's worst row/col and its last row/col, besides the value and eager/compiled/fp64


def bytes_per_cell(channels: int) -> float:
    """JSON bytes per heatmap cell: the float32 colour value plus `channels` 4-byte values (hover, positions).

    Base64 is 4/3 of the raw bytes, and plotly's encoder writes every '/' of it as a 6-byte \\u002f escape
    (up to ~1/4 of the characters for float data), hence the 1.25.
    """
    return (1 + channels) * 4 * 4 / 3 * 1.25


def block_shape(shape: tuple[int, int], max_cells: int, max_side: int = MAX_SIDE) -> tuple[int, int]:
    """Rows and cols per block so that the pooled grid has at most max_cells cells and max_side per side."""
    h, w = shape
    by, bx = max(1, -(-h // max_side)), max(1, -(-w // max_side))
    while -(-h // by) * -(-w // bx) > max_cells:
        # grow the block along the side that still has more pooled cells, keeping blocks roughly square
        if -(-h // by) >= -(-w // bx):
            by += max(1, by // 16)
        else:
            bx += max(1, bx // 16)
    return by, bx


def slice_block(
    shape: tuple[int, int], values: int, max_side: int = MAX_SIDE, budget_bytes: int = BYTES_BUDGET
) -> tuple[int, int]:
    """The block of a heatmap of a rows x cols slice whose hover shows `values` of eager/compiled/fp64;
    (1, 1) when every element fits the budget."""
    h, w = shape
    exact_cells = int(budget_bytes / bytes_per_cell(1 + values))  # value + eager/compiled/ref, no worst index
    if h * w <= exact_cells and max(h, w) <= max_side:
        return (1, 1)
    positions = 1 if max(h, w) <= np.iinfo(np.uint16).max else 2  # a marker's x and y: 2 or 4 bytes each
    return block_shape(
        (h, w), max(1, int(budget_bytes / bytes_per_cell(1 + POOLED_HOVER_CHANNELS + positions + values))), max_side
    )


def default_slice(
    shape: Sequence[int], worst_index: Sequence[int] | None = None
) -> tuple[int | None, int, tuple[int, ...]]:
    """(row dim or None for a 1-D leaf, col dim, full index): the last two dimensions, through the worst element."""
    rank = len(shape)
    if rank == 0:
        raise ValueError("a scalar has no heatmap")
    index = tuple(int(i) for i in worst_index) if worst_index is not None and len(worst_index) == rank else (0,) * rank
    return (None, 0, index) if rank == 1 else (rank - 2, rank - 1, index)


_FORMATS = {"float16": (np.float16, np.uint16), "float32": (np.float32, np.uint32), "float64": (np.float64, np.uint64)}


def ulp_unit(dtype: str | None, stored: np.dtype) -> str:
    """The float format whose ULPs a leaf is measured in: its own (bfloat16 is stored as float32, fp8 is
    measured as float32, as the check does)."""
    if stored == np.float64:
        return "float64"
    if stored == np.float16:
        return "float16"
    return "bfloat16" if (dtype or "").removeprefix("torch.") == "bfloat16" else "float32"


def _ordered(a: np.ndarray, unit: str) -> np.ndarray:
    """engine.judge.metrics.ordered_bits: adjacent values one apart, both zeros at 0."""
    if unit == "bfloat16":  # a stored bfloat16 is a float32 whose lower 16 bits are zero
        bits = (np.ascontiguousarray(a, dtype=np.float32).view(np.uint32) >> 16).astype(np.uint16)
    else:
        real, raw = _FORMATS[unit]
        bits = np.ascontiguousarray(a, dtype=real).view(raw)
    width = bits.dtype.itemsize * 8
    wide = bits.astype(np.uint64)
    magnitude = (wide & np.uint64((1 << (width - 1)) - 1)).astype(np.int64)
    return np.where((wide >> np.uint64(width - 1)) == 1, -magnitude, magnitude)


def ulp_distance(eager: np.ndarray, compiled: np.ndarray, dtype: str | None = None) -> np.ndarray:
    """engine.judge.metrics.ulp_distance on stored values (float64; 0 where both are NaN, inf where one is)."""
    unit = ulp_unit(dtype, eager.dtype)
    if eager.dtype.kind != "f":
        return np.abs(eager.astype(np.float64) - compiled.astype(np.float64))
    oa, ob = _ordered(eager, unit), _ordered(compiled, unit)
    same_sign = (oa >= 0) == (ob >= 0)
    dist = np.where(
        same_sign, np.abs(oa - ob).astype(np.float64), np.abs(oa).astype(np.float64) + np.abs(ob).astype(np.float64)
    )
    nan_a, nan_b = np.isnan(eager), np.isnan(compiled)
    dist = np.where(nan_a & nan_b, 0.0, dist)
    return np.where(nan_a ^ nan_b, np.inf, dist)
