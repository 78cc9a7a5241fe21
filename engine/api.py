"""The engine's public entry points: check a snippet's source or file in a warm worker."""

from __future__ import annotations

import atexit
import dataclasses
import threading
from collections.abc import Callable
from pathlib import Path

from engine.options import CheckOptions
from engine.result import CheckResult
from engine.runner import Progress, Runner

TRITON_CPU_DIR = "triton-cpu"
_default: Runner | None = None
_triton: Runner | None = None
_default_lock = threading.Lock()


def default_runner() -> Runner:
    """The process-wide runner, created on first use and closed at exit."""
    global _default
    with _default_lock:
        if _default is None:
            _default = Runner()
            atexit.register(_default.close)
        return _default


def triton_cpu_runner() -> Runner:
    """A second warm worker, started with TRITON_INTERPRET=1, used only for Triton-on-CPU passes."""
    global _triton
    with _default_lock:
        if _triton is None:
            from engine.protocol import TRITON_CPU_WORKER_ENV

            _triton = Runner(env=TRITON_CPU_WORKER_ENV)
            atexit.register(_triton.close)
        return _triton


def check_source(
    source: str,
    options: CheckOptions | None = None,
    filename: str = "snippet.py",
    run_dir: Path | None = None,
    on_progress: Callable[[Progress], None] | None = None,
) -> CheckResult:
    """Check a snippet (any of the three styles) eager vs compiled; never runs it in this process.

    With `options.triton_cpu`, a second job also compiles the program with Inductor's Triton backend
    on CPU tensors; its result is kept in a subfolder and named by `CheckResult.triton_cpu`.
    """
    options = options or CheckOptions()
    runner = default_runner()
    if not options.triton_cpu:
        return runner.check(source, options, filename, run_dir, on_progress)
    result = runner.check(source, options.replace(triton_cpu=False), filename, run_dir, on_progress)
    return with_triton_cpu_pass(result, source, options, filename, on_progress)


def with_triton_cpu_pass(
    result: CheckResult,
    source: str,
    options: CheckOptions,
    filename: str,
    on_progress: Callable[[Progress], None] | None = None,
    runner: Runner | None = None,
) -> CheckResult:
    """Run the Triton-on-CPU pass in its own worker (see triton_cpu_runner) and attach it to a finished check."""
    if result.run_dir is None:
        return result
    pass_dir = Path(result.run_dir) / TRITON_CPU_DIR

    def progress(p: Progress) -> None:
        if on_progress is not None:
            on_progress(Progress(f"triton-cpu: {p.stage}", p.elapsed_s))

    (runner or triton_cpu_runner()).check(
        source, options.replace(triton_cpu=True, device="cpu", seeds=1, backward=False), filename, pass_dir, progress
    )
    attached = dataclasses.replace(result, triton_cpu=TRITON_CPU_DIR)
    attached.save(Path(result.run_dir))
    return attached


def check_file(
    path: str | Path,
    options: CheckOptions | None = None,
    run_dir: Path | None = None,
    on_progress: Callable[[Progress], None] | None = None,
) -> CheckResult:
    path = Path(path)
    return check_source(path.read_text(), options, str(path), run_dir, on_progress)


def load_result(run_dir: str | Path) -> CheckResult:
    """Reopen a stored check without running anything."""
    return CheckResult.load(Path(run_dir))
