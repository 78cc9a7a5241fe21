"""What the oracle's extra work costs per check: the faithful fp64 reference and the two re-checks.

Checks every CPU sample case through the engine's worker (as `divergence check` does) and prints, per case,
the check's seconds, the seconds of its "faithful reference" stage (an eager re-run under the trace and an
fp64 re-run; no compile), and which re-checks compiled the program again (rng, precision-cast: one
compile each, whose seconds land in that run's compile stages), then the totals. Usage:
    python benchmarks/witness_cost.py [--cases slug,slug]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from app.gallery import load_cases  # noqa: E402
from engine import Runner  # noqa: E402

WITNESS = "faithful reference"
RECHECKS = ("rng recheck", "precision-cast recheck")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--cases", help="comma-separated slugs (default: every case that runs on CPU)")
    args = parser.parse_args(argv)
    wanted = set(args.cases.split(",")) if args.cases else None
    cases = [c for c in load_cases()[0] if not c.cuda_only and (wanted is None or c.slug in wanted)]
    rows = []
    with tempfile.TemporaryDirectory() as tmp, Runner() as runner:
        for case in cases:
            started = time.perf_counter()
            result = runner.check(
                case.source(), case.options.replace(device="cpu"), str(case.path), run_dir=Path(tmp) / case.slug
            )
            total = time.perf_counter() - started
            stages = result.stage_seconds
            if result.verdict.value == "error":
                print(f"{case.slug}: {result.explanation}", file=sys.stderr)
            rows.append(
                (case.slug, result.verdict.value, total, stages.get(WITNESS, 0.0), [s for s in RECHECKS if s in stages])
            )
    width = max(len(r[0]) for r in rows)
    print(f"{'case':<{width}}  {'verdict':<14} {'check s':>8} {'witness s':>10}  compiled again for")
    for slug, verdict, total, witness, which in rows:
        print(f"{slug:<{width}}  {verdict:<14} {total:>8.2f} {witness:>10.3f}  {', '.join(which) or '-'}")
    with_witness = [r for r in rows if r[3] > 0]
    print(
        f"\n{len(rows)} checks, {sum(r[2] for r in rows):.1f} s; the faithful reference ran in {len(with_witness)} "
        f"(those whose values differ): {sum(r[3] for r in with_witness):.2f} s in all, "
        f"max {max((r[3] for r in with_witness), default=0):.2f} s, no compile; "
        f"{sum(len(r[4]) for r in rows)} re-check(s) compiled again in {sum(1 for r in rows if r[4])} checks"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
