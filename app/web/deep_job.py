"""Probes and localization started from the app: a background thread of the server, like a minimization.

Both are many checks in the engine's worker (nothing of the user's runs here), driven by the engine's
own `run_probes` / `localize` through the app's shared Runner, wrapped in the minimizer tab's
`StoppableRunner` so Stop kills the checks in flight. The engine writes the report (probes.json,
localization.json) into a folder of the run's directory; the tabs read it from there, so a reopened run
shows it without running anything. Jobs live in a per-process registry keyed by kind and run id, so a
rerun, a second tab or a new session of the same run follows the same job.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import cast

from app.web import ast_lock
from app.web.minimize_job import StoppableRunner, Stopped
from engine import Runner

# states of a job
RUNNING, DONE, STOPPED, FAILED = "running", "done", "stopped", "failed"

# work(runner, note): runs the checks and stores the report; note(text) reports progress
Work = Callable[[Runner, Callable[[str], None]], None]


@dataclass(frozen=True)
class Snapshot:
    """What the page shows of a job at one moment."""

    state: str
    elapsed_s: float
    notes: tuple[str, ...]  # progress lines, oldest first
    stopping: bool
    message: str  # why it stopped or failed; "" while running or when done


class DeepJob:
    """One probe or localization run in a daemon thread; `snapshot()` is safe from any thread."""

    def __init__(self, name: str, runner: Runner, work: Work, session: str = "") -> None:
        self.session = session  # the browser session that started it: only it may stop it
        self._runner = StoppableRunner(runner)
        self._work = work
        self._lock = threading.Lock()
        self._state = RUNNING
        self._notes: list[str] = []
        self._message = ""
        self._started = time.monotonic()
        self._thread = threading.Thread(target=self._run, daemon=True, name=name)

    def start(self) -> DeepJob:
        ast_lock.install()  # this thread parses beside Streamlit's page compiles (app/web/ast_lock.py)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._runner.stop()

    def done(self) -> bool:
        with self._lock:
            return self._state != RUNNING

    def join(self, timeout: float | None = None) -> None:
        self._thread.join(timeout)

    def snapshot(self) -> Snapshot:
        with self._lock:
            return Snapshot(
                self._state, time.monotonic() - self._started, tuple(self._notes), self._runner.stopping, self._message
            )

    def _note(self, text: str) -> None:
        with self._lock:
            self._notes.append(text)

    def _run(self) -> None:
        state, message = DONE, ""
        try:
            self._work(cast(Runner, self._runner), self._note)
        except Stopped:
            state, message = STOPPED, f"stopped after {time.monotonic() - self._started:.0f} s; nothing was stored"
        except Exception as exc:  # shown in the tab; the server carries on
            state, message = FAILED, f"{type(exc).__name__}: {exc}"
        with self._lock:
            self._state, self._message = state, message
