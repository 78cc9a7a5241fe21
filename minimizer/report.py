"""The upstream issue body: what a maintainer reads in one screen, in PyTorch's PT2 conventions.

The body is the minimized program, the few lines that show the difference (eager vs compiled at the
worst element, and the check that fails), where it starts, the ablation in one line, the signature that
was kept while minimizing and the versions: 10-30 lines. The self-checking repro.py goes beside it as a
file. Every figure comes from the re-check of the minimized program itself, never from the original run,
and nothing our own tooling failed at (a localization step that could not run) reaches the body.

The ablation is the engine's ladder (eager, aot_eager, aot_eager_decomp_partition, inductor), each rung
judged against the signature; the first diverging intermediate comes from the final re-check.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from engine import CheckOptions, CheckResult, LeafResult, Localization, Runner, Verdict, run_localization
from minimizer.mechanism import read_graphs
from minimizer.oracle import Checked, Outcome, Signature, classify

LADDER = ("eager", "aot_eager", "aot_eager_decomp_partition", "inductor")


@dataclass(frozen=True)
class AblationRow:
    setting: str
    verdict: Verdict
    reproduces: bool
    explanation: str


def locate(runner: Runner, program: str, options: CheckOptions, signature: Signature, work_dir: Path,
           steps: tuple[str, ...] = ("ablation",)) -> tuple[tuple[AblationRow, ...], Localization]:
    """The engine's ladder (and whatever other steps are asked for); each rung also judged against the signature."""
    loc = run_localization(runner, program, options, "repro.py", work_dir, steps=steps)
    rows: list[AblationRow] = []
    for r in loc.ablation.rows if loc.ablation is not None else ():
        try:  # "same divergence" needs the rung's leaves, which its run directory keeps
            same = classify(signature, CheckResult.load(Path(r.run_dir))) is Outcome.INTERESTING if r.run_dir else r.diverges
        except (OSError, ValueError, KeyError, TypeError):
            same = r.diverges
        rows.append(AblationRow(r.setting, r.verdict, same, r.explanation))
    return tuple(rows), loc


def ablate(runner: Runner, program: str, options: CheckOptions, signature: Signature, work_dir: Path) -> tuple[AblationRow, ...]:
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


def title(program_ops: tuple[str, ...], signature: Signature | None, result: CheckResult) -> str:
    """Torch ops only, read from the minimized program's own Dynamo graph (never a constructor or a dunder)."""
    device = result.environment.get("device", result.options.device or "cpu")
    # the op where the divergence starts leads, when the program calls it by that name (remainder, acosh)
    start = ((signature.first_op if signature is not None else None) or "").removeprefix("aten.").split(".")[0]
    ops = ", ".join(f"`{o}`" for o in sorted(program_ops, key=lambda o: o != start)[:3]) or "this program"
    what = ", ".join(sorted(s.value for s in signature.symptoms)) if signature is not None else result.verdict.value
    return f"[inductor][{device}] {ops} gives a different result under torch.compile than eager ({what})"


def _leaf(signature: Signature | None, result: CheckResult) -> LeafResult | None:
    if signature is None:
        return None
    named = [l for l in result.leaves if l.name == signature.leaf and l.verdict is Verdict.DIVERGENT]
    same_kind = [l for l in result.leaves if l.kind is signature.kind and l.verdict is Verdict.DIVERGENT]
    return next(iter(named or same_kind), None)


def difference_lines(signature: Signature | None, result: CheckResult) -> list[str]:
    """Eager vs compiled at the worst element of the leaf that diverges, and the check that fails, from `result`."""
    leaf = _leaf(signature, result)
    if leaf is None:
        return [f"The check: {result.explanation}"]
    out = []
    if leaf.eager_value is not None and leaf.compiled_value is not None:
        where = f" at index {list(leaf.worst_index)}" if leaf.worst_index else ""
        out.append(f"Worst element of `{leaf.name}`{where}: eager `{leaf.eager_value}`, compiled `{leaf.compiled_value}`.")
    out.append(f"The check that fails: {leaf.explanation}.")
    return out


def start_line(run: Checked | None) -> str:
    """Where the divergence starts, when the final re-check localized it; "" otherwise (our tooling's limits stay out)."""
    report = run.intermediates if run is not None else None
    if report is None or report.status != "found" or report.first is None:
        return ""
    kernel = f", computed by kernel `{report.kernel}`" if report.kernel else ""
    caution = " (with every intermediate exposed the output no longer diverges: a hint)" if not report.reproduced else ""
    return f"First diverging intermediate of the ATen graph Inductor compiles: `{report.first.node} = {report.first.op}`{kernel}{caution}."


def render(program: str, signature: Signature | None, final: Checked | None, rows: tuple[AblationRow, ...], verified: bool,
           *, logs: str = "", environment: str = "") -> str:
    """The issue body in the sections of PyTorch's bug template, 10-30 lines around the program.

    `signature` is None for a run that was not minimized (`divergence export`): the body then quotes the
    check's own explanation. `logs` goes under "Error logs"; `environment` (collect_env's text) replaces the
    one-line versions of the check's environment.
    """
    result = final.result if final is not None else None
    lines: list[str] = []
    if result is not None:
        lines += [f"# {title(read_graphs(result.code.fx_graphs).ops, signature, result)}", ""]
    lines += [
        "### 🐛 Describe the bug",
        "",
        "`torch.compile` returns a different answer from eager for this program and raises nothing:",
        "",
        "```python",
        program.rstrip(),
        "```",
        "",
    ]
    if result is not None:
        lines += difference_lines(signature, result)
    if (start := start_line(final)):
        lines.append(start)
    if (ladder := ablation_line(rows)):
        lines.append(f"Backends: {ladder}.")
    config = (result.options.inductor_config if result is not None else {}) or {}
    switches = ", ".join(f"`{k}={v}`" for k, v in sorted(config.items()))
    if signature is not None:
        lines.append(f"Checked{f' with {switches}' if switches else ''}; kept while minimizing: {signature.describe()}.")
    elif switches:
        lines.append(f"Checked with {switches}.")
    if verified:
        lines.append("`repro.py` (attached) checks it on its own: eager vs compiled vs a float64 reference; it exits 1 while the bug is present.")
    lines += ["", "### Error logs", "", logs.strip() or "None: the compiled program raises nothing; its result differs.", "", "### Versions", ""]
    if environment.strip():
        lines += ["```", environment.strip(), "```"]
    elif result is not None:
        env = result.environment
        lines.append(f"torch {env.get('torch', '?')}, Python {env.get('python', '?')}, {env.get('device', '?')}"
                     f"{' (' + env['device_name'] + ')' if env.get('device_name') else ''}, {env.get('platform', '?')}")
    return "\n".join(lines) + "\n"
