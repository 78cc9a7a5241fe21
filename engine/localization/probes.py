"""Probes: the same check again with derived inputs or call patterns, one report line per probe.

Most torch.compile correctness bugs hide behind inputs nobody feeds the program (special values, odd
layouts and sizes) or behind call patterns nobody tries (a second call, backward). Each probe is an
ordinary check with a few options changed, run in the worker like any other; its options (seed
included) are stored with it, so a failing probe replays exactly with `engine.check_source(source,
outcome.options)`. A probe whose derived inputs make eager itself raise is "not applicable": the
program does not accept those inputs, which says nothing about the compiler.

Caller side: imports no torch.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import Any

from engine import records
from engine.judge.verdicts import ErrorKind, Verdict
from engine.options import CheckOptions
from engine.paths import new_run_dir
from engine.protocol import NOT_APPLICABLE
from engine.result import CheckResult
from engine.runner import Job, Runner
from engine.snippet import SnippetError, SnippetStyle, detect_style

PROBES_FILE = "probes.json"


class ProbeKind(str, Enum):
    SEEDS = "seeds"
    SPECIAL = "special"
    TRANSPOSED = "transposed"
    NONCONTIGUOUS = "noncontiguous"
    EXPANDED = "expanded"
    OFFSET = "offset"
    ODD_SIZES = "odd_sizes"
    RECALL = "second-call"
    BACKWARD = "backward"


DESCRIPTIONS = {
    ProbeKind.SEEDS: "{n} random input seeds from {seed}",
    ProbeKind.SPECIAL: "special values mixed into float inputs: +-0, +-inf, NaN, subnormals, huge magnitudes",
    ProbeKind.TRANSPOSED: "same values, column-major (transposed) memory",
    ProbeKind.NONCONTIGUOUS: "same values, non-contiguous (last-dimension stride 2)",
    ProbeKind.EXPANDED: "inputs expanded along dimension 0 (stride 0)",
    ProbeKind.OFFSET: "same values at a storage offset of 3 elements (misaligned)",
    ProbeKind.ODD_SIZES: "even sizes grown by one: not multiples of vector or block widths",
    ProbeKind.RECALL: "second and third call of the compiled callable, on fresh inputs (guards, caches, mutated state)",
    ProbeKind.BACKWARD: "gradients of inputs and parameters",
}
DEFAULT_PROBES: tuple[ProbeKind, ...] = tuple(ProbeKind)


class ProbeStatus(str, Enum):
    OK = "ok"  # match, benign, precision-cast or rng
    DIVERGES = "diverges"
    NOT_APPLICABLE = "not-applicable"
    ERROR = "error"  # e.g. compiled raised where eager did not: worth a look


@dataclass(frozen=True)
class ProbeOutcome:
    kind: ProbeKind
    description: str
    status: ProbeStatus
    verdict: Verdict
    explanation: str
    options: CheckOptions  # replay: check the same source with exactly these options
    run_dir: str | None = None
    failing_seed: int | None = None  # the seed (or first call's seed) whose inputs diverge
    first_divergent_leaf: str | None = None  # e.g. "call1: out" when only the second call diverges


@dataclass(frozen=True)
class ProbeReport:
    outcomes: tuple[ProbeOutcome, ...]
    directory: str | None = None

    @property
    def diverging(self) -> tuple[ProbeOutcome, ...]:
        return tuple(o for o in self.outcomes if o.status is ProbeStatus.DIVERGES)

    def outcome(self, kind: ProbeKind | str) -> ProbeOutcome:
        kind = ProbeKind(kind)
        return next(o for o in self.outcomes if o.kind is kind)

    def summary(self) -> str:
        counts: dict[str, int] = {}
        for o in self.outcomes:
            counts[o.status.value] = counts.get(o.status.value, 0) + 1
        tally = ", ".join(f"{n} {s}" for s, n in counts.items())
        worst = ", ".join(o.kind.value for o in self.diverging)
        return f"{len(self.outcomes)} probes: {tally}" + (f"; diverging: {worst}" if worst else "")

    def save(self, directory: Path) -> Path:
        return records.save(self, Path(directory) / PROBES_FILE)

    @classmethod
    def load(cls, directory: Path) -> ProbeReport:
        return records.load(cls, Path(directory) / PROBES_FILE)


def probe_options(kind: ProbeKind, base: CheckOptions, seeds: int = 3) -> CheckOptions:
    """The options of one probe. Probes look for new symptoms, so they skip the precision recheck."""
    o = base.replace(recheck_precision_casts=False, localize=None)
    if kind is ProbeKind.SEEDS:
        return o.replace(seeds=seeds)
    if kind is ProbeKind.RECALL:
        return o.replace(calls=3)
    if kind is ProbeKind.BACKWARD:
        return o.replace(backward=True)
    return o.replace(derive_inputs=kind.value)


def _statically_not_applicable(kind: ProbeKind, style: SnippetStyle) -> str | None:
    if style is SnippetStyle.REPRO and kind in (ProbeKind.RECALL, ProbeKind.BACKWARD):
        return "a verbatim repro drives its own calls; every call it makes is already compared"
    return None


def outcome_of(kind: ProbeKind, description: str, options: CheckOptions, result: CheckResult) -> ProbeOutcome:
    """Turn a probe's check into its report line."""
    status = ProbeStatus.OK
    explanation = result.explanation
    if result.verdict is Verdict.DIVERGENT:
        status = ProbeStatus.DIVERGES
    elif result.verdict is Verdict.ERROR and result.error is not None:
        message = result.error.message
        if result.error.kind is ErrorKind.EAGER:
            status, explanation = (
                ProbeStatus.NOT_APPLICABLE,
                f"eager itself raises on these inputs: {message.splitlines()[0][:300]}",
            )
        elif result.error.kind is ErrorKind.OPTIONS and message.startswith(NOT_APPLICABLE):
            status, explanation = ProbeStatus.NOT_APPLICABLE, message[len(NOT_APPLICABLE) :]
        else:
            status = ProbeStatus.ERROR
    failing_seed: int | None = None
    first_leaf: str | None = None
    if status is ProbeStatus.DIVERGES:
        bad = [s for s in result.seeds if s.verdict is Verdict.DIVERGENT]
        failing_seed = bad[0].seed if bad else options.seed
        first = next((leaf for leaf in result.leaves if leaf.verdict is Verdict.DIVERGENT), None)
        first_leaf = first.name if first is not None else None
        if first_leaf and first_leaf.startswith("call") and ":" in first_leaf:
            failing_seed = failing_seed + int(first_leaf[4 : first_leaf.index(":")])  # call k runs on seed + k
    return ProbeOutcome(
        kind, description, status, result.verdict, explanation, options, result.run_dir, failing_seed, first_leaf
    )


