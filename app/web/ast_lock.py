"""One thread at a time in `ast.parse` in the app's process.

CPython 3.11's AST constructor keeps its recursion depth in interpreter-wide state. A garbage collection that runs
Python code midway (a finalizer, a gc callback) can switch threads, and a second thread's `ast.parse` then leaves
the first one's count off: "SystemError: AST constructor recursion depth mismatch" (python/cpython#106905; its fix
PR #106906 removed one cause, not the sharing). The app parses in several threads at once: Streamlit compiles the
page script with `ast.parse` on every rerun (its "magic"), and each minimization's thread parses candidate programs.
A user then saw "Script compilation error" in place of the page, or a minimization ended in that error (CI caught it
in tests/test_app_minimize.py). Serialising `ast.parse` for the whole process removes the race; a parse is
milliseconds, so the wait is nothing beside a check.
"""

from __future__ import annotations

import ast
import functools
import threading
from typing import Any

_LOCK = threading.RLock()  # re-entrant: a finalizer that parses on the same thread must not deadlock


def install() -> None:
    """Wrap `ast.parse` with the process-wide lock (once; later calls do nothing)."""
    if getattr(ast.parse, "_serialised", False):
        return
    original = ast.parse

    @functools.wraps(original)
    def parse(*args: Any, **kwargs: Any) -> ast.AST:
        with _LOCK:
            return original(*args, **kwargs)

    parse._serialised = True  # type: ignore[attr-defined]
    ast.parse = parse  # type: ignore[assignment]
