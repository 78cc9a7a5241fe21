"""An upstream bug report in PyTorch's PT2 conventions: title, repro, observed vs expected, versions, localization.

The localization is the engine's (engine.run_localization), run on the minimized program: its ablation
ladder re-checks the program under each backend and under the two Inductor switches that explain most
numerical reports (the first backend at which the signature appears points at the guilty stage, which
is what the category guess is built on), and its first diverging intermediate names the graph node and
the generated kernel. The bisector is left out: it is many more compiles, and the ladder already names
the layer.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from engine import CheckOptions, CheckResult, Localization, Runner, Symptom, Verdict, run_localization
from minimizer.oracle import Outcome, Signature, classify

STEPS = ("ablation", "intermediates")  # one check more than the ladder alone; the node card is worth it


@dataclass(frozen=True)
class AblationRow:
    setting: str
    verdict: Verdict
    reproduces: bool
    explanation: str


def locate(runner: Runner, program: str, options: CheckOptions, signature: Signature, work_dir: Path) -> tuple[tuple[AblationRow, ...], Localization]:
    """The engine's ladder and first diverging intermediate; each rung also judged against the signature."""
    loc = run_localization(runner, program, options, "repro.py", work_dir, steps=STEPS)
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


def guess_category(signature: Signature, rows: tuple[AblationRow, ...]) -> str:
    """The bug class the evidence points at: the stage where it first appears, then the symptom."""
    hit = {r.setting: r.reproduces for r in rows}
    symptoms = signature.symptoms
    if hit.get("eager"):
        return "Dynamo (graph capture / bytecode transformation)"
    if hit.get("aot_eager"):
        return "mutation/aliasing (AOTAutograd functionalization)" if Symptom.MUTATION in symptoms else "AOTAutograd (functionalization / tracing)"
    if hit.get("aot_eager_decomp_partition"):
        return "decomposition"
    if hit.get("inductor") and hit.get("inductor + emulate_precision_casts") is False:
        return "precision casts (Inductor skips a low-precision round trip)"
    if hit.get("inductor") and hit.get("inductor + fallback_random") is False:
        return "RNG (Inductor's random numbers differ from eager's)"
    if Symptom.DTYPE in symptoms:
        return "type promotion"
    if Symptom.STRIDE in symptoms or Symptom.SHAPE in symptoms:
        return "layout"
    if Symptom.MUTATION in symptoms:
        return "mutation/aliasing (Inductor)"
    if symptoms & {Symptom.NAN, Symptom.INF, Symptom.SIGNED_ZERO}:
        return "codegen (special values: NaN/inf/signed zero handling in the generated kernel)"
    return "codegen (Inductor kernel numerics)"


def _ops(program: str) -> list[str]:
    import ast

    names: list[str] = []
    for node in ast.walk(ast.parse(program)):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr not in ("tensor", "randn", "rand", "ones", "zeros", "arange", "manual_seed"):
            names.append(node.func.attr)
        elif isinstance(node, ast.BinOp):
            names.append(type(node.op).__name__.lower())
    return list(dict.fromkeys(names))


def title(program: str, signature: Signature, baseline: CheckResult) -> str:
    device = baseline.environment.get("device", baseline.options.device or "cpu")
    ops = ", ".join(f"`{o}`" for o in _ops(program)[:3]) or "this program"
    what = ", ".join(sorted(s.value for s in signature.symptoms))
    return f"[inductor][{device}] {ops} gives a different result under torch.compile than eager ({what})"


def where_it_starts(loc: Localization | None) -> str:
    """The localization's layer and first diverging node, as markdown; "" when there is none."""
    if loc is None:
        return ""
    out = ["### Where it starts", ""]
    if loc.ablation is not None:
        out.append(f"Ablation: {loc.ablation.conclusion}.")
    i = loc.intermediates
    if i is not None and i.first is not None:
        # the engine's explanation already names the node, its op and the kernel
        out += ["", f"In the ATen graph Inductor compiles, the {i.explanation} (`{i.first.op}`)."]
        if not i.reproduced:
            out.append("(With every intermediate exposed the output no longer diverges: fusion changed, so treat this node as a hint.)")
        if i.kernel_source:
            out += ["", f"<details><summary>kernel {i.kernel}</summary>", "", "```", i.kernel_source.strip(), "```", "", "</details>"]
    elif i is not None:
        out += ["", f"First diverging intermediate: {i.status} ({i.explanation})."]
    return "\n".join(out) + "\n"


def render(program: str, repro: str, repro_output: str, signature: Signature, baseline: CheckResult, rows: tuple[AblationRow, ...],
           localization: Localization | None = None) -> str:
    env = baseline.environment
    leaf = next((l for l in baseline.leaves if l.name == signature.leaf), None)
    observed = leaf.explanation if leaf is not None else baseline.explanation
    table = "\n".join(f"| {r.setting} | {r.verdict.value} | {'yes' if r.reproduces else 'no'} |" for r in rows) or "| (not run) | | |"
    return f"""# {title(program, signature, baseline)}

### 🐛 Describe the bug

`torch.compile` returns a different answer from eager for the program below and raises nothing.
Signature: {signature.describe()}.

```python
{repro.rstrip()}
```

**Observed** (output of the repro above):

```
{repro_output.strip()}
```

{observed}

**Expected:** compiled output equal to eager's (or at least no further from a float64 reference than eager is).

### Ablation

| setting | verdict | same divergence |
|---|---|---|
{table}

Category guess: **{guess_category(signature, rows)}**.

{where_it_starts(localization)}
### Versions

- torch: {env.get('torch', '?')}
- triton: {env.get('triton', 'n/a')}
- Python: {env.get('python', '?')}
- device: {env.get('device', '?')}{(' (' + env['device_name'] + ')') if env.get('device_name') else ''}
- platform: {env.get('platform', '?')}
"""
