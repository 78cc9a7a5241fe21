"""The whole minimization: establish the signature, reduce, polish with shrinkray, confirm, emit repro and report.

The pipeline's guarantees: the signature is established from two runs of the original (a flaky
divergence is refused, not minimized); the final candidate is re-checked once more (a flip is reported
as flakiness); the repro is offered as verified only when a fresh interpreter running it exits non-zero.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from engine import CheckOptions, Runner
from minimizer.graph import graph_rewrite
from minimizer.oracle import DivergenceOracle, Signature
from minimizer.passes import SOURCE_PASSES
from minimizer.reducer import Problem, ReduceProgress, Reducer, ReduceStats, ReductionPass, digest, load_checkpoint
from minimizer.repro import ReproError, emit, verify
from minimizer.size import Size, measure, sort_key
from minimizer.syntax import canonical, statically_plausible


@dataclass(frozen=True)
class MinimizeResult:
    original: str
    minimized: str
    signature: Signature
    initial: Size
    final: Size
    stats: ReduceStats
    oracle_calls: int
    elapsed_s: float
    confirmed: bool  # the final candidate reproduced again when re-checked
    repro: str | None
    repro_verified: bool
    repro_output: str
    report: str | None
    notes: tuple[str, ...]


def minimize(
    source: str,
    options: CheckOptions,
    runner: Runner,
    work_dir: Path,
    *,
    budget_s: float | None = None,
    checkpoint_root: Path | None = None,
    use_graph: bool = True,
    use_shrinkray: bool = True,
    ablation: bool = True,
    python: str | None = None,
    filename: str = "snippet.py",
    on_progress: Callable[[ReduceProgress], None] | None = None,
    on_note: Callable[[str], None] | None = None,
) -> MinimizeResult:
    started = time.monotonic()
    deadline = started + budget_s if budget_s is not None else None
    notes: list[str] = []

    def note(text: str) -> None:
        notes.append(text)
        if on_note is not None:
            on_note(text)

    oracle = DivergenceOracle(runner, options, work_dir / "runs", filename=filename)
    signature = oracle.establish(source)
    note(f"target: {signature.describe()}")
    start = canonical(source)

    checkpoint = checkpoint_root / digest(start) if checkpoint_root is not None else None
    rejected: list[str] = []
    resumed: str | None = None
    if checkpoint is not None:
        best, rejected = load_checkpoint(checkpoint)
        if best is not None and sort_key(best) < sort_key(start) and oracle.test_many([best])[0]:
            resumed = best
            note(f"resuming from the checkpoint in {checkpoint} ({measure(best).tokens} tokens)")
    problem = Problem(resumed or start, oracle, on_progress, deadline, checkpoint, rejected)

    passes: list[ReductionPass] = ([graph_rewrite(oracle.fx_graphs)] if use_graph else []) + list(SOURCE_PASSES)
    stats = Reducer(passes).run(problem)

    if use_shrinkray and not stats.budget_exhausted:
        _polish_with_shrinkray(problem, oracle, deadline, note)
        if deadline is None or time.monotonic() < deadline:
            stats = _merge(stats, Reducer(passes).run(problem))

    final = problem.current
    confirmed = oracle.confirm(final) if final != start else True
    if not confirmed:
        note("FLAKY: the final candidate did not reproduce when re-checked; treat the result with suspicion")

    repro, verified, output = None, False, ""
    try:
        repro = emit(final, options, seed=options.seed)
        check = verify(repro, python or runner.python, timeout_s=options.timeout_s, work_dir=work_dir / "verify")
        verified, output = check.reproduces, check.output
        if not verified:
            note(f"the generated repro did not reproduce in a fresh process (exit {check.exit_code}); not offered as verified")
    except ReproError as exc:
        note(f"no generated harness: {exc}")
        repro = final

    report = None
    if ablation:
        from minimizer.report import locate, render

        assert oracle.baseline is not None  # establish() set it
        rows, loc = locate(runner, final, options, signature, work_dir / "ablation")
        report = render(final, repro or final, output, signature, oracle.baseline, rows, loc)

    return MinimizeResult(
        original=source,
        minimized=final,
        signature=signature,
        initial=measure(source),
        final=measure(final),
        stats=problem.stats(stats.budget_exhausted),
        oracle_calls=oracle.calls,
        elapsed_s=time.monotonic() - started,
        confirmed=confirmed,
        repro=repro,
        repro_verified=verified,
        repro_output=output,
        report=report,
        notes=tuple(notes),
    )


def _merge(a: ReduceStats, b: ReduceStats) -> ReduceStats:
    return b if b.budget_exhausted else a


def shrinkray_decider(oracle: DivergenceOracle) -> Callable[[str], bool]:
    """A thread-safe, cached interestingness answer for shrinkray's candidates."""
    cache: dict[str, bool] = {}
    lock = threading.Lock()

    def decide(candidate: str) -> bool:
        key = digest(canonical(candidate))
        with lock:
            if key in cache:
                return cache[key]
        ok = statically_plausible(candidate) and oracle.test_many([candidate])[0]
        with lock:
            cache[key] = ok
        return ok

    return decide


def _polish_with_shrinkray(problem: Problem, oracle: DivergenceOracle, deadline: float | None, note: Callable[[str], None]) -> None:
    from minimizer.shrinkray import find_shrinkray, run_shrinkray

    executable = find_shrinkray()
    if executable is None:
        note("shrinkray not found (set DIVERGENCE_SHRINKRAY to its executable in a Python 3.12 venv); finishing with our own passes")
        return
    remaining = None if deadline is None else max(0.0, deadline - time.monotonic())
    if remaining is not None and remaining < 10:
        return
    before = problem.current
    decide = shrinkray_decider(oracle)
    run = run_shrinkray(executable, before, decide, budget_s=remaining)
    # its answer for its own result is cached, so this costs no oracle call unless shrinkray was cut short
    if decide(run.result) and problem.adopt_verified(run.result):
        note(f"shrinkray polish: {measure(before).tokens} -> {measure(problem.current).tokens} tokens in {run.seconds:.0f} s")
    else:
        note(f"shrinkray polish found nothing smaller in {run.seconds:.0f} s")
