"""Starting `divergence serve` and Debian chromium for the end-to-end tests in a real browser."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Mapping
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
ARTIFACTS = REPO / "test-artifacts"
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]

# stays in its "loading" stage until cancelled (or killed with the app)
SLOW = """import time, torch

def fn(x):
    return x + 1

def inputs():
    time.sleep(300)
    return (torch.ones(3),)
"""


def skip_without_browser() -> None:
    """Skip the calling test module (saying why) without python playwright or /usr/bin/chromium."""
    pytest.importorskip("playwright.sync_api", reason="python playwright is not installed (pip install -e '.[test]')")
    if not os.access(CHROMIUM, os.X_OK):
        pytest.skip(
            f"Debian chromium not found at {CHROMIUM} (.ci/run installs it: apt-get install chromium)",
            allow_module_level=True,
        )


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_server(
    home: Path, inductor_cache: Path, log_name: str, extra_env: Mapping[str, str] | None = None
) -> tuple[subprocess.Popen[bytes], str]:
    """`divergence serve` on its own data directory; returns once Streamlit answers its health check."""
    port = free_port()
    ARTIFACTS.mkdir(exist_ok=True)
    env = {
        **os.environ,
        "DIVERGENCE_HOME": str(home),
        "TORCHINDUCTOR_CACHE_DIR": str(inductor_cache),
        **(extra_env or {}),
    }
    env.pop("STREAMLIT_SERVER_ADDRESS", None)
    with open(ARTIFACTS / log_name, "ab") as log:
        proc = subprocess.Popen(
            [sys.executable, "-m", "app.cli.main", "serve", "--port", str(port)],
            cwd=REPO,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 90
    while True:
        try:
            with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2) as r:
                if r.read().strip() == b"ok":
                    return proc, url
        except OSError:
            pass
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            pytest.fail(f"divergence serve did not come up; see {ARTIFACTS / log_name}")
        time.sleep(0.3)


def stop_server(proc: subprocess.Popen[bytes]) -> None:
    """SIGTERM lets Streamlit exit cleanly, so the app's runner closes its worker at exit."""
    if proc.poll() is not None:
        return
    os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
