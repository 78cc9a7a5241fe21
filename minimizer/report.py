"""The upstream issue body: what a maintainer reads in one screen, in PyTorch's PT2 bug template.

The body is a short script that runs as pasted and prints the difference (minimizer/standalone.py), what
was expected and what happened in one sentence each, where it starts, the ablation in one line and the
versions. The title (torch ops and what changed, in words) is returned apart from it, for GitHub's title
field. The self-checking repro.py goes beside it as a file. Every figure comes from the re-check of the
minimized program itself, never from the original run, and neither our tool's vocabulary (signature,
mechanism) nor anything it failed at (a localization step that could not run) reaches the body.

The ablation is the engine's ladder (eager, aot_eager, aot_eager_decomp_partition, inductor), each rung
judged against the signature; the first diverging intermediate comes from the final re-check.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, replace
from pathlib import Path

from engine import (
    CheckOptions,
    CheckResult,
    LeafKind,
    LeafResult,
    Localization,
    Runner,
    Symptom,
    Verdict,
    run_localization,
)
from minimizer.body import Settled, Side
from minimizer.interestingness import Checked, Outcome, Signature, classify, counterparts
from minimizer.mechanism import read_graphs
from minimizer.standalone import SMALL

LADDER = ("eager", "aot_eager", "aot_eager_decomp_partition", "inductor")


@dataclass(frozen=True)
class AblationRow:
    setting: str
    verdict: Verdict
    reproduces: bool
    explanation: str


def locate(
    runner: Runner,
    program: str,
    options: CheckOptions,
    signature: Signature,
    work_dir: Path,
    steps: tuple[str, ...] = ("ablation",),
) -> tuple[tuple[AblationRow, ...], Localization]:
    """The engine's ladder (and whatever other steps are asked for); each rung also judged against the signature."""
    loc = run_localization(runner, program, options, "repro.py", work_dir, steps=steps)
    rows: list[AblationRow] = []
    for r in loc.ablation.rows if loc.ablation is not None else ():
        try:  # "same divergence" needs the rung's leaves, which its run directory keeps
            same = (
                classify(signature, CheckResult.load(Path(r.run_dir))) is Outcome.INTERESTING
                if r.run_dir
                else r.diverges
            )
        except (OSError, ValueError, KeyError, TypeError):
            same = r.diverges
        rows.append(AblationRow(r.setting, r.verdict, same, r.explanation))
    return tuple(rows), loc


def ablate(
    runner: Runner, program: str, options: CheckOptions, signature: Signature, work_dir: Path
) -> tuple[AblationRow, ...]:
    """The ladder's rows alone (see `locate`)."""
    return locate(runner, program, options, signature, work_dir)[0]


def ablation_line(rows: tuple[AblationRow, ...]) -> str:
    """`eager, aot_eager match; aot_eager_decomp_partition and inductor diverge`: the ladder in one line."""
    by = {r.setting: r for r in rows}
    ran = [by[s] for s in LADDER if s in by]
    if not ran:
        return ""
    clean = [r.setting for r in ran if not r.reproduces and r.verdict is not Verdict.ERROR]
    hit = [r.setting for r in ran if r.reproduces]
    failed = [r.setting for r in ran if r.verdict is Verdict.ERROR]
    parts = []
    if clean:
        parts.append(f"{', '.join(clean)} give{'s' if len(clean) == 1 else ''} eager's result")
    if hit:
        parts.append(f"{' and '.join(hit)} diverge{'s' if len(hit) == 1 else ''}")
    if failed:
        parts.append(f"{', '.join(failed)} raised")
    return "; ".join(parts)


# what the title says differs, by the leaf's symptom (the most telling first), in words
DIFFERS = {
    Symptom.SHAPE: "shapes",
    Symptom.DTYPE: "dtypes",
    Symptom.TYPE: "output structure",
    Symptom.LAYOUT: "tensor layouts",
    Symptom.MUTATION: "input mutations",
    Symptom.STRIDE: "strides",
    Symptom.NAN: "NaN elements",
    Symptom.INF: "inf elements",
    Symptom.SIGNED_ZERO: "signs of zero",
    Symptom.VALUE: "values",
    Symptom.BITS: "bits",
}


