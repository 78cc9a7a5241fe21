"""What a check costs, before and after: the same realistic programs checked by two engines, back to back.

    python benchmarks/check_cost.py --engines base=/path/to/old/tree,new=. --rounds 2 --repeat 3 --out cost.jsonl
    python benchmarks/check_cost.py --out cost.jsonl --report base,new

A tree is a checkout of this repository (the engine under test is the one its PYTHONPATH imports). Each round runs
every program once per engine, the engines' order alternating from round to round, so that both see the same load;
each run is a fresh process with its own warm worker, as `divergence check` and the app have: its first check
(worker start included) is recorded apart, and the checks after it (a user's re-check, every check of a sweep) are
the timed ones. The programs are the same text for both engines (this tree's benchmarks/oracle_jobs.py), the
realistic bf16/fp16 programs of the oracle's calibration part. The machine's load average is recorded with each
run, since timings on shared cores are only comparable under the same load.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
# the realistic low-precision programs of the calibration part (the oracle's cost target is on realistic programs)
PROGRAMS = (
    "c1b2a97fe052fae1",  # transformer block (bf16, 4x128x256)
    "338b25c4d46154f6",  # transformer block (fp16, 4x128x256)
    "6f58d505534e5497",  # conv net (bf16, 8x3x64x64)
    "234502710ff9b454",  # sum, mean, var, softmax, layer_norm (bf16, 256x4096)
    "2fb4e35f645419a8",  # sum, mean, var, softmax, layer_norm (fp16, 256x4096)
)


def one(job_id: str, repeat: int) -> dict[str, Any]:
    """Check one program `repeat` times in one fresh worker of the engine PYTHONPATH imports."""
    sys.path.insert(0, str(HERE))
    import oracle_jobs

    from engine import CheckOptions, Runner

    job = next(j for j in oracle_jobs.jobs(["calibration"]) if j.id == job_id)
    options = CheckOptions(seed=job.seed, inductor_config=dict(job.config), timeout_s=900.0)
    seconds, verdicts = [], []
    with Runner() as runner:
        for _ in range(repeat):
            started = time.monotonic()
            result = runner.check(oracle_jobs.source(job), options, filename=f"{job.corpus}-{job.id}.py")
            seconds.append(time.monotonic() - started)
            verdicts.append(result.verdict.value)
    return {"job": job_id, "name": job.name, "first": seconds[0], "seconds": seconds[1:], "verdicts": verdicts}


def run(engines: dict[str, str], programs: list[str], rounds: int, repeat: int, out: Path) -> None:
    for round_ in range(rounds):
        order = list(engines.items()) if round_ % 2 == 0 else list(reversed(engines.items()))
        for job_id in programs:
            for name, root in order:
                load = os.getloadavg()[0]
                command = [sys.executable, str(HERE / "check_cost.py"), "one", job_id, str(repeat)]
                env = {**os.environ, "PYTHONPATH": str(Path(root).resolve())}
                done = subprocess.run(command, env=env, capture_output=True, text=True, check=True)
                row = {**json.loads(done.stdout.splitlines()[-1]), "engine": name, "round": round_}
                row["load"] = [load, os.getloadavg()[0]]
                with out.open("a") as f:
                    f.write(json.dumps(row) + "\n")
                timed = " ".join(f"{s:.1f}" for s in row["seconds"])
                print(
                    f"round {round_} {name:5} first {row['first']:5.1f}s then {timed:12} load {load:4.1f} "
                    f"{row['verdicts'][-1]:10} {row['name']}",
                    flush=True,
                )


def report(out: Path, base: str, new: str) -> str:
    """Per program: the median of every timed re-check and of the first checks, per engine; then the median and the
    worst of the per-program ratios."""
    rows = [json.loads(line) for line in out.read_text().splitlines() if line.strip()]
    by: dict[str, dict[str, dict[str, list[float]]]] = {}
    names: dict[str, str] = {}
    loads: list[float] = []
    for r in rows:
        names[r["job"]] = r["name"]
        slot = by.setdefault(r["job"], {}).setdefault(r["engine"], {"seconds": [], "first": []})
        slot["seconds"] += r["seconds"]
        slot["first"].append(r["first"])
        loads += r["load"]
    lines = [
        f"| program | {base} re-check s | {new} re-check s | ratio | {base} first s | {new} first s | ratio | checks |",
        "|---|---|---|---|---|---|---|---|",
    ]
    again, first = [], []
    for job, engines in by.items():
        if base not in engines or new not in engines:
            continue
        a, b = (statistics.median(engines[e]["seconds"]) for e in (base, new))
        fa, fb = (statistics.median(engines[e]["first"]) for e in (base, new))
        again.append(b / a)
        first.append(fb / fa)
        n = f"{len(engines[base]['seconds'])}+{len(engines[new]['seconds'])}"
        lines.append(f"| {names[job]} | {a:.1f} | {b:.1f} | {b / a:.2f} | {fa:.1f} | {fb:.1f} | {fb / fa:.2f} | {n} |")
    if not again:
        return "no program timed by both engines\n"
    lines.append(
        f"| **{len(again)} programs: median (worst)** | | | **{statistics.median(again):.2f}** ({max(again):.2f}) "
        f"| | | **{statistics.median(first):.2f}** ({max(first):.2f}) | |"
    )
    lines.append(f"\nload average (1 min) over the runs: {min(loads):.1f}-{max(loads):.1f}")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    if argv is None:
        argv = sys.argv[1:]
    if argv[:1] == ["one"]:  # the child: one program in one engine
        print(json.dumps(one(argv[1], int(argv[2]))))
        return 0
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--engines", help="name=tree,name=tree (base first)")
    parser.add_argument("--programs", default=",".join(PROGRAMS), help="calibration job ids")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--repeat", type=int, default=3, help="checks per run; all but the first are timed")
    parser.add_argument("--out", type=Path, required=True, help="JSON lines, appended to")
    parser.add_argument("--report", metavar="BASE,NEW", help="only print the table of BASE against NEW")
    args = parser.parse_args(argv)
    if args.report:
        base, new = args.report.split(",")
        print(report(args.out, base, new))
        return 0
    if not args.engines:
        parser.error("--engines is required unless --report")
    engines = dict(pair.split("=", 1) for pair in args.engines.split(","))
    run(engines, args.programs.split(","), args.rounds, args.repeat, args.out)
    print(report(args.out, *list(engines)[:2]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
