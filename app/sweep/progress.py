"""The live progress of a sweep on stderr: done/total, verdict counts, rate and ETA.

On a terminal one status line is rewritten in place, and divergent or failed jobs are printed above it
as they finish; elsewhere (a CI log) every finished job is one line with the same figures.
"""

from __future__ import annotations

import sys
import time
from collections import Counter
from typing import TextIO

from app.sweep.jobs import SEVERITY_ORDER, JobOutcome, JobSpec
from engine.judge.verdicts import Verdict


def duration(seconds: float) -> str:
    seconds = max(0, int(round(seconds)))
    if seconds < 60:
        return f"{seconds}s"
    minutes, seconds = divmod(seconds, 60)
    if minutes < 60:
        return f"{minutes}m{seconds:02d}s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m"


class SweepProgress:
    def __init__(self, stream: TextIO | None = None, quiet: bool = False, live: bool | None = None) -> None:
        self.stream = stream or sys.stderr
        self.quiet = quiet
        self.live = self.stream.isatty() if live is None else live
        self.total = 0
        self.done = 0
        self.counts: Counter[str] = Counter()
        self._started: float | None = None
        self._finished_now = 0
        self._status_shown = False

    def planned(self, total: int, done_before: Counter[str], programs: int, cells: int, skipped: int) -> None:
        self.total = total
        self.counts = Counter(done_before)
        self.done = sum(done_before.values())
        shape = f"{programs} program{'s' if programs != 1 else ''} x {cells} option set{'s' if cells != 1 else ''}"
        before = f"; {self.done} finished before, {total - self.done} to run" if self.done else ""
        files = f" ({skipped} files skipped: not programs)" if skipped else ""
        self.note(f"{total} jobs ({shape}){before}{files}")

    def note(self, text: str) -> None:
        if self.quiet:
            return
        self._clear()
        print(text, file=self.stream, flush=True)

    def more(self, jobs: int) -> None:
        """Jobs added while the sweep runs (the parts of a zoo program that ended in an error as a whole)."""
        self.total += jobs

    def job_started(self) -> None:
        if self._started is None:
            self._started = time.monotonic()

    def job_done(self, spec: JobSpec, outcome: JobOutcome, pytorch: str | None = None) -> None:
        """`pytorch`: PyTorch's own check of the job (pass, fail, n/a), for zoo jobs."""
        self.done += 1
        self._finished_now += 1
        self.counts[outcome.verdict.value] += 1
        if self.quiet:
            return
        what = (
            f"{outcome.verdict.value:<14} {spec.name}{' ' + spec.label if spec.label else ''} ({outcome.seconds:.1f} s"
        )
        what += f", {outcome.peak_rss_mb:.0f} MB)" if outcome.peak_rss_mb is not None else ")"
        if outcome.error_kind:
            what += f" [{outcome.error_kind}]"
        if pytorch is not None:
            what += f" PyTorch's check: {pytorch}"
        if self.live:
            if outcome.verdict in (Verdict.DIVERGENT, Verdict.ERROR):
                self.note(f"  {what}")
            self._status()
        else:
            print(f"{self.status_line(what)}", file=self.stream, flush=True)

    def status_line(self, job: str = "") -> str:
        parts = [f"[{self.done:>{len(str(self.total))}}/{self.total}]"] + ([job, "|"] if job else [])
        shown = [f"{self.counts[v.value]} {v.value}" for v in SEVERITY_ORDER if self.counts[v.value]]
        parts.append(" · ".join(shown) or "-")
        if self._started is not None and self._finished_now:
            elapsed = time.monotonic() - self._started
            rate = self._finished_now / max(elapsed, 1e-6) * 60
            parts.append(f"{rate:.1f} jobs/min")
            left = self.total - self.done
            if left:
                parts.append(f"ETA {duration(left / rate * 60)}")
        return "  ".join(parts)

    def _status(self) -> None:
        print("\r\x1b[2K" + self.status_line(), end="", file=self.stream, flush=True)
        self._status_shown = True

    def _clear(self) -> None:
        if self._status_shown:
            print("\r\x1b[2K", end="", file=self.stream)
            self._status_shown = False

    def close(self) -> None:
        if self._status_shown:
            print(file=self.stream, flush=True)
            self._status_shown = False