def title(
    program_ops: tuple[str, ...], signature: Signature | None, result: CheckResult, side: Side | None = None
) -> str:
    """Torch ops only, read from the minimized program's own Dynamo graph (never a constructor or a dunder), and what
    differs in words; an issue about eager's inaccuracy says so (compiled is the nearer side there)."""
    device = result.environment.get("device", result.options.device or "cpu")
    # the op where the divergence starts leads, when the program calls it by that name (remainder, acosh)
    start = ((signature.first_op if signature is not None else None) or "").removeprefix("aten.").split(".")[0]
    ops = ", ".join(f"`{o}`" for o in sorted(program_ops, key=lambda o: o != start)[:3]) or "this program"
    symptoms = signature.symptoms if signature is not None else frozenset()
    differs = " and ".join([w for s, w in DIFFERS.items() if s in symptoms][:2]) or "results"
    if side is Side.EAGER:
        return f"[{device}] {ops}: eager is less accurate than torch.compile ({differs} further from the exact ones)"
    return f"[inductor][{device}] {ops}: torch.compile gives different {differs} from eager"


def issue_title(signature: Signature | None, final: Checked | None, side: Side | None = None) -> str | None:
    """The issue's title (it goes in GitHub's title field, not in the body), from the final re-check."""
    if final is None:
        return None
    return title(read_graphs(final.result.code.fx_graphs).ops, signature, final.result, side)


def leaf_of(signature: Signature | None, result: CheckResult) -> LeafResult | None:
    if signature is None:
        return None
    named = [lf for lf in result.leaves if lf.name == signature.leaf and lf.verdict is Verdict.DIVERGENT]
    kinds = counterparts(signature.kind)
    same_kind = [lf for lf in result.leaves if lf.kind in kinds and lf.verdict is Verdict.DIVERGENT]
    return next(iter(named or same_kind), None)


def expected_actual(leaf: LeafResult) -> tuple[str, str]:
    """What eager gives and what compiled gives instead, one sentence each, from the leaf's own figures."""
    leaf = replace(
        leaf, name=re.sub(r"^call\d+: ", "", leaf.name)
    )  # a verbatim script's calls: `out` of its compiled call
    symptoms = set(leaf.symptoms)
    call = "`torch.compile(fn)`"
    if Symptom.SHAPE in symptoms or Symptom.DTYPE in symptoms:
        return (
            f"{call} returns `{leaf.name}` with eager's shape {list(leaf.shape or ())} and dtype `{leaf.dtype}`.",
            f"It returns shape {list(leaf.compiled_shape or ())} and dtype `{leaf.compiled_dtype}`.",
        )
    if Symptom.LAYOUT in symptoms:
        return (
            f"{call} returns `{leaf.name}` as eager's {leaf.layout or 'strided'} tensor.",
            f"It returns a {leaf.compiled_layout or 'strided'} tensor{_and_values(leaf)}.",
        )
    if Symptom.STRIDE in symptoms:
        return (
            f"{call} returns `{leaf.name}` with eager's strides {list(leaf.stride or ())}.",
            f"It returns strides {list(leaf.compiled_stride or ())}{_and_values(leaf)}.",
        )
    for symptom, what in ((Symptom.NAN, "NaN"), (Symptom.INF, "inf")):
        if symptom in symptoms:
            count = leaf.nan_mismatches if symptom is Symptom.NAN else leaf.inf_mismatches
            return (
                f"{call} returns {what} in `{leaf.name}` exactly where eager does.",
                f"{count:,} element(s) are {what} on one side only{_and_values(leaf)}.",
            )
    if Symptom.SIGNED_ZERO in symptoms:
        return (
            f"{call} returns the zeros of `{leaf.name}` with eager's signs.",
            f"{leaf.signed_zero_mismatches:,} element(s) are -0.0 on one side and 0.0 on the other.",
        )
    if leaf.eager_value is None or leaf.compiled_value is None or not leaf.worst_index:
        return f"{call} gives eager's `{leaf.name}`.", f"It does not: {leaf.explanation.rstrip('.')}."
    where = f"at index {list(leaf.worst_index)} of `{leaf.name}`"
    agrees = (
        leaf.eager_ref_max is not None
        and leaf.compiled_ref_max is not None
        and leaf.eager_ref_max < leaf.compiled_ref_max
    )
    verb = "leaves" if leaf.kind is LeafKind.MUTATED_INPUT else "returns"
    # float64 is named beside the element only where it says so there: over the leaf compiled can be further from it
    # while nearer at the element shown (bf16 arange: eager 4096, compiled 4128, float64 4113)
    e, c, r = (_number(v) for v in (leaf.eager_value, leaf.compiled_value, leaf.reference_value))
    here = e is not None and c is not None and r is not None and abs(r - e) < abs(r - c)
    shown = "" if r is None or (here and e == r) else f" (float64: `{leaf.reference_value}`)"
    return (
        f"{call} {verb} eager's `{leaf.eager_value}` {where}{', as a float64 run does' if here and e == r else ''}.",
        f"It gives `{leaf.compiled_value}` there{shown}{_and_values(leaf)}"
        + (
            f", and compiled is further from float64 than eager (max error {leaf.compiled_ref_max:.3g} vs"
            f" {leaf.eager_ref_max:.3g})."
            if agrees
            else "."
        ),
    )


