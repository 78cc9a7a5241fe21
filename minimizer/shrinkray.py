"""shrinkray as an optional final polish: its CLI, in its own Python 3.12 environment, asking our oracle.

shrinkray needs Python >= 3.12 and cannot live in the torch environment, so it runs as a subprocess.
Its interestingness test is a tiny stdlib-only script that sends the candidate over a Unix socket to
this process, where the Problem answers it: the warm worker, the candidate cache and the static
pre-filter serve shrinkray's candidates exactly as they serve our own passes. shrinkray is looked up
in $DIVERGENCE_SHRINKRAY, then in the venv `divergence install-shrinkray` makes, then on PATH; when it
is missing the caller says so once and carries on.
"""

from __future__ import annotations

import os
import shutil
import socket
import socketserver
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

INTERESTINGNESS = """import socket, sys
data = open(sys.argv[1], "rb").read()
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.connect({path!r})
s.sendall(len(data).to_bytes(8, "big") + data)
sys.exit(0 if s.recv(1) == b"1" else 1)
"""


# Releases from 26.7.7 on pull llama-cpp-python and switch an LLM pass on by default.
PINNED = "shrinkray==26.7.5.7"


class InstallError(Exception):
    """shrinkray could not be installed; the message says why and what to do."""


def default_venv() -> Path:
    from engine.paths import home

    return home() / "shrinkray-venv"


def find_shrinkray() -> str | None:
    explicit = os.environ.get("DIVERGENCE_SHRINKRAY")
    if explicit:
        return explicit if Path(explicit).exists() else None
    installed = default_venv() / "bin" / "shrinkray"
    return str(installed) if installed.exists() else shutil.which("shrinkray")


def find_python312() -> str | None:
    """An interpreter new enough for shrinkray: python3.13/3.12 on PATH, else one of pyenv's versions."""
    candidates = [shutil.which(name) for name in ("python3.13", "python3.12")]
    pyenv_root = Path(os.environ.get("PYENV_ROOT") or Path.home() / ".pyenv")
    if shutil.which("pyenv"):
        try:
            pyenv_root = Path(
                subprocess.run(["pyenv", "root"], capture_output=True, text=True, timeout=30).stdout.strip()
                or pyenv_root
            )
        except (OSError, subprocess.TimeoutExpired):
            pass
    candidates += sorted((str(p) for p in pyenv_root.glob("versions/3.1[2-9]*/bin/python")), reverse=True)
    return next((python for python in filter(None, candidates) if _new_enough(python)), None)


def _new_enough(python: str) -> bool:
    try:
        probe = subprocess.run(
            [python, "-c", "import sys, venv; print(sys.version_info >= (3, 12))"],
            capture_output=True,
            text=True,
            timeout=30,
        )
    except (OSError, subprocess.TimeoutExpired):
        return False
    return probe.stdout.strip() == "True"


def install_shrinkray(venv: Path | None = None, python: str | None = None) -> str:
    """Create a venv with the pinned shrinkray and return its executable; raises InstallError saying why not."""
    venv = venv or default_venv()
    if python is not None and not _new_enough(python):
        # on an older Python pip does not fail: it silently installs an unrelated 0.0.2 of that name
        raise InstallError(f"{python} is not a Python >= 3.12, which shrinkray needs")
    python = python or find_python312()
    if python is None:
        raise InstallError(
            "shrinkray needs Python >= 3.12 and none was found (python3.12, python3.13 or pyenv); "
            "install one, or point DIVERGENCE_SHRINKRAY at an existing shrinkray executable"
        )
    for step in (
        [python, "-m", "venv", str(venv)],
        [str(venv / "bin" / "python"), "-m", "pip", "install", "-q", PINNED],
    ):
        try:
            done = subprocess.run(step, capture_output=True, text=True, timeout=900)
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise InstallError(f"{' '.join(step[:3])} failed: {exc}") from exc
        if done.returncode != 0:
            raise InstallError(
                f"{' '.join(step)} failed (exit {done.returncode}):\n{(done.stdout + done.stderr)[-2000:]}"
            )
    executable = venv / "bin" / "shrinkray"
    if not executable.exists():
        raise InstallError(f"pip finished but {executable} is missing")
    return str(executable)


@dataclass(frozen=True)
class ShrinkrayRun:
    result: str
    returncode: int
    seconds: float
    log_tail: str


class _Handler(socketserver.StreamRequestHandler):
    def handle(self) -> None:
        size = int.from_bytes(self.rfile.read(8), "big")
        candidate = self.rfile.read(size).decode("utf-8", "replace")
        server = self.server
        assert isinstance(server, _Server)
        answer = b"1" if server.decide(candidate) else b"0"
        try:
            self.wfile.write(answer)
        except BrokenPipeError:
            pass  # shrinkray timed the test out; the answer is cached, so asking again costs nothing


class _Server(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
    daemon_threads = True

    def __init__(self, path: str, decide: Callable[[str], bool]) -> None:
        self.decide = decide
        super().__init__(path, _Handler)


def run_shrinkray(
    executable: str,
    source: str,
    decide: Callable[[str], bool],
    parallelism: int = 2,
    timeout_s: float = 120.0,
    budget_s: float | None = None,
) -> ShrinkrayRun:
    """Reduce `source` with shrinkray, answering its interestingness questions with `decide` (thread-safe)."""
    work = Path(tempfile.mkdtemp(prefix="shrinkray-"))
    sock = str(work / "oracle.sock")
    server = _Server(sock, decide)
    thread = threading.Thread(target=server.serve_forever, daemon=True, name="shrinkray-oracle")
    thread.start()
    target = work / "candidate.py"
    target.write_text(source)
    test = work / "interesting.py"
    test.write_text(INTERESTINGNESS.format(path=sock))
    python = str(Path(executable).with_name("python")) if Path(executable).with_name("python").exists() else "python3"
    script = work / "interesting.sh"
    script.write_text(f'#!/bin/sh\nexec {python} {test} "$1"\n')
    script.chmod(0o755)
    args = [
        executable,
        "--ui",
        "basic",
        "--input-type",
        "arg",
        "--parallelism",
        str(parallelism),
        "--timeout",
        str(timeout_s),
        "--no-history",
        "--formatter",
        "none",
        "--trivial-is-not-error",
        "--volume",
        "quiet",
        str(script),
        str(target),
    ]
    if "--no-llm" in _help(executable):
        args.insert(1, "--no-llm")
    started = time.monotonic()
    try:
        done = subprocess.run(args, capture_output=True, text=True, timeout=budget_s, cwd=work)
        code, log = done.returncode, (done.stdout + done.stderr)[-4000:]
    except subprocess.TimeoutExpired:
        code, log = (
            -1,
            "stopped at the time budget",
        )  # shrinkray writes improvements in place, so the file holds its best
    finally:
        server.shutdown()
        server.server_close()
    return ShrinkrayRun(target.read_text(), code, time.monotonic() - started, log)


def _help(executable: str) -> str:
    try:
        return subprocess.run([executable, "--help"], capture_output=True, text=True, timeout=60).stdout
    except (OSError, subprocess.TimeoutExpired):
        return ""


def socket_available() -> bool:
    return hasattr(socket, "AF_UNIX")
