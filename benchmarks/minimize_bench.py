"""Minimizer figures: our pipeline vs shrinkray alone, under the same oracle, side by side.

For each sample case with a real divergence, a noisy variant (the case plus irrelevant code) is
minimized twice: by our passes (graph path included, no shrinkray) and by shrinkray alone asking the
same oracle. Printed per case: lines / tokens / torch ops before and after, oracle calls, wall time.

    python benchmarks/minimize_bench.py --budget 300 [--cases floor_divide_off_by_one,erf_small_vectorized]

shrinkray is found through $DIVERGENCE_SHRINKRAY (its executable in a Python 3.12 venv) or PATH.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from engine import CheckOptions, Runner  # noqa: E402
from engine.cases import load_cases  # noqa: E402
from minimizer.minimize import minimize, shrinkray_decider  # noqa: E402
from minimizer.oracle import DivergenceOracle  # noqa: E402
from minimizer.shrinkray import find_shrinkray, run_shrinkray  # noqa: E402
from minimizer.size import Size, measure  # noqa: E402
from minimizer.syntax import canonical, statically_plausible  # noqa: E402

DEFAULT_CASES = ("floor_divide_off_by_one", "erf_small_vectorized", "elu_subnormal_div_zero", "acosh_large_overflow", "erfinv_near_one", "copy_then_mutate_source")

NOISE = '''
import math
import os


def _unused_helper(t):
    return t * 2 + math.sqrt(4.0)


_CONSTANT = [1, 2, 3]
'''


def noisy(source: str) -> str:
    """The case with irrelevant code before it, so that both reducers have something to remove."""
    lines = source.splitlines()
    insert = next((i for i, l in enumerate(lines) if l.startswith("import torch")), 0) + 1
    return "\n".join(lines[:insert] + NOISE.splitlines() + lines[insert:]) + "\n"


def fmt(size: Size) -> str:
    return f"{size.lines:3d} l {size.tokens:4d} t {size.torch_ops:3d} ops"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--budget", type=float, default=300.0, help="seconds per case and per reducer")
    parser.add_argument("--cases", default=",".join(DEFAULT_CASES))
    parser.add_argument("--no-shrinkray", action="store_true")
    args = parser.parse_args()
    cases = {c.slug: c for c in load_cases()}
    shrinkray = None if args.no_shrinkray else find_shrinkray()
    if shrinkray is None and not args.no_shrinkray:
        print("shrinkray not found: set DIVERGENCE_SHRINKRAY; only our pipeline is measured")
    print(f"{'case':<28} {'initial':<20} | {'ours':<20} {'calls':>5} {'s':>5} | {'shrinkray':<20} {'calls':>5} {'s':>5}")
    with Runner() as runner, tempfile.TemporaryDirectory() as tmp:
        for slug in args.cases.split(","):
            case = cases[slug]
            source = noisy(case.source())
            options = case.options.replace(device="cpu", timeout_s=120)
            work = Path(tmp) / slug
            ours = minimize(source, options, runner, work / "ours", budget_s=args.budget, use_shrinkray=False, ablation=False, filename=f"{slug}.py")
            row = f"{slug:<28} {fmt(ours.initial):<20} | {fmt(ours.final):<20} {ours.oracle_calls:5d} {ours.elapsed_s:5.0f} |"
            if shrinkray is not None:
                oracle = DivergenceOracle(runner, options, work / "shrinkray", filename=f"{slug}.py")
                started = time.monotonic()
                oracle.establish(source)
                run = run_shrinkray(shrinkray, canonical(source), shrinkray_decider(oracle), budget_s=args.budget)
                result = run.result if statically_plausible(run.result) else canonical(source)
                row += f" {fmt(measure(result)):<20} {oracle.calls:5d} {time.monotonic() - started:5.0f}"
            print(row, flush=True)
            if not ours.repro_verified:
                print(f"    (our repro for {slug} was not verified: {'; '.join(ours.notes)})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
