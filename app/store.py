"""Every check and minimization the app starts, kept in SQLite so nothing is lost when the app stops.

The database holds what the app needs to list and find runs; the result itself (result.json, arrays/,
the snippet and its output) stays in the engine's run directory, which the row points to.

Each row names its owner: the server process that started it (pid and start time, so a recycled pid
is not mistaken for it). A server that starts calls `recover()`, which marks the rows still "running"
under a dead owner as interrupted, or as done when the check wrote its result just before the end.
The session column is the browser session that started a run, so each user lists their own runs.
"""

from __future__ import annotations

import json
import os
import sqlite3
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from engine import records
from engine.options import CheckOptions
from engine.paths import home

DB_FILE = "app.sqlite"
RUNNING = "running"
DONE = "done"
INTERRUPTED = "interrupted"  # the app stopped (or was killed) while it ran
RESULT_FILE = "result.json"  # the engine's, in a run directory

_SCHEMA = """
CREATE TABLE IF NOT EXISTS runs (
    id TEXT PRIMARY KEY,
    created REAL NOT NULL,
    name TEXT NOT NULL,
    origin TEXT NOT NULL,
    run_dir TEXT NOT NULL,
    options TEXT NOT NULL,
    status TEXT NOT NULL,
    verdict TEXT,
    explanation TEXT,
    finished REAL
);
CREATE INDEX IF NOT EXISTS runs_created ON runs (created DESC);
CREATE TABLE IF NOT EXISTS minimizations (
    run_id TEXT PRIMARY KEY,
    started REAL NOT NULL,
    status TEXT NOT NULL,
    owner TEXT NOT NULL,
    session TEXT NOT NULL,
    message TEXT,
    finished REAL
);
"""
# columns added after the first release: an older database gains them when it is opened
_LATER_COLUMNS = {"runs": {"owner": "TEXT NOT NULL DEFAULT ''", "session": "TEXT NOT NULL DEFAULT ''"}}


@dataclass(frozen=True, kw_only=True)
class RunRecord:
    id: str
    created: float
    name: str  # what the user sees: a file name or a gallery title
    origin: str  # "paste", "upload" or "gallery:<slug>"
    run_dir: str
    options: CheckOptions = field(default_factory=CheckOptions)
    status: str = RUNNING
    verdict: str | None = None
    explanation: str | None = None
    finished: float | None = None
    session: str = ""  # the browser session that started it ("" for older rows)
    owner: str = ""  # the server process that ran it; filled in by RunStore.add


@dataclass(frozen=True, kw_only=True)
class MinimizationRecord:
    run_id: str
    started: float
    status: str  # RUNNING, INTERRUPTED, or the minimizer's own end state (done, stopped, failed)
    owner: str
    session: str
    message: str | None = None
    finished: float | None = None


def default_path() -> Path:
    return home() / DB_FILE


def process_identity(pid: int | None = None) -> str:
    """'pid:start-time': unlike a bare pid, it never names a later process that reuses the number."""
    pid = pid or os.getpid()
    try:
        with open(f"/proc/{pid}/stat") as f:
            # the command name (field 2) may hold spaces and parentheses: count fields after the last ')'
            start = f.read().rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        start = "?"
    return f"{pid}:{start}"


def alive(owner: str) -> bool:
    pid_text, _, start = owner.partition(":")
    try:
        pid = int(pid_text)
    except ValueError:
        return False
    if start == "?":  # no /proc: the best we can do is ask whether the pid exists
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            return True
        return True
    return process_identity(pid) == owner


