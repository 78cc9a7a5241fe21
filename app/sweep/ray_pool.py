"""The Ray pool: jobs are Ray tasks on actors that each hold one warm engine worker.

Each actor owns an engine Runner (torch imported once in its worker, the node's Inductor cache kept
across jobs) and takes one GPU where the cluster has GPUs, so a GPU node runs one check per GPU.
Ray places the actors, restarts one whose process dies (`max_restarts=-1`), and retries the task that
was running on it (`max_task_retries`): a job whose node is lost runs again on the restarted actor,
wherever Ray puts it. A job whose actor dies on every attempt (it kills its actor, or exhausts the
node's memory) ends as an `error` row, like a crash, a timeout or a memory blow-up inside the check,
which the actor's own Runner already turns into error results. An actor that stops answering past the
check's timeout plus a margin is killed by the sweep, which counts as such a death.

Runs come back to the sweep's machine, so the app and `divergence show` open them there: an actor on
the sweep's own node writes the run directory in place; one on another node writes it to a temporary
directory and returns it as a tar archive, which the sweep unpacks into the planned run directory.

`ray` is imported only when this pool is created: the package works without it.
"""

from __future__ import annotations

import io
import os
import socket
import tarfile
import tempfile
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, TypeVar

from app.sweep.jobs import JobOutcome, error_outcome
from app.sweep.local_pool import default_slots
from app.sweep.tasks import CheckTask, MinimizeOutcome, MinimizeTask, check_on, minimize_on
from engine.judge.verdicts import ErrorKind
from engine.runner import Runner, WorkerUnavailable, error_result, output_tail

ATTEMPTS = 2  # a job whose actor dies runs once more (on the restarted actor) before it is an error
BACKSTOP_S = (
    300.0  # past the check's own timeout (the Runner's limit): time for a worker start, then the actor is killed
)
READY_TIMEOUT_S = 600.0  # for Ray to place the actors and their workers to import torch

T = TypeVar("T")
R = TypeVar("R")


class RayUnavailable(RuntimeError):
    """ray is not installed, the cluster cannot be reached, or no actor could be started."""


class CheckActor:
    """One warm engine worker on a Ray node; Ray runs one method call at a time on it."""

    def __init__(self, driver_node: str, cache_dir: str | None, ship_runs: bool = False) -> None:
        import ray

        context = ray.get_runtime_context()
        self.same_node = context.get_node_id() == driver_node
        self.ship_runs = ship_runs or not self.same_node
        # the sweep's Inductor cache is a path on its own machine; elsewhere the node's default is used
        self.runner = Runner(cache_dir=Path(cache_dir) if self.same_node and cache_dir else None, max_running=1)
        restarted = " (restarted)" if context.was_current_actor_reconstructed else ""
        self.where = f"ray {socket.gethostname()} pid {os.getpid()}{restarted}"
        # import torch in the worker now: a job (a retried one on a restarted actor too) must not spend its
        # time limit on the start; a worker that cannot start is reported by the first check instead
        try:
            self.runner.start()
        except WorkerUnavailable:
            pass

    def ready(self) -> str:
        return self.where

    def check(self, task: CheckTask) -> tuple[JobOutcome, bytes | None]:
        if not self.ship_runs:
            return check_on(self.runner, task, task.run_dir, self.where), None
        with tempfile.TemporaryDirectory(prefix="divergence-sweep-") as tmp:
            run_dir = Path(tmp) / task.run_dir.name
            outcome = check_on(self.runner, task, run_dir, self.where)
            return outcome, pack(run_dir)

    def minimize(self, task: MinimizeTask) -> MinimizeOutcome:
        checkpoints = task.out_dir / "checkpoints" if self.same_node else None
        with tempfile.TemporaryDirectory(prefix="divergence-minimize-") as tmp:
            return minimize_on(self.runner, task, Path(tmp), checkpoints)


def pack(run_dir: Path) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:  # arrays.npz is compressed already
        tar.add(run_dir, arcname=".")
    return buffer.getvalue()


