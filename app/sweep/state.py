"""A sweep's state: one SQLite file in the sweep's directory, written a job at a time.

Every finished job is committed on its own before the next result is read, so a sweep killed at any
moment (SIGKILL included) keeps every job it finished. A job is `pending`, `running` (handed to a
worker, with the run directory it writes) or `done`. The sweep that opens the file holds an exclusive
lock on it for its lifetime, so the jobs still `running` at start belong to a sweep that died: a
job whose check wrote its result before that is adopted as done, the others go back to pending.

Bugs (the divergent jobs grouped by what diverges, see app.sweep.bugs) and their minimizations live in
a second table.

Columns added since the first state files (peak memory, PyTorch's own check, a zoo job's info) are added
to an older file when a sweep opens it, and read as empty from one no sweep has opened since.
"""

from __future__ import annotations

import fcntl
import json
import os
import sqlite3
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from app.sweep.jobs import SEVERITY_ORDER, JobOutcome, JobSpec, outcome_of
from app.sweep.pytorch_check import PyTorchCheck
from engine import records
from engine.judge.verdicts import ErrorKind, Verdict
from engine.options import CheckOptions
from engine.result import RESULT_FILE, CheckResult

STATE_FILE = "sweep.sqlite"
LOCK_FILE = ".lock"
PENDING, RUNNING, DONE = "pending", "running", "done"
# a bug's minimization: queued -> running -> done | failed
QUEUED = "queued"

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS jobs (
    key TEXT PRIMARY KEY,
    position INTEGER NOT NULL,
    program TEXT NOT NULL,
    label TEXT NOT NULL,
    options TEXT NOT NULL,
    source_sha TEXT NOT NULL,
    status TEXT NOT NULL,
    verdict TEXT,
    error_kind TEXT,
    explanation TEXT,
    worst_leaf TEXT,
    worst_ulp REAL,
    max_abs REAL,
    symptoms TEXT,
    seconds REAL,
    run_dir TEXT,
    where_ran TEXT,
    started REAL,
    finished REAL,
    bug TEXT,
    -- added after the first state files (see _ADDED)
    peak_rss_mb REAL,
    pytorch TEXT,
    pytorch_detail TEXT,
    info TEXT
);
CREATE INDEX IF NOT EXISTS jobs_status ON jobs (status);
CREATE TABLE IF NOT EXISTS bugs (
    id TEXT PRIMARY KEY,
    description TEXT NOT NULL,
    representative TEXT NOT NULL,
    status TEXT NOT NULL,
    message TEXT,
    tokens_before INTEGER,
    tokens_after INTEGER,
    repro TEXT,
    started REAL,
    finished REAL
);
"""


# columns of `jobs` that state files made before them lack: (name, SQL type)
_ADDED = (("peak_rss_mb", "REAL"), ("pytorch", "TEXT"), ("pytorch_detail", "TEXT"), ("info", "TEXT"))


class SweepBusy(RuntimeError):
    """Another sweep holds this directory."""


@dataclass(frozen=True)
class JobRow:
    key: str
    position: int
    program: str
    label: str
    options: CheckOptions
    status: str
    verdict: str | None
    error_kind: str | None
    explanation: str | None
    worst_leaf: str | None
    worst_ulp: float | None
    max_abs: float | None
    symptoms: tuple[str, ...]
    seconds: float | None
    run_dir: str | None
    where_ran: str | None
    finished: float | None
    bug: str | None
    peak_rss_mb: float | None = None
    pytorch: str | None = None  # PyTorch's own check: pass, fail, n/a; None where it does not apply (not a zoo job)
    pytorch_detail: PyTorchCheck | None = None
    info: dict[str, Any] | None = None  # a zoo job's op, dtype, PyTorch's lists, ...

    @property
    def name(self) -> str:
        return Path(self.program).name

    @property
    def run_id(self) -> str | None:
        return Path(self.run_dir).name if self.run_dir else None


@dataclass(frozen=True)
class BugRow:
    id: str
    description: str
    representative: str  # the job key whose program is minimized
    status: str
    message: str | None
    tokens_before: int | None
    tokens_after: int | None
    repro: str | None  # path of the minimized repro.py
    finished: float | None


def severity_rank(verdict: str | None) -> int:
    order = [v.value for v in SEVERITY_ORDER]
    return order.index(verdict) if verdict in order else len(order)


class SweepState:
    """The state file of one sweep directory. Open with `lock=True` to run the sweep, without to read it."""

    def __init__(self, sweep_dir: Path, lock: bool = False) -> None:
        self.dir = Path(sweep_dir)
        self.path = self.dir / STATE_FILE
        self._lock_fd: int | None = None
        if lock:
            self.dir.mkdir(parents=True, exist_ok=True)
            fd = os.open(self.dir / LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o644)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(fd)
                raise SweepBusy(
                    f"another sweep is running in {self.dir} (it holds {self.dir / LOCK_FILE}); wait for it or choose"
                    " another -o"
                ) from None
            os.ftruncate(fd, 0)
            os.write(fd, f"{os.getpid()}\n".encode())
            self._lock_fd = fd
            if not self.path.exists():
                self._create()
            self._migrate()
        elif not self.path.exists():
            raise FileNotFoundError(f"no sweep in {self.dir} (no {STATE_FILE})")

    def _create(self) -> None:
        """Make the state file whole before it appears: its tables are created under a temporary name, then
        renamed into place, so that a reader (the app's Sweeps page, `divergence sweep --report`) never opens
        a state file without them."""
        fresh = self.path.with_name(STATE_FILE + ".new")
        fresh.unlink(missing_ok=True)  # left by a sweep killed right here
        conn = sqlite3.connect(fresh)
        try:
            conn.execute("PRAGMA journal_mode=WAL")  # the app reads while the sweep writes; kept in the file's header
            conn.executescript(_SCHEMA)
        finally:
            conn.close()  # the last connection's close folds the WAL back in: nothing beside the file to rename
        os.replace(fresh, self.path)

    def _migrate(self) -> None:
        """Add the columns an older state file lacks (the sweep holds the lock: nobody else writes)."""
        have = {row["name"] for row in self._rows("PRAGMA table_info(jobs)")}
        for name, kind in _ADDED:
            if name not in have:
                self._write(f"ALTER TABLE jobs ADD COLUMN {name} {kind}")

    def close(self) -> None:
        if self._lock_fd is not None:
            os.close(self._lock_fd)  # releases the flock
            self._lock_fd = None

    def _connect(self) -> sqlite3.Connection:
        conn = sqlite3.connect(self.path, timeout=30.0)
        conn.row_factory = sqlite3.Row
        # in WAL mode a commit that reached the OS survives the process being killed (all a sweep must
        # survive); NORMAL skips the fsync per commit, which cost ~10 ms a job, and can lose only the last
        # commits to a power cut, never the file's consistency
        conn.execute("PRAGMA synchronous=NORMAL")
        return conn

    def _write(self, sql: str, args: Sequence[Any] = ()) -> None:
        conn = self._connect()
        try:
            with conn:  # one transaction, committed before returning
                conn.execute(sql, args)
        finally:
            conn.close()

    def _rows(self, sql: str, args: Sequence[Any] = ()) -> list[sqlite3.Row]:
        conn = self._connect()
        try:
            return conn.execute(sql, args).fetchall()
        finally:
            conn.close()

    # -- the sweep's description --
    def set_meta(self, **values: Any) -> None:
        conn = self._connect()
        try:
            with conn:
                conn.executemany(
                    "INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)",
                    [(k, json.dumps(v)) for k, v in values.items()],
                )
        finally:
            conn.close()

    def meta(self) -> dict[str, Any]:
        return {row["key"]: json.loads(row["value"]) for row in self._rows("SELECT key, value FROM meta")}

    def running_elsewhere(self) -> bool:
        """True while a sweep holds this directory's lock (for readers such as the app)."""
        try:
            fd = os.open(self.dir / LOCK_FILE, os.O_RDONLY)
        except OSError:
            return False
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        finally:
            os.close(fd)
        return False

    # -- planning and resuming --
    def plan(self, specs: Sequence[JobSpec], retry_errors: bool = False) -> list[JobSpec]:
        """Record the jobs (new ones pending) and return those still to run, in plan order.

        A finished job is skipped unless its program's text changed since, or it ended in an error
        and `retry_errors` is set.
        """
        have = {row["key"]: row for row in self._rows("SELECT key, status, source_sha, verdict FROM jobs")}
        todo: list[JobSpec] = []
        conn = self._connect()
        try:
            with conn:
                for spec in specs:
                    row = have.get(spec.key)
                    info = json.dumps(dict(spec.info)) if spec.info else None
                    if row is None:
                        conn.execute(
                            "INSERT INTO jobs (key, position, program, label, options, source_sha, status, info) VALUES"
                            " (?, ?, ?, ?, ?, ?, ?, ?)",
                            (
                                spec.key,
                                spec.position,
                                spec.program,
                                spec.label,
                                records.dumps(spec.options),
                                spec.source_sha,
                                PENDING,
                                info,
                            ),
                        )
                        todo.append(spec)
                        continue
                    redo = (
                        row["status"] != DONE
                        or row["source_sha"] != spec.source_sha
                        or (retry_errors and row["verdict"] == Verdict.ERROR.value)
                    )
                    # the limits are not part of the key: keep the ones this run was given
                    conn.execute(
                        "UPDATE jobs SET position = ?, label = ?, options = ?, info = ? WHERE key = ?",
                        (spec.position, spec.label, records.dumps(spec.options), info, spec.key),
                    )
                    if redo:
                        conn.execute(
                            "UPDATE jobs SET status = ?, source_sha = ?, bug = NULL, pytorch = NULL, pytorch_detail ="
                            " NULL WHERE key = ?",
                            (PENDING, spec.source_sha, spec.key),
                        )
                        todo.append(spec)
        finally:
            conn.close()
        return todo

    def recover(self) -> tuple[int, int]:
        """Close what a dead sweep left running: (adopted as done, back to pending). Call with the lock held."""
        adopted = reset = 0
        for row in self._rows("SELECT key, run_dir, started FROM jobs WHERE status = ?", (RUNNING,)):
            run_dir = Path(row["run_dir"]) if row["run_dir"] else None
            result = _stored_result(run_dir) if run_dir is not None else None
            cancelled = result is not None and result.error is not None and result.error.kind is ErrorKind.CANCELLED
            if result is not None and run_dir is not None and not cancelled:
                seconds = max(0.0, (run_dir / RESULT_FILE).stat().st_mtime - (row["started"] or 0.0))
                self.finish(row["key"], outcome_of(result, run_dir, seconds, "recovered after the sweep stopped"))
                adopted += 1
            else:
                self._write(
                    "UPDATE jobs SET status = ?, run_dir = NULL WHERE key = ? AND status = ?",
                    (PENDING, row["key"], RUNNING),
                )
                reset += 1
        self._write("UPDATE bugs SET status = ? WHERE status = ?", (QUEUED, RUNNING))
        return adopted, reset

    # -- jobs --
    def start(self, key: str, run_dir: Path) -> None:
        self._write(
            "UPDATE jobs SET status = ?, run_dir = ?, started = ? WHERE key = ?",
            (RUNNING, str(run_dir), time.time(), key),
        )

    def finish(self, key: str, outcome: JobOutcome) -> None:
        self._write(
            "UPDATE jobs SET status = ?, verdict = ?, error_kind = ?, explanation = ?, worst_leaf = ?, worst_ulp = ?,"
            " max_abs = ?, symptoms = ?, seconds = ?, run_dir = ?, where_ran = ?, finished = ?, bug = NULL, peak_rss_mb"
            " = ?, pytorch = NULL, pytorch_detail = NULL WHERE key = ?",
            (
                DONE,
                outcome.verdict.value,
                outcome.error_kind,
                outcome.explanation,
                outcome.worst_leaf,
                outcome.worst_ulp,
                outcome.max_abs,
                json.dumps(list(outcome.symptoms)),
                outcome.seconds,
                outcome.run_dir,
                outcome.where,
                time.time(),
                outcome.peak_rss_mb,
                key,
            ),
        )

    def set_pytorch(self, key: str, check: PyTorchCheck) -> None:
        """PyTorch's own check of a finished job, beside our verdict."""
        self._write(
            "UPDATE jobs SET pytorch = ?, pytorch_detail = ? WHERE key = ?", (check.status, records.dumps(check), key)
        )

    def unstart(self, key: str) -> None:
        """A job handed out but not finished (the sweep is stopping): pending again, its partial run forgotten."""
        self._write("UPDATE jobs SET status = ?, run_dir = NULL WHERE key = ? AND status = ?", (PENDING, key, RUNNING))

    def set_bug(self, key: str, bug: str) -> None:
        self._write("UPDATE jobs SET bug = ? WHERE key = ?", (bug, key))

    def jobs(self, keys: Sequence[str] | None = None) -> list[JobRow]:
        rows = [_job(row) for row in self._rows("SELECT * FROM jobs ORDER BY position")]
        if keys is not None:
            wanted = set(keys)
            rows = [r for r in rows if r.key in wanted]
        return rows

    def by_severity(self) -> list[JobRow]:
        return sorted(
            self.jobs(), key=lambda r: (r.status != DONE, severity_rank(r.verdict), -(r.worst_ulp or 0.0), r.position)
        )

    def counts(self) -> dict[str, int]:
        """Finished jobs by verdict, plus `pending` and `running`."""
        counts: dict[str, int] = {}
        for row in self._rows("SELECT status, verdict, COUNT(*) AS n FROM jobs GROUP BY status, verdict"):
            name = row["verdict"] if row["status"] == DONE else row["status"]
            counts[name] = counts.get(name, 0) + row["n"]
        return counts

    # -- bugs and their minimizations --
    def add_bug(self, bug_id: str, description: str, representative: str) -> bool:
        """Record a bug seen for the first time (queued for minimization); False when it is known already."""
        conn = self._connect()
        try:
            with conn:
                cursor = conn.execute(
                    "INSERT OR IGNORE INTO bugs (id, description, representative, status) VALUES (?, ?, ?, ?)",
                    (bug_id, description, representative, QUEUED),
                )
                return cursor.rowcount == 1
        finally:
            conn.close()

    def set_representative(self, bug_id: str, key: str) -> None:
        self._write("UPDATE bugs SET representative = ? WHERE id = ? AND status = ?", (key, bug_id, QUEUED))

    def start_bug(self, bug_id: str) -> None:
        self._write("UPDATE bugs SET status = ?, started = ? WHERE id = ?", (RUNNING, time.time(), bug_id))

    def end_bug(
        self,
        bug_id: str,
        status: str,
        message: str,
        tokens_before: int | None = None,
        tokens_after: int | None = None,
        repro: str | None = None,
    ) -> None:
        self._write(
            "UPDATE bugs SET status = ?, message = ?, tokens_before = ?, tokens_after = ?, repro = ?, finished = ?"
            " WHERE id = ?",
            (status, message, tokens_before, tokens_after, repro, time.time(), bug_id),
        )

    def bugs(self) -> list[BugRow]:
        return [
            BugRow(
                r["id"],
                r["description"],
                r["representative"],
                r["status"],
                r["message"],
                r["tokens_before"],
                r["tokens_after"],
                r["repro"],
                r["finished"],
            )
            for r in self._rows("SELECT * FROM bugs ORDER BY rowid")
        ]

    def __enter__(self) -> SweepState:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _stored_result(run_dir: Path) -> CheckResult | None:
    try:
        return CheckResult.load(run_dir)
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _job(row: sqlite3.Row) -> JobRow:
    return JobRow(
        key=row["key"],
        position=row["position"],
        program=row["program"],
        label=row["label"],
        options=_options(row["options"]),
        status=row["status"],
        verdict=row["verdict"],
        error_kind=row["error_kind"],
        explanation=row["explanation"],
        worst_leaf=row["worst_leaf"],
        worst_ulp=row["worst_ulp"],
        max_abs=row["max_abs"],
        symptoms=tuple(json.loads(row["symptoms"] or "[]")),
        seconds=row["seconds"],
        run_dir=row["run_dir"],
        where_ran=row["where_ran"],
        finished=row["finished"],
        bug=row["bug"],
        peak_rss_mb=_column(row, "peak_rss_mb"),
        pytorch=_column(row, "pytorch"),
        pytorch_detail=records.from_json(PyTorchCheck, detail) if (detail := _column(row, "pytorch_detail")) else None,
        info=json.loads(info) if (info := _column(row, "info")) else None,
    )


def _options(text: str) -> CheckOptions:
    """A job's options; the defaults where they cannot be read (the job still lists, and its result has its own)."""
    try:
        return records.from_json(CheckOptions, text)
    except records.RecordError:
        return CheckOptions()


def _column(row: sqlite3.Row, name: str) -> Any:
    """A column added after the first state files: None in a file no sweep has opened since (the app reads old ones)."""
    return row[name] if name in row.keys() else None
