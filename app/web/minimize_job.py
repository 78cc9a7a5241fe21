"""A minimization started from the app: a background thread of the server that drives the minimizer.

The minimizer tests candidates only through the engine's Runner, so no user code runs in this process
(the fresh-interpreter check of repro.py is a subprocess). Jobs live in a per-process registry keyed by
run id (app.web.minimize_tab keeps it in st.cache_resource), so a rerun, a second tab or a new session of
the same run sees the same job. What a finished job produced is written into the run's directory, so a
reopened run shows it without running anything.

Stop: the minimizer polls `should_stop` between oracle batches, between its phases and while repro.py
runs in its fresh process; the Runner it gets is wrapped too, so after Stop the in-flight checks are
killed and the next wait or submit raises `Stopped`, which unwinds the minimizer before it records the
killed candidates as uninteresting. The best candidate so far is already checkpointed by the minimizer
(it saves on every adoption), which is what a later Start resumes from.
"""

from __future__ import annotations

import shutil
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

from app.web import ast_lock
from engine import CheckOptions, CheckResult, ErrorKind, Job, Progress, Runner, records
from minimizer import ReduceProgress, measure
from minimizer.interestingness import NotReproducible
from minimizer.minimize import MinimizeResult, minimize
from minimizer.reducer import digest, load_checkpoint
from minimizer.syntax import canonical

OUT_DIR = "minimize"  # inside the run's directory
OUTCOME_FILE = "outcome.json"
REPRO_FILE = "repro.py"
SNIPPET_FILE = "repro.snippet.py"  # the minimized program alone, beside its self-checking repro
ISSUE_FILE = "issue.md"
BUSY_RETRY_S = 2.0
MAX_CANDIDATE_TIMEOUT_S = 120.0  # a reduction often makes a candidate loop; don't let one eat the whole budget

# states of a job
STARTING, RUNNING, DONE, STOPPED, FAILED = "starting", "running", "done", "stopped", "failed"


class Stopped(Exception):
    """The user pressed Stop."""


@dataclass(frozen=True, kw_only=True)
class Settings:
    budget_s: float = 300.0  # for the reduction; establishing, verifying and the ablation come on top
    use_graph: bool = True
    use_shrinkray: bool = True
    ablation: bool = True


@dataclass(frozen=True, kw_only=True)
class Outcome:
    """How a minimization ended: what the tab shows, and what is kept in the run's directory."""

    state: str  # DONE, STOPPED or FAILED
    message: str
    finished: float  # wall-clock time
    elapsed_s: float
    oracle_calls: int
    initial_tokens: int
    final_tokens: int
    initial_lines: int = 0
    final_lines: int = 0
    initial_ops: int = 0
    final_ops: int = 0
    confirmed: bool = False
    repro_verified: bool = False
    repro_output: str = ""
    minimized: str = ""  # the best program (on Stop: the checkpointed best, if any)
    repro: str | None = None
    report: str | None = None
    notes: tuple[str, ...] = ()
    title: str | None = None  # the issue's title: GitHub's title field (the report is the body)
    settings: Settings | None = None  # what it ran with: a reopened run shows them


@dataclass(frozen=True)
class Snapshot:
    """What the page shows of a job at one moment."""

    state: str
    elapsed_s: float
    progress: ReduceProgress | None
    notes: tuple[str, ...]
    stopping: bool
    outcome: Outcome | None


class _StoppableJob:
    def __init__(self, job: Job, stop: threading.Event) -> None:
        self._job = job
        self._stop = stop

    def wait(self, timeout: float | None = None) -> CheckResult:
        result = self._job.wait(timeout)
        if self._stop.is_set():  # a killed candidate must not count as "not interesting"
            raise Stopped()
        return result

    def __getattr__(self, name: str) -> Any:
        return getattr(self._job, name)


