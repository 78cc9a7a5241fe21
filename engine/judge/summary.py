"""What the app shows of a leaf before it reads the leaf, computed on the device while the metrics pass.

For every metric of the heatmap (engine.judge.views.METRICS): the block maxima of the default slice, each
block's worst element and its eager/compiled/fp64 values, and the leaf's 10 worst elements; and the ULP
histogram. These are what app.web.heatmap computes from the stored arrays, element for element the same
(tests hold the two side by side), so a 1e8-element leaf is drawn from a few hundred kilobytes, and a
leaf too large to store at all still has its heatmap.

Bit-identical elements contribute nothing to any of these (they are grey, never a maximum), so the work
is done on the differing elements of each chunk that engine.judge.metrics hands over.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from engine.judge import views
from engine.judge.metrics import Differences, Operands, ValueMetrics, differences, differing, host_array, measure, scan

TOP_K = 10
_POSITION_BITS = 32  # a pooled key packs (float32 value bits, 2**32 - 1 - position in the slice)


def spacing_format(dtype: str | None) -> str:
    """app.web.heatmap._half_ulp's choice: the format whose spacing is the rounding floor of a leaf's dtype."""
    name = (dtype or "").removeprefix("torch.")
    return {"float16": "float16", "bfloat16": "bfloat16", "float64": "float64"}.get(name, "float32")


def half_ulp(ref: torch.Tensor, dtype: str | None) -> torch.Tensor:
    """Half a unit in the last place of the leaf's dtype at the reference value (float64), as app.web.heatmap."""
    mag = ref.abs()
    fmt = spacing_format(dtype)
    if fmt == "float64":
        return (torch.nextafter(mag, torch.full_like(mag, float("inf"))) - mag) / 2
    low = mag.to(torch.float16 if fmt == "float16" else torch.float32)
    spacing = (torch.nextafter(low, torch.full_like(low, float("inf"))) - low).to(torch.float64) / 2
    return spacing * 65536.0 if fmt == "bfloat16" else spacing


def element_metric(metric: str, d: Differences, dtype: str | None) -> torch.Tensor:
    """app.web.heatmap.element_metric on elements whose bits differ (float64; +inf for a one-sided NaN/inf)."""
    if metric == "ulp" or not d.eager.dtype.is_floating_point:
        return d.ulp  # for exact dtypes, the absolute difference: their only metric is abs
    if d.finite and metric == "abs":
        return d.abs_err
    if d.finite and metric == "rel" and d.rel_err is not None:
        return d.rel_err
    e64, c64 = d.eager64, d.compiled64
    if metric == "ratio":
        r = d.ref
        assert r is not None
        value = (c64 - r).abs() / torch.maximum((e64 - r).abs(), half_ulp(r, dtype))
        if d.finite and math.isfinite(float(torch.dot(r, r))):
            return value
    else:
        value = (e64 - c64).abs()
        if metric == "rel":
            value = value / torch.maximum(e64.abs(), torch.full_like(value, torch.finfo(torch.float64).tiny))
    both_nan = torch.isnan(e64) & torch.isnan(c64)
    bad = ~(torch.isfinite(e64) & torch.isfinite(c64)) & ~both_nan & (e64 != c64)
    inf = torch.full_like(value, float("inf"))
    value = torch.where(bad, inf, torch.where(both_nan, torch.zeros_like(value), value))
    return torch.where(torch.isnan(value), inf, value)  # e.g. a NaN reference: do not hide the element


def metrics_for(ops: Operands) -> tuple[str, ...]:
    """app.web.heatmap.available_metrics for these operands."""
    if ops.exact:
        return ("abs",)
    return views.METRICS if ops.ref is not None else views.METRICS[:3]


def ulp_bins(ulp: torch.Tensor) -> torch.Tensor:
    """ceil(log2(max(d, 1))) of finite ULP distances, exactly (frexp, not a rounded log2)."""
    mantissa, exponent = torch.frexp(ulp.clamp_min(1.0))
    return exponent.to(torch.int64) - (mantissa == 0.5).to(torch.int64)


