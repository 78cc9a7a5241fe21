"""A sweep's unit of work: one program under one set of options, and what its check came to.

A job's key depends on the program's path and on the options that change what is compiled or judged,
not on the limits (timeout, memory): a re-run with a longer timeout is the same job, so
`--retry-errors` can redo only what timed out. The program's text is hashed separately, so an edited
program is checked again under the same key.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from app.sweep.pytorch_check import AccuracyRule
from engine import records
from engine.judge.verdicts import Verdict
from engine.options import CheckOptions
from engine.result import CheckResult

# options that bound a check rather than define it: not part of the key
LIMITS = ("timeout_s", "memory_limit_mb", "max_output_mb", "max_processes")
# the order of the end-of-sweep table: a divergence is the finding, then the jobs that could not judge, then
# the engine's own order (the named mechanisms before benign before match)
SEVERITY_ORDER = tuple(sorted(Verdict, key=lambda v: (v is not Verdict.DIVERGENT, -v.severity)))


@dataclass(frozen=True)
class JobSpec:
    key: str
    program: str  # the resolved path
    source: str
    options: CheckOptions
    label: str  # the matrix values of this job ("" without a matrix)
    position: int  # order in the plan
    accuracy: AccuracyRule | None = None  # PyTorch's own check beside ours (zoo programs)
    info: Mapping[str, Any] = field(default_factory=dict)  # what the report shows beside the job (zoo programs)

    @property
    def name(self) -> str:
        return Path(self.program).name

    @property
    def source_sha(self) -> str:
        return hashlib.sha256(self.source.encode()).hexdigest()[:16]


def job_key(program: str, options: CheckOptions) -> str:
    defining = {k: v for k, v in records.to_json(options).items() if k not in LIMITS}
    text = json.dumps({"program": program, "options": defining}, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


@dataclass(frozen=True)
class JobOutcome:
    """One row of the sweep: the check's verdict and the figures a table needs, and where its run lives."""

    verdict: Verdict
    explanation: str
    run_dir: str
    seconds: float
    error_kind: str | None = None
    worst_leaf: str | None = None  # the first divergent leaf, else the one with the largest ULP error
    worst_ulp: float | None = None
    max_abs: float | None = None
    symptoms: tuple[str, ...] = ()  # of the worst leaf
    where: str = ""  # "local", or the Ray node and actor that ran it
    peak_rss_mb: float | None = (
        None  # the check's process at its largest (what it shares with the warm worker included)
    )

    @property
    def run_id(self) -> str:
        return Path(self.run_dir).name


def outcome_of(result: CheckResult, run_dir: Path | str, seconds: float, where: str) -> JobOutcome:
    leaves = list(result.leaves)
    divergent = [leaf for leaf in leaves if leaf.verdict is Verdict.DIVERGENT]
    worst = divergent[0] if divergent else max(leaves, key=lambda leaf: (leaf.max_ulp, leaf.max_abs), default=None)
    return JobOutcome(
        verdict=result.verdict,
        explanation=result.explanation,
        run_dir=str(run_dir),
        seconds=round(seconds, 3),
        error_kind=result.error.kind.value if result.error is not None else None,
        worst_leaf=worst.name if worst is not None else None,
        worst_ulp=float(worst.max_ulp) if worst is not None else None,
        max_abs=float(worst.max_abs) if worst is not None else None,
        symptoms=tuple(s.value for s in worst.symptoms) if worst is not None else (),
        where=where,
        peak_rss_mb=round(result.peak_rss_mb, 1) if result.peak_rss_mb is not None else None,
    )


def error_outcome(kind: str, message: str, run_dir: Path | str, seconds: float, where: str) -> JobOutcome:
    """A job that ended without a check result of its own (its actor died, the pool failed)."""
    return JobOutcome(
        Verdict.ERROR, f"error ({kind}): {message}", str(run_dir), round(seconds, 3), error_kind=kind, where=where
    )
