"""PyTorch's CompilerBisector, run in its own worker child: which backend, subsystem and lowering breaks it.

The bisector keeps its state in files (bisect_status.txt) and, while that state exists, silently
changes what every torch.compile in the process does (pytorch#143453). So it runs only in a forked
child of its own (a check with `localize="bisect"`), with its directory pointed into that run's
directory; the child and its state end together, and no other check ever sees it.

`bisect` is the caller side (no torch); `run_in_worker` runs in the child after the check.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping

from engine.options import CheckOptions
from engine.runner import Runner
from engine.verdicts import Verdict

if TYPE_CHECKING:
    from engine.execution import _Run
    from engine.result import CheckResult

BISECT_FILE = "bisect.json"
STATE_DIR = "bisector-state"


@dataclass(frozen=True)
class BisectReport:
    status: str  # "found", "no-culprit" (every backend good), "not-divergent", "failed"
    backend: str | None = None
    subsystem: str | None = None
    bisect_number: int | None = None
    debug_info: str | None = None  # for lowerings: the op whose lowering is at fault
    predicate_calls: int = 0
    predicate_errors: int = 0
    seconds: float = 0.0
    explanation: str = ""
    run_dir: str | None = None

    def to_json(self) -> dict[str, Any]:
        return dict(self.__dict__)

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> "BisectReport":
        known = set(cls.__dataclass_fields__)
        return cls(**{k: v for k, v in data.items() if k in known})


def explain(backend: str | None, subsystem: str | None, number: int | None, info: str | None) -> str:
    if backend is None:
        return "every backend the bisector tries reproduces eager's result"
    where = f"the divergence first appears with backend {backend}"
    if not subsystem:
        return where + " (no subsystem of it could be isolated)"
    if subsystem == "lowerings":
        return f"{where}; subsystem lowerings: the lowering of {info or '?'} (application #{number}) is at fault"
    if number:
        return f"{where}; subsystem {subsystem}: application #{number}{f' ({info})' if info else ''} is at fault"
    return f"{where}; subsystem {subsystem} ({info or 'a config change'}) removes it"


def bisect(runner: Runner, source: str, options: CheckOptions | None = None, filename: str = "snippet.py", run_dir: Path | None = None) -> BisectReport:
    """Check the snippet, then bisect it in the same (isolated) child; many compiles, so a long timeout."""
    base = options or CheckOptions()
    opts = base.replace(localize="bisect", seeds=1, recheck_precision_casts=False, timeout_s=max(base.timeout_s, 900.0))
    result = runner.check(source, opts, filename, run_dir)
    assert result.run_dir is not None
    path = Path(result.run_dir) / BISECT_FILE
    if path.exists():
        report = BisectReport.from_json(json.loads(path.read_text()))
        return BisectReport(**{**report.__dict__, "run_dir": result.run_dir})
    if result.verdict is Verdict.ERROR:
        return BisectReport("failed", explanation=result.explanation, run_dir=result.run_dir)
    return BisectReport("failed", explanation="the bisector wrote no result (see output.log)", run_dir=result.run_dir)


def run_in_worker(run: "_Run", result: "CheckResult", run_dir: Path) -> None:
    """Runs in the check's child: bisect the leaves that diverged, write bisect.json."""
    import torch
    import torch._dynamo
    import torch._functorch.config as functorch_config
    import torch._inductor.config as inductor_config
    from torch._inductor.compiler_bisector import CompilerBisector

    from engine.comparison import StageError
    from engine.execution import _merge, _run_program, _run_repro
    from engine.snippet import SnippetError, SnippetStyle

    targets = {l.name for l in result.leaves if l.verdict in (Verdict.DIVERGENT, Verdict.PRECISION_CAST)}
    out = run_dir / BISECT_FILE
    if not targets:
        out.write_text(json.dumps(BisectReport("not-divergent", explanation=f"nothing to bisect: {result.verdict.value}").to_json()))
        return
    seed = max(result.seeds, key=lambda s: s.verdict.severity).seed if result.seeds else run.options.seed
    calls = [0]
    errors: list[str] = []

    def good() -> bool:
        calls[0] += 1
        torch._dynamo.reset()
        settings = run.settings()
        try:
            outcomes = _run_repro(run, seed, settings) if run.style is SnippetStyle.REPRO else _run_program(run, [seed], settings)[0][1]
        except (StageError, SnippetError) as exc:  # a configuration that cannot run is not "good"
            errors.append(str(exc)[:200])
            return False
        leaves = _merge(outcomes)[0]
        return not any(l.name in targets and l.verdict is Verdict.DIVERGENT for l in leaves)

    started = time.monotonic()
    # the bisector's state lives in this run's directory, never in the shared Inductor cache
    CompilerBisector.in_process_cache = str(run_dir / STATE_DIR)
    # cache hits would skip the compile stages whose applications the bisector counts
    with inductor_config.patch(fx_graph_cache=False), functorch_config.patch(enable_autograd_cache=False):
        try:
            found = CompilerBisector.do_bisect(good)
        except Exception as exc:  # the bisector itself failed: say so, the check result stands
            report = BisectReport("failed", predicate_calls=calls[0], predicate_errors=len(errors), seconds=time.monotonic() - started, explanation=f"the bisector raised {type(exc).__name__}: {exc}")
            out.write_text(json.dumps(report.to_json()))
            return
    torch._dynamo.reset()
    if found is None:
        report = BisectReport("no-culprit", predicate_calls=calls[0], predicate_errors=len(errors), seconds=time.monotonic() - started, explanation=explain(None, None, None, None))
    else:
        number = found.bisect_number if found.bisect_number is not None else None
        info = str(found.debug_info) if found.debug_info else None
        report = BisectReport(
            "found", found.backend, found.subsystem or None, number, info, calls[0], len(errors), time.monotonic() - started,
            explain(found.backend, found.subsystem, number, info),
        )
    out.write_text(json.dumps(report.to_json()))