@dataclass
class _Pool:
    """The default slice of a leaf and its block grid."""

    offset: int  # flat index of the slice's first element
    rows: int
    cols: int
    block: tuple[int, int]

    @property
    def grid(self) -> tuple[int, int]:
        return -(-self.rows // self.block[0]), -(-self.cols // self.block[1])


class Summarizer:
    """Builds a leaf's summary; a ChunkObserver of engine.judge.metrics.measure."""

    def __init__(self, ops: Operands, dtype: str | None) -> None:
        self.ops = ops
        self.dtype = dtype
        self.metrics = metrics_for(ops)
        self.shape = tuple(ops.eager.shape)
        self.worst: dict[str, tuple[np.ndarray, np.ndarray]] = {
            m: (np.zeros(0), np.zeros(0, dtype=np.int64)) for m in self.metrics
        }
        self.threshold = dict.fromkeys(self.metrics, -math.inf)  # the k-th worst value so far, per metric
        self.bins = np.zeros(0, dtype=np.int64)
        self.nonfinite = 0
        self.pool: _Pool | None = None
        self.keys: dict[str, torch.Tensor] = {}
        if len(self.shape) in (1, 2):  # the default slice is the whole leaf: pool during the metrics pass
            self._plan(views.default_slice(self.shape)[2])

    # -- the default slice --------------------------------------------------------------------------

    def _plan(self, index: tuple[int, ...]) -> None:
        rank = len(self.shape)
        rows, cols = (1, self.shape[0]) if rank == 1 else self.shape[-2:]
        block = views.slice_block((rows, cols), 2 + (self.ops.ref is not None))
        if block == (1, 1) or rows * cols >= 1 << _POSITION_BITS:  # small: the app draws every element itself
            return
        strides = self.ops.eager.stride()
        offset = sum(int(i) * s for d, (i, s) in enumerate(zip(index, strides, strict=False)) if d < rank - 2)
        self.pool = _Pool(offset, rows, cols, block)
        gh, gw = self.pool.grid
        self.keys = {
            m: torch.full((gh * gw,), -1, dtype=torch.int64, device=self.ops.eager.device) for m in self.metrics
        }

    def _pooled_keys(
        self, pool: _Pool, positions: torch.Tensor, values: dict[str, torch.Tensor]
    ) -> tuple[int, dict[str, torch.Tensor]]:
        """Block maxima of one chunk's elements, over the block rows the chunk touches; a key packs the value
        (float32, as the app pools) with the position, so the max is also the first worst element."""
        by, bx = pool.block
        _, gw = pool.grid
        local = positions - pool.offset
        row, col = local // pool.cols, local % pool.cols
        first = int(row[0]) // by
        span = int(row[-1]) // by - first + 1
        cell = (row // by - first) * gw + col // bx
        tail = (1 << _POSITION_BITS) - 1 - local
        out = {}
        for m, v in values.items():
            key = (v.to(torch.float32).view(torch.int32).to(torch.int64) << _POSITION_BITS) | tail  # values are >= +0
            grid = torch.full((span * gw,), -1, dtype=torch.int64, device=positions.device)
            out[m] = grid.scatter_reduce_(0, cell, key, "amax")
        return first * gw, out

    # -- the observer -------------------------------------------------------------------------------

    def differing(self, d: Differences) -> Any:
        values = {m: element_metric(m, d, self.dtype) for m in self.metrics}
        worst = {}
        for m, v in values.items():
            # only what can still enter the top k: at least the k-th value so far (it only grows); ties at the
            # k-th are all kept, the smaller position wins in _top
            keep = torch.nonzero(v >= self.threshold[m]).reshape(-1) if self.threshold[m] > -math.inf else None
            candidates = v if keep is None else v[keep]
            if candidates.numel() > TOP_K:
                inner = torch.nonzero(candidates >= torch.topk(candidates, TOP_K).values[-1]).reshape(-1)
                keep = inner if keep is None else keep[inner]
            picked = d.positions if keep is None else d.positions[keep]
            worst[m] = ((v if keep is None else v[keep]).cpu().numpy(), picked.cpu().numpy())
        finite = d.ulp if d.finite else d.ulp[torch.isfinite(d.ulp)]
        bins = torch.bincount(ulp_bins(finite)).cpu().numpy()
        pooled = (
            self._pooled_keys(self.pool, d.positions, values)
            if self.pool is not None and len(self.shape) <= 2
            else None
        )
        return worst, bins, d.ulp.numel() - finite.numel(), pooled

    def combine(self, partial: Any) -> None:
        worst, bins, nonfinite, pooled = partial
        for m, (v, p) in worst.items():
            self.worst[m] = _top(np.concatenate([self.worst[m][0], v]), np.concatenate([self.worst[m][1], p]))
            if self.worst[m][0].size == TOP_K:
                self.threshold[m] = float(self.worst[m][0][-1])
        if bins.size > self.bins.size:
            self.bins = np.pad(self.bins, (0, bins.size - self.bins.size))
        self.bins[: bins.size] += bins
        self.nonfinite += nonfinite
        if pooled is not None:
            self._merge(*pooled)

    def _merge(self, start: int, keys: dict[str, torch.Tensor]) -> None:
        for m, k in keys.items():
            window = self.keys[m][start : start + k.numel()]
            torch.maximum(window, k, out=window)

    # -- the slice of a higher-rank leaf, once its worst element is known ------------------------------

    def _pool_slice(self) -> None:
        pool = self.pool
        assert pool is not None
        eager, compiled = self.ops.eager.reshape(-1), self.ops.compiled.reshape(-1)
        ref = None if self.ops.ref is None else self.ops.ref.reshape(-1)

        def chunk(start: int, stop: int) -> tuple[int, dict[str, torch.Tensor]] | None:
            e, c = eager[start:stop], compiled[start:stop]
            where = differing(e, c)
            if not where.numel():
                return None
            d = differences(where + start, e[where], c[where], None if ref is None else ref[start:stop][where])
            return self._pooled_keys(pool, d.positions, {m: element_metric(m, d, self.dtype) for m in self.metrics})

        for pooled in scan(self.ops, chunk, pool.offset, pool.offset + pool.rows * pool.cols):
            if pooled is not None:
                self._merge(*pooled)

    # -- the result -------------------------------------------------------------------------------

    def finish(self, metrics: ValueMetrics) -> dict[str, np.ndarray]:
        """The summary as named arrays (what engine.arrays stores beside the leaf)."""
        out: dict[str, np.ndarray] = {
            "shape": np.array(self.shape, dtype=np.int64),  # as compared: complex leaves as (..., 2) real pairs
            "histogram": (
                np.concatenate([[metrics.numel - metrics.mismatches, self.nonfinite], self.bins]).astype(np.int64)
            ),
        }
        for m, (v, p) in self.worst.items():
            out[f"worst.{m}.value"], out[f"worst.{m}.position"] = v, p
            out.update(self._values_at(f"worst.{m}", torch.as_tensor(p, dtype=torch.int64)))
        if len(self.shape) > 2:
            self._plan(views.default_slice(self.shape, metrics.worst_index)[2])
            if self.pool is not None and metrics.mismatches:
                self._pool_slice()
        if self.pool is None:
            return out
        row_dim, col_dim, index = views.default_slice(self.shape, metrics.worst_index)
        out["pool.slice"] = np.array([-1 if row_dim is None else row_dim, col_dim, *index], dtype=np.int64)
        out["pool.block"] = np.array(self.pool.block, dtype=np.int64)
        out.update(self._pooled_arrays())
        return out

    def _pooled_arrays(self) -> dict[str, np.ndarray]:
        pool = self.pool
        assert pool is not None
        gh, gw = pool.grid
        by, bx = pool.block
        out: dict[str, np.ndarray] = {}
        first_row = (torch.arange(gh).repeat_interleave(gw) * by).reshape(gh, gw)
        first_col = (torch.arange(gw).repeat(gh) * bx).reshape(gh, gw)
        for m, keys in self.keys.items():
            keys = keys.cpu().reshape(gh, gw)
            empty = keys < 0  # every element bit-identical: grey, and the hover shows the block's first element
            value = ((keys >> _POSITION_BITS).to(torch.int32).view(torch.float32)).to(torch.float64)
            local = (1 << _POSITION_BITS) - 1 - (keys & ((1 << _POSITION_BITS) - 1))
            row = torch.where(empty, first_row, local // pool.cols)
            col = torch.where(empty, first_col, local % pool.cols)
            # stored as float32 (the pooled values are float32 already) and int32 (a slice's rows and cols)
            out[f"pool.{m}.value"] = (
                torch.where(empty, torch.full_like(value, float("nan")), value).to(torch.float32).numpy()
            )
            out[f"pool.{m}.row"], out[f"pool.{m}.col"] = row.to(torch.int32).numpy(), col.to(torch.int32).numpy()
            out.update(self._values_at(f"pool.{m}", (pool.offset + row * pool.cols + col).reshape(-1), (gh, gw)))
        return out

    def _values_at(
        self, prefix: str, flat: torch.Tensor, shape: tuple[int, ...] | None = None
    ) -> dict[str, np.ndarray]:
        """Eager, compiled and fp64 values at flat positions, as the app's hover and table show them."""
        flat = flat.to(self.ops.eager.device)
        out = {}
        for name, t in (("eager", self.ops.eager), ("compiled", self.ops.compiled), ("ref", self.ops.ref)):
            if t is not None:
                picked = host_array(t.reshape(-1)[flat])
                out[f"{prefix}.{name}"] = picked.reshape(shape) if shape is not None else picked
        return out


def _top(values: np.ndarray, positions: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The TOP_K largest values, ties to the smaller position (app.web.heatmap.worst_elements' order)."""
    order = np.lexsort((positions, -values))[:TOP_K]
    return values[order], positions[order]


def summarize(ops: Operands, dtype: str | None) -> tuple[ValueMetrics, dict[str, np.ndarray]]:
    """The metrics of a leaf and its summary, in one pass over it (two for a leaf of rank 3 or more)."""
    summarizer = Summarizer(ops, dtype)
    metrics = measure(ops, summarizer)
    return metrics, summarizer.finish(metrics)
