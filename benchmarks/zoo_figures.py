"""The figures of a zoo sweep, as docs/figures/zoo-findings.md quotes them: jobs, time, memory, verdicts, PyTorch's
check beside.

Reads a sweep's state file (nothing runs) and prints, in Markdown: the jobs, their checked samples (leaves)
and wall time; seconds and peak memory per job (median, 90th percentile, max, and the slowest jobs); our
verdicts against PyTorch's own check over jobs and over leaves; and the jobs where the two disagree, with
their first disagreeing leaf. A sweep still running is read as it stands.

    python benchmarks/zoo_figures.py SWEEP_DIR [--list 40]
"""

from __future__ import annotations

import argparse
import statistics
import sys
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from app.sweep.report import crosstab_rows, crosstabs, disagreeing, pytorch_text  # noqa: E402
from app.sweep.state import DONE, SweepState  # noqa: E402


def _quantile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * (len(ordered) - 1) + 0.5))]


def _grid(counts: dict[tuple[str, str], int], what: str) -> list[str]:
    return [f"| {what} | PyTorch's pass | fail | n/a |", "|---|---|---|---|"] + [
        f"| {v} | " + " | ".join(map(str, row)) + " |" for v, row in crosstab_rows(counts)
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("sweep_dir", type=Path)
    parser.add_argument("--list", type=int, default=40, help="disagreeing jobs listed (all are counted)")
    args = parser.parse_args()
    state = SweepState(args.sweep_dir)
    rows = state.jobs()
    done = [r for r in rows if r.status == DONE]
    seconds = [r.seconds for r in done if r.seconds is not None]
    memory = [r.peak_rss_mb for r in done if r.peak_rss_mb is not None]
    leaves = sum(r.pytorch_detail.compared for r in done if r.pytorch_detail is not None)
    started = min((r.finished - (r.seconds or 0) for r in done if r.finished), default=None)
    ended = max((r.finished for r in done if r.finished), default=None)
    print(f"## {args.sweep_dir.name}\n")
    print(
        f"{len(done)} of {len(rows)} jobs finished; {leaves} leaves judged by PyTorch's check; "
        f"checks {sum(seconds) / 3600:.2f} h in all"
        + (f", wall {(ended - started) / 3600:.2f} h" if started and ended else "")
    )
    if seconds:
        print(
            f"seconds per job: median {statistics.median(seconds):.1f}, p90 {_quantile(seconds, 0.9):.1f}, max"
            f" {max(seconds):.0f}"
        )
    if memory:
        print(
            f"peak RSS per job (MB): median {statistics.median(memory):.0f}, p90 {_quantile(memory, 0.9):.0f}, max"
            f" {max(memory):.0f}"
        )
    counts = Counter((r.verdict or r.status) + (f" ({r.error_kind})" if r.error_kind else "") for r in done)
    print("\nverdicts: " + ", ".join(f"{n} {v}" for v, n in counts.most_common()))
    slowest = sorted(done, key=lambda r: -(r.seconds or 0))[:5]
    print("slowest: " + ", ".join(f"{r.name} {r.seconds:.0f} s / {r.peak_rss_mb or 0:.0f} MB" for r in slowest))
    jobs, leaf_counts = crosstabs(done)
    if not jobs:
        return
    print()
    print("\n".join(_grid(jobs, "jobs: ours")))
    print()
    print("\n".join(_grid(leaf_counts, "leaves: ours")))
    found = disagreeing(done)
    print(f"\n{len(found)} jobs where the two disagree (as a whole or in a leaf):\n")
    print("| ours | PyTorch's | program | first disagreeing leaf |\n|---|---|---|---|")
    for r in found[: args.list]:
        detail = r.pytorch_detail
        first = detail.disagreements[0] if detail is not None and detail.disagreements else None
        leaf = (
            f"`{first[0]}`: ours {first[1]}, PyTorch's {first[2]}"
            + (f" (+{len(detail.disagreements) - 1})" if detail and len(detail.disagreements) > 1 else "")
            if first
            else ""
        )
        print(f"| {r.verdict} | {pytorch_text(r)} | {r.name}{' ' + r.label if r.label else ''} | {leaf} |")
    if len(found) > args.list:
        print(f"\n... and {len(found) - args.list} more")


if __name__ == "__main__":
    main()
