"""The first diverging intermediate: which node of the compiled graph first computes a different value.

Inductor's intermediate hooks (`generate_intermediate_hooks`) report only buffers that a Triton kernel
or an extern kernel leaves live; fused C++ kernels on CPU report nothing. So instead every tensor node
of the graph that Inductor compiles (the ATen graph after AOTAutograd) is made an extra output: the
compiled code then stores each intermediate from inside the same fused kernels, and a wrapper strips
the extras before AOTAutograd sees the outputs. The same graph, copied as Inductor's inner compile receives
it (after its decompositions and pattern passes, so a fault in those rewrites is on both sides), is run
eagerly node by node with torch.fx.Interpreter on the very inputs the compiled graph received (and once
more in float64 for the reference); the first node in graph order whose value the oracle calls divergent
is the report. Its kernel is found in the generated wrapper by the buffer it returns, and each node keeps
its program line and Dynamo-graph origin, which place it in the check's own compile. Backward graphs are
compiled as they are (one gradient per input, no extra outputs): where only gradients diverge the step
says so ("backward-not-compared") rather than name a place.

Caveat, reported rather than hidden: the extra outputs can change fusion, so the report says whether
the final output still diverges in the instrumented compile. Caches are off in the child, so an
instrumented artifact never reaches another check.

This is the caller side (no torch); the child side is engine/child/intermediates.py.
"""

from __future__ import annotations

from pathlib import Path

from engine import records
from engine.judge.verdicts import Verdict
from engine.localization.reports import INTERMEDIATES_FILE, IntermediatesReport
from engine.options import CheckOptions
from engine.runner import Runner


def first_diverging_intermediate(
    runner: Runner,
    source: str,
    options: CheckOptions | None = None,
    filename: str = "snippet.py",
    run_dir: Path | None = None,
) -> IntermediatesReport:
    """Check the snippet, then localize its first diverging intermediate in the same child."""
    opts = (options or CheckOptions()).replace(
        localize="intermediates", seeds=1, recheck_precision_casts=False, recheck_random=False
    )
    result = runner.check(source, opts, filename, run_dir)
    assert result.run_dir is not None
    path = Path(result.run_dir) / INTERMEDIATES_FILE
    if path.exists():
        report = records.load(IntermediatesReport, path)
        return IntermediatesReport(**{**report.__dict__, "run_dir": result.run_dir})
    return IntermediatesReport(
        "failed",
        result.explanation if result.verdict is Verdict.ERROR else "no result was written (see output.log)",
        run_dir=result.run_dir,
    )
