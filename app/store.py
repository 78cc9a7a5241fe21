"""Every check the app starts, kept in SQLite so a run can be reopened (by URL) without recomputation.

The database holds what the app needs to list and find runs; the result itself (result.json, arrays.npz,
the snippet and its output) stays in the engine's run directory, which the row points to.
"""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

from engine.paths import home

DB_FILE = "app.sqlite"
RUNNING = "running"
DONE = "done"

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
"""


@dataclass(frozen=True)
class RunRecord:
    id: str
    created: float
    name: str  # what the user sees: a file name or a gallery title
    origin: str  # "paste", "upload" or "gallery:<slug>"
    run_dir: str
    options: Mapping[str, Any] = field(default_factory=dict)
    status: str = RUNNING
    verdict: str | None = None
    explanation: str | None = None
    finished: float | None = None


def default_path() -> Path:
    return home() / DB_FILE


class RunStore:
    """A small table of runs. Thread-safe: Streamlit runs each session's script in its own thread."""

    def __init__(self, path: Path | None = None) -> None:
        self.path = Path(path) if path is not None else default_path()
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
                    conn.commit()
                    self._ready = True
        return conn

    def add(self, record: RunRecord) -> None:
        with self._connect() as conn:
            conn.execute(
                "INSERT OR REPLACE INTO runs (id, created, name, origin, run_dir, options, status, verdict, explanation, finished)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    record.id,
                    record.created,
                    record.name,
                    record.origin,
                    record.run_dir,
                    json.dumps(dict(record.options)),
                    record.status,
                    record.verdict,
                    record.explanation,
                    record.finished,
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

    def recent(self, limit: int = 50) -> list[RunRecord]:
        conn = self._connect()
        try:
            rows = conn.execute("SELECT * FROM runs ORDER BY created DESC LIMIT ?", (limit,)).fetchall()
        finally:
            conn.close()
        return [_record(r) for r in rows]


def _record(row: sqlite3.Row) -> RunRecord:
    return RunRecord(
        id=row["id"],
        created=row["created"],
        name=row["name"],
        origin=row["origin"],
        run_dir=row["run_dir"],
        options=json.loads(row["options"]),
        status=row["status"],
        verdict=row["verdict"],
        explanation=row["explanation"],
        finished=row["finished"],
    )
