"""The caller's side of the worker: submit checks, follow their progress, enforce limits, cancel.

User code never runs in this process. One warm worker (torch imported once) forks a child per check;
this module kills a child that runs past its wall-time or memory limit, and turns every way a child
can end (result written, signal, exit, kill) into a CheckResult.

At most `max_running` checks run at once (more only slow each other down on a few cores); the rest
wait in a FIFO queue of at most `max_queued`, and a check submitted to a full queue ends at once as
an ERROR of kind BUSY. Queued time does not count against a check's wall-time limit.
"""

from __future__ import annotations

import dataclasses
import itertools
import json
import os
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from engine import records
from engine.judge.verdicts import ErrorKind, Verdict
from engine.options import CheckOptions
from engine.paths import home, inductor_cache_dir, new_run_dir
from engine.protocol import OUTPUT_LOG, WORKER_MODULE
from engine.result import RESULT_FILE, CheckResult, ErrorInfo
from engine.snippet import SnippetError, detect_style

TAIL_CHARS = 4000
_READY_TIMEOUT_S = 180.0


class WorkerUnavailable(RuntimeError):
    """The worker process could not be started."""


@dataclass(frozen=True)
class Progress:
    stage: str
    elapsed_s: float
    stages: tuple[tuple[str, float], ...] = ()  # seconds of every stage so far, the current one up to now
    detail: str = (
        ""  # what the stage is doing now ("graph 1: lowering" while compiling); its seconds count to the stage
    )


def _stage_name(stage: str) -> str:
    """Queue positions are one stage; after the child's "done", writing and reading the result is another."""
    if stage.startswith("queued"):
        return "queued"
    return "finishing" if stage == "done" else stage


