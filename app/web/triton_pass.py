"""The "Triton on CPU" pass from the app: after the usual check, compile again with Inductor's Triton backend.

The pass runs in a second warm worker started with TRITON_INTERPRET=1 (it must be set before torch and
triton are imported, and the patches it needs must never reach an ordinary check), one per server
process like the main Runner. The engine's `with_triton_cpu_pass` decides the pass's options and where
its result is kept; this module only runs it in a background thread, so a rerun of the page (any click)
never interrupts it, and exposes its job for live status and Cancel.
"""

from __future__ import annotations

import atexit
import threading
from collections.abc import Callable
from pathlib import Path
from typing import cast

import streamlit as st

from engine import CheckOptions, CheckResult, ErrorKind, Job, Progress, Runner
from engine.api import with_triton_cpu_pass
from engine.protocol import TRITON_CPU_WORKER_ENV

LABEL = "interpreted Triton on CPU (not GPU Triton)"


@st.cache_resource(show_spinner=False)
def triton_runner() -> Runner:
    r = Runner(env=TRITON_CPU_WORKER_ENV)
    atexit.register(r.close)
    return r


def warm() -> None:
    """Start the Triton worker in the background (its torch import overlaps the usual check)."""

    def start() -> None:
        try:
            triton_runner().start()
        except Exception:  # the pass itself reports a worker that cannot start
            pass

    threading.Thread(target=start, daemon=True, name="warm-triton-worker").start()


class _Tracking:
    """Stands in for the Runner given to with_triton_cpu_pass, so the pass's Job is visible to the page."""

    def __init__(self, runner: Runner, on_job: Callable[[Job], None]) -> None:
        self._runner = runner
        self._on_job = on_job

    def check(
        self,
        source: str,
        options: CheckOptions | None = None,
        filename: str = "snippet.py",
        run_dir: Path | None = None,
        on_progress: Callable[[Progress], None] | None = None,
    ) -> CheckResult:
        job = self._runner.submit(source, options, filename, run_dir, on_progress)
        self._on_job(job)
        return job.wait()


class TritonPass:
    """One Triton-on-CPU pass for a finished check, running in a background thread of the server."""

    def __init__(self, result: CheckResult, source: str, options: CheckOptions, filename: str) -> None:
        self._job: Job | None = None
        self._cancelled = False
        self._lock = threading.Lock()
        self._done = threading.Event()
        self.attached: CheckResult | None = None  # the check with the pass attached
        self.failure: str | None = None  # why the pass could not even be attached
        self._thread = threading.Thread(
            target=self._run, args=(result, source, options, filename), daemon=True, name="triton-cpu-pass"
        )
        self._thread.start()

    def _run(self, result: CheckResult, source: str, options: CheckOptions, filename: str) -> None:
        try:
            runner = cast(Runner, _Tracking(triton_runner(), self._set_job))
            self.attached = with_triton_cpu_pass(result, source, options, filename, runner=runner)
        except Exception as exc:  # shown on the page; the usual check's result stands
            self.failure = f"{type(exc).__name__}: {exc}"
        finally:
            self._done.set()

    def _set_job(self, job: Job) -> None:
        with self._lock:
            self._job = job
            cancelled = self._cancelled
        if cancelled:  # Cancel was clicked before the job existed
            job.cancel()

    def cancel(self) -> None:
        with self._lock:
            self._cancelled = True
            job = self._job
        if job is not None:
            job.cancel()

    def done(self) -> bool:
        return self._done.is_set()

    def wait(self, timeout: float | None = None) -> bool:
        return self._done.wait(timeout)

    @property
    def progress(self) -> Progress | None:
        job = self._job
        return job.progress if job is not None else None

    def pass_result(self) -> CheckResult | None:
        if self.attached is None:
            return None
        try:
            return self.attached.load_triton_cpu()
        except (OSError, ValueError, KeyError, TypeError):
            return None


def outcome(tri: CheckResult) -> str:
    """A few words for what the pass came to: its verdict, or why it has none."""
    if tri.error is None:
        return tri.verdict.value
    if tri.error.message.startswith("Triton source only"):
        return "kernels generated, not run (inputs above the interpreter's size limit)"
    if tri.error.kind is ErrorKind.TIMEOUT:
        return "kernels generated, interpreting stopped at the time limit"
    return f"could not run ({tri.error.kind.value})"


def load(result: CheckResult) -> CheckResult | None:
    """A stored run's Triton-on-CPU pass, or None when none was attached or it cannot be read."""
    try:
        return result.load_triton_cpu()
    except (OSError, ValueError, KeyError, TypeError):
        return None
