"""What the app's heatmap costs for large outputs: time to prepare the figure and bytes sent to the browser.

For a 4096x4096 output and 16M-element 3-D outputs (synthetic eager/compiled/ulp/fp64 arrays, shaped like
what the engine stores), time `app.web.heatmap.heatmap()` plus plotly's JSON serialisation (what
st.plotly_chart does), and report the JSON size. Goal: under 1 s and under 2 MB each.

    python benchmarks/heatmap.py [--repeat N]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import plotly.io

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from app.web.heatmap import Metric, block_detail, default_spec, heatmap, ulp_histogram, worst_elements  # noqa: E402

CASES = {
    "4096x4096": (4096, 4096),
    "256x256x256": (256, 256, 256),
    "16x1024x1024": (16, 1024, 1024),
    "16M 1-D": (16 * 1024 * 1024,),
}


def synthetic(shape: tuple[int, ...], seed: int = 0) -> dict[str, np.ndarray]:
    """Reassociation-like noise (a third of the elements 1-2 ULP off), one bad region, a NaN and a signed zero."""
    rng = np.random.default_rng(seed)
    ref = rng.standard_normal(shape)
    eager = ref.astype(np.float32)
    compiled = eager.copy()
    flat = compiled.reshape(-1)
    noisy = rng.random(flat.size) < 0.33
    flat[noisy] = np.nextafter(flat[noisy], np.float32(np.inf))
    region = tuple(slice(s // 3, s // 3 + max(1, s // 20)) for s in shape)
    compiled[region] *= np.float32(1.01)
    flat[7] = np.nan
    eager.reshape(-1)[11] = 0.0
    flat[11] = -0.0
    e_bits = eager.view(np.int32).astype(np.int64)
    c_bits = compiled.view(np.int32).astype(np.int64)
    ulp = np.abs(
        np.where(e_bits < 0, -(e_bits & 0x7FFFFFFF), e_bits) - np.where(c_bits < 0, -(c_bits & 0x7FFFFFFF), c_bits)
    ).astype(np.float64)
    ulp[np.isnan(compiled)] = np.inf
    return {"eager": eager, "compiled": compiled, "ulp": ulp, "ref": ref}


def measure(
    name: str, shape: tuple[int, ...], metric: Metric, repeat: int
) -> tuple[float, int, tuple[int, int], tuple[int, int]]:
    arrays = synthetic(shape)
    spec = default_spec(shape)
    best = float("inf")
    size = 0
    for _ in range(repeat):
        t0 = time.perf_counter()
        view = heatmap(arrays, metric, spec, dtype="torch.float32")
        size = len(plotly.io.to_json(view.figure, validate=False))
        best = min(best, time.perf_counter() - t0)
    return best, size, view.pooled.value.shape, view.pooled.block  # type: ignore[return-value]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=3, help="runs per case; the best is reported (default 3)")
    args = parser.parse_args()
    print(
        f"{'output':<14} {'metric':<6} {'slice':<11} {'grid':<9} {'block':<7} {'prepare+json':>12} {'bytes':>10}  goal"
    )
    ok = True
    for name, shape in CASES.items():
        for metric in (Metric.ABS, Metric.RATIO):
            seconds, size, grid, block = measure(name, shape, metric, args.repeat)
            sl = "x".join(map(str, shape[-2:])) if len(shape) > 1 else f"1x{shape[0]}"
            good = seconds < 1.0 and size < 2_000_000
            ok &= good
            print(
                f"{name:<14} {metric.value:<6} {sl:<11} {grid[0]}x{grid[1]:<5} {block[0]}x{block[1]:<4} "
                f"{seconds * 1000:9.0f} ms {size / 1e6:8.2f} MB  {'ok' if good else 'MISSED'}"
            )
    arrays = synthetic((4096, 4096))
    for label, fn in (
        ("ULP histogram, 16M elements", lambda: plotly.io.to_json(ulp_histogram(arrays["ulp"]), validate=False)),
        ("10 worst elements, 16M elements", lambda: worst_elements(arrays, Metric.ABS, 10)),
        (
            "one 8x8 block at full resolution",
            lambda: plotly.io.to_json(
                block_detail(arrays, Metric.ABS, default_spec((4096, 4096)), (1360, 1368), (1360, 1368)).figure,
                validate=False,
            ),
        ),
    ):
        t0 = time.perf_counter()
        fn()
        print(f"{label:<40} {(time.perf_counter() - t0) * 1000:7.0f} ms")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