def _number(value: str | None) -> float | None:
    try:
        return float(value) if value is not None else None
    except ValueError:  # a complex or an integer's repr that float() does not read
        return None


def _and_values(leaf: LeafResult) -> str:
    finite = leaf.max_abs > 0 and math.isfinite(leaf.max_abs)
    return (
        f"; {leaf.mismatches:,} of {leaf.numel:,} elements differ by up to {leaf.max_abs:.3g}"
        if leaf.mismatches and leaf.numel and finite
        else ""
    )


@dataclass(frozen=True)
class Origin:
    """Where the minimized bug came from: the user's file, the line of its first diverging value, the dtype it ran in
    and what eager and compiled computed there (the establishing check's localization), for one sentence of the body."""

    filename: str
    dtype: str | None
    leaf: str
    line: int | None = None
    code: str = ""
    eager: str | None = None
    compiled: str | None = None

    def sentence(self) -> str:
        where = f"line {self.line} of `{self.filename}`, `{self.code.strip()}`" if self.line else f"`{self.filename}`"
        dtype = f" in {self.dtype}" if self.dtype else ""
        there = (
            f": {self.compiled} there where eager computes {self.eager}"
            if self.eager is not None and self.compiled is not None and self.eager != self.compiled
            else f" (its output `{self.leaf}`)"
        )
        return f"Minimized from {where}{dtype}{there}."


_WORST = re.compile(r"worst at \[([^\]]*)\]: eager (\S+?),? compiled (\S+?)\)")


def origin_of(filename: str, signature: Signature, run: Checked | None, options: CheckOptions) -> Origin:
    """The origin sentence's facts, from the establishing check: its first diverging node's line and values."""
    result = run.result if run is not None else None
    leaf = leaf_of(signature, result) if result is not None else None
    dtype = {"bf16": "bfloat16", "fp16": "float16"}.get(options.dtype or "") or (leaf.dtype if leaf else None)
    report = run.intermediates if run is not None else None
    if report is None or report.status != "found" or report.first is None or not report.first.site.line:
        return Origin(filename, dtype, signature.leaf)
    worst = _WORST.search(report.first.explanation)
    return Origin(
        filename,
        dtype,
        signature.leaf,
        report.first.site.line,
        report.first.site.code,
        worst.group(2) if worst else None,
        worst.group(3) if worst else None,
    )


def _values(v: object) -> str:
    """A printed value as the body quotes it: lists as printed, floats to 7 significant digits."""
    if isinstance(v, float) and len(repr(v)) > 12:
        return f"`{v:.7g}`"
    return f"`{v}`"


