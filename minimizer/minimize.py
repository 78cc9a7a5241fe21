"""The whole minimization: establish the signature, reduce, polish with shrinkray, confirm, emit repro and report.

The pipeline's guarantees: the signature is established from two runs of the original (a flaky
divergence is refused, not minimized); the final candidate is re-checked once more (a flip is reported
as flakiness); the repro is offered as verified only when a fresh interpreter running it exits non-zero.
"""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from engine import CheckOptions, Runner
from minimizer.graph import graph_rewrite
from minimizer.oracle import DivergenceOracle, Signature
from minimizer.passes import FINISHING_PASSES, SOURCE_PASSES
from minimizer.reducer import Problem, ReduceProgress, Reducer, ReduceStats, ReductionPass, digest, load_checkpoint
from minimizer.repro import ReproError, emit, verify
from minimizer.size import Size, measure, sort_key
from minimizer.syntax import canonical, keeps_style, statically_plausible


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
    stopped: bool = False  # should_stop() said so: the best so far; the re-check, repro run or ablation may be missing


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
    should_stop: Callable[[], bool] | None = None,
) -> MinimizeResult:
    """Minimize `source` while its divergence keeps its signature; see the module docstring for the guarantees.

    `should_stop` is polled before every oracle batch, between the phases and while the repro runs in its
    fresh process; once it returns True the best candidate so far is returned at once with `stopped=True`.
    """
    started = time.monotonic()
    stop = should_stop or (lambda: False)
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
    plausible = keeps_style(start)
    problem = Problem(resumed or start, oracle, on_progress, deadline, checkpoint, rejected, should_stop=stop, plausible=plausible)

    passes: list[ReductionPass] = ([graph_rewrite(oracle.fx_graphs)] if use_graph else []) + list(SOURCE_PASSES)
    stats = Reducer(passes).run(problem)

    if use_shrinkray and not stats.budget_exhausted and not stop():
        polish_with_shrinkray(problem, oracle, deadline, note, plausible)
        if (deadline is None or time.monotonic() < deadline) and not stop():
            stats = _merge(stats, Reducer(passes).run(problem))
    if not stats.budget_exhausted and not stop():
        stats = _merge(stats, Reducer(FINISHING_PASSES).run(problem))

    final = problem.current
    if stop():
        note("stopped: the best candidate so far, not re-checked and without a verified repro")
        return _stopped(source, final, signature, problem, stats, oracle, started, options, notes)
    repro, verified, output = None, False, ""
    try:
        repro = emit(final, options, seed=options.seed)
    except ReproError as exc:
        note(f"no generated harness: {exc}")
    # the re-check runs in the worker and the repro in a fresh interpreter: side by side, not one after the other
    with ThreadPoolExecutor(1) as pool:
        verifying = None if repro is None else pool.submit(
            verify, repro, python or runner.python, options.timeout_s, work_dir / "verify", stop, runner.cache_dir)
        confirmed = oracle.confirm(final) if final != start else True
        if not confirmed:
            note("FLAKY: the final candidate did not reproduce when re-checked; treat the result with suspicion")
        if verifying is not None:
            check = verifying.result()
            verified, output = check.reproduces, check.output
            if not verified:
                note(f"the generated repro did not reproduce in a fresh process (exit {check.exit_code}); not offered as verified")
    repro = repro or final
    cut_short = stop()  # the repro run may have been killed for it; the ablation is skipped

    report = None
    if ablation and not cut_short:
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
        stopped=cut_short,
    )


def _stopped(source: str, final: str, signature: Signature, problem: Problem, stats: ReduceStats, oracle: DivergenceOracle,
             started: float, options: CheckOptions, notes: list[str]) -> MinimizeResult:
    try:
        repro: str | None = emit(final, options, seed=options.seed)  # emitting runs nothing
    except ReproError:
        repro = final
    return MinimizeResult(
        original=source, minimized=final, signature=signature, initial=measure(source), final=measure(final),
        stats=problem.stats(stats.budget_exhausted), oracle_calls=oracle.calls, elapsed_s=time.monotonic() - started,
        confirmed=False, repro=repro, repro_verified=False, repro_output="", report=None, notes=tuple(notes), stopped=True,
    )


def _merge(a: ReduceStats, b: ReduceStats) -> ReduceStats:
    return b if b.budget_exhausted else a


def shrinkray_decider(oracle: DivergenceOracle, plausible: Callable[[str], bool] = statically_plausible) -> Callable[[str], bool]:
    """A thread-safe, cached interestingness answer for shrinkray's candidates."""
    cache: dict[str, bool] = {}
    lock = threading.Lock()

    def decide(candidate: str) -> bool:
        key = digest(canonical(candidate))
        with lock:
            if key in cache:
                return cache[key]
        ok = plausible(candidate) and oracle.test_many([candidate])[0]
        with lock:
            cache[key] = ok
        return ok

    return decide


def polish_with_shrinkray(problem: Problem, oracle: DivergenceOracle, deadline: float | None, note: Callable[[str], None],
                           plausible: Callable[[str], bool] = statically_plausible) -> None:
    from minimizer.shrinkray import find_shrinkray, run_shrinkray

    executable = find_shrinkray()
    if executable is None:
        note("shrinkray not found (`divergence install-shrinkray` makes one, or set DIVERGENCE_SHRINKRAY to its executable); "
             "finishing with our own passes")
        return
    remaining = None if deadline is None else max(0.0, deadline - time.monotonic())
    if remaining is not None and remaining < 10:
        return
    before = problem.current
    decide = shrinkray_decider(oracle, plausible)
    run = run_shrinkray(executable, before, decide, budget_s=remaining)
    # its answer for its own result is cached, so this costs no oracle call unless shrinkray was cut short
    if decide(run.result) and problem.adopt_verified(run.result):
        note(f"shrinkray polish: {measure(before).tokens} -> {measure(problem.current).tokens} tokens in {run.seconds:.0f} s")
    else:
        note(f"shrinkray polish found nothing smaller in {run.seconds:.0f} s")
