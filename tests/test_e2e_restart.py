"""SIGKILL the app in the middle of a check and of a minimization, restart it, and find nothing lost.

Real server processes on one data directory, driven by Debian chromium: what a crash of a workshop
machine's app looks like. Skips (saying why) without playwright or /usr/bin/chromium.
"""

from __future__ import annotations

import os
import signal
import sqlite3
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.browser_helpers import (
    ARTIFACTS,
    CHROMIUM,
    CHROMIUM_ARGS,
    REPO,
    SLOW,
    skip_without_browser,
    start_server,
    stop_server,
)

skip_without_browser()
from playwright import sync_api  # noqa: E402

DIVERGENT = (REPO / "tests" / "snippets" / "minimize_floor_divide_noisy.py").read_text()


def rows(home: Path, sql: str) -> list[tuple[Any, ...]]:
    conn = sqlite3.connect(home / "app.sqlite")
    try:
        return conn.execute(sql).fetchall()
    finally:
        conn.close()


def processes_of(home: Path) -> list[int]:
    """Processes (the worker, checks, compilers) working in or for this data directory."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            cwd = os.readlink(f"/proc/{entry}/cwd")
            with open(f"/proc/{entry}/environ", "rb") as f:
                environ = f.read()
        except OSError:
            continue
        if cwd.startswith(str(home)) or f"DIVERGENCE_HOME={home}".encode() in environ:
            found.append(int(entry))
    return found


def until(cond: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.5)


def run_program(page: Any, source: str) -> None:
    page.get_by_text("plain text").click()  # test_e2e_app.py covers the highlighted editor
    program = page.get_by_label("Program", exact=True)
    program.fill(source)
    program.press("Control+Enter")
    page.get_by_role("button", name="Run check").click()


def sigkill(proc: Any) -> None:
    os.kill(proc.pid, signal.SIGKILL)  # the app only: its worker must notice on its own
    proc.wait()


@pytest.mark.slow
def test_sigkill_mid_check_and_mid_minimization_loses_nothing(tmp_path: Path, inductor_cache: Path):
    home = tmp_path / "home"
    (ARTIFACTS / "e2e-restart-server.log").unlink(missing_ok=True)  # the servers append to it
    expect = sync_api.expect
    servers = []
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1400, "height": 1800})
        try:
            # 1. a finished run, then the app killed while a second check runs
            proc, url = start_server(home, inductor_cache, "e2e-restart-server.log")
            servers.append(proc)
            assert "bound to 127.0.0.1 only" in (ARTIFACTS / "e2e-restart-server.log").read_text()  # says so at start
            page.goto(url)
            run_program(page, DIVERGENT)
            expect(page.get_by_text("Verdict: DIVERGENT")).to_be_visible(timeout=300_000)
            [(finished,)] = rows(home, "SELECT id FROM runs WHERE status = 'done'")
            run_program(page, SLOW)
            expect(page.get_by_text("▶ loading")).to_be_visible(timeout=60_000)
            sigkill(proc)
            [(cut,)] = rows(home, "SELECT id FROM runs WHERE status = 'running'")  # as the killed app left it
            assert dict(rows(home, "SELECT id, status FROM runs")) == {finished: "done", cut: "running"}
            until(lambda: not processes_of(home), 30, "the worker and its check to end with the app")

            # 2. restarted: the cut run is marked interrupted, the finished one opens without recomputation
            proc, url = start_server(home, inductor_cache, "e2e-restart-server.log")
            servers.append(proc)
            page.goto(f"{url}/?run={cut}")
            expect(page.get_by_text("was interrupted")).to_be_visible(timeout=60_000)
            assert dict(rows(home, "SELECT id, status FROM runs")) == {finished: "done", cut: "interrupted"}
            run_dirs = sorted(os.listdir(home / "runs"))
            page.goto(f"{url}/?run={finished}")
            expect(page.get_by_text("Verdict: DIVERGENT")).to_be_visible(timeout=60_000)
            assert sorted(os.listdir(home / "runs")) == run_dirs

            # 3. a minimization, killed once it has checkpointed a smaller candidate
            page.get_by_role("tab", name="Minimize").click()
            page.get_by_role("button", name="Start minimizing").click()
            expect(page.get_by_text("Minimizing", exact=True)).to_be_visible(timeout=60_000)
            until(lambda: any((home / "minimize-checkpoints").glob("*/best.py")), 240, "a checkpointed best candidate")
            sigkill(proc)
            assert rows(home, "SELECT run_id, status FROM minimizations") == [(finished, "running")]
            until(lambda: not processes_of(home), 30, "the minimization's checks to end with the app")

            # 4. restarted again (running one check at a time, queueing one): marked interrupted, Resume continues
            proc, url = start_server(
                home,
                inductor_cache,
                "e2e-restart-server.log",
                {"DIVERGENCE_MAX_RUNNING": "1", "DIVERGENCE_MAX_QUEUED": "1"},
            )
            servers.append(proc)
            page.goto(f"{url}/?run={finished}")
            page.get_by_role("tab", name="Minimize").click()
            expect(page.get_by_text("was interrupted")).to_be_visible(timeout=60_000)
            assert rows(home, "SELECT status FROM minimizations") == [("interrupted",)]
            page.get_by_role("button", name="Resume minimizing").click()
            expect(page.get_by_text("resuming from the checkpoint")).to_be_visible(timeout=120_000)
            assert rows(home, "SELECT status FROM minimizations") == [("running",)]
            ARTIFACTS.mkdir(exist_ok=True)
            page.screenshot(path=str(ARTIFACTS / "e2e-restart-resumed.png"), full_page=True)
            page.get_by_role("button", name="Stop").click()
            until(lambda: rows(home, "SELECT status FROM minimizations") == [("stopped",)], 120, "Stop to take effect")

            # 5. three users at once: one runs, one waits in the queue, one is turned away; each cancels only its own
            users = [browser.new_page(viewport={"width": 1400, "height": 1400}) for _ in range(3)]
            for user in users:
                user.goto(url)
            run_program(users[0], SLOW)
            expect(users[0].get_by_text("▶ loading")).to_be_visible(timeout=60_000)
            run_program(users[1], SLOW)
            expect(users[1].get_by_text("▶ queued (next)")).to_be_visible(timeout=30_000)
            run_program(users[2], SLOW)
            expect(users[2].get_by_text("Verdict: ERROR")).to_be_visible(timeout=30_000)
            expect(users[2].get_by_text("error (busy)").first).to_be_visible()
            users[0].get_by_role("button", name="Cancel").click()
            expect(users[0].get_by_text("cancelled").first).to_be_visible(timeout=30_000)
            expect(users[1].get_by_text("▶ loading")).to_be_visible(
                timeout=60_000
            )  # handed the freed slot, still running
            users[1].get_by_role("button", name="Cancel").click()
            expect(users[1].get_by_text("cancelled").first).to_be_visible(timeout=30_000)
        finally:
            browser.close()
            for proc in servers:
                stop_server(proc)
