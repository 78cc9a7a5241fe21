"""An upstream bug report in PyTorch's PT2 conventions: title, repro, observed vs expected, versions, ablation.

The ablation re-checks the minimized program under each backend and under the two Inductor switches
that explain most numerical reports; the first backend at which the signature appears points at the
guilty stage, which is what the category guess is built on.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from engine import CheckOptions, CheckResult, Runner, Symptom, Verdict
from minimizer.oracle import Outcome, Signature, classify

# (label, backend, Inductor config overrides)
ABLATION: tuple[tuple[str, str, dict[str, bool]], ...] = (
    ("eager", "eager", {}),
    ("aot_eager", "aot_eager", {}),
    ("aot_eager_decomp_partition", "aot_eager_decomp_partition", {}),
    ("inductor", "inductor", {}),
    ("inductor + emulate_precision_casts", "inductor", {"emulate_precision_casts": True}),
    ("inductor + fallback_random", "inductor", {"fallback_random": True}),
)


@dataclass(frozen=True)
class AblationRow:
    setting: str
    verdict: Verdict
    reproduces: bool
    explanation: str


def ablate(runner: Runner, program: str, options: CheckOptions, signature: Signature, work_dir: Path) -> tuple[AblationRow, ...]:
    """Check the program under every ablation setting, two at a time."""
    rows: list[AblationRow] = []
    for start in range(0, len(ABLATION), 2):  # two at a time: the worker's children share two cores
        jobs = []
        for i, (label, backend, config) in enumerate(ABLATION[start : start + 2], start):
            opts = options.replace(backend=backend, inductor_config={**options.inductor_config, **config})
            jobs.append((label, runner.submit(program, opts, "repro.py", run_dir=work_dir / f"ablation-{i}")))
        for label, job in jobs:
            result = job.wait()
            rows.append(AblationRow(label, result.verdict, classify(signature, result) is Outcome.INTERESTING, result.explanation))
    return tuple(rows)


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


def render(program: str, repro: str, repro_output: str, signature: Signature, baseline: CheckResult, rows: tuple[AblationRow, ...]) -> str:
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

### Versions

- torch: {env.get('torch', '?')}
- triton: {env.get('triton', 'n/a')}
- Python: {env.get('python', '?')}
- device: {env.get('device', '?')}{(' (' + env['device_name'] + ')') if env.get('device_name') else ''}
- platform: {env.get('platform', '?')}
"""
