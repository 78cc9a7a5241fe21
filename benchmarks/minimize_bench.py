"""Minimizer figures: our pipeline vs shrinkray alone, under the same oracle, side by side.

For each sample case with a real divergence, a noisy variant (the case plus irrelevant code) is
minimized twice: by our passes (graph path included, no shrinkray polish) and by shrinkray alone asking
the same oracle. Printed per case: lines / tokens / torch ops before and after, oracle calls and wall
time of each, and the time each needed to first reach a size no larger than our final one (in tokens):
the issue's goal is our final repro no larger than shrinkray's, in a third of shrinkray's time to reach it.

    python benchmarks/minimize_bench.py --budget 180 [--cases floor_divide_off_by_one,erf_small_vectorized]

Each tool has its own warm worker and its own Inductor cache (under --cache-root, kept between runs),
so neither profits from the other's compiles; the order alternates between cases so that neither always
runs on the warmer machine. shrinkray is found through $DIVERGENCE_SHRINKRAY or PATH.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from engine import CheckOptions, Runner  # noqa: E402
from engine.cases import load_cases  # noqa: E402
from minimizer.minimize import MinimizeResult, minimize, shrinkray_decider  # noqa: E402
from minimizer.oracle import DivergenceOracle  # noqa: E402
from minimizer.reducer import ReduceProgress  # noqa: E402
from minimizer.shrinkray import find_shrinkray, run_shrinkray  # noqa: E402
from minimizer.size import Size, count_tokens, measure  # noqa: E402
from minimizer.syntax import canonical, keeps_style, statically_plausible  # noqa: E402

DEFAULT_CASES = (
    "floor_divide_off_by_one", "erf_small_vectorized", "elu_subnormal_div_zero", "acosh_large_overflow",
    "erfinv_near_one", "copy_then_mutate_source",
)

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


@dataclass(frozen=True)
class Outcome:
    final: Size
    program: str
    calls: int
    seconds: float
    history: tuple[tuple[float, int], ...]  # (seconds since start, best tokens so far), at every improvement

    def time_to(self, tokens: int) -> float | None:
        """When this tool first held a candidate of at most `tokens` tokens; None if never."""
        return next((t for t, best in self.history if best <= tokens), None)


def run_ours(source: str, options: CheckOptions, runner: Runner, work: Path, budget: float, filename: str) -> tuple[Outcome, MinimizeResult]:
    started = time.monotonic()
    history: list[tuple[float, int]] = [(0.0, count_tokens(canonical(source)))]

    def progress(p: ReduceProgress) -> None:
        if p.best_tokens < history[-1][1]:
            history.append((time.monotonic() - started, p.best_tokens))

    result = minimize(source, options, runner, work, budget_s=budget, use_shrinkray=False, ablation=False, filename=filename, on_progress=progress)
    return Outcome(result.final, result.minimized, result.oracle_calls, result.elapsed_s, tuple(history)), result


def run_shrinkray_alone(executable: str, source: str, options: CheckOptions, runner: Runner, work: Path, budget: float, filename: str) -> Outcome:
    oracle = DivergenceOracle(runner, options, work, filename=filename)
    started = time.monotonic()
    oracle.establish(source)
    history: list[tuple[float, int]] = [(time.monotonic() - started, count_tokens(canonical(source)))]
    lock = threading.Lock()
    decide = shrinkray_decider(oracle, keeps_style(canonical(source)))  # the same static pre-filter as ours

    def recording(candidate: str) -> bool:
        ok = decide(candidate)
        if ok:
            tokens = count_tokens(candidate)  # as shrinkray writes it, like its final result
            with lock:
                if tokens < history[-1][1]:
                    history.append((time.monotonic() - started, tokens))
        return ok

    run = run_shrinkray(executable, canonical(source), recording, budget_s=max(1.0, budget - (time.monotonic() - started)))
    result = run.result if statically_plausible(run.result) else canonical(source)
    return Outcome(measure(result), result, oracle.calls, time.monotonic() - started, tuple(history))


def fmt(size: Size) -> str:
    return f"{size.lines:2d}l {size.tokens:4d}t {size.torch_ops:2d}op"


def secs(value: float | None, budget: float) -> str:
    return f"{value:5.0f}" if value is not None else f">{budget:4.0f}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--budget", type=float, default=180.0, help="seconds per case and per reducer")
    parser.add_argument("--cases", default=",".join(DEFAULT_CASES))
    parser.add_argument("--no-shrinkray", action="store_true")
    parser.add_argument("--save", type=Path, help="write each tool's final program to DIR/<case>.<tool>.py")
    parser.add_argument("--cache-root", type=Path, default=ROOT / ".cache" / "bench", help="one Inductor cache per tool below it")
    args = parser.parse_args()
    cases = {c.slug: c for c in load_cases()}
    shrinkray = None if args.no_shrinkray else find_shrinkray()
    if shrinkray is None and not args.no_shrinkray:
        print("shrinkray not found: set DIVERGENCE_SHRINKRAY; only our pipeline is measured")
    print(f"budget {args.budget:.0f} s per tool and case; sizes: lines, tokens, torch ops; 'to<=' = seconds to first reach <= our final tokens")
    header = f"{'case':<24} {'initial':<16} | {'ours':<16} {'calls':>5} {'s':>5} {'to<=':>5} | {'shrinkray':<16} {'calls':>5} {'s':>5} {'to<=':>5} | ratio (total, reach)"
    print(header)
    print("-" * len(header), flush=True)
    with Runner(cache_dir=args.cache_root / "ours") as ours_runner, Runner(cache_dir=args.cache_root / "shrinkray") as sr_runner, tempfile.TemporaryDirectory() as tmp:
        for index, slug in enumerate(args.cases.split(",")):
            case = cases[slug]
            source = noisy(case.source())
            options = case.options.replace(device="cpu", timeout_s=120)
            work = Path(tmp) / slug
            jobs: dict[str, Callable[[], object]] = {
                "ours": lambda: run_ours(source, options, ours_runner, work / "ours", args.budget, f"{slug}.py"),
            }
            if shrinkray is not None:
                jobs["shrinkray"] = lambda: run_shrinkray_alone(shrinkray, source, options, sr_runner, work / "shrinkray", args.budget, f"{slug}.py")
            order = list(jobs) if index % 2 == 0 else list(reversed(jobs))
            done = {name: jobs[name]() for name in order}
            ours, result = done["ours"]  # type: ignore[misc]
            if args.save is not None:
                args.save.mkdir(parents=True, exist_ok=True)
                for name, outcome in done.items():
                    program = outcome[0].program if isinstance(outcome, tuple) else outcome.program  # type: ignore[attr-defined]
                    (args.save / f"{slug}.{name}.py").write_text(program)
            target = ours.final.tokens
            row = f"{slug[:24]:<24} {fmt(result.initial):<16} | {fmt(ours.final):<16} {ours.calls:5d} {ours.seconds:5.0f} {secs(ours.time_to(target), args.budget)} |"
            if "shrinkray" in done:
                sr: Outcome = done["shrinkray"]  # type: ignore[assignment]
                reach = sr.time_to(target)
                # never reached within the budget: shrinkray's time is over the budget, so the ratio is under ours / budget
                ratio = f"{ours.seconds / reach:5.2f}" if reach else f"<{ours.seconds / args.budget:4.2f}"
                ours_reach = ours.time_to(target) or ours.seconds
                reach_ratio = f"{ours_reach / reach:5.2f}" if reach else f"<{ours_reach / args.budget:4.2f}"
                row += f" {fmt(sr.final):<16} {sr.calls:5d} {sr.seconds:5.0f} {secs(reach, args.budget)} | {ratio} {reach_ratio}"
            print(row, flush=True)
            if not result.repro_verified:
                print(f"    (our repro for {slug} was not verified: {'; '.join(result.notes)})", flush=True)
    print("ratio (first figure) = our total seconds (confirm and repro verification included) / shrinkray's seconds to reach our "
          "final size (goal: <= 0.33); second figure: the same with our own seconds to reach that size, like for like; "
          "'<x': shrinkray never got there within the budget")
    return 0


if __name__ == "__main__":
    sys.exit(main())
