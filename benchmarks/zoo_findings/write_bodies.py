"""Write each zoo finding's issue body and script from its program, with the tool a user files with.

For every finding below, `programs/<id>.py` (an fn + inputs program: the op, the sample's inputs written out or
drawn after a seed) is checked with the configuration the finding needs, its divergent leaf's shortest script is
settled by running it (minimizer/body.py: literal inputs where small, only the Inductor switches it needs, the side
read from the printed values), the backends ladder is run, and two files are written beside this file:
- `<id>.md`: the issue body (minimizer/report.py), as a maintainer reads it;
- `<id>.py`: the same script plus one line that exits 1 while the bug is present and 0 once it is fixed.
Findings whose bug no fn + inputs program shows on its own (eager's inaccuracies, judged against a float64 run or a
second dtype) have hand-written scripts and bodies, listed in findings.json like the others.

    PYTHONPATH=. nice -n 10 python benchmarks/zoo_findings/write_bodies.py [ID ...]
    python benchmarks/zoo_findings/write_bodies.py --format [ID ...]   # only `ruff format` scripts and bodies alike

Scripts and bodies' code blocks are written as `ruff format` writes them (ruff from the same venv), so they pass the
repository's `ruff check` and `ruff format --check` and paste as clean code.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
from dataclasses import replace
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(ROOT))

from engine import CheckOptions, Runner, Symptom  # noqa: E402
from minimizer.body import Side, fresh_runner, settle  # noqa: E402
from minimizer.interestingness import Checked, signature_of  # noqa: E402
from minimizer.mechanism import read_graphs  # noqa: E402
from minimizer.report import leaf_of, locate, render  # noqa: E402

SWITCHES = {"fallback_random": True, "emulate_precision_casts": True}
# id -> (Inductor config the check runs with, where it was found: the body's second sentence)
FINDINGS: dict[str, tuple[dict[str, object], str]] = {
    "var_mean_empty": (
        SWITCHES,
        "Found by a sweep of op_db's `var_mean`/`std_mean` samples (an empty input); bf16 too.",
    ),
    "remainder_zero_sign": (SWITCHES, "Found by a sweep of op_db's `remainder`/`__rmod__` samples in bf16; fp32 too."),
    "max_unpool2d_strides": (SWITCHES, "Found by a sweep of op_db's `max_unpool2d` samples (channels-last inputs)."),
    "fractional_max_pool3d_samples": (
        SWITCHES,
        "Found by a sweep of op_db's `fractional_max_pool3d` samples; compiled's windows are eager's with the "
        "three samples of each plane read in reverse order.",
    ),
    "dropout_p1_draws": (
        SWITCHES,
        "Found by a sweep of op_db's `dropout` samples (sample 8 after sample 4); `fallback_random` promises eager's "
        "random numbers, and eager's `dropout(p=1)` draws none.",
    ),
    "cat_empty_stride": (
        SWITCHES,
        "Every KV cache of transformers' GPT-2, Llama and T5 does this on its first update (`DynamicLayer.update`: "
        "`torch.cat([empty, key_states], dim=-2)`).",
    ),
    "grid_sample_zero_sign": (SWITCHES, "Found by a sweep of op_db's `grid_sample`/`grid_sampler_2d` samples."),
}


def exit_line(symptoms: set[Symptom], side: Side | None, expected: str) -> str:
    """The line a finding's script ends with: 1 while compiled differs from eager (or, where eager is wrong too and
    Python defines the answer exactly, from Python's), 0 once fixed."""
    if Symptom.STRIDE in symptoms:
        cond = "eager.stride() != compiled.stride()"
    elif Symptom.SIGNED_ZERO in symptoms:
        target = "torch.tensor(expected)" if side is Side.BOTH and expected == "Python" else "eager"
        cond = f"not torch.equal(compiled.signbit(), {target}.signbit())"
    elif Symptom.NAN in symptoms:
        cond = "not torch.equal(eager.isnan(), compiled.isnan())"
    else:
        cond = "not torch.allclose(eager, compiled, rtol=0, atol=0, equal_nan=True)"
    return f"# exits 1 while the bug is present, 0 once it is fixed\nraise SystemExit(1 if {cond} else 0)\n"


def formatted(script: str) -> str:
    """The script as `ruff format` writes it (this repository's settings), so a body pastes as ruff-clean code."""
    ruff = Path(sys.executable).with_name("ruff")
    done = subprocess.run(
        [str(ruff) if ruff.exists() else "ruff", "format", "--stdin-filename", "body.py", "-"],
        input=script,
        capture_output=True,
        text=True,
        check=True,
        cwd=ROOT,
    )
    return done.stdout


def resync(finding: str) -> str:
    """Format an existing finding's script and its body's code block alike, without checking anything again."""
    script_path, body_path = HERE / f"{finding}.py", HERE / f"{finding}.md"
    lines = script_path.read_text().rstrip("\n").splitlines()
    exit_at = next(i for i, line in enumerate(lines) if line.startswith(("# exits 1", "raise SystemExit(")))
    code, exit_lines = "\n".join(lines[:exit_at]) + "\n", lines[exit_at:]
    condition = exit_lines[-1].split("  # ")[0].removeprefix("raise SystemExit(1 if ").removesuffix(" else 0)")
    body = body_path.read_text()
    if code not in body:
        return f"{finding}: its body's code block is not its script; run it again instead"
    new_code = formatted(code)
    exit_text = f"# exits 1 while the bug is present, 0 once it is fixed\nraise SystemExit(1 if {condition} else 0)\n"
    body_path.write_text(body.replace(code, new_code))
    script_path.write_text(new_code + exit_text)
    return f"{finding}: formatted"


def write(finding: str, runner: Runner, work: Path) -> str:
    config, found = FINDINGS[finding]
    program = (HERE / "programs" / f"{finding}.py").read_text()
    options = CheckOptions(device="cpu", inductor_config=dict(config))
    result = runner.check(program, options, f"{finding}.py", run_dir=work / "check")
    signature = signature_of(result)
    if signature is None:
        return f"{finding}: not divergent ({result.verdict.value}: {result.explanation[:200]})"
    leaf = leaf_of(signature, result)
    assert leaf is not None
    run = fresh_runner(sys.executable, work / "settle", runner.cache_dir, 300, None)
    facts = read_graphs(result.code.fx_graphs)
    settled = settle(
        program, leaf, options, run, random_calls=bool(facts.random_ops), low_precision=facts.low_precision
    )
    if settled is None:
        return f"{finding}: no short script shows it"
    settled = replace(settled, script=formatted(settled.script))
    rows, _ = locate(runner, program, options, signature, work / "ladder")
    body = render(program, signature, Checked(result), rows, False, settled=settled, origin=found)
    (HERE / f"{finding}.md").write_text(body)
    script = settled.script + exit_line(set(leaf.symptoms), settled.side, settled.expected)
    (HERE / f"{finding}.py").write_text(script)
    return f"{finding}: side {settled.side.value if settled.side else '-'}, switches {list(settled.flags)}"


def main(argv: list[str]) -> int:
    only_format = "--format" in argv
    chosen = [a for a in argv if a != "--format"] or list(FINDINGS)
    unknown = [f for f in chosen if f not in FINDINGS]
    if unknown:
        print(f"unknown finding(s): {', '.join(unknown)}; known: {', '.join(FINDINGS)}", file=sys.stderr)
        return 2
    if only_format:
        for finding in chosen:
            print(resync(finding))
        return 0
    with tempfile.TemporaryDirectory() as tmp, Runner() as runner:
        for finding in chosen:
            print(write(finding, runner, Path(tmp) / finding), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