class Job:
    """One submitted check. Thread-safe; `wait()` returns its CheckResult."""

    def __init__(
        self, job_id: str, run_dir: Path, options: CheckOptions, on_progress: Callable[[Progress], None] | None
    ) -> None:
        self.id = job_id
        self.run_dir = run_dir
        self.options = options
        self._on_progress = on_progress
        self._started = time.monotonic()
        self._dispatched = self._started  # reset when it leaves the queue: the wall-time limit counts from there
        self._stage = "queued"
        self._detail = ""
        self._timeline: list[tuple[str, float]] = [("queued", self._started)]  # (stage, when it began)
        self._pid: int | None = None
        self._dequeue: Callable[[Job], bool] | None = None  # set by the runner while the job waits in its queue
        self._kill_reason: tuple[ErrorKind, str] | None = None
        self._result: CheckResult | None = None
        self._done = threading.Event()
        self._lock = threading.Lock()

    @property
    def progress(self) -> Progress:
        now = time.monotonic()
        return Progress(self._stage, now - self._started, tuple(self.stage_seconds(now).items()), self._detail)

    def stage_seconds(self, until: float | None = None) -> dict[str, float]:
        """Seconds per stage, from the stage changes as this side saw them: queued, starting worker (the
        worker's start when it was not running, else the fork), the child's stages, finishing. They add
        up to the time since submission, so that every second is accounted for."""
        now = time.monotonic() if until is None else until
        timeline = list(self._timeline)
        seconds: dict[str, float] = {}
        for (stage, start), (_, end) in zip(timeline, timeline[1:] + [("", now)], strict=True):
            name = _stage_name(stage)
            seconds[name] = seconds.get(name, 0.0) + max(0.0, end - start)
        return seconds

    def done(self) -> bool:
        return self._done.is_set()

    def wait(self, timeout: float | None = None) -> CheckResult:
        if not self._done.wait(timeout):
            raise TimeoutError(f"check {self.id} still running after {timeout} s")
        assert self._result is not None
        return self._result

    def cancel(self) -> None:
        self._kill(ErrorKind.CANCELLED, "the check was cancelled")

    # -- called by the runner's threads --
    def _set_stage(self, stage: str, detail: str = "") -> None:
        moved = stage != self._stage or not detail  # a new detail of the same stage is not a new stage
        self._stage, self._detail = stage, detail
        if moved and not self._done.is_set():
            self._timeline.append((stage, time.monotonic()))
        if self._on_progress is not None:
            try:
                self._on_progress(self.progress)
            except Exception:  # a broken progress callback must not lose the check
                pass

    def _set_pid(self, pid: int) -> None:
        with self._lock:
            self._pid = pid
            reason = self._kill_reason
        if reason is not None:
            _killpg(pid)
        threading.Thread(target=self._watch, daemon=True, name=f"watch-{self.id}").start()

    def _kill(self, kind: ErrorKind, message: str) -> None:
        with self._lock:
            if self._done.is_set() or self._kill_reason is not None:
                return
            self._kill_reason = (kind, message)
            pid = self._pid
        if pid is not None:
            _killpg(pid)
        elif self._dequeue is not None and self._dequeue(self):
            self._finish(None, None)  # it never left the queue: nothing ran
        # else: the child is not forked yet; _set_pid kills it the moment the worker reports it

    def _watch(self) -> None:

        limit_bytes = self.options.memory_limit_mb * 1024 * 1024
        output_limit = self.options.max_output_mb * 1024 * 1024
        while not self._done.wait(0.2):
            elapsed = time.monotonic() - self._dispatched
            if elapsed > self.options.timeout_s:
                self._kill(
                    ErrorKind.TIMEOUT,
                    f"the check ran past its {self.options.timeout_s:g} s wall-time limit during stage '{self._stage}'",
                )
            elif self._pid is not None and _group_size(self._pid) > self.options.max_processes:
                self._kill(
                    ErrorKind.PROCESSES,
                    f"the check started more than {self.options.max_processes} processes (a fork bomb?) during stage"
                    f" '{self._stage}'",
                )
            elif self._pid is not None and _group_rss(self._pid) > limit_bytes:
                self._kill(
                    ErrorKind.MEMORY,
                    f"the check used more than its {self.options.memory_limit_mb} MB memory limit during stage"
                    f" '{self._stage}'",
                )
            elif _size(self.run_dir / OUTPUT_LOG) > output_limit:
                self._kill(
                    ErrorKind.OUTPUT,
                    f"the snippet printed more than {self.options.max_output_mb} MB during stage '{self._stage}'; the"
                    " output was cut there",
                )

    def _end(self, kind: ErrorKind, message: str) -> None:
        """End without a child: refused (snippet, queue), or the worker could not take it."""
        self._result = dataclasses.replace(
            error_result(self.options, kind, message, run_dir=self.run_dir), stage_seconds=self.stage_seconds()
        )
        self._result.save(self.run_dir)
        self._stage = "done"
        self._done.set()

    def _finish(self, code: int | None, signum: int | None) -> None:
        with self._lock:
            reason = self._kill_reason
        tail = output_tail(self.run_dir)
        result: CheckResult | None = None
        if reason is None and (self.run_dir / RESULT_FILE).exists():
            try:
                result = CheckResult.load(self.run_dir)
            except (OSError, ValueError, KeyError, TypeError) as exc:
                reason = (ErrorKind.INTERNAL, f"the result file could not be read: {exc}")
        if result is None:
            if reason is None:
                reason = _death_reason(code, signum, self._stage)
            result = error_result(self.options, reason[0], reason[1], tail, self.run_dir)
        elif tail and not result.output_tail:
            result = _with_tail(result, tail)
        # this side's clock covers the whole check, worker start and result included, with the same stages
        result = dataclasses.replace(result, stage_seconds=self.stage_seconds())
        result.save(self.run_dir)
        self._result = result
        self._stage = "done"
        self._done.set()
        if self._on_progress is not None:
            self._set_stage("done")


def _with_tail(result: CheckResult, tail: str) -> CheckResult:
    error = result.error
    if error is not None and not error.output_tail:
        error = dataclasses.replace(error, output_tail=tail)
    return dataclasses.replace(result, output_tail=tail, error=error)


