"""The whole minimization: establish the signature, reduce, polish with shrinkray, confirm, emit repro and report.

The pipeline's guarantees: the signature (leaf, symptoms, mechanism, eval state, first diverging op;
see `minimizer.interestingness`) is established from two runs of the original and one with the mechanism
switches on (a flaky divergence, or one the random stream or a precision cast explains, is refused,
not minimized); the final candidate is re-checked once more, with its first diverging intermediate (a
flip is reported as flakiness); the repro is offered as verified only when a fresh interpreter running
it exits 1 and says DIVERGENT. When the final repro does not, the last adopted candidate whose repro
does is offered instead, and the notes say so: an unverified repro is never the main result.

`minimize` reads as the phases, in order, over a `_Context` (what every phase reads: the inputs, the
oracle and its signature, the clock, the notes): starting (from a checkpoint, tidied), reducing (our
passes, shrinkray's polish, the finishing passes), confirming (the re-check, the repro in a fresh
interpreter, the fall back) and reporting (the ablation ladder). Each phase is a function below.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from engine import CheckOptions, Runner
from minimizer.body import Settled, fresh_runner, settle
from minimizer.interestingness import Checked, DivergenceOracle, Refusal, Signature, refusal_summary
from minimizer.mechanism import read_graphs
from minimizer.passes import FINISHING_PASSES, SOURCE_PASSES
from minimizer.passes.nodes import graph_rewrite, promote_to_inputs, truncate_output
from minimizer.reducer import (
    BudgetExhausted,
    Problem,
    ReduceProgress,
    Reducer,
    ReduceStats,
    ReductionPass,
    digest,
    load_checkpoint,
)
from minimizer.report import issue_title, leaf_of, locate, origin_of, render
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
    fell_back: bool = (
        False  # the last candidate's repro did not reproduce: `minimized` is an earlier one whose repro does
    )
    guard_calls: int = 0  # checks spent on where adopted candidates start (included in oracle_calls)
    guard_seconds: float = 0.0
    final_check: Checked | None = None  # the re-check of `minimized`: the figures the report quotes
    refused: tuple[
        tuple[str, int], ...
    ] = ()  # candidates the oracle refused, by outcome (other-state: a slip the eval-state guard caught)
    title: str | None = None  # the issue's title (GitHub's title field; the report is its body)
    refusals: tuple[Refusal, ...] = ()  # the first candidates refused, each with its pass, verdict and what it lost
    body: Settled | None = None  # the issue body's script as it ran: its printed values, the side that is wrong
    # where the candidates' checks spent their seconds: per stage (queued, compiling, ...) and per outcome, summed
    stage_seconds: tuple[tuple[str, float], ...] = ()
    outcome_seconds: tuple[tuple[str, float], ...] = ()


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
    ctx = _Context.establish(
        source,
        options,
        runner,
        work_dir,
        budget_s=budget_s,
        python=python,
        filename=filename,
        on_note=on_note,
        should_stop=should_stop,
    )
    problem = _starting_problem(ctx, checkpoint_root, on_progress)
    stats = _reduce(ctx, problem, use_graph=use_graph, use_shrinkray=use_shrinkray)
    for line in refusal_summary(ctx.oracle.refused)[:REFUSAL_LINES]:
        ctx.note(line)
    if ctx.stop():
        return _stopped(ctx, problem, stats)
    confirmation = _confirm(ctx, problem)
    cut_short = ctx.stop()  # the repro run may have been killed for it; the ablation is skipped
    report, body = _report(ctx, confirmation) if ablation and not cut_short else (None, None)
    return ctx.result(
        problem,
        stats,
        confirmation.final,
        confirmed=confirmation.confirmed,
        repro=confirmation.repro,
        repro_verified=confirmation.verified,
        repro_output=confirmation.output,
        report=report,
        stopped=cut_short,
        fell_back=confirmation.fell_back,
        final_check=confirmation.final_run,
        title=issue_title(ctx.signature, confirmation.final_run, body.side if body is not None else None),
        body=body,
    )


# -- the context: what every phase of one minimization reads --
@dataclass(frozen=True)
class _Context:
    """One minimization's inputs, its oracle and established signature, its clock, and where its notes go.

    Frozen: the phases share it and change none of it (the notes list only grows); what a phase changes is
    the Problem's current candidate, which it receives on its own.
    """

    source: str
    options: CheckOptions
    runner: Runner
    work_dir: Path
    python: str | None  # the interpreter the repro is verified in (None: the runner's)
    oracle: DivergenceOracle
    signature: Signature
    started: float  # time.monotonic() when the minimization began
    deadline: float | None  # the reduction's: `budget_s` from the end of establishing (see `establish`)
    budget_s: float | None
    stop: Callable[[], bool]
    on_note: Callable[[str], None] | None
    notes: list[str] = field(default_factory=list)

    @classmethod
    def establish(
        cls,
        source: str,
        options: CheckOptions,
        runner: Runner,
        work_dir: Path,
        *,
        budget_s: float | None,
        python: str | None,
        filename: str,
        on_note: Callable[[str], None] | None,
        should_stop: Callable[[], bool] | None,
    ) -> _Context:
        """Establish the signature (see `DivergenceOracle.establish`); the budget's clock starts after it.

        The budget is the reduction's, as `--budget` and the app promise: establishing costs two full checks and an
        instrumented one (a minute or more of a cold model on two cores), which would otherwise come out of it.
        """
        started = time.monotonic()
        oracle = DivergenceOracle(runner, options, work_dir / "runs", filename=filename)
        signature = oracle.establish(source)
        deadline = time.monotonic() + budget_s if budget_s is not None else None
        ctx = cls(
            source,
            options,
            runner,
            work_dir,
            python,
            oracle,
            signature,
            started,
            deadline,
            budget_s,
            should_stop or (lambda: False),
            on_note,
        )
        ctx.note(f"target: {signature.describe()}")
        return ctx

    def note(self, text: str) -> None:
        self.notes.append(text)
        if self.on_note is not None:
            self.on_note(text)

    def emit_repro(self, program: str) -> str:
        """The self-checking repro of `program`, with the switches the signature was established with; runs nothing."""
        # the original's check says what of the engine the repro needs (a candidate only loses what it had)
        return emit(program, self.oracle.candidate_options, seed=self.options.seed, result=self.oracle.baseline)

    def check_repro(self, program: str) -> tuple[str | None, Verification | None]:
        """`program`'s repro and what running it in a fresh interpreter said; (None, None) where none can be emitted."""
        try:
            script = self.emit_repro(program)
        except ReproError as exc:
            self.note(f"no generated harness: {exc}")
            return None, None
        expect = (
            self.signature.leaf,
            {s.value for s in self.signature.symptoms},
        )  # the signature's leaf and symptoms, not any divergence
        return script, verify(
            script,
            self.python or self.runner.python,
            self.options.timeout_s,
            self.work_dir / "verify",
            self.stop,
            self.runner.cache_dir,
            expect,
        )

    def result(self, problem: Problem, stats: ReduceStats, minimized: str, **outcome: Any) -> MinimizeResult:
        """The result: what every minimization reports, and `outcome`, what its ending found."""
        return MinimizeResult(
            original=self.source,
            minimized=minimized,
            signature=self.signature,
            initial=measure(self.source),
            final=measure(minimized),
            stats=problem.stats(stats.budget_exhausted),
            oracle_calls=self.oracle.calls,
            elapsed_s=time.monotonic() - self.started,
            notes=tuple(self.notes),
            guard_calls=self.oracle.guard_calls,
            guard_seconds=self.oracle.guard_seconds,
            refused=tuple(sorted(self.oracle.refusals().items())),
            refusals=tuple(self.oracle.refused),
            stage_seconds=tuple(self.oracle.stage_seconds.most_common()),
            outcome_seconds=tuple((o.value, s) for o, s in self.oracle.outcome_seconds.most_common()),
            **outcome,
        )