def run_probes(
    runner: Runner,
    source: str,
    options: CheckOptions | None = None,
    filename: str = "snippet.py",
    kinds: Sequence[ProbeKind | str] | None = None,
    directory: Path | None = None,
    seeds: int = 3,
    on_outcome: Callable[[ProbeOutcome], None] | None = None,
) -> ProbeReport:
    """Run each probe as its own check, two at a time (the worker's children share two cores)."""
    base = options or CheckOptions()
    directory = Path(directory) if directory is not None else new_run_dir().with_name(new_run_dir().name + "-probes")
    wanted = [ProbeKind(k) for k in (kinds or DEFAULT_PROBES)]
    try:
        style = detect_style(source, filename)
    except SnippetError:
        style = None
    outcomes: dict[ProbeKind, ProbeOutcome] = {}
    pending: list[tuple[ProbeKind, str, CheckOptions, Job]] = []

    def finish(entry: tuple[ProbeKind, str, CheckOptions, Job]) -> None:
        kind, description, opts, job = entry
        outcome = outcome_of(kind, description, opts, job.wait())
        outcomes[kind] = outcome
        if on_outcome is not None:
            on_outcome(outcome)

    for kind in wanted:
        opts = probe_options(kind, base, seeds)
        description = DESCRIPTIONS[kind].format(n=seeds, seed=base.seed)
        reason = _statically_not_applicable(kind, style) if style is not None else None
        if reason is not None:
            outcomes[kind] = ProbeOutcome(kind, description, ProbeStatus.NOT_APPLICABLE, Verdict.MATCH, reason, opts)
            if on_outcome is not None:
                on_outcome(outcomes[kind])
            continue
        if len(pending) == 2:
            finish(pending.pop(0))
        pending.append((kind, description, opts, runner.submit(source, opts, filename, run_dir=directory / kind.value)))
    for entry in pending:
        finish(entry)
    report = ProbeReport(tuple(outcomes[k] for k in wanted), str(directory))
    report.save(directory)
    return report


def probe_source(
    source: str, options: CheckOptions | None = None, filename: str = "snippet.py", **kwargs: Any
) -> ProbeReport:
    """`run_probes` in the process-wide runner."""
    from engine.api import default_runner

    return run_probes(default_runner(), source, options, filename, **kwargs)


def probe_file(path: str | Path, options: CheckOptions | None = None, **kwargs: Any) -> ProbeReport:
    path = Path(path)
    return probe_source(path.read_text(), options, str(path), **kwargs)


def render(report: ProbeReport) -> str:
    """A plain-text table for the command line."""
    lines = [f"{'probe':<14} {'status':<15} {'verdict':<15} detail"]
    for o in report.outcomes:
        detail = o.explanation.splitlines()[0] if o.explanation else ""
        if o.failing_seed is not None:
            detail = (
                f"[seed {o.failing_seed}{', ' + o.first_divergent_leaf if o.first_divergent_leaf else ''}] " + detail
            )
        lines.append(f"{o.kind.value:<14} {o.status.value:<15} {o.verdict.value:<15} {detail[:200]}")
    lines.append(report.summary())
    return "\n".join(lines)
