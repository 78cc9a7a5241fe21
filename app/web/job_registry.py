"""The background jobs of this server process (minimizations, probes, localizations), by key.

One registry per kind of job, held for the process's life by the tab that starts them (`st.cache_resource`),
so a rerun, a second tab or a double click finds the job already running instead of starting another.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Generic, Protocol, TypeVar


class BackgroundJob(Protocol):
    def done(self) -> bool: ...

    def start(self): ...  # returns the job itself, started


Job = TypeVar("Job", bound=BackgroundJob)


class JobRegistry(Generic[Job]):
    """At most one running job per key; a finished one stays readable until the next starts."""

    def __init__(self) -> None:
        self._jobs: dict[str, Job] = {}
        self._lock = threading.Lock()

    def get(self, key: str) -> Job | None:
        with self._lock:
            return self._jobs.get(key)

    def start(self, key: str, make: Callable[[], Job]) -> Job:
        with self._lock:
            job = self._jobs.get(key)
            if job is not None and not job.done():
                return job  # a double click, or another tab of the same run
            job = self._jobs[key] = make().start()
            return job
