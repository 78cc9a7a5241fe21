"""Helpers shared by the AppTest tests that follow a background job across reruns."""

from __future__ import annotations

import time
from typing import Callable

from streamlit.testing.v1 import AppTest


def wait_for(at: AppTest, cond: Callable[[AppTest], bool], timeout: float, what: str) -> None:
    """Rerun the page (as the live fragment would) until cond holds."""
    deadline = time.monotonic() + timeout
    while not cond(at):
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(1.0)
        at.run()
        assert not at.exception, at.exception