def expected_vs_actual(settled: Settled, leaf: LeafResult | None) -> str:
    """One sentence: what was expected (from whom) and what compiled gave, and which side is wrong."""
    shown, how = settled.shown, settled.expected
    symptoms = set(leaf.symptoms) if leaf is not None else set()
    at = f" at index {list(leaf.worst_index)}" if leaf is not None and leaf.worst_index and leaf.numel > SMALL else ""
    if shown.eager is None or shown.compiled is None:
        structure = [w for s, w in DIFFERS.items() if s in symptoms][:2]
        return (
            f"`torch.compile` gives other {' and '.join(structure) or 'results'} than eager (the script prints both), "
            "which Inductor promises to keep: compiled is wrong."
        )
    e, c, x = _values(shown.eager), _values(shown.compiled), _values(shown.expected)
    if symptoms == {Symptom.STRIDE}:
        return (
            f"Expected eager's strides {e}; `torch.compile` returns strides {c} with the same values: compiled is "
            "wrong (Inductor keeps eager's output strides)."
        )
    if how and shown.expected is not None:
        who = {
            Side.COMPILED: f"eager gives {e}, `torch.compile` gives {c}: compiled is wrong",
            Side.EAGER: (
                f"`torch.compile` gives {c}, nearer than eager's {e}: eager is wrong here and compiled is not "
                "(an inaccuracy of eager's kernel)"
            ),
            Side.BOTH: f"eager gives {e} and `torch.compile` {c}: both are wrong",
        }.get(settled.side, f"eager gives {e} and `torch.compile` {c}")
        return f"Expected {x}{at} ({how}); {who}."
    return (
        f"Expected eager's {e}{at}; `torch.compile` gives {c}: compiled is wrong (no float64, Python or NumPy "
        "answer decides here, and Inductor promises eager's result)."
    )


def render(
    program: str,
    signature: Signature | None,
    final: Checked | None,
    rows: tuple[AblationRow, ...],
    verified: bool,
    *,
    settled: Settled | None = None,
    origin: Origin | str | None = None,
    logs: str = "",
    environment: str = "",
) -> str:
    """The issue body, in PyTorch's bug template: one sentence of expected vs actual and who is wrong, one of where it
    came from, the shortest script that shows it (minimizer/body.py settled it: literal inputs, only the switches it
    needs), what it printed, the backends in one line, and the versions. The title is not in it (`issue_title`).

    Without a settled script (a gradient, a module's state, a verbatim script) the body shows the program as it is
    and the check's own explanation. `logs` goes under "Error logs"; `environment` (collect_env's text) replaces the
    one-line versions of the check's environment.
    """
    result = final.result if final is not None else None
    leaf = leaf_of(signature, result) if result is not None else None
    lines = ["### 🐛 Describe the bug", ""]
    where = origin.sentence() if isinstance(origin, Origin) else origin
    if settled is not None:
        lines += [expected_vs_actual(settled, leaf)]
        if where:
            lines += [where]
        lines += ["", "```python", settled.script.rstrip(), "```", ""]
    else:
        lines += [
            "`torch.compile` returns a different result from eager for this program and raises nothing:",
            "",
            "```python",
            program.rstrip(),
            "```",
            "",
        ]
        if "torch.testing._internal" in program:  # op_db's samples: the script cannot be shorter than that database
            lines += [
                (
                    "The inputs are a sample of PyTorch's OpInfo database (`op_db`), whose module needs `expecttest` "
                    "(`pip install expecttest`, one of PyTorch's test dependencies)."
                ),
                "",
            ]
        if leaf is not None:
            expected, actual = expected_actual(leaf)
            lines += [f"**Expected:** {expected}", f"**Actual:** {actual}", ""]
        elif result is not None:
            lines += [f"The check: {result.explanation}", ""]
        if where:
            lines += [where, ""]
    if ladder := ablation_line(rows):
        lines.append(f"Backends: {ladder}.")
    lines += ["", "### Error logs", "", logs.strip() or "None: nothing raises.", "", "### Versions", ""]
    lines += _versions(environment, result)
    return "\n".join(lines).replace("\n\n\n", "\n\n") + "\n"


def _versions(environment: str, result: CheckResult | None) -> list[str]:
    """The template's Versions section: collect_env's text where given, else one line of the check's environment."""
    if environment.strip():
        return ["```", environment.strip(), "```"]
    if result is None:
        return []
    env = result.environment
    return [
        f"torch {env.get('torch', '?')}, Python {env.get('python', '?')}, {env.get('device', '?')}"
        f"{' (' + env['device_name'] + ')' if env.get('device_name') else ''}, {env.get('platform', '?')}"
    ]