def unpack(data: bytes, run_dir: Path) -> None:
    run_dir.mkdir(parents=True, exist_ok=True)
    with tarfile.open(fileobj=io.BytesIO(data), mode="r") as tar:
        tar.extractall(run_dir, filter="data")  # nothing outside run_dir, no links out of it


def _connect(ray: Any, address: str | None, slots: int | None) -> bool:
    """Start a local Ray instance or reach a cluster; whether this process started it (False where a caller, a
    test or a notebook, had connected already)."""
    if ray.is_initialized():
        return False
    try:
        if address in (None, "local"):
            ray.init(address="local", num_cpus=slots or default_slots(), include_dashboard=False, log_to_driver=False)
        else:
            ray.init(address=address, log_to_driver=False)
    except (ConnectionError, RuntimeError, ValueError) as exc:
        raise RayUnavailable(f"could not start or reach Ray at {address or 'a local instance'}: {exc}") from None
    return True


class RayPool:
    """Actors on a Ray cluster: a local instance (`address` None or "local"), or an existing cluster."""

    def __init__(
        self,
        address: str | None = None,
        slots: int | None = None,
        cache_dir: Path | None = None,
        ship_runs: bool = False,
    ) -> None:
        try:
            import ray
        except ImportError:
            raise RayUnavailable("--ray needs Ray: pip install -e '.[ray]' (or pip install ray)") from None
        self._ray = ray
        self.owned = _connect(ray, address, slots)
        resources = ray.cluster_resources()
        gpus, cpus = int(resources.get("GPU", 0)), max(1, int(resources.get("CPU", 1)))
        count = slots or gpus or cpus
        self.notes: list[str] = []
        if gpus and count > gpus:
            self.notes.append(
                f"{count} actors asked for, but each takes one of the cluster's {gpus} GPUs: {gpus} started"
            )
            count = gpus
        self.slots = count
        # through Ray Client (ray://) this process is on no node of the cluster: every actor is remote
        client = str(address or "").startswith("ray://")
        driver_node = "" if client else ray.get_runtime_context().get_node_id()
        actor_class = ray.remote(CheckActor).options(
            num_cpus=1,
            num_gpus=1 if gpus else 0,
            max_restarts=-1,
            max_task_retries=ATTEMPTS - 1,
        )
        # ship_runs=True: actors on this node also send their runs back as archives, as remote ones do
        self.actors = [
            actor_class.remote(driver_node, str(cache_dir) if cache_dir else None, bool(ship_runs))
            for _ in range(count)
        ]
        try:
            where = ray.get([a.ready.remote() for a in self.actors], timeout=READY_TIMEOUT_S)
        except Exception as exc:
            self.close()
            raise RayUnavailable(
                f"the Ray actors did not start ({type(exc).__name__}: {_first_line(exc)}); every node needs"
                " divergence-explorer installed in the Python that Ray runs (docs/ray.md: 'A sweep on a multi-GPU Ray"
                " cluster')"
            ) from None
        nodes = len({w.split(" pid ")[0] for w in where})
        local = self.owned and address in (None, "local")
        place = "a local Ray instance" if local else "Ray at " + (address or "the connected cluster")
        self.description = (
            f"{count} Ray actor{'s' if count != 1 else ''} on {nodes} node{'s' if nodes != 1 else ''}"
            f"{', one GPU each' if gpus else ''}"
            f" ({place})"
        )

    def run_checks(
        self,
        tasks: Iterable[CheckTask],
        on_start: Callable[[CheckTask], None],
        on_done: Callable[[CheckTask, JobOutcome], None],
    ) -> None:
        def collect(ref: Any, task: CheckTask, seconds: float, killed: int) -> JobOutcome:
            try:
                outcome, archive = self._ray.get(ref)
            except Exception as exc:
                return self._lost_check(task, exc, seconds, killed)
            if archive is not None:
                unpack(archive, task.run_dir)
            return outcome

        self._dispatch(
            tasks,
            lambda actor, task: actor.check.remote(task),
            collect,
            lambda task: task.spec.options.timeout_s + BACKSTOP_S,
            on_start,
            on_done,
        )

    def run_minimizations(
        self,
        tasks: Iterable[MinimizeTask],
        on_start: Callable[[MinimizeTask], None],
        on_done: Callable[[MinimizeTask, MinimizeOutcome], None],
    ) -> None:
        def collect(ref: Any, task: MinimizeTask, seconds: float, killed: int) -> MinimizeOutcome:
            try:
                return self._ray.get(ref)
            except Exception as exc:
                return MinimizeOutcome(
                    "failed", f"its Ray actor died on each of {ATTEMPTS} attempts: {_first_line(exc)}"
                )

        # a minimization has no timeout of its own but its budget; without one only Ray's retries bound it
        self._dispatch(
            tasks,
            lambda actor, task: actor.minimize.remote(task),
            collect,
            lambda task: (task.budget_s or float("inf")) + task.options.timeout_s * 4 + BACKSTOP_S,
            on_start,
            on_done,
        )

    def _dispatch(
        self,
        tasks: Iterable[T],
        submit: Callable[[Any, T], Any],
        collect: Callable[[Any, T, float, int], R],
        deadline: Callable[[T], float],
        on_start: Callable[[T], None],
        on_done: Callable[[T, R], None],
    ) -> None:
        """Hand each task to an idle actor; report results as they finish (ray.wait), in this thread."""
        waiting = iter(tasks)
        idle = list(self.actors)
        in_flight: dict[Any, tuple[Any, T, float, float, int]] = {}  # ref -> actor, task, started, clock, kills
        exhausted = False
        while True:
            while idle and not exhausted:
                task = next(waiting, None)
                if task is None:
                    exhausted = True
                    break
                actor = idle.pop(0)
                on_start(task)
                now = time.monotonic()
                in_flight[submit(actor, task)] = (actor, task, now, now, 0)
            if not in_flight:
                return
            ready, _ = self._ray.wait(list(in_flight), num_returns=1, timeout=1.0)
            for ref in ready:
                actor, task, started, _, kills = in_flight.pop(ref)
                idle.append(actor)
                on_done(task, collect(ref, task, time.monotonic() - started, kills))
            now = time.monotonic()
            for ref, (actor, task, started, clock, kills) in list(in_flight.items()):
                if now - clock > deadline(task):
                    # Ray restarts the actor and retries the task (this counts as one of its attempts)
                    self._ray.kill(actor, no_restart=False)
                    in_flight[ref] = (actor, task, started, now, kills + 1)

    def _lost_check(self, task: CheckTask, exc: BaseException, seconds: float, killed: int) -> JobOutcome:
        if killed:
            why = (
                f"stopped answering past its {task.spec.options.timeout_s:g} s timeout plus {BACKSTOP_S:g} s and was"
                f" killed, on each of its {ATTEMPTS} attempts"
            )
        else:
            why = f"died on each of its {ATTEMPTS} attempts (killed, out of memory, or its node was lost)"
        message = f"the Ray actor running this check {why}; Ray said: {type(exc).__name__}: {_first_line(exc)}"
        kind = ErrorKind.CRASH if isinstance(exc, self._ray.exceptions.RayActorError) else ErrorKind.INTERNAL
        if kind is ErrorKind.INTERNAL:
            message = f"the sweep's Ray actor failed: {type(exc).__name__}: {_first_line(exc)}"
        # a stored error result, so that the app and `divergence show` open this job like any other
        error_result(task.spec.options, kind, message, output_tail(task.run_dir), task.run_dir).save(task.run_dir)
        (task.run_dir / "snippet.py").write_text(task.spec.source)
        return error_outcome(kind.value, message, task.run_dir, seconds, "ray")

    def close(self) -> None:
        ray = self._ray
        for actor in getattr(self, "actors", []):
            # its worker sees its input close and exits, killing a check still in flight (Ctrl-C)
            ray.kill(actor, no_restart=True)
        self.actors = []
        if self.owned and ray.is_initialized():
            ray.shutdown()


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return (text.splitlines() or [""])[0][:300]
