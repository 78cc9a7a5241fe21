"""shrinkray as an optional final polish: its CLI, in its own Python 3.12 environment, asking our oracle.

shrinkray needs Python >= 3.12 and cannot live in the torch environment, so it runs as a subprocess.
Its interestingness test is a tiny stdlib-only script that sends the candidate over a Unix socket to
this process, where the Problem answers it: the warm worker, the candidate cache and the static
pre-filter serve shrinkray's candidates exactly as they serve our own passes. shrinkray is looked up
in $DIVERGENCE_SHRINKRAY, then on PATH; when it is missing the caller says so once and carries on.
"""

from __future__ import annotations

import os
import shutil
import socket
import socketserver
import subprocess
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

INTERESTINGNESS = '''import socket, sys
data = open(sys.argv[1], "rb").read()
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.connect({path!r})
s.sendall(len(data).to_bytes(8, "big") + data)
sys.exit(0 if s.recv(1) == b"1" else 1)
'''


def find_shrinkray() -> str | None:
    explicit = os.environ.get("DIVERGENCE_SHRINKRAY")
    if explicit:
        return explicit if Path(explicit).exists() else None
    return shutil.which("shrinkray")


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
    import time

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
    script.write_text(f"#!/bin/sh\nexec {python} {test} \"$1\"\n")
    script.chmod(0o755)
    args = [executable, "--ui", "basic", "--input-type", "arg", "--parallelism", str(parallelism), "--timeout", str(timeout_s),
            "--no-history", "--formatter", "none", "--trivial-is-not-error", "--volume", "quiet", str(script), str(target)]
    if "--no-llm" in _help(executable):
        args.insert(1, "--no-llm")
    started = time.monotonic()
    try:
        done = subprocess.run(args, capture_output=True, text=True, timeout=budget_s, cwd=work)
        code, log = done.returncode, (done.stdout + done.stderr)[-4000:]
    except subprocess.TimeoutExpired:
        code, log = -1, "stopped at the time budget"  # shrinkray writes improvements in place, so the file holds its best
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
