"""The whole minimization: establish the signature, reduce, polish with shrinkray, confirm, emit repro and report.

The pipeline's guarantees: the signature (leaf, symptoms, mechanism, eval state, first diverging op;
see `minimizer.oracle`) is established from two runs of the original and one with the mechanism
switches on (a flaky divergence, or one the random stream or a precision cast explains, is refused,
not minimized); the final candidate is re-checked once more, with its first diverging intermediate (a
flip is reported as flakiness); the repro is offered as verified only when a fresh interpreter running
it exits 1 and says DIVERGENT. When the final repro does not, the last adopted candidate whose repro
does is offered instead, and the notes say so: an unverified repro is never the main result.
"""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from engine import CheckOptions, Runner
from minimizer.oracle import Checked, DivergenceOracle, Signature
from minimizer.passes import FINISHING_PASSES, SOURCE_PASSES
from minimizer.passes.nodes import graph_rewrite, promote_to_inputs, truncate_output
from minimizer.reducer import BudgetExhausted, Problem, ReduceProgress, Reducer, ReduceStats, ReductionPass, digest, load_checkpoint
from minimizer.repro import ReproError, Verification, emit, verify
from minimizer.size import Size, measure, sort_key
from minimizer.syntax import canonical, fresh, keeps_style, prune, statically_plausible, tidy_tree, unparse


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
    fell_back: bool = False  # the last candidate's repro did not reproduce: `minimized` is an earlier one whose repro does
    guard_calls: int = 0  # checks spent on where adopted candidates start (included in oracle_calls)
    guard_seconds: float = 0.0
    final_check: Checked | None = None  # the re-check of `minimized`: the figures the report quotes
    refused: tuple[tuple[str, int], ...] = ()  # candidates the oracle refused, by outcome (other-state: a slip the eval-state guard caught)


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
    if not stop() and not _tidy_first(problem):
        # dead code the program needs (a draw that shifts the RNG, say): prune nothing behind the oracle's back
        note("tidying the program loses the divergence: dead code is removed only where the oracle agrees")
    else:
        problem.normalize = _pruned

    graph_passes: list[ReductionPass] = [graph_rewrite(oracle.fx_graphs), truncate_output, promote_to_inputs(oracle.fx_graphs)]
    passes: list[ReductionPass] = (graph_passes if use_graph else []) + list(SOURCE_PASSES)
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
    run_options = oracle.candidate_options  # the switches the signature was established with go into the repro

    def check_repro(program: str) -> tuple[str | None, Verification | None]:
        try:
            script = emit(program, run_options, seed=options.seed, roundings=oracle.scalar_roundings)
        except ReproError as exc:
            note(f"no generated harness: {exc}")
            return None, None
        return script, verify(script, python or runner.python, options.timeout_s, work_dir / "verify", stop, runner.cache_dir)

    # the re-check runs in the worker and the repro in a fresh interpreter: side by side, not one after the other
    with ThreadPoolExecutor(1) as pool:
        verifying = pool.submit(check_repro, final)
        final_run = oracle.final_check(final)
        repro, check = verifying.result()
    fell_back = False
    if check is not None and not check.reproduces and not stop():
        note(f"the repro of the final candidate did not reproduce in a fresh process (exit {check.exit_code}): {_last_line(check.output)}")
        found = fall_back(problem.history, check_repro, stop)
        if found is not None:
            final, repro, check = found
            fell_back = True
            final_run = oracle.final_check(final)
            note(f"fell back to the last candidate whose repro reproduces ({measure(final).tokens} tokens)")
    confirmed = oracle.confirmed(final_run)
    if not confirmed:
        note("FLAKY: the final candidate did not reproduce the signature when re-checked; treat the result with suspicion")
    verified = check is not None and check.reproduces
    output = check.output if check is not None else ""
    if check is not None and not verified:
        note(f"no candidate's repro reproduced in a fresh process (exit {check.exit_code}); not offered as verified")
    repro = repro or final
    cut_short = stop()  # the repro run may have been killed for it; the ablation is skipped

    report = None
    if ablation and not cut_short:
        from minimizer.report import locate, render

        rows, _ = locate(runner, final, options, signature, work_dir / "ablation")  # the ladder as the user runs it
        report = render(final, signature, final_run, rows, verified)

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
        fell_back=fell_back,
        guard_calls=oracle.guard_calls,
        guard_seconds=oracle.guard_seconds,
        final_check=final_run,
        refused=tuple(sorted(oracle.refusals().items())),
    )


def _pruned(source: str) -> str:
    return unparse(prune(fresh(source)))


def _tidy_first(problem: Problem) -> bool:
    """Test the tidied program (docstrings, dead code, unused imports out); False when the oracle refuses it."""
    tree = fresh(problem.current)
    tidy_tree(tree)
    tidied = unparse(tree)
    try:
        return tidied == problem.current or problem.try_adopt(tidied)
    except BudgetExhausted:  # out of time (or asked to stop) before the first candidate: nothing was refused
        return True


def _last_line(output: str) -> str:
    lines = [line for line in output.strip().splitlines() if line.strip()]
    return lines[-1][:300] if lines else "(no output)"


def fall_back(history: list[str], check_repro: Callable[[str], tuple[str | None, Verification | None]],
               stop: Callable[[], bool]) -> tuple[str, str, Verification] | None:
    """The last adopted candidate whose repro reproduces, by bisection over the history (the last one failed)."""
    lo, hi = -1, len(history) - 1  # history[hi] fails; history[lo] (once tested) reproduces
    best: tuple[str, str, Verification] | None = None
    while hi - lo > 1 and not stop():
        mid = (lo + hi + 1) // 2 if lo >= 0 else 0  # the original first: if it fails too, nothing will do
        script, check = check_repro(history[mid])
        if script is not None and check is not None and check.reproduces:
            lo, best = mid, (history[mid], script, check)
        elif mid == 0:
            return None
        else:
            hi = mid
    return best


def _stopped(source: str, final: str, signature: Signature, problem: Problem, stats: ReduceStats, oracle: DivergenceOracle,
             started: float, options: CheckOptions, notes: list[str]) -> MinimizeResult:
    try:
        repro: str | None = emit(final, oracle.candidate_options, seed=options.seed, roundings=oracle.scalar_roundings)  # emitting runs nothing
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
