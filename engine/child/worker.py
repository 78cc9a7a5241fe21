"""The warm worker: a process that imports torch once, then forks one child per check.

This is the far side of the process boundary, started by engine/runner.py as `python -m
engine.child.worker`; no module of the caller's side imports it, and it imports none of theirs.

Protocol (JSON lines): requests on stdin, events on the original stdout. Each child runs in its own
process group with resource limits and its output redirected to `output.log` in its run directory,
so a crash, a hang or a flood of output in user code never reaches the caller.

Nothing here runs on import.
"""

from __future__ import annotations

import json
import os
import resource
import signal
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from engine import records
from engine.protocol import OUTPUT_LOG

MAX_LOG_BYTES = 256 * 1024 * 1024


class CallerGone(BaseException):
    """The caller closed its end of the protocol (it was killed): what a check would write now, nobody asked for.

    A BaseException, so neither the snippet's `except Exception` nor the check's own error handling records it.
    """


class Events:
    """Writes protocol lines with single os.write calls, so lines from children and the reaper never interleave."""

    def __init__(self, fd: int) -> None:
        self.fd = fd

    def send(self, **event: Any) -> None:
        try:
            os.write(self.fd, (json.dumps(event) + "\n").encode())
        except BrokenPipeError:
            raise CallerGone() from None


def _limit_resources(memory_limit_mb: int, limit_address_space: bool) -> None:
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    resource.setrlimit(resource.RLIMIT_FSIZE, (MAX_LOG_BYTES, MAX_LOG_BYTES))
    if limit_address_space:
        # CUDA reserves huge virtual ranges, so the address-space cap is for CPU checks; the parent also watches RSS
        limit = memory_limit_mb * 1024 * 1024
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))


def _child(request: dict[str, Any], events: Events) -> None:
    """Runs in the forked child; never returns."""
    status = 0
    me = os.getpid()
    try:
        os.setsid()
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        run_dir = Path(request["run_dir"])
        run_dir.mkdir(parents=True, exist_ok=True)
        log = os.open(run_dir / OUTPUT_LOG, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        devnull = os.open(os.devnull, os.O_RDONLY)
        os.dup2(devnull, 0)
        os.dup2(log, 1)
        os.dup2(log, 2)
        os.chdir(run_dir)

        import torch

        from engine.child.execution import internal_error, run_check
        from engine.child.sandbox import confine
        from engine.options import CheckOptions

        options = records.from_json(CheckOptions, request["options"])
        cpu = options.device == "cpu" or not torch.cuda.is_available()
        _limit_resources(options.memory_limit_mb, limit_address_space=cpu)
        cpu_seconds = int(options.timeout_s * 2) + 30  # compile work counts; the wall-time limit is the caller's
        confinement = confine(run_dir, os.environ.get("TORCHINDUCTOR_CACHE_DIR"), cpu_seconds, options.max_processes)
        job = request["job"]
        try:
            run_check(
                request["source"],
                request["filename"],
                options,
                run_dir,
                lambda stage, detail="": events.send(job=job, event="stage", stage=stage, detail=detail, t=time.time()),
                notes=confinement.notes,
                after=_localization_step(options, run_dir),
            )
        except CallerGone:
            # a killed caller (a SIGKILLed sweep) left this check behind: writing an error result now would make a
            # resumed sweep keep it as finished instead of running it again
            pass
        except BaseException as exc:  # run_check turns user errors into results; anything left is ours
            if os.getpid() == me:  # not a copy that the snippet forked
                internal_error(options, run_dir, exc)
    except BaseException:
        status = 70
    finally:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            os._exit(status)


def _localization_step(options: Any, run_dir: Path) -> Callable[[Any, Any], None] | None:
    """What a check with `localize` set runs after it, in the same child, so that its state dies with it."""
    if options.localize is None:
        return None

    def step(run: Any, result: Any) -> None:
        from engine.child.execution import inductor_config_patch

        if options.localize == "bisect":
            from engine.child.bisect import bisect_in_child as localize
        else:
            from engine.child.intermediates import localize_in_child as localize
        run.emit(f"localize: {options.localize}")
        with inductor_config_patch(options.inductor_config):
            localize(run, result, run_dir)
        run.emit("done")

    return step


class _Reaper(threading.Thread):
    """Waits for children and reports how each one ended."""

    def __init__(self, events: Events) -> None:
        super().__init__(daemon=True)
        self.events = events
        self.jobs: dict[int, str] = {}
        self.lock = threading.Condition()

    def add(self, pid: int, job: str) -> None:
        with self.lock:
            self.jobs[pid] = job
            self.lock.notify()

    def run(self) -> None:
        while True:
            with self.lock:
                while not self.jobs:
                    self.lock.wait()
            try:
                pid, status = os.wait()
            except ChildProcessError:
                time.sleep(0.05)
                continue
            with self.lock:
                job = self.jobs.pop(pid, None)
            if job is None:
                continue
            from engine.child.sandbox import clean_up

            clean_up(pid)  # leftovers of a fork bomb or an orphaned compiler must not outlive the check
            signum = os.WTERMSIG(status) if os.WIFSIGNALED(status) else None
            code = os.WEXITSTATUS(status) if os.WIFEXITED(status) else None
            self.events.send(job=job, event="exit", pid=pid, code=code, signal=signum)


def main() -> None:
    events = Events(os.dup(1))
    os.dup2(2, 1)  # stray prints of the worker itself must not corrupt the protocol
    started = time.time()
    import torch
    import torch._dynamo  # noqa: F401  (warm: the children inherit these imports)
    import torch._inductor.compile_fx  # noqa: F401

    import engine.child.execution  # noqa: F401
    from engine.child.inductor_warmup import warm

    imported = time.time() - started
    warmed = warm()  # Inductor's once-per-process set-up, inherited by every check instead of paid by each
    events.send(event="ready", pid=os.getpid(), torch=torch.__version__, import_s=imported, warm=warmed)
    reaper = _Reaper(events)
    reaper.start()
    for line in sys.stdin:
        if not line.strip():
            continue
        request = json.loads(line)
        if request.get("op") == "exit":
            break
        pid = os.fork()
        if pid == 0:
            _child(request, events)
        reaper.add(pid, request["job"])
        events.send(job=request["job"], event="started", pid=pid)
    # stdin closed or "exit": the caller is gone (perhaps SIGKILLed), and with it every watchdog, so no
    # check may outlive it; its run stays without a result and the app marks it interrupted
    with reaper.lock:
        orphans = list(reaper.jobs)
    from engine.child.sandbox import clean_up

    for pid in orphans:
        clean_up(pid)
    # nothing is left to flush or finalise, and tearing down an interpreter that imported torch, Dynamo and
    # Inductor takes seconds (`divergence check` waits for it in Runner.close)
    sys.stderr.flush()
    os._exit(0)


if __name__ == "__main__":
    main()