def _death_reason(code: int | None, signum: int | None, stage: str) -> tuple[ErrorKind, str]:
    if signum is not None:
        name = signal.Signals(signum).name if signum in signal.Signals._value2member_map_ else f"signal {signum}"
        if signum == signal.SIGKILL:
            return (
                ErrorKind.MEMORY,
                (
                    f"the worker was killed (SIGKILL) during stage '{stage}', most likely by the system's out-of-memory"
                    " killer"
                ),
            )
        if signum == signal.SIGXCPU:
            return ErrorKind.TIMEOUT, f"the check used up its CPU-time limit during stage '{stage}'"
        if signum == signal.SIGXFSZ:
            return (
                ErrorKind.CRASH,
                (
                    f"the worker was stopped (SIGXFSZ) during stage '{stage}': it wrote more output than the file-size"
                    " limit allows"
                ),
            )
        return ErrorKind.CRASH, f"the Python interpreter crashed with {name} during stage '{stage}'"
    return (
        ErrorKind.CRASH,
        (
            f"the worker exited with status {code} during stage '{stage}' before writing a result (os._exit or a fatal"
            " error in native code?)"
        ),
    )


def error_result(
    options: CheckOptions, kind: ErrorKind, message: str, tail: str = "", run_dir: Path | None = None
) -> CheckResult:
    return CheckResult(
        verdict=Verdict.ERROR,
        # one line, as the worker's own error results: a message's later lines (a syntax error's caret) need its layout
        explanation=f"error ({kind.value}): {message.splitlines()[0] if message else ''}",
        options=options,
        error=ErrorInfo(kind, message, output_tail=tail),
        output_tail=tail,
        run_dir=str(run_dir) if run_dir else None,
    )


def output_tail(run_dir: Path, chars: int = TAIL_CHARS) -> str:

    path = run_dir / OUTPUT_LOG
    try:
        with path.open("rb") as f:
            f.seek(0, os.SEEK_END)
            size = f.tell()
            f.seek(max(0, size - chars * 4))
            return f.read().decode("utf-8", "replace")[-chars:]
    except OSError:
        return ""


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def _killpg(pid: int) -> None:
    for kill in (lambda: os.killpg(pid, signal.SIGKILL), lambda: os.kill(pid, signal.SIGKILL)):
        try:
            kill()
            return
        except (ProcessLookupError, PermissionError):
            continue


def _group_size(pid: int) -> int:
    return len(descendants(pid))


def descendants(pid: int) -> set[int]:
    """The child and every process below it."""
    pending = [pid]
    seen: set[int] = set()
    while pending:
        p = pending.pop()
        if p in seen:
            continue
        seen.add(p)
        try:
            for task in os.listdir(f"/proc/{p}/task"):
                with open(f"/proc/{p}/task/{task}/children") as f:
                    pending.extend(int(c) for c in f.read().split())
        except (OSError, ValueError):
            continue
    return seen


def _group_rss(pid: int) -> int:
    """Memory of the child and its descendants (compilers included), in bytes.

    Proportional set size, so pages that forked copies still share are counted once, not per copy.
    """
    total = 0
    for p in descendants(pid):
        try:
            with open(f"/proc/{p}/smaps_rollup") as f:
                for line in f:
                    if line.startswith("Pss:"):
                        total += int(line.split()[1]) * 1024
                        break
        except (OSError, ValueError):
            continue
    return total


def default_max_running() -> int:
    """Two checks at once on the usual small machine: one compiles while the other runs; more only thrash."""
    return max(1, min(4, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)))