# -- starting: from the checkpoint's best where it still diverges, tidied where the oracle agrees --
def _starting_problem(
    ctx: _Context, checkpoint_root: Path | None, on_progress: Callable[[ReduceProgress], None] | None
) -> Problem:
    """The problem to reduce: the canonical original, or a smaller best from a checkpoint that still diverges."""
    start = canonical(ctx.source)
    checkpoint = checkpoint_root / digest(start) if checkpoint_root is not None else None
    rejected: list[str] = []
    resumed: str | None = None
    if checkpoint is not None:
        best, rejected = load_checkpoint(checkpoint)
        if best is not None and sort_key(best) < sort_key(start) and ctx.oracle.test_many([best])[0]:
            resumed = best
            ctx.note(f"resuming from the checkpoint in {checkpoint} ({measure(best).tokens} tokens)")
    plausible = keeps_style(start)
    problem = Problem(
        resumed or start,
        ctx.oracle,
        on_progress,
        ctx.deadline,
        checkpoint,
        rejected,
        should_stop=ctx.stop,
        plausible=plausible,
    )
    ctx.oracle.pass_name = lambda: problem.pass_name  # each refusal is recorded with the pass that proposed it
    if not ctx.stop() and not _tidy_first(problem):
        # dead code the program needs (a draw that shifts the RNG, say): prune nothing behind the oracle's back
        ctx.note("tidying the program loses the divergence: dead code is removed only where the oracle agrees")
    else:
        problem.normalize = _pruned
    return problem


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


