"""Helpers shared by the AppTest tests that follow a background job across reruns."""

from __future__ import annotations

import time
from collections.abc import Callable

from streamlit.testing.v1 import AppTest


def wait_for(at: AppTest, cond: Callable[[AppTest], bool], timeout: float, what: str) -> None:
    """Rerun the page (as the live fragment would) until cond holds."""
    deadline = time.monotonic() + timeout
    while not cond(at):
        assert time.monotonic() < deadline, f"timed out waiting for {what}; the page shows: {page_text(at)}"
        time.sleep(1.0)
        at.run()
        assert not at.exception, at.exception


def check_in_app(app: str, source: str, timeout: float) -> tuple[AppTest, str]:
    """Paste the source into a fresh page and run the check; the page and the run id it shows."""
    at = AppTest.from_file(app, default_timeout=timeout)
    at.run()
    at.text_area(key="source").input(source).run()
    at.button(key="run").click().run()
    assert not at.exception, at.exception
    return at, str(at.query_params["run"])


def page_text(at: AppTest) -> str:
    """What a reader of the page would see, for a failure message."""
    kinds = ("success", "warning", "error", "info", "caption", "markdown", "metric")
    return "; ".join(f"{k}: {getattr(e, 'label', '')} {e.value}" for k in kinds for e in at.get(k))[:4000]


def has_button(at: AppTest, key: str) -> bool:
    return any(b.key == key for b in at.button)