class RunStore:
    """A small table of runs. Thread-safe: Streamlit runs each session's script in its own thread."""

    def __init__(self, path: Path | None = None, owner: str | None = None) -> None:
        self.path = Path(path) if path is not None else default_path()
        self.owner = owner or process_identity()
        self._ready = False
        self._lock = threading.Lock()

    def _connect(self) -> sqlite3.Connection:
        # one short-lived connection per call: sqlite3 connections must not cross threads
        conn = sqlite3.connect(self.path, timeout=10.0)
        conn.row_factory = sqlite3.Row
        if not self._ready:
            with self._lock:
                if not self._ready:
                    self.path.parent.mkdir(parents=True, exist_ok=True)
                    conn.execute("PRAGMA journal_mode=WAL")  # readers (other tabs) never wait for a writer
                    conn.executescript(_SCHEMA)
                    for table, columns in _LATER_COLUMNS.items():
                        have = {row["name"] for row in conn.execute(f"PRAGMA table_info({table})")}
                        for name, kind in columns.items():
                            if name not in have:
                                conn.execute(f"ALTER TABLE {table} ADD COLUMN {name} {kind}")
                    conn.commit()
                    self._ready = True
        return conn

    def add(self, record: RunRecord) -> None:
        with self._connect() as conn:
            conn.execute(
                "INSERT OR REPLACE INTO runs (id, created, name, origin, run_dir, options, status, verdict,"
                " explanation, finished, session, owner) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    record.id,
                    record.created,
                    record.name,
                    record.origin,
                    record.run_dir,
                    records.dumps(record.options),
                    record.status,
                    record.verdict,
                    record.explanation,
                    record.finished,
                    record.session,
                    record.owner or self.owner,
                ),
            )
        conn.close()

    def finish(self, run_id: str, verdict: str, explanation: str) -> None:
        with self._connect() as conn:
            conn.execute(
                "UPDATE runs SET status = ?, verdict = ?, explanation = ?, finished = ? WHERE id = ?",
                (DONE, verdict, explanation, time.time(), run_id),
            )
        conn.close()

    def get(self, run_id: str) -> RunRecord | None:
        conn = self._connect()
        try:
            row = conn.execute("SELECT * FROM runs WHERE id = ?", (run_id,)).fetchone()
        finally:
            conn.close()
        return _record(row) if row is not None else None

    def recent(
        self, limit: int = 50, session: str | None = None, exclude_session: str | None = None
    ) -> list[RunRecord]:
        """The newest runs: all of them, one session's, or everyone else's."""
        where, args = "", []
        if session is not None:
            where, args = "WHERE session = ?", [session]
        elif exclude_session is not None:
            where, args = "WHERE session != ?", [exclude_session]
        conn = self._connect()
        try:
            rows = conn.execute(f"SELECT * FROM runs {where} ORDER BY created DESC LIMIT ?", (*args, limit)).fetchall()
        finally:
            conn.close()
        return [_record(r) for r in rows]

    # -- minimizations --
    def start_minimization(self, run_id: str, session: str) -> None:
        with self._connect() as conn:
            conn.execute(
                "INSERT OR REPLACE INTO minimizations (run_id, started, status, owner, session, message, finished)"
                " VALUES (?, ?, ?, ?, ?, NULL, NULL)",
                (run_id, time.time(), RUNNING, self.owner, session),
            )
        conn.close()

    def end_minimization(self, run_id: str, status: str, message: str) -> None:
        with self._connect() as conn:
            conn.execute(
                "UPDATE minimizations SET status = ?, message = ?, finished = ? WHERE run_id = ?",
                (status, message, time.time(), run_id),
            )
        conn.close()

    def minimization(self, run_id: str) -> MinimizationRecord | None:
        conn = self._connect()
        try:
            row = conn.execute("SELECT * FROM minimizations WHERE run_id = ?", (run_id,)).fetchone()
        finally:
            conn.close()
        return MinimizationRecord(**dict(row)) if row is not None else None

    # -- after a crash --
    def recover(self) -> tuple[list[str], list[str]]:
        """Close what dead servers left running: (run ids, minimized run ids) marked interrupted.

        A check whose result.json exists finished after its server went away: it is marked done with
        that verdict, not interrupted. Rows of live servers (another app on the same data) are left alone.
        """
        conn = self._connect()
        try:
            runs = conn.execute("SELECT id, run_dir, owner FROM runs WHERE status = ?", (RUNNING,)).fetchall()
            mins = conn.execute("SELECT run_id, owner FROM minimizations WHERE status = ?", (RUNNING,)).fetchall()
        finally:
            conn.close()
        owners = {row["owner"] for row in [*runs, *mins]}
        dead = {owner for owner in owners if owner != self.owner and not alive(owner)}
        interrupted_runs: list[str] = []
        for row in runs:
            if row["owner"] not in dead:
                continue
            finished = _stored_verdict(Path(row["run_dir"]))
            if finished is not None:
                self.finish(row["id"], *finished)
            else:
                with self._connect() as conn:
                    conn.execute(
                        "UPDATE runs SET status = ?, finished = ? WHERE id = ? AND status = ?",
                        (INTERRUPTED, time.time(), row["id"], RUNNING),
                    )
                conn.close()
                interrupted_runs.append(row["id"])
        interrupted_mins = [row["run_id"] for row in mins if row["owner"] in dead]
        for run_id in interrupted_mins:
            self.end_minimization(run_id, INTERRUPTED, "the app stopped while this minimization ran")
        return interrupted_runs, interrupted_mins


def _stored_verdict(run_dir: Path) -> tuple[str, str] | None:
    try:
        data = json.loads((run_dir / RESULT_FILE).read_text())
        return str(data["verdict"]), str(data.get("explanation", ""))
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _options(text: str) -> CheckOptions:
    """A row's options; the defaults where they cannot be read (the row still lists, and its result has its own)."""
    try:
        return records.from_json(CheckOptions, text)
    except records.RecordError:
        return CheckOptions()


def _record(row: sqlite3.Row) -> RunRecord:
    return RunRecord(
        id=row["id"],
        created=row["created"],
        name=row["name"],
        origin=row["origin"],
        run_dir=row["run_dir"],
        options=_options(row["options"]),
        status=row["status"],
        verdict=row["verdict"],
        explanation=row["explanation"],
        finished=row["finished"],
        session=row["session"],
        owner=row["owner"],
    )