REFUSAL_LINES = 12  # of the refusals' summary in the notes: every graph-path candidate first, then by pass


# -- reducing: our passes to a fixpoint, shrinkray's polish and our passes again, then the finishing passes --
FINISHING_SHARE = 0.1  # of the budget kept for the finishing passes ...
FINISHING_MIN_S = (
    20.0  # ... but at least this (inlining a node chain is one to five oracle calls), and at most half the budget
)


def finishing_reserve(budget_s: float) -> float:
    """The seconds at the end of a budget that only the finishing passes may use."""
    return min(max(FINISHING_MIN_S, FINISHING_SHARE * budget_s), budget_s / 2)


def _reduce(ctx: _Context, problem: Problem, *, use_graph: bool, use_shrinkray: bool) -> ReduceStats:
    """Reduce `problem` in place; the stats of the last reduction, or of the one that ran out of budget.

    The finishing passes (one expression from a chain of temporaries: what makes a repro read as one line) have the
    end of the budget to themselves, so a reduction that runs out of time still gets them.
    """
    graph_passes: list[ReductionPass] = [
        graph_rewrite(ctx.oracle.fx_graphs),
        truncate_output,
        promote_to_inputs(ctx.oracle.fx_graphs),
    ]
    passes: list[ReductionPass] = (graph_passes if use_graph else []) + list(SOURCE_PASSES)
    main_deadline = (
        ctx.deadline - finishing_reserve(ctx.budget_s)
        if ctx.deadline is not None and ctx.budget_s is not None
        else None
    )
    problem.deadline = main_deadline
    stats = Reducer(passes).run(problem)
    exhausted = stats.budget_exhausted
    if exhausted and not ctx.stop():
        ctx.note(
            f"the time budget for reducing ran out in pass {problem.pass_name}; the finishing passes had their reserved"
            f" {finishing_reserve(ctx.budget_s or 0):.0f} s"
        )
    if use_shrinkray and not exhausted and not ctx.stop():
        polish_with_shrinkray(problem, ctx.oracle, main_deadline, ctx.note, problem.plausible)
        if (main_deadline is None or time.monotonic() < main_deadline) and not ctx.stop():
            exhausted = Reducer(passes).run(problem).budget_exhausted
    problem.deadline = ctx.deadline
    if not ctx.stop():
        exhausted = Reducer(FINISHING_PASSES).run(problem).budget_exhausted or exhausted
    return problem.stats(exhausted)


def shrinkray_decider(
    oracle: DivergenceOracle, plausible: Callable[[str], bool] = statically_plausible
) -> Callable[[str], bool]:
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


def polish_with_shrinkray(
    problem: Problem,
    oracle: DivergenceOracle,
    deadline: float | None,
    note: Callable[[str], None],
    plausible: Callable[[str], bool] = statically_plausible,
) -> None:
    from minimizer.shrinkray import find_shrinkray, run_shrinkray

    executable = find_shrinkray()
    if executable is None:
        note(
            "shrinkray not found (`divergence install-shrinkray` makes one, or set DIVERGENCE_SHRINKRAY to its"
            " executable); finishing with our own passes"
        )
        return
    remaining = None if deadline is None else max(0.0, deadline - time.monotonic())
    if remaining is not None and remaining < 10:
        return
    before = problem.current
    decide = shrinkray_decider(oracle, plausible)
    run = run_shrinkray(executable, before, decide, budget_s=remaining)
    # its answer for its own result is cached, so this costs no oracle call unless shrinkray was cut short
    if decide(run.result) and problem.adopt_verified(run.result):
        note(
            f"shrinkray polish: {measure(before).tokens} -> {measure(problem.current).tokens} tokens in"
            f" {run.seconds:.0f} s"
        )
    else:
        note(f"shrinkray polish found nothing smaller in {run.seconds:.0f} s")


# -- stopped between phases: the best candidate so far, neither re-checked nor verified --
def _stopped(ctx: _Context, problem: Problem, stats: ReduceStats) -> MinimizeResult:
    """Asked to stop before the end: the best candidate so far, with the repro emitted but not run."""
    ctx.note("stopped: the best candidate so far, not re-checked and without a verified repro")
    final = problem.current
    try:
        repro = ctx.emit_repro(final)  # emitting runs nothing
    except ReproError:
        repro = final
    return ctx.result(
        problem,
        stats,
        final,
        confirmed=False,
        repro=repro,
        repro_verified=False,
        repro_output="",
        report=None,
        stopped=True,
    )


