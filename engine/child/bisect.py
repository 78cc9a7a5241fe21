"""The child half of the CompilerBisector step: bisect the divergent leaves of the check just made.

Runs in the check's own forked child after the check (see engine/localization/bisector.py for why the
bisector must never run anywhere else), and writes bisect.json for the caller side to read.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from engine import records
from engine.child.errors import StageError
from engine.child.execution import Run, merge_outcomes, run_program, run_repro
from engine.judge.verdicts import Verdict
from engine.localization.reports import BISECT_FILE, BISECT_STATE_DIR, BisectReport, explain
from engine.result import CheckResult
from engine.snippet import SnippetError, SnippetStyle


@dataclass
class _StillGood:
    """The bisector's predicate: the program run once more (same seed) is good when none of the leaves that
    diverged diverges; it counts its calls and the configurations that could not run."""

    run: Run
    targets: set[str]
    seed: int
    calls: int = 0
    errors: list[str] = field(default_factory=list)

    def __call__(self) -> bool:
        import torch._dynamo

        self.calls += 1
        torch._dynamo.reset()
        run, seed, settings = self.run, self.seed, self.run.settings()
        try:
            outcomes = (
                run_repro(run, seed, settings)
                if run.style is SnippetStyle.REPRO
                else run_program(run, [seed], settings)[0][1]
            )
        except (StageError, SnippetError) as exc:  # a configuration that cannot run is not "good"
            self.errors.append(str(exc)[:200])
            return False
        leaves = merge_outcomes(outcomes)[0]
        return not any(leaf.name in self.targets and leaf.verdict is Verdict.DIVERGENT for leaf in leaves)


def bisect_in_child(run: Run, result: CheckResult, run_dir: Path) -> None:
    """Runs in the check's child: bisect the leaves that diverged, write bisect.json."""
    import torch._dynamo
    import torch._functorch.config as functorch_config
    import torch._inductor.config as inductor_config
    from torch._inductor.compiler_bisector import CompilerBisector

    targets = {leaf.name for leaf in result.leaves if leaf.verdict in (Verdict.DIVERGENT, Verdict.PRECISION_CAST)}
    out = run_dir / BISECT_FILE
    if not targets:
        records.save(BisectReport("not-divergent", explanation=f"nothing to bisect: {result.verdict.value}"), out)
        return
    seed = max(result.seeds, key=lambda s: s.verdict.severity).seed if result.seeds else run.options.seed
    good = _StillGood(run, targets, seed)
    started = time.monotonic()
    # the bisector's state lives in this run's directory, never in the shared Inductor cache
    CompilerBisector.in_process_cache = str(run_dir / BISECT_STATE_DIR)
    # cache hits would skip the compile stages whose applications the bisector counts
    with inductor_config.patch(fx_graph_cache=False), functorch_config.patch(enable_autograd_cache=False):
        try:
            found = CompilerBisector.do_bisect(good)
        except Exception as exc:  # the bisector itself failed: say so, the check result stands
            report = BisectReport(
                "failed",
                predicate_calls=good.calls,
                predicate_errors=len(good.errors),
                seconds=time.monotonic() - started,
                explanation=f"the bisector raised {type(exc).__name__}: {exc}",
            )
            records.save(report, out)
            return
    torch._dynamo.reset()
    records.save(_report(found, good, started, run_dir), out)


def _report(found: Any, good: _StillGood, started: float, run_dir: Path) -> BisectReport:
    """What the bisection found (a BisectionResult, or None), narrowed to a lowering where it names no op."""
    if found is None:
        return BisectReport(
            "no-culprit",
            predicate_calls=good.calls,
            predicate_errors=len(good.errors),
            seconds=time.monotonic() - started,
            explanation=explain(None, None, None, None),
        )
    number = found.bisect_number if found.bisect_number is not None else None
    info = str(found.debug_info) if found.debug_info else None
    narrowed: tuple[int | None, str | None] = (None, None)
    before = good.calls
    if _names_no_op(found.backend, found.subsystem):
        narrowed = _narrow_to_lowerings(good, run_dir / f"{BISECT_STATE_DIR}-lowerings")
    return BisectReport(
        "found",
        found.backend,
        found.subsystem or None,
        number,
        info,
        good.calls,
        len(good.errors),
        time.monotonic() - started,
        explain(found.backend, found.subsystem, number, info, narrowed[1]),
        narrowed_number=narrowed[0],
        narrowed_op=narrowed[1],
        narrow_calls=good.calls - before,
    )


def _names_no_op(backend: str | None, subsystem: str | None) -> bool:
    """An Inductor culprit that names no op: a config change (layout_optimization, comprehensive_padding: a subsystem
    the bisector flips as a whole) or the backend with no subsystem isolated. The lowerings may still name one."""
    from torch._inductor.compiler_bisector import BACKENDS, ConfigChange

    if backend != "inductor":
        return False
    if not subsystem:
        return True
    return any(isinstance(s, ConfigChange) and s.name == subsystem for s in BACKENDS.get("inductor", []))


def _narrow_to_lowerings(good: Callable[[], bool], state_dir: Path) -> tuple[int | None, str | None]:
    """Bisect Inductor's lowerings alone (everything else as the check compiles it): (application number, lowered
    node's name) of the lowering that makes the output diverge, or (None, None) when lowering nothing does not help.

    CompilerBisector walks the backends and subsystems of its module-level BACKENDS table; for this second pass the
    table holds Inductor's lowerings only, and is restored whatever happens."""
    from torch._inductor import compiler_bisector as bisector

    saved = dict(bisector.BACKENDS)
    bisector.BACKENDS.clear()
    bisector.BACKENDS["inductor"] = [bisector.BisectSubsystem("lowerings")]
    bisector.CompilerBisector.in_process_cache = str(state_dir)
    try:
        found = bisector.CompilerBisector.do_bisect(good)
    except Exception:  # best effort: the first pass's finding stands
        return None, None
    finally:
        bisector.BACKENDS.clear()
        bisector.BACKENDS.update(saved)
    if found is None or found.subsystem != "lowerings":
        return None, None
    return found.bisect_number, (str(found.debug_info) if found.debug_info else None)
