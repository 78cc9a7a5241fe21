"""Where does a divergence start: the ablation ladder, CompilerBisector and the first diverging intermediate.

Each step is checks in the worker (the bisector and the intermediates each in a child of their own);
this module only orchestrates and gathers their reports into one `Localization`, stored as
`localization.json`. Caller side: imports no torch.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from engine import records
from engine.localization.ablation import AblationReport, ablate
from engine.localization.bisector import bisect
from engine.localization.conclusion import Conclusion, conclude
from engine.localization.intermediates import first_diverging_intermediate
from engine.localization.reports import BisectReport, IntermediatesReport
from engine.options import CheckOptions
from engine.result import CheckResult
from engine.runner import Runner

LOCALIZATION_FILE = "localization.json"
STEPS = ("ablation", "bisect", "intermediates")


@dataclass(frozen=True)
class Localization:
    ablation: AblationReport | None = None
    bisect: BisectReport | None = None
    intermediates: IntermediatesReport | None = None
    directory: str | None = None
    conclusion: Conclusion | None = None  # the steps made into one answer (engine/localization/conclusion.py)

    def summary(self) -> str:
        parts = (
            [f"conclusion: {self.conclusion.sentence} Next: {self.conclusion.next_step}."] if self.conclusion else []
        )
        if self.ablation is not None:
            parts.append(f"ablation: {self.ablation.conclusion}")
        if self.bisect is not None:
            parts.append(f"bisector: {self.bisect.explanation}")
        if self.intermediates is not None:
            parts.append(f"intermediates: {self.intermediates.explanation}")
        return "\n".join(parts) or "nothing was run"

    def save(self, directory: Path) -> Path:
        return records.save(self, Path(directory) / LOCALIZATION_FILE)

    @classmethod
    def load(cls, directory: Path) -> Localization:
        return records.load(cls, Path(directory) / LOCALIZATION_FILE)


def localize(
    runner: Runner,
    source: str,
    options: CheckOptions | None = None,
    filename: str = "snippet.py",
    directory: Path | None = None,
    steps: Sequence[str] = STEPS,
    on_step: Callable[[str], None] | None = None,
    check: CheckResult | None = None,
) -> Localization:
    """Run the requested steps; the bisector and the intermediates run side by side (two children). The steps end in
    one conclusion; `check` (the run being localized) places its ops on program lines, else the ladder's Inductor
    rung does."""
    from concurrent.futures import ThreadPoolExecutor

    from engine.paths import new_run_dir

    unknown = sorted(set(steps) - set(STEPS))
    if unknown:
        raise ValueError(f"unknown localization step(s): {', '.join(unknown)}; choose from {', '.join(STEPS)}")
    directory = Path(directory) if directory is not None else new_run_dir().with_name(new_run_dir().name + "-localize")

    def step(name: str) -> None:
        if on_step is not None:
            on_step(name)

    ablation = None
    if "ablation" in steps:
        step("ablation")
        ablation = ablate(runner, source, options, filename, directory / "ablation")
    found_bisect: BisectReport | None = None
    found_nodes: IntermediatesReport | None = None
    with ThreadPoolExecutor(max_workers=2) as pool:
        futures = {}
        if "bisect" in steps:
            step("bisect")
            futures["bisect"] = pool.submit(bisect, runner, source, options, filename, directory / "bisect")
        if "intermediates" in steps:
            step("intermediates")
            futures["intermediates"] = pool.submit(
                first_diverging_intermediate, runner, source, options, filename, directory / "intermediates"
            )
        if "bisect" in futures:
            found_bisect = futures["bisect"].result()
        if "intermediates" in futures:
            found_nodes = futures["intermediates"].result()
    result = Localization(ablation, found_bisect, found_nodes, str(directory))
    result = dataclasses.replace(result, conclusion=conclude(result, check or _placing_check(result), source))
    result.save(directory)
    return result


def _placing_check(loc: Localization) -> CheckResult | None:
    """A check of the program compiled by Inductor as the user compiles it, whose records place ops on lines: the
    ladder's Inductor rung, else the run the first-node step made before it instrumented anything."""
    run_dirs = [r.run_dir for r in loc.ablation.rows if r.setting == "inductor"] if loc.ablation else []
    run_dirs += [loc.intermediates.run_dir] if loc.intermediates else []
    run_dirs += [loc.bisect.run_dir] if loc.bisect else []
    for run_dir in run_dirs:
        if run_dir and (Path(run_dir) / "result.json").exists():
            try:
                return CheckResult.load(Path(run_dir))
            except (OSError, ValueError, KeyError, TypeError):
                continue
    return None


def localize_source(
    source: str, options: CheckOptions | None = None, filename: str = "snippet.py", **kwargs: Any
) -> Localization:
    """`localize` in the process-wide runner."""
    from engine.api import default_runner

    return localize(default_runner(), source, options, filename, **kwargs)


def localize_file(path: str | Path, options: CheckOptions | None = None, **kwargs: Any) -> Localization:
    path = Path(path)
    return localize_source(path.read_text(), options, str(path), **kwargs)


def render(loc: Localization) -> str:
    """Plain text for the command line."""
    out: list[str] = []
    if loc.conclusion is not None:
        c = loc.conclusion
        out.append(f"CONCLUSION: {c.sentence}")
        out.append(f"  Next: {c.next_step}.")
        for f in c.findings:
            mark = {True: "agrees", False: "differs", None: "-"}[f.agrees]
            out.append(f"  [{mark:>7}] {f.step}: {f.says}")
        out.append("")
    if loc.ablation is not None:
        out.append("Ablation ladder:")
        for r in loc.ablation.rows:
            out.append(f"  {r.setting:<36} {r.verdict.value:<15} {'diverges' if r.diverges else ''}")
        out.append(f"  -> {loc.ablation.conclusion}")
    if loc.bisect is not None:
        b = loc.bisect
        out.append(f"CompilerBisector ({b.status}, {b.predicate_calls} runs, {b.seconds:.0f} s): {b.explanation}")
    if loc.intermediates is not None:
        i = loc.intermediates
        out.append(f"First diverging intermediate ({i.status}, {i.compared_nodes} nodes compared): {i.explanation}")
        if i.kernel:
            out.append(f"  kernel {i.kernel} ({i.output_code_label}, wrapper line {i.wrapper_line})")
    if loc.directory:
        out.append(f"stored in {loc.directory}")
    return "\n".join(out)