# -- confirming: the final re-check, the repro in a fresh interpreter, and the fall back when it does not reproduce --
@dataclass(frozen=True)
class _Confirmation:
    """The candidate offered (an earlier one where the last one's repro did not reproduce), its re-check and its
    repro."""

    final: str
    final_run: Checked
    repro: str  # the repro script, or the candidate itself where none could be emitted
    check: Verification | None  # the repro's run in a fresh interpreter; None where none could be emitted
    fell_back: bool
    confirmed: bool  # the re-check reproduced the signature

    @property
    def verified(self) -> bool:
        return self.check is not None and self.check.reproduces

    @property
    def output(self) -> str:
        return self.check.output if self.check is not None else ""


def _confirm(ctx: _Context, problem: Problem) -> _Confirmation:
    """Re-check the final candidate and verify its repro; where the repro does not reproduce, fall back."""
    final = problem.current
    # the re-check runs in the worker and the repro in a fresh interpreter: side by side, not one after the other
    with ThreadPoolExecutor(1) as pool:
        verifying = pool.submit(ctx.check_repro, final)
        final_run = ctx.oracle.final_check(final)
        repro, check = verifying.result()
    fell_back = False
    if check is not None and check.exit_code is None and not ctx.stop():
        # it ran out of time, which says nothing about whether it reproduces; every earlier candidate is larger and
        # would take longer still, so bisecting the history for one whose repro does would only time out again
        why = check.output.partition("\n")[0]
        ctx.note(f"the repro of the final candidate ran out of time in a fresh process ({why}); no fall back")
    elif check is not None and not check.reproduces and not ctx.stop():
        ctx.note(
            f"the repro of the final candidate did not reproduce in a fresh process (exit {check.exit_code}):"
            f" {_last_line(check.output)}"
        )
        found = fall_back(problem.history, ctx.check_repro, ctx.stop)
        if found is not None:
            final, repro, check = found
            fell_back = True
            final_run = ctx.oracle.final_check(final)
            ctx.note(f"fell back to the last candidate whose repro reproduces ({measure(final).tokens} tokens)")
    confirmed = ctx.oracle.confirmed(final_run)
    if not confirmed:
        ctx.note(
            "FLAKY: the final candidate did not reproduce the signature when re-checked; treat the result with"
            " suspicion"
        )
    confirmation = _Confirmation(final, final_run, repro or final, check, fell_back, confirmed)
    if check is not None and not confirmation.verified:
        ctx.note(
            f"no candidate's repro reproduced in a fresh process (exit {check.exit_code}); not offered as verified"
        )
    return confirmation


def _last_line(output: str) -> str:
    lines = [line for line in output.strip().splitlines() if line.strip()]
    return lines[-1][:300] if lines else "(no output)"


def fall_back(
    history: list[str], check_repro: Callable[[str], tuple[str | None, Verification | None]], stop: Callable[[], bool]
) -> tuple[str, str, Verification] | None:
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


# -- reporting: the ablation ladder, run as the user runs it --
def _report(ctx: _Context, confirmation: _Confirmation) -> tuple[str, Settled | None]:
    """The issue body of the offered candidate: its shortest script, settled by running it (minimizer/body.py), where
    it came from, its re-check's figures and the ablation ladder."""
    rows, _ = locate(
        ctx.runner, confirmation.final, ctx.options, ctx.signature, ctx.work_dir / "ablation"
    )  # the ladder as the user runs it
    result = confirmation.final_run.result
    leaf = leaf_of(ctx.signature, result)
    settled = None
    if leaf is not None and not ctx.stop():
        run = fresh_runner(
            ctx.python or ctx.runner.python,
            ctx.work_dir / "body",
            ctx.runner.cache_dir,
            ctx.options.timeout_s,
            ctx.stop,
        )
        facts = read_graphs(result.code.fx_graphs)
        settled = settle(
            confirmation.final,
            leaf,
            ctx.oracle.candidate_options,
            run,
            random_calls=bool(facts.random_ops),
            low_precision=facts.low_precision,
        )
        if settled is None:
            ctx.note("no short script shows the difference on its own: the body shows the program as it is")
        elif settled.dropped:
            ctx.note(f"the body's script shows it without {', '.join(settled.dropped)}: left out")
    origin = origin_of(ctx.oracle.filename, ctx.signature, ctx.oracle.origin, ctx.options)
    body = render(
        confirmation.final,
        ctx.signature,
        confirmation.final_run,
        rows,
        confirmation.verified,
        settled=settled,
        origin=origin,
    )
    return body, settled
