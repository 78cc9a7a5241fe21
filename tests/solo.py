"""The `solo` marker under pytest-xdist (README's test command runs `pytest -n 2`): a solo test runs with no other
test beside it.

Why: a test that must finish within a budget it measures on the wall clock (a minimization whose size is asserted at
the end of a 240 s budget, issue #32's "within 300 s") would shrink less with a second worker taking half the CPU,
and fail by chance. Mark it `@pytest.mark.solo`.

How: every test takes a turn of one lock per test run, shared by the workers: an ordinary test a shared turn, a solo
test the whole lock, waiting for the running test to end while the gate it holds keeps new ones from starting (so a
stream of ordinary tests cannot starve it). The turn covers setup, call and teardown, fixtures' work included. The
other worker idles meanwhile, which costs no more than running the solo tests in a second, serial pytest, and the
test command stays one pytest. Without xdist there is nothing to share: no lock.
"""

from __future__ import annotations

import fcntl
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO

import pytest


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
    # an xdist worker's own config (not the environment, which a pytest that a test starts inherits)
    worker = getattr(item.config, "workerinput", None)
    if worker is None:
        yield
        return
    base = Path(tempfile.gettempdir()) / f"divergence-pytest-{worker['testrunuid']}"
    with _turn(base, solo=item.get_closest_marker("solo") is not None):
        yield


@contextmanager
def _turn(base: Path, solo: bool) -> Iterator[None]:
    """A readers-writer lock over two flock'ed files: `.gate` orders arrivals, `.lock` is shared or exclusive."""
    with _opened(base.with_suffix(".gate")) as gate, _opened(base.with_suffix(".lock")) as lock:
        fcntl.flock(gate, fcntl.LOCK_EX)
        try:
            fcntl.flock(lock, fcntl.LOCK_EX if solo else fcntl.LOCK_SH)
        finally:
            if not solo:  # an ordinary test lets the next arrival in at once; a solo test holds the gate throughout
                fcntl.flock(gate, fcntl.LOCK_UN)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)
            if solo:
                fcntl.flock(gate, fcntl.LOCK_UN)


@contextmanager
def _opened(path: Path) -> Iterator[IO[str]]:
    with open(path, "a") as f:  # closing the file also drops any lock still held on it
        yield f
