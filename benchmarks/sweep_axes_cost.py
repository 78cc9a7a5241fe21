"""What each zoo axis costs per op: the same op_db ops swept under each axis, one check at a time.

    python benchmarks/sweep_axes_cost.py [--out DIR] [--ops add,sin,...] [--write-docs]
    python benchmarks/sweep_axes_cost.py --summarize SWEEP_DIR [SWEEP_DIR ...]   # figures of sweeps already run

An axis is a zoo pattern plus matrix values (`opinfo:fp32+ref`, `opinfo:fp32 --matrix backward=true`, ...). Each
runs as an ordinary resumable sweep under OUT/<axis>, so an interrupted run goes on where it stopped and a
finished one is only read. For every axis it prints the jobs, the seconds of checks per job (median and p90,
the check's own wall time as the sweep records it) and per op (an op's jobs together: one per chunk of 100
samples), and the machine's load average while it ran: on a shared machine the seconds grow with the load,
so compare axes measured together. `--write-docs` puts the table into docs/figures/sweeps.md between this
script's markers.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

# a spread of kinds: pointwise, reduction, norm, conv, matmul, indexing, scan, pooling
OPS = (
    "add",
    "sin",
    "where",
    "softmax",
    "nn.functional.layer_norm",
    "nn.functional.conv2d",
    "gather",
    "cumsum",
)
# module_db's modules for the modules: axes: a norm with batch statistics, a norm, a conv, a matmul, an activation
MODULES = ("nn.BatchNorm2d", "nn.LayerNorm", "nn.Conv2d", "nn.Linear", "nn.GELU")


@dataclass(frozen=True)
class Axis:
    name: str  # as the table shows it
    pattern: str  # the zoo pattern, {ops} replaced by the op list
    matrix: tuple[str, ...] = ()


AXES = (
    Axis("opinfo:fp32 (PyTorch's own samples)", "opinfo:fp32:{ops}"),
    Axis("bf16", "opinfo:bf16:{ops}"),
    Axis("fp16", "opinfo:fp16:{ops}"),
    Axis("+ref (reference and extremal inputs)", "opinfo:fp32+ref:{ref_ops}"),
    Axis("+noncontig", "opinfo:fp32+noncontig:{ops}"),
    Axis("backward=true (gradients)", "opinfo:fp32:{ops}", ("backward=true",)),
    Axis("dynamic=true", "opinfo:fp32:{ops}", ("dynamic=true",)),
    Axis("derive=channels_last", "opinfo:fp32:{ops}", ("derive=channels_last",)),
    Axis("derive=special", "opinfo:fp32:{ops}", ("derive=special",)),
    Axis("configs=cpp_wrapper", "opinfo:fp32:{ops}", ("configs=cpp_wrapper",)),
    Axis("configs=no_simd", "opinfo:fp32:{ops}", ("configs=no_simd",)),
    Axis("configs=max_autotune", "opinfo:fp32:{ops}", ("configs=max_autotune",)),
    Axis("modules:eval (module_db)", "modules:eval:{modules}"),
    Axis("modules:train", "modules:train:{modules}"),
    Axis("chain:fp32 (8 chains a program)", "chain:fp32:0-5"),
)


RECORD = "axis-cost.json"  # beside each axis's sweep.json: its name, pattern and the load while it ran


@dataclass(frozen=True)
class Figures:
    axis: str
    jobs: int
    ops: int
    median_s: float
    p90_s: float
    per_op_s: float
    verdicts: dict[str, int]
    load: str


def figures(name: str, sweep_dir: Path, load: str = "") -> Figures:
    data = json.loads((sweep_dir / "sweep.json").read_text())
    jobs = [j for j in data["jobs"] if j.get("seconds") is not None]
    seconds = sorted(j["seconds"] for j in jobs)
    by_op: dict[str, float] = {}
    for j in jobs:
        op = Path(j["program"]).stem.split("--")[0]
        by_op[op] = by_op.get(op, 0.0) + j["seconds"]
    verdicts: dict[str, int] = {}
    for j in data["jobs"]:
        verdict = j.get("verdict") or j["status"]
        verdicts[verdict] = verdicts.get(verdict, 0) + 1
    p90 = seconds[min(len(seconds) - 1, int(0.9 * len(seconds)))] if seconds else 0.0
    return Figures(
        name,
        len(data["jobs"]),
        len(by_op),
        statistics.median(seconds) if seconds else 0.0,
        p90,
        statistics.mean(by_op.values()) if by_op else 0.0,
        verdicts,
        load,
    )


def run_axis(axis: Axis, ops: tuple[str, ...], out: Path) -> Figures:
    from torch.testing._internal.common_methods_invocations import op_db

    from app.sweep.matrix import parse_axis
    from app.sweep.orchestrator import SweepConfig, run_sweep
    from app.sweep.progress import SweepProgress
    from app.sweep.sources.opinfo import key_of

    # +ref sweeps only the ops with reference inputs of their own: name the others and the sweep refuses
    with_ref = {key_of(op) for op in op_db if op.reference_inputs_func is not None}
    pattern = axis.pattern.format(
        ops=",".join(ops), ref_ops=",".join(o for o in ops if o in with_ref), modules=",".join(MODULES)
    )
    sweep_dir = out / axis.name.split()[0].replace(":", "-").replace("=", "-").replace("+", "")
    record = sweep_dir / RECORD
    before = os.getloadavg()[0]
    started = time.monotonic()
    run_sweep(
        SweepConfig(paths=(pattern,), axes=tuple(parse_axis(a) for a in axis.matrix), sweep_dir=sweep_dir, slots=1),
        SweepProgress(quiet=True),
    )
    wall = time.monotonic() - started
    if not record.exists():
        # the load while the axis first ran to its end: a later (resumed or finished) run keeps it. A run
        # interrupted and resumed records the load of its last part only
        load = f"{before:.1f} -> {os.getloadavg()[0]:.1f}"
        record.write_text(json.dumps({"axis": axis.name, "pattern": pattern, "matrix": axis.matrix, "load": load}))
    print(f"  {axis.name}: {wall:.0f} s", file=sys.stderr)
    return summarize(sweep_dir)


def summarize(sweep_dir: Path) -> Figures:
    """The figures of a finished sweep directory, named and loaded as its record says (if it has one)."""
    record = json.loads((sweep_dir / RECORD).read_text()) if (sweep_dir / RECORD).exists() else {}
    return figures(record.get("axis", sweep_dir.name), sweep_dir, record.get("load", ""))


def table(rows: list[Figures]) -> str:
    lines = [
        "| axis | jobs | ops | s per job (median / p90) | s per op | verdicts | load (1-min) |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        verdicts = ", ".join(f"{n} {v}" for v, n in sorted(r.verdicts.items(), key=lambda kv: -kv[1]))
        lines.append(
            f"| {r.axis} | {r.jobs} | {r.ops} | {r.median_s:.1f} / {r.p90_s:.1f} | {r.per_op_s:.1f} | {verdicts} "
            f"| {r.load} |"
        )
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path.home() / ".divergence-axes-cost")
    parser.add_argument("--ops", default=",".join(OPS))
    parser.add_argument("--axes", help="only the axes whose name starts with one of these (comma separated)")
    parser.add_argument("--summarize", nargs="+", type=Path, metavar="SWEEP_DIR")
    parser.add_argument("--write-docs", action="store_true")
    args = parser.parse_args()
    if args.summarize:
        rows = [summarize(d) for d in args.summarize]
    else:
        ops = tuple(o.strip() for o in args.ops.split(",") if o.strip())
        wanted = [a.strip() for a in args.axes.split(",")] if args.axes else None
        rows = [run_axis(a, ops, args.out) for a in AXES if wanted is None or any(a.name.startswith(w) for w in wanted)]
    text = table(rows)
    print(text)
    if args.write_docs:
        from benchmarks.docs_pages import DOCS, write_section

        write_section(DOCS / "figures" / "sweeps.md", "benchmarks/sweep_axes_cost.py", text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
