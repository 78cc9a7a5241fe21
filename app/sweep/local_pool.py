"""The default pool: one warm engine worker on this machine that runs up to `slots` checks at once.

The worker imports torch once and forks a child per check (engine.Runner), so `slots` children share one
warm parent instead of each slot paying for its own torch import; a crash, hang or memory blow-up of one
child ends as that job's `error` and the next job gets a fresh child. Each check gets its share of the
cores (OMP_NUM_THREADS, unless set already). Jobs are handed to the Runner only as slots free up, so a
long corpus does not sit in the Runner's queue (or on disk) all at once.
"""

from __future__ import annotations

import os
import tempfile
import threading
import time
from collections.abc import Callable, Iterable
from pathlib import Path

from app.sweep.jobs import JobOutcome, outcome_of
from app.sweep.tasks import CheckTask, MinimizeOutcome, MinimizeTask, minimize_on
from engine.runner import Job, Progress, Runner

_WAKE_S = 1.0  # a backstop only: the jobs' own reports wake the loop


def default_slots() -> int:
    """The cores this process may use."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


class LocalPool:
    """`runner`: an engine Runner to borrow (its max_running is the slots), left open by close()."""

    def __init__(self, slots: int | None = None, cache_dir: Path | None = None, runner: Runner | None = None) -> None:
        self._owned = runner is None
        slots = max(1, slots or default_slots())
        # the cores shared out between the checks at once (as Ray does for an actor of num_cpus=1): two
        # checks each running torch's and Inductor's OpenMP loops on every core only thrash each other
        threads = {} if "OMP_NUM_THREADS" in os.environ else {"OMP_NUM_THREADS": str(max(1, default_slots() // slots))}
        self.runner = runner or Runner(cache_dir=cache_dir, env=threads, max_running=slots)
        self.slots = self.runner.max_running
        self.runner.start()  # torch is imported now, not in the first job's seconds
        self.description = (
            f"{self.slots} check{'s' if self.slots != 1 else ''} at a time in one warm worker on this machine"
        )

    def run_checks(
        self,
        tasks: Iterable[CheckTask],
        on_start: Callable[[CheckTask], None],
        on_done: Callable[[CheckTask, JobOutcome], None],
    ) -> None:
        waiting = iter(tasks)
        in_flight: dict[Job, tuple[CheckTask, float]] = {}
        finished = threading.Event()  # set by a job's last progress report ("done"), so no job waits for a poll

        def progress(p: Progress) -> None:
            if p.stage == "done":
                finished.set()

        exhausted = False
        while True:
            while not exhausted and len(in_flight) < self.slots:
                task = next(waiting, None)
                if task is None:
                    exhausted = True
                    break
                on_start(task)
                spec = task.spec
                in_flight[self.runner.submit(spec.source, spec.options, spec.program, task.run_dir, progress)] = (
                    task,
                    time.monotonic(),
                )
            if not in_flight:
                return
            done = [job for job in in_flight if job.done()]  # a job refused at submit is done without a report
            if not done:
                finished.wait(_WAKE_S)
                finished.clear()
                continue
            for job in done:
                task, started = in_flight.pop(job)
                on_done(task, outcome_of(job.wait(), task.run_dir, time.monotonic() - started, "local"))

    def run_minimizations(
        self,
        tasks: Iterable[MinimizeTask],
        on_start: Callable[[MinimizeTask], None],
        on_done: Callable[[MinimizeTask, MinimizeOutcome], None],
    ) -> None:
        # one at a time: the minimizer already keeps two candidates in flight in the shared worker
        for task in tasks:
            on_start(task)
            with tempfile.TemporaryDirectory(prefix="divergence-minimize-") as work:
                on_done(task, minimize_on(self.runner, task, Path(work), task.out_dir / "checkpoints"))

    def close(self) -> None:
        if self._owned:
            self.runner.close()
