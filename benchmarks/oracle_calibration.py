"""Calibrate and score the oracle: every job of benchmarks/oracle_jobs.py checked as a user checks it.

    python benchmarks/oracle_calibration.py run --part calibration [--corpus family,ordinary] [--label NAME]
    python benchmarks/oracle_calibration.py report --part calibration [--label NAME]
    python benchmarks/oracle_calibration.py report --part evaluation --final [--write-docs]
    python benchmarks/oracle_calibration.py report --part evaluation-3 --final --write-docs   # its own section

`run` checks each job in a warm worker (engine.Runner: the real check, the user's default options, the fault of a
family job installed in Inductor), then judges the program's final outputs with `torch.testing.assert_close` and
with `torch._dynamo.utils.same` against the plain float64 run of the program (PyTorch's benchmark harness's
accuracy rule), in this process from the check's stored arrays. Results go to
$DIVERGENCE_HOME/oracle-calibration/LABEL/PART.jsonl, one line per job; a run resumes where it stopped.

`report` prints detection per family, false alarms per corpus, each test's closest benign margin to its
threshold and the check's cost. The evaluation part is reported only with `--final`: it is the frozen part of
the split (benchmarks/oracle_split.py) and is looked at once, after every threshold is set; `--write-docs`
then writes docs/oracle-figures.md from it and the calibration part.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(ROOT))

import oracle_jobs  # noqa: E402
from oracle_jobs import Job  # noqa: E402

ACCEPTED = ("match", "benign", "precision-cast", "rng", "eager-inaccurate")
# evaluation-2: benchmarks/oracle_fresh.py's programs, written before the rule change it scores (issue #31);
# evaluation-3: benchmarks/oracle_eval3.py's, written before the rule changes after evaluation-2
PARTS = ("calibration", "evaluation", "evaluation-2", "evaluation-3")
HELD_OUT = ("evaluation", "evaluation-2", "evaluation-3")
# evaluation-3 writes a section of its own (docs/figures/oracle.md): the earlier parts' runs stay as reported
EVALUATION_3_SECTION = "benchmarks/oracle_calibration.py --part evaluation-3"


def results_path(label: str, part: str) -> Path:
    home = Path(os.environ.get("DIVERGENCE_HOME") or Path.home() / ".divergence")
    return home / "oracle-calibration" / label / f"{part}.jsonl"


def load(label: str, part: str) -> list[dict[str, Any]]:
    path = results_path(label, part)
    if not path.exists():
        return []
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return list({r["job"]["id"]: r for r in rows}.values())  # a re-run job: its last line


# ---- run ------------------------------------------------------------------------------------------------------


def run(
    part: str,
    corpora: list[str],
    label: str,
    limit: int | None,
    select: str | None,
    expect: str | None = None,
    output: str | None = None,
    seed: int | None = None,
) -> None:
    from engine import CheckOptions, Runner

    todo = [
        j
        for j in oracle_jobs.jobs([part], corpora)
        if (select is None or select in j.name)
        and (expect is None or j.expect == expect)
        and (output is None or j.output == output)
        and (seed is None or j.seed == seed)
    ]
    done = {r["job"]["id"] for r in load(label, part)}
    todo = [j for j in todo if j.id not in done][:limit]
    path = results_path(label, part)
    path.parent.mkdir(parents=True, exist_ok=True)
    print(f"{len(todo)} job(s) to run ({len(done)} done) -> {path}", flush=True)
    runner = Runner()
    try:
        for i, job in enumerate(todo, 1):
            started = time.time()
            options = CheckOptions(seed=job.seed, inductor_config=dict(job.config), timeout_s=900.0)
            result = runner.check(oracle_jobs.source(job), options, filename=f"{job.corpus}-{job.id}.py")
            row = _record(job, result, time.time() - started)
            with path.open("a") as f:
                f.write(json.dumps(row) + "\n")
            print(
                f"[{i}/{len(todo)}] {row['seconds']:6.1f}s {row['verdict']:16} {job.expect:6} {job.corpus:9} "
                f"{job.output:5} seed {job.seed} {job.name[:80]}",
                flush=True,
            )
    finally:
        runner.close()


def _record(job: Job, result: Any, seconds: float) -> dict[str, Any]:
    from engine import records

    leaves = [
        {
            "name": leaf.name,
            "verdict": leaf.verdict.value,
            "dtype": leaf.dtype,
            "numel": leaf.numel,
            "mismatches": leaf.mismatches,
            "nearer": leaf.nearer.value if getattr(leaf, "nearer", None) else None,
            "tests": [
                {
                    "name": t.name,
                    "log10p": t.log10p,
                    "multiplicity": t.multiplicity,
                    "effect": t.effect,
                    "ratio": getattr(t, "ratio", None) if getattr(t, "ratio", 0.0) != float("inf") else "inf",
                }
                for t in getattr(leaf, "tests", ())
            ],
            "explanation": leaf.explanation[:400],
        }
        for leaf in result.leaves
    ]
    return {
        "job": job.to_json(),
        "verdict": result.verdict.value,
        "explanation": result.explanation[:600],
        "error": result.error.message[:400] if result.error is not None else None,
        "seconds": round(seconds, 2),
        "stage_seconds": dict(result.stage_seconds or {}),
        "leaves": leaves,
        "inside": records.to_json(result).get("inside"),
        "yardsticks": _yardsticks(job, result),
    }


def _yardsticks(job: Job, result: Any) -> dict[str, Any]:
    """assert_close and same() on the final outputs: eager's and compiled's from the check's stored arrays, the plain
    float64 run of the program made here (as PyTorch's harness makes it: the program and its inputs cast)."""
    import torch

    try:
        eager, compiled = _stored_outputs(result)
        if not eager:
            return {"assert_close": None, "same": None, "why": "no stored output"}
        reference = _plain_reference(job)
    except Exception as exc:  # a yardstick that cannot run is said, not guessed
        return {"assert_close": None, "same": None, "why": f"{type(exc).__name__}: {str(exc)[:200]}"}
    names = [n for n in eager if n in compiled]
    e = [eager[n] for n in names]
    c = [compiled[n] for n in names]
    flagged_close = False
    try:
        torch.testing.assert_close(c, e)
    except (AssertionError, TypeError, ValueError):
        flagged_close = True
    from torch._dynamo.utils import same

    r = [reference.get(n) for n in names]
    try:
        flagged_same = not same(e, c, fp64_ref=r if all(x is not None for x in r) else None)
    except Exception:  # same() raises on structures it cannot compare: that is a detection too
        flagged_same = True
    return {"assert_close": flagged_close, "same": flagged_same, "why": None}


def _stored_outputs(result: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    import torch

    eager, compiled = {}, {}
    for leaf in result.leaves:
        if not leaf.name.startswith("out") or leaf.arrays is None:
            continue
        arrays = result.load_arrays(leaf)
        if "eager" not in arrays:
            continue
        dtype = getattr(torch, leaf.dtype) if leaf.dtype else None
        for side, into in (("eager", eager), ("compiled", compiled)):
            t = torch.from_numpy(arrays[side].copy())
            into[leaf.name] = t.to(dtype) if dtype is not None and t.dtype != dtype else t
    return eager, compiled


def _plain_reference(job: Job) -> dict[str, Any]:
    import torch

    from engine.child import casting
    from engine.child.leaves import flatten, map_tensors
    from engine.child.seeding import seed_everything

    seed_everything(job.seed)
    fn, inputs, _ = oracle_jobs.program(job.corpus, job.name, "benign", job.output)  # nothing compiles here
    seed_everything(job.seed)
    args = tuple(inputs())
    seed_everything(job.seed)
    with torch.no_grad():
        out = casting.fp64_program(fn)(*map_tensors(args, casting.to_fp64_tensor))
    return {name: t for name, t in flatten(out) if isinstance(t, torch.Tensor)}


# ---- report ---------------------------------------------------------------------------------------------------


def detected(row: dict[str, Any]) -> bool:
    return row["verdict"] == "divergent"


def _count(rows: list[dict[str, Any]], test: Any) -> int:
    return sum(1 for r in rows if test(r))


def _frac(rows: list[dict[str, Any]] | None, test: Any) -> str:
    if rows is None:
        return "-"
    return f"{_count(rows, test)}/{len(rows)}"


def report(part: str, label: str, before: str | None = None) -> str:
    """The figures of one part, as Markdown; `before`: the label of the same jobs checked by the engine before."""
    import oracle_corpus

    from engine.judge import family

    rows = load(label, part)
    if not rows:
        return f"no results for {part} ({results_path(label, part)})\n"
    old = {r["job"]["id"]: r for r in load(before, part)} if before else {}
    out = [f"#### The {part} part: {len(rows)} checks\n"]
    faults = [r for r in rows if r["job"]["expect"] == "fault"]
    benign = [r for r in rows if r["job"]["expect"] == "benign"]

    def earlier(rs: list[dict[str, Any]]) -> list[dict[str, Any]] | None:
        found = [old[r["job"]["id"]] for r in rs if r["job"]["id"] in old]
        return found if found and len(found) == len(rs) else None

    if faults:
        out.append(
            "| family (programs x seeds) | ours, final output only | before | assert_close | same(fp64) "
            "| ours at the fault's own value | before |"
        )
        out.append("|---|---|---|---|---|---|---|")
        every_final: list[dict[str, Any]] = []
        every_own: list[dict[str, Any]] = []
        for fam, words in oracle_corpus.FAMILIES.items():
            final = [r for r in faults if r["job"]["family"] == fam and r["job"]["output"] == "final"]
            own = [r for r in faults if r["job"]["family"] == fam and r["job"]["output"] == "own"]
            if not final:
                continue
            every_final += final
            every_own += own
            out.append(_family_row(words, final, own, earlier))
        out.append(_family_row("**all one-step faults**", every_final, every_own, earlier))
        programs: dict[str, list[bool]] = defaultdict(list)
        for r in every_final:
            programs[r["job"]["name"]].append(detected(r))
        out.append(
            f"\nPrograms detected from their final output alone: {sum(all(v) for v in programs.values())} of "
            f"{len(programs)} on every seed ({len(oracle_jobs.FAULT_SEEDS)} seeds each), "
            f"{sum(any(v) for v in programs.values())} on at least one.\n"
        )
    if benign:
        out.append(
            "| benign programs (checks) | divergent (false alarms) | before | eager-inaccurate | precision-cast or rng "
            "| error | assert_close fails | same(fp64) fails |"
        )
        out.append("|---|---|---|---|---|---|---|---|")
        for corpus in oracle_jobs.CORPORA:
            rs = [r for r in benign if r["job"]["corpus"] == corpus]
            if not rs:
                continue
            out.append(
                f"| {corpus} ({len(rs)}) | **{_count(rs, detected)}** | {_frac(earlier(rs), detected)} | "
                f"{_count(rs, lambda r: r['verdict'] == 'eager-inaccurate')} | "
                f"{_count(rs, lambda r: r['verdict'] in ('precision-cast', 'rng'))} | "
                f"{_count(rs, lambda r: r['verdict'] == 'error')} | "
                f"{_count(rs, lambda r: bool(r['yardsticks']['assert_close']))} | "
                f"{_count(rs, lambda r: bool(r['yardsticks']['same']))} |"
            )
        alarms = [r for r in benign if detected(r)]
        out.append("\nFalse alarms: " + ("none." if not alarms else ""))
        out += [f"- {r['job']['name']} (seed {r['job']['seed']}): {r['explanation'][:300]}" for r in alarms]
        out.append("")
        out.append(_margins(benign, faults, family))
    out.append(_cost(rows))
    return "\n".join(out) + "\n"


def _family_row(words: str, final: list[dict[str, Any]], own: list[dict[str, Any]], earlier: Any) -> str:
    n = len(final)
    return (
        f"| {words} ({n}) | **{_count(final, detected)}/{n}** ({_pct(_count(final, detected), n)}) | "
        f"{_frac(earlier(final), detected)} | {_count(final, lambda r: bool(r['yardsticks']['assert_close']))}/{n} | "
        f"{_count(final, lambda r: bool(r['yardsticks']['same']))}/{n} | {_frac(own, detected)} | "
        f"{_frac(earlier(own), detected)} |"
    )


def _pct(a: int, b: int) -> str:
    return f"{100 * a / b:.0f}%" if b else "-"


def _margins(benign: list[dict[str, Any]], faults: list[dict[str, Any]], family: Any) -> str:
    """Each test's closest benign value to its threshold at the value's share of the budget (the values the program
    gives back share it alone here: the intermediates' half is not counted, which only makes the margins smaller),
    and the largest benign effect where the probability alone would fire."""
    from engine.judge.evidence import Test

    def per_leaf(rows: list[dict[str, Any]]) -> list[tuple[str, str, Test, float]]:
        found = []
        for r in rows:
            tested = [leaf for leaf in r["leaves"] if leaf["tests"]]
            if not tested:
                continue
            share = family.BUDGET / len(tested)
            for leaf in tested:
                for t in leaf["tests"]:
                    ratio = t.get("ratio")
                    ratio = math.inf if ratio == "inf" else float(ratio or 0.0)
                    test = Test(t["name"], float(t["log10p"]), t["multiplicity"], t["effect"], ratio)
                    found.append((r["job"]["name"], leaf["name"], test, test.log10p - family.threshold(test, share)))
        return found

    lines = [
        "| test | closest benign, effect held (log10 p above its threshold) | closest benign, any effect "
        "| largest benign effect where p alone fires | weakest fault that fired |",
        "|---|---|---|---|---|",
    ]
    ben, bad = per_leaf(benign), per_leaf([r for r in faults if detected(r)])
    for name in ("exactness", "distance", "direction", "column"):
        with_effect = [x for x in ben if x[2].name == name and x[2].effect]
        anything = [x for x in ben if x[2].name == name]
        p_fires = [x for x in ben if x[2].name == name and x[3] <= 0]
        fired = [x for x in bad if x[2].name == name and x[2].effect and x[3] <= 0]

        def cell(xs: list[tuple[str, str, Test, float]], pick: Any, key: Any = lambda x: x[3]) -> str:
            if not xs:
                return "-"
            x = pick(xs, key=key)
            return f"{x[3]:+.1f}, ratio {x[2].ratio:.2f} ({x[0][:48]}, {x[1]})"

        lines.append(
            f"| {name} | {cell(with_effect, min)} | {cell(anything, min)} | "
            f"{cell(p_fires, max, lambda x: x[2].ratio)} | {cell(fired, max)} |"
        )
    return "\n".join(lines) + "\n"


def _cost(rows: list[dict[str, Any]]) -> str:
    lines = ["| corpus | checks | median s | p90 s | max s |", "|---|---|---|---|---|"]
    for corpus in oracle_jobs.CORPORA:
        s = sorted(r["seconds"] for r in rows if r["job"]["corpus"] == corpus)
        if s:
            p90 = s[int(0.9 * (len(s) - 1))]
            lines.append(f"| {corpus} | {len(s)} | {statistics.median(s):.1f} | {p90:.1f} | {s[-1]:.1f} |")
    return (
        "\nSeconds per check (the check's wall time in a warm worker, the yardsticks not included):\n\n"
        + "\n".join(lines)
        + "\n"
    )


def docs_section(
    label: str,
    before: str | None,
    cost_file: Path | None,
    cost_engines: str,
    calibration: str | None = None,
    evaluation2: str | None = None,
) -> str:
    """docs/figures/oracle.md's generated section: the parts, the issue's false alarms, the cost. `calibration`: the
    label of the calibration part's run, where it is not `label`'s; `evaluation2`: the label of the evaluation-2
    part's run (benchmarks/oracle_fresh.py), if it ran."""
    import torch

    lines = [
        f"Measured by `python benchmarks/oracle_calibration.py run --part PART` on torch {torch.__version__} CPU (the "
        "project's 2-core machine, shared with other work) and written by `report --part evaluation --final "
        "--write-docs`. Each job is one check as a user runs it: the program, its default options, its seed; a fault "
        "is written into Inductor for the compiled run only (`benchmarks/inductor_faults.py`). *Before*: the same jobs "
        "checked by the engine before issue #31 (main at 85b1829).",
        "",
        *_evaluation2_section(evaluation2),
        "### Evaluation part (frozen by a hash before any threshold moved; reported once)",
        "",
        report("evaluation", label, before),
        "### Calibration part (what the thresholds and margins were read on)",
        "",
        f"Run `{calibration or label}`.",
        "",
        report("calibration", calibration or label, before),
        _issue_alarms(label, before),
    ]
    if cost_file is not None and cost_file.exists():
        base, new = cost_engines.split(",")
        lines += [
            "### What a check costs, before and after",
            "",
            "Each realistic program (oracle_corpus's benign programs and the transformers models) checked by both "
            "engines in turn, in a fresh warm worker each, the second check of each timed (`cost`):",
            "",
            cost_report(cost_file, base, new),
        ]
    return "\n".join(lines) + "\n"


def _evaluation2_section(label: str | None) -> list[str]:
    if label is None:
        return []
    return [
        "### Evaluation part 2 (fresh programs, frozen before the rule change it scores; reported once)",
        "",
        f"Run `{label}`: benchmarks/oracle_fresh.py's programs of the evaluation-2 part, checked once with the rule "
        "of the commit that landed after them; *before* is the first evaluation's engine where a column says so.",
        "",
        report("evaluation-2", label),
    ]


def evaluation3_section(label: str) -> str:
    """docs/figures/oracle.md's evaluation-3 section (its own markers: the earlier parts' sections stay)."""
    import torch

    return "\n".join(
        [
            "### Evaluation part 3 (programs frozen before the rule changes it scores; reported once)",
            "",
            f"Run `{label}` on torch {torch.__version__} CPU: benchmarks/oracle_eval3.py's programs of the "
            "evaluation-3 part (a salted hash of each group; committed before the rule changes after evaluation-2), "
            "checked once, as a user checks them, by `python benchmarks/oracle_calibration.py run --part "
            "evaluation-3` and written by `report --part evaluation-3 --final --write-docs`.",
            "",
            report("evaluation-3", label),
        ]
    )


def _issue_alarms(label: str, before: str | None) -> str:
    """The ordinary programs that were false alarms before, with today's verdict."""
    rows = {r["job"]["name"]: r for part in ("calibration", "evaluation") for r in load(label, part)}
    old = {r["job"]["name"]: r for part in ("calibration", "evaluation") for r in load(before, part)} if before else {}
    alarms = [name for name, r in old.items() if r["job"]["corpus"] == "ordinary" and detected(r)]
    if not alarms:
        return ""
    lines = [
        "### The ordinary programs that were false alarms before",
        "",
        "| program | before | now |",
        "|---|---|---|",
    ]
    lines += [f"| {n} | {old[n]['verdict']} | {rows[n]['verdict'] if n in rows else '-'} |" for n in sorted(alarms)]
    return "\n".join(lines) + "\n"


# ---- cost ---------------------------------------------------------------------------------------------------


def cost_one(job_id: str, parts: list[str], repeat: int) -> dict[str, Any]:
    """One job checked `repeat` times in one warm worker of this tree's engine: every check after the first (caches
    warm, as a user's second check of a program) is timed."""
    from engine import CheckOptions, Runner

    job = next(j for j in oracle_jobs.jobs(parts) if j.id == job_id)
    options = CheckOptions(seed=job.seed, inductor_config=dict(job.config), timeout_s=900.0)
    seconds = []
    runner = Runner()
    try:
        for _ in range(repeat):
            started = time.time()
            result = runner.check(oracle_jobs.source(job), options, filename=f"{job.corpus}-{job.id}.py")
            seconds.append(time.time() - started)
    finally:
        runner.close()
    return {"job": job.to_json(), "verdict": result.verdict.value, "seconds": seconds[1:] or seconds}


def cost(engines: dict[str, str], corpora: list[str], parts: list[str], repeat: int, out: Path) -> None:
    """Each job of the corpora checked by every engine in turn (alternating, so both see the same load), each in a
    fresh process of its own tree; the timed seconds go to `out`, one JSON line per (job, engine)."""
    import subprocess

    done = (
        {(r["job"]["id"], r["engine"]) for r in map(json.loads, out.read_text().splitlines())}
        if out.exists()
        else set()
    )
    for job in oracle_jobs.jobs(parts, corpora):
        for name, root in engines.items():
            if (job.id, name) in done:
                continue
            command = [sys.executable, str(Path(root) / "benchmarks" / "oracle_calibration.py"), "cost-one"]
            command += ["--job", job.id, "--parts", ",".join(parts), "--repeat", str(repeat)]
            env = {**os.environ, "PYTHONPATH": root}
            line = subprocess.run(command, env=env, capture_output=True, text=True, check=True).stdout.splitlines()[-1]
            row = {**json.loads(line), "engine": name}
            with out.open("a") as f:
                f.write(json.dumps(row) + "\n")
            print(f"{name:8} {statistics.median(row['seconds']):6.1f}s {row['verdict']:16} {job.name[:80]}", flush=True)


def cost_report(path: Path, base: str, new: str) -> str:
    """Median check seconds per engine over the jobs both ran, and the median of the per-job ratios."""
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    by = defaultdict(dict)
    for r in rows:
        by[r["job"]["id"]][r["engine"]] = (r["job"]["name"], statistics.median(r["seconds"]))
    both = [(v[base][0], v[base][1], v[new][1]) for v in by.values() if base in v and new in v]
    if not both:
        return "no job timed by both engines\n"
    lines = [f"| program | {base} s | {new} s | ratio |", "|---|---|---|---|"]
    lines += [f"| {n} | {a:.1f} | {b:.1f} | {b / a:.2f} |" for n, a, b in both]
    ratios = [b / a for _, a, b in both]
    base_median, new_median = statistics.median(a for _, a, _ in both), statistics.median(b for _, _, b in both)
    lines.append(
        f"| **median over {len(both)} programs** | {base_median:.1f} | {new_median:.1f} | "
        f"**{statistics.median(ratios):.2f}** (max {max(ratios):.2f}) |"
    )
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    r = sub.add_parser("run")
    r.add_argument("--part", choices=PARTS, required=True)
    r.add_argument("--corpus", default=",".join(oracle_jobs.CORPORA))
    r.add_argument("--label", default="current")
    r.add_argument("--limit", type=int)
    r.add_argument("--select", help="only the programs whose name contains this")
    r.add_argument("--expect", choices=("benign", "fault"), help="only benign programs, or only faults")
    r.add_argument("--output", choices=("final", "own"), help="only jobs that return this")
    r.add_argument("--seed", type=int, help="only jobs of this input seed")
    p = sub.add_parser("report")
    p.add_argument("--part", choices=PARTS, required=True)
    p.add_argument("--label", default="current")
    p.add_argument("--final", action="store_true", help="required for the evaluation part: looked at once")
    p.add_argument("--before", help="the label of the engine before, checked on the same jobs")
    p.add_argument("--cost", type=Path, help="the cost file of `cost`, with --cost-engines BASE,NEW")
    p.add_argument("--cost-engines", default="base,new")
    p.add_argument("--calibration-label", help="the calibration part's run, where it is not --label's")
    p.add_argument("--evaluation2-label", help="the evaluation-2 part's run (reported once), for --write-docs")
    p.add_argument("--write-docs", action="store_true", help="write docs/figures/oracle.md's generated section")
    p.add_argument("--margins", type=Path, help="write the calibration part's margins record here (JSON)")
    c = sub.add_parser("cost", help="time each engine's check of the same jobs, alternating")
    c.add_argument("--engines", required=True, help="name=tree,name=tree (a tree: a checkout of the repository)")
    c.add_argument("--corpus", default="realistic,zoo")
    c.add_argument("--parts", default="calibration,evaluation")
    c.add_argument("--repeat", type=int, default=2)
    c.add_argument("--out", type=Path, required=True)
    c.add_argument("--report", metavar="BASE,NEW", help="only print the table of BASE against NEW")
    one = sub.add_parser("cost-one")
    one.add_argument("--job", required=True)
    one.add_argument("--parts", default="calibration,evaluation")
    one.add_argument("--repeat", type=int, default=2)
    args = parser.parse_args(argv)
    if args.command == "cost-one":
        print(json.dumps(cost_one(args.job, args.parts.split(","), args.repeat)))
        return 0
    if args.command == "cost":
        if args.report:
            base, new = args.report.split(",")
            print(cost_report(args.out, base, new))
            return 0
        engines = dict(pair.split("=", 1) for pair in args.engines.split(","))
        cost(engines, args.corpus.split(","), args.parts.split(","), args.repeat, args.out)
        return 0
    if args.command == "run":
        if args.part in HELD_OUT and os.environ.get("ORACLE_EVALUATION") != "once":
            parser.error("an evaluation part runs once, after every threshold is set: set ORACLE_EVALUATION=once")
        run(args.part, args.corpus.split(","), args.label, args.limit, args.select, args.expect, args.output, args.seed)
        return 0
    if args.part in HELD_OUT and not args.final:
        parser.error("an evaluation part is reported once, with --final, after every threshold is set")
    if args.write_docs:
        if not args.final:
            parser.error("--write-docs writes the evaluation part's figures: it needs --final")
        from benchmarks.docs_pages import DOCS, write_section

        if args.part == "evaluation-3":
            text = evaluation3_section(args.label)
            write_section(DOCS / "figures" / "oracle.md", EVALUATION_3_SECTION, text)
            print(text)
            return 0
        text = docs_section(
            args.label, args.before, args.cost, args.cost_engines, args.calibration_label, args.evaluation2_label
        )
        write_section(DOCS / "figures" / "oracle.md", "benchmarks/oracle_calibration.py", text)
        print(text)
        return 0
    if args.margins is not None:
        write_margins(args.part, args.label, args.margins)
    print(report(args.part, args.label, args.before))
    return 0


def write_margins(part: str, label: str, path: Path) -> None:
    """benchmarks/oracle_margins.py's record of a calibration run (never of a held-out part)."""
    import oracle_margins
    import torch

    if part != "calibration":
        raise SystemExit("margins are read on the calibration part only")
    record = oracle_margins.record(load(label, part), label, torch.__version__)
    checks = record.pop("checks")
    lines = [json.dumps(c, separators=(",", ":")) for c in checks]  # a check per line: a new run diffs by check
    text = json.dumps(record)[:-1] + ', "checks": [\n' + ",\n".join(lines) + "\n]}"
    json.loads(text)
    path.write_text(text + "\n")
    print(f"wrote {path} ({len(text):,} characters)")


if __name__ == "__main__":
    sys.exit(main())
