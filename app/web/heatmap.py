"""Per-element error maps of one compared leaf: metrics, slicing, block pooling and the Plotly figures.

Pure numpy + plotly (no Streamlit), so that benchmarks/heatmap.py can time exactly what the app sends.

A figure must stay small enough for a browser: plotly serialises numpy arrays as base64 typed arrays,
so the payload is about 4/3 x 4 bytes per float32 value. With the colour value and the hover channels
of every cell, a 512x512 grid would be ~10 MB; the pooled grid is therefore sized by a byte budget
(and never above 512 per side), not by a fixed block size.

A pooled map is a heatmap (colour only) under an invisible scatter trace with one marker per block that
carries the hover data: Streamlit reports a click on a scatter point as a selection, but not a click on
a heatmap cell, and the hover data lives on the markers only, so a clickable block costs just its x/y.

The check itself pools the slice through the worst element, finds the worst elements and counts the
ULP histogram (engine.judge.summary, exactly as the functions here do from the values): the app draws a
run's first view from that summary (summary_pooled, summary_worst, histogram_figure) and reads the
memory-mapped values only for other slices, metrics' full-resolution blocks, and runs stored before it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import Enum

import numpy as np
import plotly.graph_objects as go
import plotly.io

from engine.judge import views
from engine.judge.views import BYTES_BUDGET, MAX_SIDE

DETAIL_MAX_SIDE = 256
LOG_SPAN_DECADES = 12  # more decades than this squeeze the interesting colours into a sliver
IDENTICAL_COLOUR = "#d4d4d4"  # NaN cells are transparent; this background shows through
SEQUENTIAL = "Viridis"  # its dark low end stays distinct from the light grey of identical cells
# a diverging scale without a white middle, so "as accurate as eager" is not mistaken for identical
DIVERGING = [[0.0, "#2166ac"], [0.35, "#67a9cf"], [0.5, "#f0c808"], [0.65, "#ef8a62"], [1.0, "#b2182b"]]


class Metric(str, Enum):
    ABS = "abs"
    REL = "rel"
    ULP = "ulp"
    RATIO = "ratio"

    @property
    def label(self) -> str:
        return _LABELS[self]


_LABELS = {
    Metric.ABS: "absolute |compiled − eager|",
    Metric.REL: "relative |compiled − eager| / |eager|",
    Metric.ULP: "ULP distance",
    Metric.RATIO: "compiled error ÷ eager error (vs fp64)",
}
_SHORT = {Metric.ABS: "|Δ|", Metric.REL: "rel", Metric.ULP: "ULP", Metric.RATIO: "err ratio"}


def available_metrics(arrays: Mapping[str, np.ndarray]) -> tuple[Metric, ...]:
    """The metrics that make sense for these arrays: the ratio needs the fp64 reference, floats need values."""
    eager = arrays.get("eager")
    if eager is None:
        return ()
    if not _is_float(eager):
        return (Metric.ABS,)
    out = [Metric.ABS, Metric.REL, Metric.ULP]
    if "ref" in arrays and arrays["ref"].shape == eager.shape:
        out.append(Metric.RATIO)
    return tuple(out)


def _is_float(a: np.ndarray) -> bool:
    return a.dtype.kind == "f"


def bits_identical(eager: np.ndarray, compiled: np.ndarray) -> np.ndarray:
    """Element-wise bit equality (NaN payloads and signed zeros included)."""
    if eager.dtype == compiled.dtype and eager.dtype.kind in "fiu" and eager.dtype.itemsize in (1, 2, 4, 8):
        unsigned = np.dtype(f"u{eager.dtype.itemsize}")
        return eager.view(unsigned) == compiled.view(unsigned)
    with np.errstate(invalid="ignore"):
        return np.asarray(eager == compiled) & (np.signbit(eager) == np.signbit(compiled))


def _half_ulp(ref: np.ndarray, dtype: str | None) -> np.ndarray:
    """Half a unit in the last place of the leaf's dtype at the reference value: the rounding floor."""
    mag = np.abs(ref)
    if dtype in ("torch.float16", "float16"):
        return np.spacing(mag.astype(np.float16)).astype(np.float64) / 2
    spacing = np.spacing(mag.astype(np.float32)).astype(np.float64) / 2
    if dtype in ("torch.bfloat16", "bfloat16"):
        return spacing * 65536.0  # bfloat16 keeps 8 of float32's 24 significand bits
    if dtype in ("torch.float64", "float64"):
        return np.spacing(mag) / 2
    return spacing


