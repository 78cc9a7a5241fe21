"""The ablation ladder: the same check under each compiler stack; the first that diverges names the layer.

eager (Dynamo capture only) -> aot_eager (+ AOTAutograd, functionalization) -> aot_eager_decomp_partition
(+ decompositions, partitioner) -> inductor (+ lowering, fusion, codegen); then Inductor with
emulate_precision_casts and with fallback_random, which name the two mechanisms behind most numerical
reports. This is the ladder PyTorch's "Reporting Issues" guide prescribes.

Caller side: imports no torch.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from engine.judge.verdicts import Verdict
from engine.options import CheckOptions
from engine.runner import Runner

# (label, backend, Inductor config overrides)
LADDER: tuple[tuple[str, str, dict[str, bool]], ...] = (
    ("eager", "eager", {}),
    ("aot_eager", "aot_eager", {}),
    ("aot_eager_decomp_partition", "aot_eager_decomp_partition", {}),
    ("inductor", "inductor", {}),
    ("inductor + emulate_precision_casts", "inductor", {"emulate_precision_casts": True}),
    ("inductor + fallback_random", "inductor", {"fallback_random": True}),
)
LAYERS = {
    "eager": "Dynamo capture (bytecode tracing, guards, graph breaks)",
    "aot_eager": "AOTAutograd (functionalization, aliasing and mutation handling)",
    "aot_eager_decomp_partition": "decompositions or the partitioner",
    "inductor": "Inductor (lowering, fusion, code generation)",
}


@dataclass(frozen=True)
class AblationRow:
    setting: str
    backend: str
    config: Mapping[str, bool]
    verdict: Verdict
    diverges: bool
    explanation: str
    run_dir: str | None = None


@dataclass(frozen=True)
class AblationReport:
    rows: tuple[AblationRow, ...]
    first_diverging: str | None  # the first backend of the ladder that diverges
    layer: str  # the layer at fault, in words
    conclusion: str

    def row(self, setting: str) -> AblationRow:
        return next(r for r in self.rows if r.setting == setting)


def _diverges(verdict: Verdict) -> bool:
    return verdict in (Verdict.DIVERGENT, Verdict.PRECISION_CAST)


def conclude(rows: tuple[AblationRow, ...]) -> tuple[str | None, str, str]:
    """(first diverging backend, layer, one sentence) from the ladder's rows."""
    by = {r.setting: r for r in rows}
    first = next((r.setting for r in rows if r.setting in LAYERS and r.diverges), None)
    if first is None:
        errors = [r.setting for r in rows if r.verdict is Verdict.ERROR]
        extra = f" ({', '.join(errors)} raised)" if errors else ""
        return (
            None,
            "not reproduced",
            f"no configuration of the ladder diverges{extra}: the divergence depends on other options or is flaky",
        )
    # each rung before the first diverging one by its own verdict word: `benign` is not `match` (values differ, within
    # rounding noise), and a caption that said "match" beside a table saying "benign" contradicted it
    before = [by[s] for s in LAYERS if s in by][: list(LAYERS).index(first)]
    clean = f"{', '.join(f'{r.setting} {r.verdict.value}' for r in before)}: none diverges; " if before else ""
    layer = LAYERS[first]
    if first == "inductor":
        emulate = by.get("inductor + emulate_precision_casts")
        fallback = by.get("inductor + fallback_random")
        if emulate is not None and not emulate.diverges and emulate.verdict is not Verdict.ERROR:
            layer = "Inductor: a skipped low-precision round trip (emulate_precision_casts removes it)"
        elif fallback is not None and not fallback.diverges and fallback.verdict is not Verdict.ERROR:
            layer = "Inductor: random numbers differ from eager's (fallback_random removes it)"
        else:
            layer += "; neither emulate_precision_casts nor fallback_random removes it"
    return first, layer, f"{clean}{first} is the first to diverge: {layer}"


def ablate(
    runner: Runner,
    source: str,
    options: CheckOptions | None = None,
    filename: str = "snippet.py",
    directory: Path | None = None,
) -> AblationReport:
    """Check the snippet at every rung, two at a time (the worker's children share two cores)."""
    from engine.paths import new_run_dir

    base = (options or CheckOptions()).replace(recheck_precision_casts=False, recheck_random=False, localize=None)
    directory = Path(directory) if directory is not None else new_run_dir().with_name(new_run_dir().name + "-ablation")
    rows: list[AblationRow] = []
    for start in range(0, len(LADDER), 2):
        jobs = []
        for i, (label, backend, config) in enumerate(LADDER[start : start + 2], start):
            opts = base.replace(backend=backend, inductor_config={**base.inductor_config, **config})
            jobs.append(
                (
                    label,
                    backend,
                    config,
                    runner.submit(source, opts, filename, run_dir=directory / f"{i}-{label.replace(' + ', '+')}"),
                )
            )
        for label, backend, config, job in jobs:
            result = job.wait()
            rows.append(
                AblationRow(
                    label,
                    backend,
                    config,
                    result.verdict,
                    _diverges(result.verdict),
                    result.explanation,
                    result.run_dir,
                )
            )
    first, layer, conclusion = conclude(tuple(rows))
    return AblationReport(tuple(rows), first, layer, conclusion)
