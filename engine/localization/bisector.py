"""PyTorch's CompilerBisector, run in its own worker child: which backend, subsystem and lowering breaks it.

The bisector keeps its state in files (bisect_status.txt) and, while that state exists, silently
changes what every torch.compile in the process does (pytorch#143453). So it runs only in a forked
child of its own (a check with `localize="bisect"`), with its directory pointed into that run's
directory; the child and its state end together, and no other check ever sees it.

This is the caller side (no torch); the child side is engine/child/bisect.py.
"""

from __future__ import annotations

from pathlib import Path

from engine import records
from engine.judge.verdicts import Verdict
from engine.localization.reports import BISECT_FILE, BisectReport
from engine.options import CheckOptions
from engine.runner import Runner


def bisect(
    runner: Runner,
    source: str,
    options: CheckOptions | None = None,
    filename: str = "snippet.py",
    run_dir: Path | None = None,
) -> BisectReport:
    """Check the snippet, then bisect it in the same (isolated) child; many compiles, so a long timeout."""
    base = options or CheckOptions()
    opts = base.replace(
        localize="bisect",
        seeds=1,
        recheck_precision_casts=False,
        recheck_random=False,
        timeout_s=max(base.timeout_s, 900.0),
    )
    result = runner.check(source, opts, filename, run_dir)
    assert result.run_dir is not None
    path = Path(result.run_dir) / BISECT_FILE
    if path.exists():
        report = records.load(BisectReport, path)
        return BisectReport(**{**report.__dict__, "run_dir": result.run_dir})
    if result.verdict is Verdict.ERROR:
        return BisectReport("failed", explanation=result.explanation, run_dir=result.run_dir)
    return BisectReport("failed", explanation="the bisector wrote no result (see output.log)", run_dir=result.run_dir)