class Runner:
    """Owns one warm worker process, the checks running in it and the queue in front of it."""

    def __init__(
        self,
        cache_dir: Path | None = None,
        python: str | None = None,
        env: Mapping[str, str] | None = None,
        max_running: int | None = None,
        max_queued: int | None = None,
    ) -> None:
        self.cache_dir = cache_dir or inductor_cache_dir()
        self.python = python or sys.executable
        self.env = dict(env or {})  # set in the worker before it imports torch
        self.max_running = max(1, max_running or default_max_running())
        self.max_queued = max_queued  # None: unbounded (a script that submits many checks just waits)
        self._queue: deque[tuple[Job, str]] = deque()  # (job, filename) waiting for a free slot
        self._sources: dict[str, str] = {}
        self._running = 0  # jobs handed to the worker and not finished
        self._proc: subprocess.Popen[bytes] | None = None
        self._jobs: dict[str, tuple[Job, subprocess.Popen[bytes]]] = {}
        self._lock = threading.Lock()
        self._ready: dict[int, threading.Event] = {}  # per worker process, so a dying one cannot signal its successor
        self._ids = itertools.count()

    def start(self) -> None:
        """Start the worker (importing torch there) unless it is running; blocks until it is ready."""
        with self._lock:
            if self._proc is not None and self._proc.poll() is None:
                proc = self._proc
            else:
                proc = self._spawn()
        if not self._ready[proc.pid].wait(_READY_TIMEOUT_S) or proc.poll() is not None:
            raise WorkerUnavailable(f"the worker did not become ready; its stderr is in {home() / 'worker.log'}")

    def _spawn(self) -> subprocess.Popen[bytes]:
        env = {**os.environ, **self.env}
        env.setdefault("TORCHINDUCTOR_CACHE_DIR", str(self.cache_dir))
        env.setdefault("TORCHINDUCTOR_COMPILE_THREADS", "1")  # no compile pool to re-spawn in every forked child
        env["PYTORCH_NVML_BASED_CUDA_CHECK"] = "1"  # keep the warm parent from initialising CUDA before it forks
        root = str(Path(__file__).resolve().parent.parent)
        env["PYTHONPATH"] = root + os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else root
        self.cache_dir.mkdir(parents=True, exist_ok=True)
        home().mkdir(parents=True, exist_ok=True)
        log = open(home() / "worker.log", "ab")
        proc = subprocess.Popen(
            [self.python, "-m", WORKER_MODULE],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=log,
            env=env,
            start_new_session=True,  # Ctrl-C in a terminal reaches us, and we decide what to kill
        )
        log.close()
        self._proc = proc
        self._ready[proc.pid] = threading.Event()
        threading.Thread(target=self._read_events, args=(proc,), daemon=True, name="worker-events").start()
        return proc

    def submit(
        self,
        source: str,
        options: CheckOptions | None = None,
        filename: str = "snippet.py",
        run_dir: Path | None = None,
        on_progress: Callable[[Progress], None] | None = None,
    ) -> Job:
        options = options or CheckOptions()
        run_dir = Path(run_dir) if run_dir is not None else new_run_dir()
        run_dir.mkdir(parents=True, exist_ok=True)
        (run_dir / "snippet.py").write_text(source)
        job = Job(f"{next(self._ids)}-{uuid.uuid4().hex[:8]}", run_dir, options, on_progress)
        try:
            detect_style(source, filename)  # static: a syntax error or a shapeless file needs no worker
        except SnippetError as exc:
            job._end(ErrorKind.SNIPPET, str(exc))
            return job
        with self._lock:
            if self._running < self.max_running:
                self._running += 1
                queued = False
            elif self.max_queued is not None and len(self._queue) >= self.max_queued:
                busy = (
                    f"{self._running} checks are running and {len(self._queue)} are waiting, the most this server"
                    " queues; try again in a minute"
                )
                job._end(ErrorKind.BUSY, busy)
                return job
            else:
                self._queue.append((job, filename))
                self._sources[job.id] = source
                job._dequeue = self._dequeue
                queued = True
        if queued:
            self._renumber()
        else:
            self._dispatch(job, source, filename)
        return job

    def queued(self) -> int:
        """How many checks wait for a free slot."""
        with self._lock:
            return len(self._queue)

    def _dequeue(self, job: Job) -> bool:
        """Take a cancelled job out of the queue; False when it has already left it."""
        with self._lock:
            for i, (waiting, _) in enumerate(self._queue):
                if waiting is job:
                    del self._queue[i]
                    self._sources.pop(job.id, None)
                    break
            else:
                return False
        self._renumber()
        return True

    def _renumber(self) -> None:
        with self._lock:
            waiting = [job for job, _ in self._queue]
        for ahead, job in enumerate(waiting):
            job._set_stage(f"queued ({ahead} ahead)" if ahead else "queued (next)")

    def _release(self) -> None:
        """A job handed to the worker has ended: hand the next queued one over, in its own thread."""
        with self._lock:
            if self._queue:
                job, filename = self._queue.popleft()
                job._dequeue = None
                source = self._sources.pop(job.id)
            else:
                self._running -= 1
                return
        self._renumber()
        # starting a worker can block for long: never in the thread that reads the worker's events
        threading.Thread(
            target=self._dispatch, args=(job, source, filename), daemon=True, name=f"dispatch-{job.id}"
        ).start()

    def _dispatch(self, job: Job, source: str, filename: str) -> None:
        """Hand a job (holding one of the running slots) to the worker."""
        job._dispatched = time.monotonic()
        job._set_stage("starting worker")
        try:
            self.start()
        except WorkerUnavailable as exc:
            self._fail(job, ErrorKind.INTERNAL, str(exc))
            return
        options, run_dir = job.options, job.run_dir
        request = {
            "op": "check",
            "job": job.id,
            "source": source,
            "filename": filename,
            "options": records.to_json(options),
            "run_dir": str(run_dir),
        }
        with self._lock:
            proc = self._proc
            assert proc is not None and proc.stdin is not None
            self._jobs[job.id] = (job, proc)
            try:
                proc.stdin.write((json.dumps(request) + "\n").encode())
                proc.stdin.flush()
                return
            except (BrokenPipeError, OSError):
                self._jobs.pop(job.id, None)
        self._fail(job, ErrorKind.CRASH, "the worker process died before the check started")

    def _fail(self, job: Job, kind: ErrorKind, message: str) -> None:
        job._end(kind, message)
        self._release()

    def check(
        self,
        source: str,
        options: CheckOptions | None = None,
        filename: str = "snippet.py",
        run_dir: Path | None = None,
        on_progress: Callable[[Progress], None] | None = None,
    ) -> CheckResult:
        return self.submit(source, options, filename, run_dir, on_progress).wait()

    def _read_events(self, proc: subprocess.Popen[bytes]) -> None:
        assert proc.stdout is not None
        for raw in proc.stdout:
            try:
                event = json.loads(raw)
            except ValueError:
                continue
            kind = event.get("event")
            if kind == "ready":
                self._ready[proc.pid].set()
                continue
            with self._lock:
                entry = self._jobs.get(event.get("job", ""))
                if kind == "exit":
                    self._jobs.pop(event.get("job", ""), None)
            if entry is None:
                continue
            job = entry[0]
            if kind == "started":
                job._set_pid(int(event["pid"]))
            elif kind == "stage":
                job._set_stage(str(event["stage"]), str(event.get("detail") or ""))
            elif kind == "exit":
                job._finish(event.get("code"), event.get("signal"))
                self._release()
        # the worker is gone: every job still running in it ends as a crash
        self._ready[proc.pid].set()
        with self._lock:
            orphans = [job for job, owner in self._jobs.values() if owner is proc]
            for job in orphans:
                self._jobs.pop(job.id, None)
            if self._proc is proc:
                self._proc = None
        for job in orphans:
            job._finish(None, signal.SIGKILL if job._kill_reason else None)
            self._release()

    def close(self) -> None:
        with self._lock:
            proc, self._proc = self._proc, None
            jobs = [job for job, _ in self._queue] + [job for job, _ in self._jobs.values()]
        for job in jobs:  # the queued first, so none of them is handed to the worker that is going away
            job.cancel()
        if proc is not None:
            try:
                assert proc.stdin is not None
                proc.stdin.write(b'{"op": "exit"}\n')
                proc.stdin.close()
                proc.wait(timeout=5)
            except (OSError, subprocess.TimeoutExpired):
                proc.kill()
                proc.wait()

    def __enter__(self) -> Runner:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
