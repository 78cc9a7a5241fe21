"""A compact HTML summary of a CheckResult for Jupyter: verdict, the worst leaves, a small ULP heatmap."""

from __future__ import annotations

import html
import math
from typing import TYPE_CHECKING

import numpy as np

from engine.judge.views import ulp_distance

if TYPE_CHECKING:  # only for annotations: engine.result imports this module to render itself
    from engine.result import CheckResult, LeafResult

_COLOURS = {
    "match": "#2e7d32",
    "benign": "#558b2f",
    "precision-cast": "#f9a825",
    "rng": "#7e57c2",
    "eager-inaccurate": "#0277bd",
    "divergent": "#c62828",
    "error": "#6a1b9a",
}
_ROWS, _COLS = 12, 48
_MAX_ELEMENTS = 1 << 22  # above this, a notebook's map is drawn from the check's summary, not from every value


def pooled_max(values: np.ndarray, rows: int = _ROWS, cols: int = _COLS) -> np.ndarray:
    """Fold any-rank values into 2-D (leading dims x last dim) and take block maxima down to rows x cols."""
    grid = values.reshape(1, -1) if values.ndim < 2 else values.reshape(-1, values.shape[-1])
    grid = np.nan_to_num(grid.astype(np.float64), nan=np.inf)
    for axis, limit in ((0, rows), (1, cols)):
        n = grid.shape[axis]
        if n > limit:
            edges = np.linspace(0, n, limit + 1).astype(int)[:-1]
            grid = np.maximum.reduceat(grid, edges, axis=axis)
    return grid


def _cell(value: float, top: float) -> str:
    if value == 0:
        colour = "#e0e0e0"  # bit-identical: visibly unlike the faintest error
    else:
        level = 1.0 if not math.isfinite(value) or top <= 1 else math.log10(value + 1) / math.log10(top + 1)
        colour = f"hsl({int(55 - 55 * level)}, 90%, {int(70 - 30 * level)}%)"
    return f'<td style="background:{colour};width:6px;height:10px;padding:0" title="{value:g} ULP"></td>'


def heatmap_html(ulp: np.ndarray) -> str:
    grid = pooled_max(ulp)
    finite = grid[np.isfinite(grid)]
    top = float(finite.max()) if finite.size else 1.0
    rows = "".join("<tr>" + "".join(_cell(float(v), top) for v in row) + "</tr>" for row in grid)
    return (
        f'<table style="border-collapse:collapse;border:0">{rows}</table><small>max ULP per block; grey ='
        " bit-identical</small>"
    )


def _ulp_map(result: CheckResult, leaf: LeafResult) -> np.ndarray | None:
    """The leaf's ULP distances from its stored values; for a large leaf, the check's block maxima of its
    slice through the worst element (bit-identical blocks at 0)."""
    if leaf.numel > _MAX_ELEMENTS or leaf.numel == 0:
        pooled = result.load_summary(leaf).get("pool.ulp.value")
        return None if pooled is None else np.nan_to_num(pooled, nan=0.0)
    arrays = result.load_arrays(leaf)
    if "ulp" in arrays:  # a run stored before the values-only format
        return arrays["ulp"]
    return ulp_distance(arrays["eager"], arrays["compiled"], leaf.dtype) if "eager" in arrays else None


def _worst(result: CheckResult, k: int = 5) -> list[LeafResult]:
    return sorted(result.leaves, key=lambda leaf: (-leaf.verdict.severity, -leaf.max_ulp))[:k]


def render_html(result: CheckResult) -> str:
    verdict = result.verdict.value
    parts = [
        f'<div style="font-family:sans-serif"><div style="font-weight:bold;color:{_COLOURS.get(verdict, "#000")}">'
        f"{html.escape(verdict.upper())}</div><div>{html.escape(result.explanation)}</div>"
    ]
    if result.error is not None:
        parts.append(f"<pre>{html.escape(result.error.message)}</pre>")
    worst = _worst(result)
    if worst:
        head = "".join(
            f"<th>{h}</th>" for h in ("leaf", "shape", "dtype", "max abs", "max ULP", "mismatches", "verdict")
        )
        body = "".join(
            f"<tr><td>{html.escape(leaf.name)}</td><td>{'x'.join(map(str, leaf.shape or ())) or '-'}</td>"
            f"<td>{leaf.dtype or '-'}</td>"
            f"<td>{leaf.max_abs:.3g}</td><td>{leaf.max_ulp:g}</td><td>{leaf.mismatches}/{leaf.numel}</td>"
            f'<td style="color:{_COLOURS.get(leaf.verdict.value, "#000")}">{leaf.verdict.value}</td></tr>'
            for leaf in worst
        )
        parts.append(f"<table><tr>{head}</tr>{body}</table>")
        ulp = _ulp_map(result, worst[0]) if worst[0].mismatches else None
        if ulp is not None and ulp.size:
            parts.append(f"<div>{html.escape(worst[0].name)}:</div>" + heatmap_html(ulp))
    if result.run_dir:
        parts.append(f"<small>run stored in {html.escape(result.run_dir)}</small>")
    return "".join(parts) + "</div>"