class StoppableRunner:
    """The Runner the minimizer gets: the real one, plus Stop."""

    def __init__(self, runner: Runner) -> None:
        self._runner = runner
        self._stop = threading.Event()
        self._jobs: list[Job] = []
        self._lock = threading.Lock()

    @property
    def python(self) -> str:
        return self._runner.python

    @property
    def cache_dir(self) -> Path:
        return self._runner.cache_dir  # the repro's fresh process borrows the workers' Inductor cache

    def submit(
        self,
        source: str,
        options: CheckOptions | None = None,
        filename: str = "snippet.py",
        run_dir: Path | None = None,
        on_progress: Callable[[Progress], None] | None = None,
    ) -> Job:
        while True:
            if self._stop.is_set():
                raise Stopped()
            job = self._runner.submit(source, options, filename, run_dir, on_progress)
            # a full queue (other users' checks) says nothing about the candidate: wait for room, never reject it
            if not (job.done() and job.wait().error is not None and job.wait().error.kind is ErrorKind.BUSY):
                break
            self._stop.wait(BUSY_RETRY_S)
        with self._lock:
            self._jobs = [j for j in self._jobs if not j.done()] + [job]
        if self._stop.is_set():
            job.cancel()
        return cast(Job, _StoppableJob(job, self._stop))

    def check(
        self,
        source: str,
        options: CheckOptions | None = None,
        filename: str = "snippet.py",
        run_dir: Path | None = None,
        on_progress: Callable[[Progress], None] | None = None,
    ) -> CheckResult:
        return self.submit(source, options, filename, run_dir, on_progress).wait()

    def stop(self) -> None:
        self._stop.set()
        with self._lock:
            jobs = list(self._jobs)
        for job in jobs:
            job.cancel()

    @property
    def stopping(self) -> bool:
        return self._stop.is_set()


def checkpoint_root(data_dir: Path) -> Path:
    """Shared by every run: the minimizer keys checkpoints by the program, so a new run of it resumes too."""
    return data_dir / "minimize-checkpoints"


def checkpointed_best(root: Path, source: str) -> str | None:
    best, _ = load_checkpoint(root / digest(canonical(source)))
    return best


def minimize_options(options: CheckOptions) -> CheckOptions:
    return options.replace(triton_cpu=False, timeout_s=min(options.timeout_s, MAX_CANDIDATE_TIMEOUT_S))


