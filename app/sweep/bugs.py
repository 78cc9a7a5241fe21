"""Which bug a divergent job shows, so that `--minimize` shrinks each bug once however many jobs find it.

Two jobs show the same bug when the same ATen op is the first node of the compiled graph to diverge
(engine localization's first diverging intermediate: every node of the graph Inductor compiles is
compared against an eager and an fp64 run of the same graph) and the program's first divergent output
has the same kind, symptoms and dtype on the same device. Thirty models that bin values with `//` meet
at one floor division, so they are one bug; the same output name diverging in two unrelated programs is
not. Where localization finds no diverging node (or cannot run), the job's bug is its own program's
signature (the minimizer's: leaf, kind, symptoms), never merged with another program: a wrong merge
would lose a bug, a missed one costs only a second minimization. The one exception is a zoo op's programs
(op_db's max_unpool2d in chunks of 100 samples): one op, one symptom, one dtype is one bug.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

from app.sweep.jobs import JobSpec
from engine import records
from engine.judge.known import recognise
from engine.localization.reports import INTERMEDIATES_FILE, IntermediatesReport
from engine.result import CheckResult
from minimizer.interestingness import signature_of

LOCALIZE_DIR = "localize"  # in the sweep's directory: one localization run per divergent job


@dataclass(frozen=True)
class Bug:
    id: str
    description: str


def localization_spec(spec: JobSpec) -> JobSpec:
    """The job again, with its first diverging intermediate localized in the same child (one seed)."""
    options = spec.options.replace(localize="intermediates", seeds=1, recheck_precision_casts=False)
    return dataclasses.replace(spec, options=options)


def stored_report(run_dir: Path) -> IntermediatesReport | None:
    try:
        return records.load(IntermediatesReport, run_dir / INTERMEDIATES_FILE)
    except (OSError, ValueError, KeyError, TypeError):
        return None


def bug_of(spec: JobSpec, result: CheckResult, report: IntermediatesReport | None) -> Bug | None:
    """The bug a divergent check shows; None when it shows no divergent leaf."""
    signature = signature_of(result)
    if signature is None:
        return None
    leaf = result.leaf(signature.leaf)
    device = result.environment.get("device") or spec.options.device or "?"
    symptoms = sorted(s.value for s in signature.symptoms)
    where = f"{signature.kind.value} {leaf.dtype or '?'} on {device}, {', '.join(symptoms)}"
    status = report.status if report is not None else "not run"
    if report is not None and report.status == "found" and report.first is not None:
        identity: list[object] = ["op", report.first.op, signature.kind.value, symptoms, leaf.dtype, device]
        description = f"{report.first.op} is the first node to diverge ({where})"
    elif spec.info.get("op"):
        # one op_db op split into programs of 100 samples is one program cut for time, not unrelated programs
        identity = ["zoo op", spec.info["op"], signature.kind.value, symptoms, leaf.dtype, device]
        description = (
            f"{spec.info['op']}: its samples diverge ({where}); no diverging node found ({status}), so one bug for"
            " the op"
        )
    else:
        identity = [
            "program",
            spec.program,
            spec.source_sha,
            signature.leaf,
            signature.kind.value,
            symptoms,
            leaf.dtype,
            device,
        ]
        description = (
            f"{spec.name}: leaf `{signature.leaf}` diverges ({where}); no diverging node found ({status}), so its"
            " own bug"
        )
    digest = hashlib.sha256(json.dumps(identity, default=str).encode()).hexdigest()[:12]
    known = recognise(result.leaves, result.code.fx_graphs)
    if known is not None and signature.leaf in known.leaves:  # triage: a known cause is said first, with its link
        description = f"{known.issue.sentence()}: {description}"
    return Bug(digest, description)