def element_metric(arrays: Mapping[str, np.ndarray], metric: Metric, dtype: str | None = None) -> np.ndarray:
    """The metric per element (float64, same shape); NaN where eager and compiled are bit-identical.

    A NaN/inf on one side only is +inf: it is the worst kind of difference. Works on any view of the arrays,
    so the app computes it only for the slice it shows.
    """
    eager, compiled = arrays["eager"], arrays["compiled"]
    identical = bits_identical(eager, compiled)
    with np.errstate(all="ignore"):
        if metric is Metric.ULP:  # stored by runs of the old format; computed from the values since
            value = (
                np.asarray(arrays["ulp"], dtype=np.float64)
                if "ulp" in arrays
                else views.ulp_distance(eager, compiled, dtype)
            )
        elif not _is_float(eager) or not _is_float(compiled):
            value = np.abs(eager.astype(np.float64) - compiled.astype(np.float64))
        else:
            e, c = eager.astype(np.float64), compiled.astype(np.float64)
            both_nan = np.isnan(e) & np.isnan(c)
            bad = ~(np.isfinite(e) & np.isfinite(c)) & ~both_nan & (e != c)
            if metric is Metric.RATIO:
                ref = np.asarray(arrays["ref"], dtype=np.float64)
                floor = _half_ulp(ref, dtype)
                value = np.abs(c - ref) / np.maximum(np.abs(e - ref), floor)
            else:
                value = np.abs(e - c)
                if metric is Metric.REL:
                    value = value / np.maximum(np.abs(e), np.finfo(np.float64).tiny)
            value = np.where(bad, np.inf, np.where(both_nan, 0.0, value))
            value = np.where(np.isnan(value), np.inf, value)  # e.g. a NaN reference: do not hide the element
    return np.where(identical, np.nan, value)


# -- slicing ------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class SliceSpec:
    """Which two dimensions are shown (rows, cols) and the index of every other dimension."""

    row_dim: int | None  # None: a 1-D leaf, shown as one row
    col_dim: int
    index: tuple[int, ...]  # a full index; the entries at row_dim/col_dim are ignored

    def full_index(self, row: int, col: int) -> tuple[int, ...]:
        idx = list(self.index)
        if self.row_dim is not None:
            idx[self.row_dim] = row
        idx[self.col_dim] = col
        return tuple(idx)

    def fixed(self) -> dict[int, int]:
        return {d: i for d, i in enumerate(self.index) if d not in (self.row_dim, self.col_dim)}


def default_spec(shape: Sequence[int], worst_index: Sequence[int] | None = None) -> SliceSpec:
    """The last two dimensions, sliced through the worst element (so the first view shows it)."""
    return SliceSpec(*views.default_slice(shape, worst_index))


def take_slice(arrays: Mapping[str, np.ndarray], spec: SliceSpec) -> dict[str, np.ndarray]:
    """2-D views (rows x cols) of every array; no copies."""
    out: dict[str, np.ndarray] = {}
    for name, a in arrays.items():
        key: list[int | slice] = [
            slice(None) if d in (spec.row_dim, spec.col_dim) else spec.index[d] for d in range(a.ndim)
        ]
        view = a[tuple(key)]
        if spec.row_dim is None:
            view = view.reshape(1, -1)
        elif spec.row_dim > spec.col_dim:
            view = view.T
        out[name] = view
    return out


# -- pooling ------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Pooled:
    """Block maxima of a 2-D metric map."""

    value: np.ndarray  # (h, w) block max; NaN where the whole block is bit-identical
    worst_row: np.ndarray  # (h, w) row of each block's worst element in the slice
    worst_col: np.ndarray
    block: tuple[int, int]  # (rows, cols) per block
    shape: tuple[int, int]  # the slice's shape
    hover: Mapping[str, np.ndarray] | None = None  # eager/compiled/ref at each block's worst element, when known

    @property
    def pooled(self) -> bool:
        return self.block != (1, 1)

    def block_range(self, i: int, j: int) -> tuple[int, int, int, int]:
        """Rows [r0, r1) and cols [c0, c1) of block (i, j)."""
        by, bx = self.block
        return i * by, min((i + 1) * by, self.shape[0]), j * bx, min((j + 1) * bx, self.shape[1])


