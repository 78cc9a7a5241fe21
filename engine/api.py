"""The engine's public entry points: check a snippet's source or file in a warm worker."""

from __future__ import annotations

import atexit
import threading
from pathlib import Path
from typing import Callable

from engine.options import CheckOptions
from engine.result import CheckResult
from engine.runner import Progress, Runner

_default: Runner | None = None
_default_lock = threading.Lock()


def default_runner() -> Runner:
    """The process-wide runner, created on first use and closed at exit."""
    global _default
    with _default_lock:
        if _default is None:
            _default = Runner()
            atexit.register(_default.close)
        return _default


def check_source(
    source: str,
    options: CheckOptions | None = None,
    filename: str = "snippet.py",
    run_dir: Path | None = None,
    on_progress: Callable[[Progress], None] | None = None,
) -> CheckResult:
    """Check a snippet (any of the three styles) eager vs compiled; never runs it in this process."""
    return default_runner().check(source, options, filename, run_dir, on_progress)


def check_file(path: str | Path, options: CheckOptions | None = None, run_dir: Path | None = None, on_progress: Callable[[Progress], None] | None = None) -> CheckResult:
    path = Path(path)
    return check_source(path.read_text(), options, str(path), run_dir, on_progress)


def load_result(run_dir: str | Path) -> CheckResult:
    """Reopen a stored check without running anything."""
    return CheckResult.load(Path(run_dir))