class MinimizeJob:
    """One minimization of a run's program, running in a daemon thread; `snapshot()` is safe from any thread."""

    def __init__(
        self,
        run_dir: Path,
        source: str,
        options: CheckOptions,
        runner: Runner,
        checkpoints: Path,
        settings: Settings,
        session: str = "",
        on_end: Callable[[Outcome], None] | None = None,
    ) -> None:
        self.run_dir = Path(run_dir)
        self.session = session  # the browser session that started it: only it may stop it
        self._on_end = on_end
        self.source = source
        self.options = minimize_options(options)
        self.settings = settings
        self.checkpoints = checkpoints
        self._runner = StoppableRunner(runner)
        self._lock = threading.Lock()
        self._state = STARTING
        self._progress: ReduceProgress | None = None
        self._notes: list[str] = []
        self._outcome: Outcome | None = None
        self._started = time.monotonic()
        self._thread = threading.Thread(target=self._run, daemon=True, name=f"minimize-{self.run_dir.name}")

    def start(self) -> MinimizeJob:
        ast_lock.install()  # this thread parses beside Streamlit's page compiles (app/web/ast_lock.py)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._runner.stop()

    def done(self) -> bool:
        return self._outcome is not None

    def join(self, timeout: float | None = None) -> None:
        self._thread.join(timeout)

    def snapshot(self) -> Snapshot:
        with self._lock:
            return Snapshot(
                self._state,
                time.monotonic() - self._started,
                self._progress,
                tuple(self._notes),
                self._runner.stopping,
                self._outcome,
            )

    # -- the thread --
    def _on_progress(self, progress: ReduceProgress) -> None:
        with self._lock:
            self._progress = progress

    def _on_note(self, text: str) -> None:
        with self._lock:
            self._notes.append(text)
            self._state = RUNNING  # the first note names the target: the signature is established

    def _run(self) -> None:
        work = self.run_dir / OUT_DIR / "work"
        try:
            result = minimize(
                self.source,
                self.options,
                cast(Runner, self._runner),
                work,
                budget_s=self.settings.budget_s,
                checkpoint_root=self.checkpoints,
                use_graph=self.settings.use_graph,
                use_shrinkray=self.settings.use_shrinkray,
                ablation=self.settings.ablation,
                on_progress=self._on_progress,
                on_note=self._on_note,
                should_stop=lambda: self._runner.stopping,
            )
            outcome = self._ended(STOPPED, "stopped") if result.stopped else self._finished(result)
        except Stopped:
            outcome = self._ended(STOPPED, "stopped")
        except NotReproducible as exc:
            outcome = self._ended(FAILED, f"nothing to minimize: {exc}")
        except Exception as exc:  # shown in the tab; the server carries on
            outcome = self._ended(FAILED, f"the minimizer failed: {type(exc).__name__}: {exc}")
        shutil.rmtree(work, ignore_errors=True)  # candidates' and ablation checks' directories
        try:
            save_outcome(self.run_dir, outcome)
        except OSError:
            pass
        if self._on_end is not None:
            try:
                self._on_end(outcome)
            except Exception:  # the outcome is on disk already; a failed bookkeeping call must not hide it
                pass
        with self._lock:
            self._state = outcome.state
            self._outcome = outcome

    def _finished(self, r: MinimizeResult) -> Outcome:
        ok = r.repro_verified and r.confirmed
        message = (
            "verified: repro.py exits 1 in a fresh process"
            if ok
            else "finished, but the repro is NOT verified (see the notes)"
        )
        return Outcome(
            state=DONE,
            message=message,
            finished=time.time(),
            elapsed_s=r.elapsed_s,
            oracle_calls=r.oracle_calls,
            initial_tokens=r.initial.tokens,
            final_tokens=r.final.tokens,
            initial_lines=r.initial.lines,
            final_lines=r.final.lines,
            initial_ops=r.initial.torch_ops,
            final_ops=r.final.torch_ops,
            confirmed=r.confirmed,
            repro_verified=r.repro_verified,
            repro_output=r.repro_output,
            minimized=r.minimized,
            repro=r.repro,
            report=r.report,
            notes=r.notes,
            title=r.title,
            settings=self.settings,
        )

    def _ended(self, state: str, message: str) -> Outcome:
        best = None
        try:
            best = checkpointed_best(self.checkpoints, self.source)
        except OSError:
            pass
        start, snap = measure(self.source), self.snapshot()
        final = measure(best) if best is not None else start
        if state == STOPPED:
            message = (
                f"Stopped after {snap.elapsed_s:.0f} s. The best candidate so far ({final.tokens} tokens) is"
                " checkpointed: Start resumes from it."
                if best is not None
                else f"Stopped after {snap.elapsed_s:.0f} s, before any smaller candidate was found."
            )
        calls = snap.progress.oracle_calls if snap.progress is not None else 0
        return Outcome(
            state=state,
            message=message,
            finished=time.time(),
            elapsed_s=snap.elapsed_s,
            oracle_calls=calls,
            initial_tokens=start.tokens,
            final_tokens=final.tokens,
            initial_lines=start.lines,
            final_lines=final.lines,
            initial_ops=start.torch_ops,
            final_ops=final.torch_ops,
            minimized=best or "",
            notes=snap.notes,
            settings=self.settings,
        )


def save_outcome(run_dir: Path, outcome: Outcome) -> None:
    out = Path(run_dir) / OUT_DIR
    out.mkdir(parents=True, exist_ok=True)
    for name in (REPRO_FILE, SNIPPET_FILE, ISSUE_FILE):  # never leave the files of an earlier, different outcome
        (out / name).unlink(missing_ok=True)
    if outcome.repro is not None:
        (out / REPRO_FILE).write_text(outcome.repro)
    if outcome.state == DONE and outcome.minimized:
        (out / SNIPPET_FILE).write_text(outcome.minimized)
    if outcome.report is not None:
        (out / ISSUE_FILE).write_text(outcome.report)
    records.save(outcome, out / OUTCOME_FILE)


def load_outcome(run_dir: Path) -> Outcome | None:
    """The last minimization kept in a run's directory, or None."""
    try:
        return records.load(Outcome, Path(run_dir) / OUT_DIR / OUTCOME_FILE)
    except (OSError, records.RecordError):
        return None