def pool_max(value: np.ndarray, block: tuple[int, int]) -> Pooled:
    """Block maxima with each block's argmax, NaN (identical) ignored unless the whole block is NaN."""
    h, w = value.shape
    by, bx = block
    if block == (1, 1):
        rows, cols = np.indices(value.shape)
        return Pooled(value.astype(np.float64, copy=False), rows, cols, block, (h, w))
    ph, pw = -(-h // by), -(-w // bx)
    padded = np.full((ph * by, pw * bx), -np.inf, dtype=np.float32)
    # float32 halves the memory traffic; the hover values come from the original arrays
    np.copyto(padded[:h, :w], value, casting="unsafe")
    np.copyto(padded[:h, :w], -np.inf, where=np.isnan(value))
    blocks = padded.reshape(ph, by, pw, bx).transpose(0, 2, 1, 3).reshape(ph, pw, by * bx)
    arg = blocks.argmax(axis=-1)
    best = np.take_along_axis(blocks, arg[..., None], axis=-1)[..., 0].astype(np.float64)
    best[best == -np.inf] = np.nan
    worst_row = np.arange(ph)[:, None] * by + arg // bx
    worst_col = np.arange(pw)[None, :] * bx + arg % bx
    np.minimum(worst_row, h - 1, out=worst_row)
    np.minimum(worst_col, w - 1, out=worst_col)
    return Pooled(best, worst_row, worst_col, block, (h, w))


TILE_ELEMENTS = 1 << 18  # a tile's float64 temporaries stay in cache; whole-slice temporaries thrash memory


def pooled_metric(
    sliced: Mapping[str, np.ndarray], metric: Metric, block: tuple[int, int], dtype: str | None = None
) -> Pooled:
    """The metric of a 2-D slice pooled into blocks, computed tile by tile (tiles are whole blocks)."""
    h, w = sliced["eager"].shape
    by, bx = block
    ph, pw = -(-h // by), -(-w // bx)
    rows_per_tile = by * max(1, TILE_ELEMENTS // max(1, by * w))
    cols_per_tile = w if rows_per_tile > by or by * w <= TILE_ELEMENTS else bx * max(1, TILE_ELEMENTS // (by * bx))
    value = np.full((ph, pw), np.nan)
    worst_row = np.zeros((ph, pw), dtype=np.int64)
    worst_col = np.zeros((ph, pw), dtype=np.int64)
    for r0 in range(0, h, rows_per_tile):
        for c0 in range(0, w, cols_per_tile):
            tile = {k: v[r0 : r0 + rows_per_tile, c0 : c0 + cols_per_tile] for k, v in sliced.items()}
            p = pool_max(element_metric(tile, metric, dtype), block)
            i0, j0 = r0 // by, c0 // bx
            ti, tj = p.value.shape
            value[i0 : i0 + ti, j0 : j0 + tj] = p.value
            worst_row[i0 : i0 + ti, j0 : j0 + tj] = p.worst_row + r0
            worst_col[i0 : i0 + ti, j0 : j0 + tj] = p.worst_col + c0
    return Pooled(value, worst_row, worst_col, block, (h, w))


# -- colour scale -------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class LogScale:
    zmin: float
    zmax: float
    tickvals: tuple[float, ...]
    ticktext: tuple[str, ...]
    diverging: bool


def decade_label(exponent: int) -> str:
    if -2 <= exponent <= 3:
        return f"{10.0**exponent:g}"
    return f"1e{exponent}"


def log_scale(value: np.ndarray, metric: Metric) -> LogScale:
    """Decade range covering the finite positive values (at most LOG_SPAN_DECADES), with readable ticks."""
    finite = value[np.isfinite(value) & (value > 0)]
    if metric is Metric.RATIO:
        if finite.size:
            m = float(np.abs(np.log10(finite)).max())
        else:
            m = 1.0
        m = float(min(max(math.ceil(m), 1), 6))
        lo, hi = -m, m
    elif finite.size:
        hi = math.ceil(math.log10(float(finite.max())))
        lo = math.floor(math.log10(float(finite.min())))
        lo = max(lo, hi - LOG_SPAN_DECADES)
        if lo == hi:
            lo -= 1
    else:
        lo, hi = -1, 0
    span = int(hi - lo)
    step = max(1, -(-span // 8))
    ticks = tuple(float(t) for t in range(int(lo), int(hi) + 1, step))
    labels = tuple(decade_label(int(t)) for t in ticks)
    if metric is not Metric.RATIO:
        labels = labels[:-1] + (f"≥{labels[-1]}",) if len(labels) > 1 and np.isinf(value).any() else labels
    return LogScale(float(lo), float(hi), ticks, labels, metric is Metric.RATIO)


def to_colour(value: np.ndarray, scale: LogScale) -> np.ndarray:
    """log10 of the metric, clipped into the scale; NaN stays NaN (identical: transparent cell)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        z = np.log10(value)
    z = np.clip(z, scale.zmin, scale.zmax)  # 0 (e.g. a sign-only difference) goes to the bottom colour
    return z.astype(np.float32)


# -- figures ------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class HeatmapView:
    figure: go.Figure
    pooled: Pooled
    scale: LogScale
    spec: SliceSpec


def _channels(
    values: Mapping[str, np.ndarray],
    rows: np.ndarray,
    cols: np.ndarray,
    metric_value: np.ndarray,
    with_index: bool,
    block_ends: tuple[np.ndarray, np.ndarray] | None = None,
) -> tuple[np.ndarray, list[str]]:
    """Hover values per cell as one float32 array (h, w, k) and the names of its k channels; `values` holds
    eager/compiled/ref per cell (at rows/cols)."""
    names = ["value"]
    parts = [metric_value]
    if with_index:
        names += ["row", "col"]
        parts += [rows, cols]
    if block_ends is not None:
        names += ["last_row", "last_col"]
        parts += list(np.broadcast_arrays(block_ends[0][:, None], block_ends[1][None, :]))
    for key in ("eager", "compiled", "ref"):
        if key in values:
            names.append(key)
            parts.append(values[key])
    data = np.empty(rows.shape + (len(parts),), dtype=np.float32)
    for k, p in enumerate(parts):
        np.copyto(data[..., k], p, casting="unsafe")
    return data, names


def _index_text(spec: SliceSpec, row: str, col: str) -> str:
    """The full N-D index as hover text, with the row/col parts as plotly placeholders."""
    parts = [str(i) for i in spec.index] or ["0"]
    if spec.row_dim is not None:
        parts[spec.row_dim] = row
    parts[spec.col_dim] = col
    return "[" + ", ".join(parts) + "]"


def _hovertemplate(names: list[str], spec: SliceSpec, metric: Metric, pooled: bool) -> str:
    ch = {n: i for i, n in enumerate(names)}
    short = _SHORT[metric]
    lines: list[str] = []
    if pooled:
        # the block marker sits at the block's first row/col; its last ones are channels
        rows = "" if spec.row_dim is None else f"rows %{{y}}–%{{customdata[{ch['last_row']}]:d}}, "
        lines.append(f"block {rows}cols %{{x}}–%{{customdata[{ch['last_col']}]:d}}")
        worst = _index_text(spec, f"%{{customdata[{ch['row']}]:d}}", f"%{{customdata[{ch['col']}]:d}}")
        lines.append(f"worst element {worst}: {short} %{{customdata[0]:.4~g}}")
    else:
        lines.append(f"element {_index_text(spec, '%{y}', '%{x}')}: {short} %{{customdata[0]:.4~g}}")
    for key, label in (("eager", "eager"), ("compiled", "compiled"), ("ref", "fp64")):
        if key in ch:
            lines.append(f"{label} %{{customdata[{ch[key]}]:.9~g}}")
    return "<br>".join(lines) + "<extra></extra>"


def heatmap(
    arrays: Mapping[str, np.ndarray],
    metric: Metric,
    spec: SliceSpec,
    dtype: str | None = None,
    title: str = "",
    max_side: int = MAX_SIDE,
    budget_bytes: int = BYTES_BUDGET,
    pooled: Pooled | None = None,
) -> HeatmapView:
    """The heatmap of one 2-D slice: block maxima above the size budget, each block's worst element on hover.

    `pooled`: the check's own block maxima of this slice (summary_pooled), drawn without reading `arrays`.
    """
    if pooled is not None:
        return _heatmap_figure({}, pooled, metric, spec, title)
    sliced = take_slice(arrays, spec)
    values = sum(k in sliced for k in ("eager", "compiled", "ref"))
    block = views.slice_block(sliced["eager"].shape, values, max_side, budget_bytes)
    return _heatmap_figure(sliced, pooled_metric(sliced, metric, block, dtype), metric, spec, title)


def summary_metrics(summary: Mapping[str, np.ndarray]) -> tuple[Metric, ...]:
    """The metrics the check summarised (available_metrics of the arrays it did not keep)."""
    return tuple(m for m in Metric if f"worst.{m.value}.position" in summary)


def summary_pooled(
    summary: Mapping[str, np.ndarray], metric: Metric, spec: SliceSpec, shape: Sequence[int]
) -> Pooled | None:
    """The check's block maxima (engine.judge.summary) when they are of this metric and slice, else None."""
    if f"pool.{metric.value}.value" not in summary or "pool.slice" not in summary:
        return None
    row_dim, col_dim, *index = (int(v) for v in summary["pool.slice"])
    theirs = SliceSpec(None if row_dim < 0 else row_dim, col_dim, tuple(index))
    if (theirs.row_dim, theirs.col_dim, theirs.fixed()) != (spec.row_dim, spec.col_dim, spec.fixed()):
        return None
    h = 1 if spec.row_dim is None else int(shape[spec.row_dim])
    by, bx = (int(v) for v in summary["pool.block"])
    key = f"pool.{metric.value}"
    hover = {k: summary[f"{key}.{k}"] for k in ("eager", "compiled", "ref") if f"{key}.{k}" in summary}
    value, rows, cols = (
        summary[f"{key}.{k}"].astype(t) for k, t in (("value", np.float64), ("row", np.int64), ("col", np.int64))
    )
    return Pooled(value, rows, cols, (by, bx), (h, int(shape[spec.col_dim])), hover)


def _at_worst(sliced: Mapping[str, np.ndarray], pooled: Pooled) -> Mapping[str, np.ndarray]:
    """eager/compiled/ref at each cell's worst element."""
    if pooled.hover is not None:
        return pooled.hover
    return {k: sliced[k][pooled.worst_row, pooled.worst_col] for k in ("eager", "compiled", "ref") if k in sliced}


def _heatmap_figure(
    sliced: Mapping[str, np.ndarray], pooled: Pooled, metric: Metric, spec: SliceSpec, title: str
) -> HeatmapView:
    scale = log_scale(pooled.value, metric)
    z = to_colour(pooled.value, scale)
    colours = {
        "colorscale": DIVERGING if scale.diverging else SEQUENTIAL,
        "zmin": scale.zmin,
        "zmax": scale.zmax,
        "colorbar": {
            "title": {"text": _SHORT[metric], "side": "right"},
            "tickvals": list(scale.tickvals),
            "ticktext": list(scale.ticktext),
        },
    }
    if not pooled.pooled:
        custom, names = _channels(
            _at_worst(sliced, pooled), pooled.worst_row, pooled.worst_col, pooled.value, with_index=False
        )
        trace = go.Heatmap(
            z=z,
            customdata=custom,
            hovertemplate=_hovertemplate(names, spec, metric, False),
            hoverongaps=False,
            name="heatmap",
            **colours,
        )
        fig = go.Figure(trace)
    else:
        fig = go.Figure(
            [
                go.Heatmap(
                    z=z,
                    x=block_starts(pooled, 1),
                    y=block_starts(pooled, 0),
                    hoverinfo="skip",
                    name="heatmap",
                    **colours,
                ),
                block_markers(sliced, pooled, metric, spec),
            ]
        )
    # a pooled map: a click picks a block, a drag zooms the overview (the toolbar's box select drags a region);
    # a full-resolution map has nothing to click, so a drag selects a region. (Streamlit turns click
    # selection off while the drag mode is "select".)
    _layout(fig, spec, title, pooled, dragmode="zoom" if pooled.pooled else "select")
    # the map's own extent: autorange would pad a pooled map for its (invisible) markers, and a map with no
    # differing element (all NaN, grey) has no data to range on, so plotly's empty default (-1..6) showed
    (gh, gw), (by, bx) = pooled.value.shape, pooled.block
    fig.update_xaxes(range=[-bx / 2, (gw - 0.5) * bx], autorange=False)
    fig.update_yaxes(range=[(gh - 0.5) * by, -by / 2], autorange=False)
    return HeatmapView(fig, pooled, scale, spec)


BLOCKS_TRACE = 1  # the block markers' trace number in a pooled figure (Streamlit's curve_number)


def block_starts(pooled: Pooled, axis: int) -> np.ndarray:
    """First row (axis 0) or col (axis 1) of every block along that axis, in the smallest integer dtype that holds it.

    Cells and markers sit at their block's first index, so the axes count elements and a hover's `%{x}` is
    the block's first column.
    """
    step, n = pooled.block[axis], pooled.shape[axis]
    dtype = np.uint16 if n <= np.iinfo(np.uint16).max else np.uint32
    return np.arange(0, n, step, dtype=dtype)


def block_markers(sliced: Mapping[str, np.ndarray], pooled: Pooled, metric: Metric, spec: SliceSpec) -> go.Scatter:
    """One invisible, clickable marker per block carrying its hover data; a selected one is outlined."""
    rows, cols = block_starts(pooled, 0), block_starts(pooled, 1)
    by, bx = pooled.block
    last = (
        np.minimum(rows.astype(np.int64) + by, pooled.shape[0]) - 1,
        np.minimum(cols.astype(np.int64) + bx, pooled.shape[1]) - 1,
    )
    # a bit-identical block is grey on the map (NaN there); its hover says error 0, not "NaN"
    value = np.where(np.isnan(pooled.value), 0.0, pooled.value)
    custom, names = _channels(
        _at_worst(sliced, pooled), pooled.worst_row, pooled.worst_col, value, with_index=True, block_ends=last
    )
    x, y = np.meshgrid(cols, rows)
    return go.Scatter(
        x=x.reshape(-1),
        y=y.reshape(-1),
        customdata=custom.reshape(-1, custom.shape[-1]),
        mode="markers",
        marker={"size": 8, "opacity": 0, "symbol": "square-open", "color": "#e4572e"},
        selected={"marker": {"opacity": 1}},
        unselected={"marker": {"opacity": 0}},
        hovertemplate=_hovertemplate(names, spec, metric, True),
        hoverlabel={"bgcolor": "white", "font": {"color": "#262730"}},  # not the marker's colour
        showlegend=False,
        name="blocks",
    )


def _layout(fig: go.Figure, spec: SliceSpec, title: str, pooled: Pooled, dragmode: str = "zoom") -> None:
    xaxis: dict[str, object] = {"title": f"dim {spec.col_dim}", "showgrid": False, "zeroline": False}
    yaxis: dict[str, object] = {
        "title": "" if spec.row_dim is None else f"dim {spec.row_dim}",
        "autorange": "reversed",
        "showgrid": False,
        "zeroline": False,
    }
    rows = pooled.value.shape[0]
    height = 160 if rows == 1 else 520
    if rows == 1:
        yaxis.update(showticklabels=False, ticks="")
    fig.update_layout(
        title={"text": title, "font": {"size": 14}},
        xaxis=xaxis,
        yaxis=yaxis,
        plot_bgcolor=IDENTICAL_COLOUR,
        height=height,
        margin={"l": 60, "r": 20, "t": 40 if title else 10, "b": 40},
        dragmode=dragmode,
        clickmode="event+select",
    )


def _window(lo: int, hi: int, n: int, context: int, cap: int) -> tuple[int, int]:
    """[a, b) around [lo, hi): at least `context` long where the axis allows, at most `cap`."""
    want = min(max(hi - lo, context), cap, n)
    if hi - lo >= want:
        return lo, lo + want
    a = max(0, min(lo - (want - (hi - lo)) // 2, n - want))
    return a, a + want


def block_detail(
    arrays: Mapping[str, np.ndarray],
    metric: Metric,
    spec: SliceSpec,
    rows: tuple[int, int],
    cols: tuple[int, int],
    dtype: str | None = None,
    max_side: int = DETAIL_MAX_SIDE,
    context: int = 32,
) -> HeatmapView:
    """Block rows [r0, r1) x cols [c0, c1) at full resolution, outlined, with some neighbourhood around a small
    block."""
    sliced_all = take_slice(arrays, spec)
    h, w = sliced_all["eager"].shape
    (r0, r1), (c0, c1) = rows, cols
    wr0, wr1 = _window(r0, r1, h, context, max_side)
    wc0, wc1 = _window(c0, c1, w, context, max_side)
    sliced = {k: v[wr0:wr1, wc0:wc1] for k, v in sliced_all.items()}
    value = element_metric(sliced, metric, dtype)
    pooled = pool_max(value, (1, 1))
    scale = log_scale(value, metric)
    custom, names = _channels(_at_worst(sliced, pooled), pooled.worst_row, pooled.worst_col, value, with_index=False)
    x, y = np.arange(wc0, wc1), np.arange(wr0, wr1)
    fig = go.Figure(
        go.Heatmap(
            z=to_colour(value, scale),
            x=x,
            y=y,
            customdata=custom,
            hovertemplate=_hovertemplate(names, spec, metric, pooled=False),
            colorscale=DIVERGING if scale.diverging else SEQUENTIAL,
            zmin=scale.zmin,
            zmax=scale.zmax,
            colorbar={
                "title": {"text": _SHORT[metric], "side": "right"},
                "tickvals": list(scale.tickvals),
                "ticktext": list(scale.ticktext),
            },
            hoverongaps=False,
            xgap=1 if (wc1 - wc0) <= 64 else 0,
            ygap=1 if (wr1 - wr0) <= 64 else 0,
        )
    )
    title = f"block rows {r0}–{r1 - 1}, cols {c0}–{c1 - 1} (outlined) at full resolution"
    _layout(fig, spec, title, pooled)
    fig.add_shape(
        type="rect",
        x0=c0 - 0.5,
        x1=min(c1, wc1) - 0.5,
        y0=r0 - 0.5,
        y1=min(r1, wr1) - 0.5,
        line={"color": "#e4572e", "width": 2},
    )
    return HeatmapView(fig, pooled, scale, spec)


def figure_bytes(fig: go.Figure) -> int:
    """What st.plotly_chart sends: plotly's JSON of the figure."""
    return len(plotly.io.to_json(fig, validate=False))


# -- distributions ------------------------------------------------------------------------------------------


def ulp_counts(ulp: np.ndarray, identical: np.ndarray | None = None) -> np.ndarray:
    """[bit-identical, non-finite, then per power-of-two bin e (ULP distance in (2**(e-1), 2**e]; e=0 holds
    0 and 1)]: the layout of the "histogram" in the check's summary (engine.judge.summary)."""
    flat = np.asarray(ulp, dtype=np.float64).reshape(-1)
    same = (flat == 0) if identical is None else np.asarray(identical).reshape(-1)
    diff = flat[~same]
    finite = diff[np.isfinite(diff)]
    mantissa, exponent = np.frexp(np.maximum(finite, 1.0))  # exactly ceil(log2), which a rounded log2 is not
    bins = np.bincount((exponent - (mantissa == 0.5)).astype(np.int64)) if finite.size else np.zeros(0, dtype=np.int64)
    return np.concatenate([[int(same.sum()), int(diff.size - finite.size)], bins]).astype(np.int64)


def ulp_histogram(ulp: np.ndarray, identical: np.ndarray | None = None) -> go.Figure:
    """Counts of ULP distances in power-of-two bins: 0 (bit-identical), 1, 2, 3–4, 5–8, ..., and ∞."""
    return histogram_figure(ulp_counts(ulp, identical))


def histogram_figure(counts: np.ndarray) -> go.Figure:
    """The ULP histogram's bar chart from ulp_counts' layout."""
    labels = ["0 (identical)"]
    values = [int(counts[0])]
    for e, count in enumerate(counts[2:]):
        labels.append("≤1" if e == 0 else "2" if e == 1 else f"{2 ** (e - 1) + 1}–{2**e}")
        values.append(int(count))
    labels.append("∞ / NaN")
    values.append(int(counts[1]))
    colours = [IDENTICAL_COLOUR] + ["#440154"] * (len(labels) - 2) + ["#b2182b"]
    fig = go.Figure(
        go.Bar(x=labels, y=values, marker_color=colours, hovertemplate="%{x} ULP: %{y} elements<extra></extra>")
    )
    # a log axis from half an element up, one tick per decade: a bin of one element is a visible bar (the
    # default range starts at the smallest count, which leaves that bar empty), and ticks read 1, 10, 100
    top = max(max(values), 1)
    fig.update_layout(
        height=320,
        margin={"l": 10, "r": 10, "t": 30, "b": 10},
        title={"text": "ULP distance, eager vs compiled", "font": {"size": 14}},
        yaxis={
            "type": "log",
            "title": "elements",
            "range": [math.log10(0.5), math.log10(top * 2.5)],
            "dtick": 1,
            "automargin": True,
        },
        xaxis={
            "title": {"text": "ULP distance", "standoff": 12},
            "type": "category",
            "tickangle": -40,
            "automargin": True,
        },
    )
    return fig


@dataclass(frozen=True)
class WorstElement:
    index: tuple[int, ...]
    eager: float
    compiled: float
    ref: float | None
    abs_err: float
    rel_err: float
    ulp: float
    metric: float


def worst_elements(
    arrays: Mapping[str, np.ndarray], metric: Metric, k: int = 10, dtype: str | None = None
) -> list[WorstElement]:
    """The k elements with the largest metric (bit-identical ones never), worst first."""
    shape = arrays["eager"].shape
    flat = {key: np.asarray(a).reshape(-1) for key, a in arrays.items()}
    n = flat["eager"].size
    best_idx = np.zeros(0, dtype=np.int64)
    best_val = np.zeros(0)
    for start in range(0, n, TILE_ELEMENTS):  # tile by tile: one candidate list, no full-size temporaries
        value = element_metric({key: a[start : start + TILE_ELEMENTS] for key, a in flat.items()}, metric, dtype)
        keep = np.flatnonzero(~np.isnan(value))
        if keep.size > k:  # every tie of the k-th value stays a candidate: the smallest index wins a tie
            keep = keep[value[keep] >= np.partition(value[keep], -k)[-k]]
        best_idx = np.concatenate([best_idx, keep + start])
        best_val = np.concatenate([best_val, value[keep]])
        if best_idx.size > 4 * k:
            top = np.lexsort((best_idx, -best_val))[:k]
            best_idx, best_val = best_idx[top], best_val[top]
    order = np.lexsort((best_idx, -best_val))[:k]
    idx = best_idx[order]
    return _worst_rows({key: a[idx] for key, a in flat.items()}, idx, best_val[order], shape, dtype)


def summary_worst(
    summary: Mapping[str, np.ndarray], metric: Metric, shape: Sequence[int], dtype: str | None = None
) -> list[WorstElement] | None:
    """worst_elements from the check's summary (engine.judge.summary), or None when it has none for the metric."""
    key = f"worst.{metric.value}"
    if f"{key}.position" not in summary:
        return None
    at = {k: summary[f"{key}.{k}"] for k in ("eager", "compiled", "ref") if f"{key}.{k}" in summary}
    return _worst_rows(at, summary[f"{key}.position"].astype(np.int64), summary[f"{key}.value"], shape, dtype)


def _worst_rows(
    at: Mapping[str, np.ndarray], idx: np.ndarray, values: np.ndarray, shape: Sequence[int], dtype: str | None
) -> list[WorstElement]:
    """Table rows of the elements at flat positions idx, whose eager/compiled/ref values are `at`."""
    abs_v = element_metric(at, Metric.ABS, dtype)
    rel_v = element_metric(at, Metric.REL, dtype) if _is_float(at["eager"]) else np.zeros(idx.size)
    ulp_v = element_metric(at, Metric.ULP, dtype)
    return [
        WorstElement(
            index=tuple(int(j) for j in np.unravel_index(int(i), tuple(shape))),
            eager=float(at["eager"][m]),
            compiled=float(at["compiled"][m]),
            ref=float(at["ref"][m]) if "ref" in at else None,
            abs_err=float(abs_v[m]),
            rel_err=float(rel_v[m]),
            ulp=float(ulp_v[m]),
            metric=float(values[m]),
        )
        for m, i in enumerate(idx)
    ]
