"""What a pool is handed and what it hands back: checks (a job's spec and its run directory) and minimizations.

Both pools run the same two functions on an engine Runner: `check_on` in a Ray actor (the local pool
submits to its Runner directly, so it can keep several checks in flight) and `minimize_on` in either.
"""

from __future__ import annotations

import time
import traceback
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from app.sweep.jobs import JobOutcome, JobSpec, outcome_of
from engine.options import CheckOptions
from engine.runner import Runner


@dataclass(frozen=True)
class CheckTask:
    spec: JobSpec
    run_dir: Path  # on the sweep's machine


@dataclass(frozen=True)
class MinimizeTask:
    bug: str
    source: str
    options: CheckOptions
    filename: str
    out_dir: Path  # on the sweep's machine: SWEEP_DIR/minimized/<bug>
    budget_s: float | None = None
    shrinkray: bool = True
    ablation: bool = True  # the issue body's ablation over backends (about six more checks)
    wider: str | None = (
        None  # a zoo sample's program with the samples before it: minimized when the sample alone does not diverge
    )


@dataclass(frozen=True)
class MinimizeOutcome:
    status: str  # "done", or "failed" (nothing to minimize, a flaky divergence, or an error)
    message: str
    tokens_before: int | None = None
    tokens_after: int | None = None
    minimized: str | None = None
    repro: str | None = None
    report: str | None = None
    verified: bool = False


class Pool(Protocol):
    """Runs tasks and reports each as it finishes (in the calling thread); Ctrl-C propagates."""

    slots: int
    description: str

    def run_checks(
        self,
        tasks: Iterable[CheckTask],
        on_start: Callable[[CheckTask], None],
        on_done: Callable[[CheckTask, JobOutcome], None],
    ) -> None: ...

    def run_minimizations(
        self,
        tasks: Iterable[MinimizeTask],
        on_start: Callable[[MinimizeTask], None],
        on_done: Callable[[MinimizeTask, MinimizeOutcome], None],
    ) -> None: ...

    def close(self) -> None: ...


def check_on(runner: Runner, task: CheckTask, run_dir: Path, where: str) -> JobOutcome:
    started = time.monotonic()
    spec = task.spec
    result = runner.check(spec.source, spec.options, spec.program, run_dir)
    return outcome_of(result, task.run_dir, time.monotonic() - started, where)


def minimize_on(runner: Runner, task: MinimizeTask, work_dir: Path, checkpoint_root: Path | None) -> MinimizeOutcome:
    """Minimize one bug's program with the engine's minimizer, every candidate checked in `runner`."""
    from minimizer.interestingness import NotReproducible
    from minimizer.minimize import minimize

    def run(source: str) -> Any:
        return minimize(
            source,
            task.options,
            runner,
            work_dir,
            budget_s=task.budget_s,
            checkpoint_root=checkpoint_root,
            use_shrinkray=task.shrinkray,
            ablation=task.ablation,
            filename=Path(task.filename).name,
        )

    alone = ""
    try:
        try:
            result = run(task.source)
        except NotReproducible as exc:
            if task.wider is None:
                raise
            alone = f"the sample alone does not diverge ({str(exc)[:300]}); minimized with the samples before it. "
            result = run(task.wider)
    except NotReproducible as exc:
        return MinimizeOutcome("failed", alone + str(exc))
    except Exception as exc:  # a minimizer bug must not lose the sweep; the row says what happened
        return MinimizeOutcome("failed", f"the minimizer failed: {exc!r}\n{traceback.format_exc(limit=6)}")
    before, after = result.initial.tokens, result.final.tokens
    verdict = "repro verified in a fresh process" if result.repro_verified else "repro NOT verified in a fresh process"
    if not result.confirmed:
        verdict += "; FLAKY: the final candidate did not reproduce when re-checked"
    message = (
        f"{alone}{before} -> {after} tokens ({result.initial.lines} -> {result.final.lines} lines) in"
        f" {result.elapsed_s:.0f} s, {result.oracle_calls} checks; {verdict}"
    )
    return MinimizeOutcome(
        "done", message, before, after, result.minimized, result.repro, result.report, result.repro_verified
    )


def write_minimization(task: MinimizeTask, outcome: MinimizeOutcome) -> Path | None:
    """Keep what a minimization produced in its bug's folder; the repro's path, when there is one."""
    task.out_dir.mkdir(parents=True, exist_ok=True)
    (task.out_dir / "original.py").write_text(task.source)
    (task.out_dir / "outcome.txt").write_text(f"{outcome.status}: {outcome.message}\n")
    if outcome.minimized is not None:
        (task.out_dir / "minimized.py").write_text(outcome.minimized)
    if outcome.report is not None:
        (task.out_dir / "issue.md").write_text(outcome.report)
    if outcome.repro is None:
        return None
    repro = task.out_dir / "repro.py"
    repro.write_text(outcome.repro)
    return repro
