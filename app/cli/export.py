"""`divergence export RUN`: what PyTorch's PT2 bug template asks for, gathered in one folder.

The folder holds a tlparse report of the compiled run (from a TORCH_TRACE log; the run is repeated with
tracing when it was made without), a collect_env-style environment, the program as checked (`snippet.py`),
its self-checking `repro.py` (the minimizer's harness: exits 1 while the divergence is there), and
`issue.md`, written by the minimizer's one issue-body writer (`minimizer.report.render`).
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from app.cli.report import table
from engine.live import PAYLOAD_FILE
from engine.options import CheckOptions
from engine.result import TRACE_DIR, CheckResult
from engine.runner import Runner
from minimizer.interestingness import Checked, signature_of
from minimizer.report import render
from minimizer.repro import ReproError, emit


@dataclass(frozen=True)
class Export:
    folder: Path
    issue: Path
    tlparse_index: Path | None
    notes: tuple[str, ...]


def option_flags(options: CheckOptions) -> list[str]:
    """The `divergence check` flags that reproduce these options (defaults left out)."""
    default = CheckOptions()
    flags: list[str] = []
    for name in ("device", "backend", "mode", "dtype"):
        value = getattr(options, name)
        if value is not None:
            flags += [f"--{name}", str(value)]
    for name in ("dynamic", "fullgraph"):
        value = getattr(options, name)
        if value is not None:
            flags.append(f"--{name}" if value else f"--no-{name}")
    for key, value in options.inductor_config.items():
        flags += ["--config", f"{key}={value!r}"]
    for name, flag in (("backward", "--backward"), ("strict", "--strict")):
        if getattr(options, name):
            flags.append(flag)
    if options.seeds != default.seeds:
        flags += ["--seeds", str(options.seeds)]
    if options.seed != default.seed:
        flags += ["--seed", str(options.seed)]
    return flags


def _tlparse() -> str | None:
    beside = Path(sys.executable).parent / "tlparse"
    return str(beside) if beside.exists() else shutil.which("tlparse")


def export_run(run_dir: Path, out: Path, runner: Runner | None = None) -> Export:
    result = CheckResult.load(run_dir)
    out.mkdir(parents=True, exist_ok=True)
    notes: list[str] = []
    for name in ("snippet.py", PAYLOAD_FILE):
        if (run_dir / name).exists():
            shutil.copyfile(run_dir / name, out / name)
    program = (run_dir / "snippet.py").read_text() if (run_dir / "snippet.py").exists() else ""
    try:
        (out / "repro.py").write_text(emit(program, result.options, seed=result.options.seed, result=result))
    except ReproError as exc:
        notes.append(f"no self-checking repro.py: {exc}")

    traced = run_dir
    if not any((run_dir / TRACE_DIR).glob("*.log")):
        traced = out / "traced-run"
        if (run_dir / PAYLOAD_FILE).exists():
            traced.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(run_dir / PAYLOAD_FILE, traced / PAYLOAD_FILE)
        own = runner is None
        runner = runner or Runner()
        try:
            rerun = runner.check(
                (run_dir / "snippet.py").read_text(),
                result.options.replace(trace=True),
                str(traced / "snippet.py"),
                traced,
            )
        finally:
            if own:
                runner.close()
        notes.append(f"re-ran the check with TORCH_TRACE (verdict then: {rerun.verdict.value})")

    index = _run_tlparse(traced / TRACE_DIR, out / "tlparse", notes)
    env_text = _collect_env(notes)
    (out / "collect_env.txt").write_text(env_text)
    issue = out / "issue.md"
    issue.write_text(_issue_markdown(result, program, option_flags(result.options), index, env_text, notes))
    return Export(out, issue, index, tuple(notes))


def _run_tlparse(trace_dir: Path, target: Path, notes: list[str]) -> Path | None:
    logs = sorted(trace_dir.glob("*.log"), key=lambda p: p.stat().st_mtime)
    exe = _tlparse()
    if not logs:
        notes.append("no TORCH_TRACE log was written (the program compiled nothing?)")
        return None
    if exe is None:
        notes.append("tlparse is not installed (pip install tlparse); the raw trace log is in " + str(logs[-1]))
        return None
    done = subprocess.run(
        [exe, str(logs[-1]), "-o", str(target), "--no-browser", "--overwrite"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    if done.returncode != 0 or not (target / "index.html").exists():
        notes.append(f"tlparse failed ({done.returncode}): {(done.stderr or done.stdout)[-300:]}")
        return None
    return target / "index.html"


def _collect_env(notes: list[str]) -> str:
    try:
        done = subprocess.run(
            [sys.executable, "-m", "torch.utils.collect_env"], capture_output=True, text=True, timeout=120
        )
        return done.stdout or done.stderr
    except (OSError, subprocess.TimeoutExpired) as exc:
        notes.append(f"collect_env failed: {exc}")
        return ""


def _issue_markdown(
    result: CheckResult, program: str, flags: list[str], index: Path | None, env_text: str, notes: list[str]
) -> str:
    command = " ".join(["divergence", "check", "snippet.py", *flags])
    tlparse_line = (
        f"tlparse report: `{index.parent.name}/index.html` (attach the folder)"
        if index
        else "tlparse report: not available (" + "; ".join(notes) + ")"
    )
    leaves = table(result.leaves) if result.leaves else "(no leaves)"
    logs = "\n".join(
        [
            f"The check (`{command}`): **{result.verdict.value}**. {result.explanation}",
            "",
            "```",
            leaves,
            "```",
            "",
            "`repro.py` (attached) checks it on its own: `python repro.py` exits 1 while compiled differs from eager.",
            "",
            tlparse_line,
        ]
    )
    return render(program, signature_of(result), Checked(result), (), False, logs=logs, environment=env_text)
