"""The app's threads parse Python at once (Streamlit compiles the page on every rerun; minimizations and Localize parse
programs): CPython 3.11's AST constructor then raised "SystemError: AST constructor recursion depth mismatch" where a
garbage collection switched threads midway (CI: tests/test_app_minimize.py's watcher got "Script compilation error").
The race is provoked here as it happens: threads parsing a real module while gc runs a Python callback.
"""

from __future__ import annotations

import ast
import gc
import threading
import time
from pathlib import Path

import pytest

from app.web import ast_lock

SOURCE = (Path(__file__).resolve().parents[1] / "engine" / "child" / "inside.py").read_text()


def _parse_in_threads(threads: int = 3, rounds: int = 60) -> list[BaseException]:
    errors: list[BaseException] = []

    def switch(phase: str, info: dict) -> None:
        time.sleep(0)  # what a finalizer run by the collector may do: let another thread run

    def work() -> None:
        for _ in range(rounds):
            try:
                ast.parse(SOURCE)
            except SystemError as exc:
                errors.append(exc)
                return

    threshold = gc.get_threshold()
    gc.callbacks.append(switch)
    gc.set_threshold(50, 2, 2)
    try:
        workers = [threading.Thread(target=work) for _ in range(threads)]
        for w in workers:
            w.start()
        for w in workers:
            w.join()
    finally:
        gc.callbacks.remove(switch)
        gc.set_threshold(*threshold)
    return errors


@pytest.fixture
def plain_parse():
    """ast.parse as it was before the test: install() patches the process, the test puts it back."""
    original = ast.parse
    yield
    ast.parse = original


def test_with_the_lock_threads_parse_at_once_without_a_system_error(plain_parse) -> None:
    ast_lock.install()
    ast_lock.install()  # twice: one wrapper, not two
    assert not getattr(ast.parse.__wrapped__, "_serialised", False)
    assert _parse_in_threads() == []
