"""Minimizer figures on the realistic corpus: ours vs shrinkray alone vs PyTorch's accuracy minifier.

Each program of benchmarks/minimize_corpus/ (80-150 line models, each burying a different real upstream
bug, with its known core and that core's op in corpus.toml) is minimized by each tool with the same
wall-clock budget (default 300 s per program and tool). Printed per program and tool: the final
program's lines / tokens, seconds, oracle calls, whether its repro verified in a fresh process, and
whether it is the **same bug** (for ours and shrinkray: the minimized program's first diverging
intermediate is still the core's op, or, where the core has none, the same localization status and
the core's ops still called; for the accuracy minifier: the core's ATen ops still in its minified graph).

- ours: `minimizer.minimize` (graph path included, no shrinkray polish), budget minus a margin for the
  final re-check and repro run; the budget is the reduction's, as `divergence minimize --budget` promises
  (establishing the signature comes on top), so the seconds printed are the whole run's;
- shrinkray alone: shrinkray's CLI asking the same oracle (signature, mechanism switches, eval-state
  guard) over a socket, with the same static pre-filter and the same budget after establishing; its
  result is then verified like ours;
- the accuracy minifier: `TORCHDYNAMO_REPRO_AFTER=aot TORCHDYNAMO_REPRO_LEVEL=4` on a driver that
  compiles the program's `fn` on its inputs (a cold Inductor cache: a cached graph is not re-checked),
  then `minifier_launcher.py minify`; its repro.py is verified by running it (it raises AccuracyError
  while the bug is present). Its size is the program part of repro.py: `class Repro` to `mod = Repro()`.

    flock /tmp/cpu-heavy.lock python benchmarks/minimize_bench.py [--budget 300] [--programs a,b] \\
        [--tools ours,shrinkray,minifier]

Run it under the CPU lock: each tool gets the machine alone, one program at a time. Each tool has its own
warm worker and Inductor cache (under --cache-root), so neither profits from the other's compiles.
shrinkray is found through $DIVERGENCE_SHRINKRAY or `divergence install-shrinkray`'s venv.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import tomllib

ROOT = Path(__file__).resolve().parent.parent
CORPUS = Path(__file__).resolve().parent / "minimize_corpus"
sys.path.insert(0, str(ROOT))

from engine import CheckOptions, Runner  # noqa: E402
from minimizer.interestingness import Checked, DivergenceOracle  # noqa: E402
from minimizer.mechanism import read_graphs  # noqa: E402
from minimizer.minimize import minimize, shrinkray_decider  # noqa: E402
from minimizer.repro import emit, verify  # noqa: E402
from minimizer.shrinkray import find_shrinkray, run_shrinkray  # noqa: E402
from minimizer.size import measure  # noqa: E402
from minimizer.syntax import canonical, keeps_style, statically_plausible  # noqa: E402

TOOLS = ("ours", "shrinkray", "minifier")
OURS_MARGIN_S = 45.0  # our final re-check, repro run and report come after the reduction's deadline

DRIVER = '''"""Compile a corpus program's fn on its inputs, so that TORCHDYNAMO_REPRO_AFTER=aot can check and dump it."""
import runpy, sys
import torch
ns = runpy.run_path(sys.argv[1], run_name="__corpus__")
torch.manual_seed(0)
made = ns["inputs"]() if callable(ns["inputs"]) else ns["inputs"]
torch.compile(ns["fn"])(*made)
print("the accuracy check passed")
'''  # noqa: E501  (the text as it runs)


@dataclass(frozen=True)
class Row:
    program: str
    tool: str
    lines: int | None  # of the final program (our snippet; the minifier's Repro program part)
    tokens: int | None
    seconds: float
    calls: int | None  # oracle calls (the minifier: its queries)
    verified: bool
    same_bug: bool
    note: str = ""


def corpus() -> dict[str, dict[str, object]]:
    return tomllib.loads((CORPUS / "corpus.toml").read_text())


def same_bug(meta: dict[str, object], run: Checked | None, confirmed: bool) -> tuple[bool, str]:
    """Does the re-checked program still start at the core's op (or, where the core has none, localize the same and
    call its ops)?"""
    if run is None:
        return False, "not re-checked"
    report = run.intermediates
    ops = set(read_graphs(run.result.code.fx_graphs).ops)
    missing = [o for o in meta["ops"] if o not in ops]  # type: ignore[union-attr]
    if meta["first_op"]:
        found = report.first.op if report is not None and report.first is not None else None
        return confirmed and found == meta["first_op"], (
            f"starts at {found}" if found else f"first diverging intermediate: {report.status if report else 'none'}"
        )
    status = report.status if report is not None else "none"
    return (
        confirmed and status == "none-diverges" and not missing,
        f"{status}; missing ops {missing}" if missing else status,
    )


def verified(program: str, options: CheckOptions, runner: Runner, work: Path) -> bool:
    try:
        script = emit(program, options)
    except Exception:
        return False
    return verify(script, runner.python, 300, work, inductor_cache=runner.cache_dir).reproduces


def run_ours(
    name: str, source: str, meta: dict[str, object], runner: Runner, work: Path, budget: float, timeout: float = 120
) -> Row:
    result = minimize(
        source,
        CheckOptions(device="cpu", timeout_s=timeout),
        runner,
        work,
        budget_s=max(30.0, budget - OURS_MARGIN_S),
        use_shrinkray=False,
        ablation=False,
        filename=f"{name}.py",
    )
    same, why = same_bug(meta, result.final_check, result.confirmed)
    refused = ", ".join(f"{n} {o}" for o, n in result.refused)
    stages = dict(result.stage_seconds)
    spent = f"candidates' checks {sum(stages.values()):.0f} s, compiling {stages.get('compiling', 0):.0f} s"
    note = f"{why}; {result.guard_calls} start guards ({result.guard_seconds:.0f} s); {spent}; refused: {refused}" + (
        "; fell back" if result.fell_back else ""
    )
    return Row(
        name,
        "ours",
        result.final.lines,
        result.final.tokens,
        result.elapsed_s,
        result.oracle_calls,
        result.repro_verified and result.confirmed,
        same,
        note,
    )


def run_shrinkray_alone(
    executable: str, name: str, source: str, meta: dict[str, object], runner: Runner, work: Path, budget: float
) -> Row:
    oracle = DivergenceOracle(runner, CheckOptions(device="cpu", timeout_s=120), work, filename=f"{name}.py")
    started = time.monotonic()
    oracle.establish(source)
    decide = shrinkray_decider(oracle, keeps_style(canonical(source)))
    run = run_shrinkray(
        executable, canonical(source), decide, budget_s=max(1.0, budget - OURS_MARGIN_S)
    )  # as ours: after establishing
    seconds = time.monotonic() - started
    calls = oracle.calls
    program = run.result if statically_plausible(run.result) else canonical(source)
    size = measure(program)
    run = oracle.final_check(program)
    same, why = same_bug(meta, run, oracle.confirmed(run))
    ok = verified(program, oracle.candidate_options, runner, work / "verify")
    return Row(name, "shrinkray", size.lines, size.tokens, seconds, calls, ok, same, why)


def _program_part(repro: str) -> str:
    """The minifier's repro.py from `class Repro` to `mod = Repro()`: its counterpart of our snippet."""
    start = repro.find("class Repro")
    end = repro.find("mod = Repro()")
    return "import torch\n" + repro[start : end + len("mod = Repro()")] + "\n" if start >= 0 and end >= 0 else ""


def run_minifier(name: str, meta: dict[str, object], work: Path, budget: float, python: str) -> Row:
    work.mkdir(parents=True, exist_ok=True)
    (work / "driver.py").write_text(DRIVER)
    env = {
        **os.environ,
        "TORCHDYNAMO_REPRO_AFTER": "aot",
        "TORCHDYNAMO_REPRO_LEVEL": "4",
        "TORCHINDUCTOR_CACHE_DIR": str(work / "cache"),
    }
    started = time.monotonic()
    try:
        dump = subprocess.run(
            [python, "driver.py", str(CORPUS / f"{name}.py")],
            cwd=work,
            env=env,
            capture_output=True,
            text=True,
            timeout=budget,
        )
    except subprocess.TimeoutExpired:
        return Row(name, "minifier", None, None, budget, None, False, False, "the dump run timed out")
    launchers = sorted(work.glob("torch_compile_debug/run_*/minifier/minifier_launcher.py"))
    if not launchers:
        why = (
            "no accuracy failure detected"
            if "accuracy check passed" in dump.stdout
            else f"no launcher written: {(dump.stdout + dump.stderr).strip().splitlines()[-1:]}"
        )
        return Row(name, "minifier", None, None, time.monotonic() - started, None, False, False, why)
    launcher = launchers[0]
    left = max(1.0, budget - (time.monotonic() - started))
    try:
        done = subprocess.run(
            [python, launcher.name, "minify"],
            cwd=launcher.parent,
            env={**os.environ, "TORCHINDUCTOR_CACHE_DIR": str(work / "cache")},
            capture_output=True,
            text=True,
            timeout=left,
        )
        log, timed_out = done.stdout + done.stderr, False
    except subprocess.TimeoutExpired as exc:
        log, timed_out = str(exc.stdout or "") + str(exc.stderr or ""), True
    seconds = time.monotonic() - started
    queries = re.findall(r"Made (\d+) queries", log)
    repro_path = launcher.parent / "repro.py"
    if not repro_path.exists():  # cut short: its last checkpoint is the best it had
        checkpoints = sorted(launcher.parent.glob("**/checkpoints/*.py"), key=lambda p: p.stat().st_mtime)
        if not checkpoints:
            return Row(
                name,
                "minifier",
                None,
                None,
                seconds,
                None,
                False,
                False,
                "timed out before its first checkpoint" if timed_out else "no repro.py",
            )
        shutil.copy(checkpoints[-1], repro_path)
    repro = repro_path.read_text()
    program = _program_part(repro)
    size = measure(program) if program else None
    same = all(op in repro for op in meta["aten_ops"])  # type: ignore[union-attr]
    # the accuracy check of the minified graph: run_repro raises AccuracyError while the bug is present
    script = repro.replace("command='minify'", "command='run'")
    (launcher.parent / "check_repro.py").write_text(script)
    try:
        check = subprocess.run(
            [python, "check_repro.py"],
            cwd=launcher.parent,
            env={**os.environ, "TORCHINDUCTOR_CACHE_DIR": str(work / "cache-check")},
            capture_output=True,
            text=True,
            timeout=300,
        )
        ok = check.returncode != 0 and "AccuracyError" in check.stdout + check.stderr
    except subprocess.TimeoutExpired:
        ok = False
    nodes = len(re.findall(r"torch\.ops\.", program))
    note = f"{nodes} ATen nodes" + ("; cut short at the budget (last checkpoint)" if timed_out else "")
    return Row(
        name,
        "minifier",
        size.lines if size else None,
        size.tokens if size else None,
        seconds,
        int(queries[-1]) if queries else None,
        ok,
        same,
        note,
    )


def fmt(row: Row) -> str:
    size = f"{row.lines:3d} / {row.tokens:4d}" if row.lines is not None and row.tokens is not None else "    -     "
    calls = f"{row.calls:5d}" if row.calls is not None else "    -"
    return (
        f"{row.program:<24} {row.tool:<10} {size}  {row.seconds:6.0f}  {calls}  {'yes' if row.verified else 'NO ':<4}"
        f" {'yes' if row.same_bug else 'NO ':<4} {row.note}"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--budget", type=float, default=300.0, help="seconds per program and tool")
    parser.add_argument("--programs", default=",".join(corpus()))
    parser.add_argument("--tools", default=",".join(TOOLS))
    parser.add_argument(
        "--cache-root",
        type=Path,
        default=ROOT / ".cache" / "bench",
        help="one Inductor cache per tool below it (the minifier's is always cold)",
    )
    parser.add_argument("--json", type=Path, help="also write every row as JSON")
    parser.add_argument(
        "--timeout", type=float, default=120.0, help="ours: one check's wall-time limit (raise it on a loaded machine)"
    )
    args = parser.parse_args()
    meta = corpus()
    tools = args.tools.split(",")
    shrinkray = find_shrinkray() if "shrinkray" in tools else None
    if "shrinkray" in tools and shrinkray is None:
        print("shrinkray not found (`divergence install-shrinkray`): skipped")
        tools.remove("shrinkray")
    print(f"budget {args.budget:.0f} s per program and tool; size = lines / tokens of the final program")
    header = f"{'program':<24} {'tool':<10} {'size':<10}  {'s':>6}  {'calls':>5}  {'ver.':<4} {'same':<4} note"
    print(header + "\n" + "-" * len(header), flush=True)
    rows: list[Row] = []
    with tempfile.TemporaryDirectory() as tmp:
        for name in args.programs.split(","):
            source = (CORPUS / f"{name}.py").read_text()
            initial = measure(source)
            print(f"{name:<24} {'initial':<10} {initial.lines:3d} / {initial.tokens:4d}", flush=True)
            for tool in tools:
                work = Path(tmp) / name / tool
                if tool == "minifier":
                    row = run_minifier(name, meta[name], work, args.budget, sys.executable)
                else:
                    with Runner(cache_dir=args.cache_root / tool) as runner:
                        row = (
                            run_ours(name, source, meta[name], runner, work, args.budget, args.timeout)
                            if tool == "ours"
                            else run_shrinkray_alone(
                                shrinkray or "", name, source, meta[name], runner, work, args.budget
                            )
                        )
                rows.append(row)
                print(fmt(row), flush=True)
    for tool in tools:
        mine = [r for r in rows if r.tool == tool]
        lines = [r.lines for r in mine if r.lines is not None]
        print(
            f"{tool}: median {statistics.median(lines) if lines else float('nan'):.1f} lines,"
            f" {sum(r.verified for r in mine)}/{len(mine)} verified, {sum(r.same_bug for r in mine)}/{len(mine)} same"
            f" bug, median {statistics.median([r.seconds for r in mine]) if mine else float('nan'):.0f} s"
        )
    if args.json is not None:
        args.json.write_text(json.dumps([asdict(r) for r in rows], indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
