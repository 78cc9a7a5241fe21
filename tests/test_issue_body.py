"""The upstream issue body: its code block runs as pasted (a fresh interpreter, nothing of ours importable) and shows
the difference; its text is PyTorch's bug template, without our tool's words."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from app.gallery import load_cases
from engine import CheckOptions, CheckResult, Runner, Verdict
from minimizer.body import Side, fresh_runner, settle
from minimizer.interestingness import Checked, signature_of
from minimizer.report import issue_title, render

CASE = Path(__file__).resolve().parent.parent / "sample_cases" / "floor_divide_off_by_one.py"


def code_block(body: str) -> str:
    blocks = re.findall(r"```python\n(.*?)```", body, re.S)
    assert len(blocks) == 1, body
    return blocks[0]


def run_pasted(script: str, tmp_path: Path, inductor_cache: Path) -> subprocess.CompletedProcess[str]:
    """The script as a maintainer runs it: a fresh interpreter in an empty folder, nothing of ours importable."""
    (tmp_path / "pasted").mkdir()
    (tmp_path / "pasted" / "issue_script.py").write_text(script)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONSTARTUP")} | {
        "TORCHINDUCTOR_CACHE_DIR": str(inductor_cache)
    }
    ran = subprocess.run(
        [sys.executable, "-I", "issue_script.py"],
        cwd=tmp_path / "pasted",
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert ran.returncode == 0, ran.stdout + ran.stderr
    return ran


def code_lines(script: str) -> list[str]:
    return [line for line in script.splitlines() if line.strip() and not line.strip().startswith("#")]


@pytest.mark.slow
def test_the_issue_body_is_the_op_its_inputs_and_pythons_answer_and_runs_as_pasted(
    runner: Runner, inductor_cache: Path, tmp_path: Path
) -> None:
    program = CASE.read_text()
    options = CheckOptions(device="cpu", inductor_config={"fallback_random": True, "emulate_precision_casts": True})
    result = runner.check(program, options, "snippet.py", run_dir=tmp_path / "check")
    assert result.verdict is Verdict.DIVERGENT, result.explanation
    signature = signature_of(result)
    leaf = next(lf for lf in result.leaves if lf.name == signature.leaf)
    run = fresh_runner(sys.executable, tmp_path / "settle", inductor_cache, 300, None)
    settled = settle(program, leaf, options, run)
    assert settled is not None
    body = render(program, signature, Checked(result), (), True, settled=settled)
    script = code_block(body)

    # what a maintainer wants: the op, its inputs written out, eager, compile, Python's answer; nothing else
    assert script == settled.script and len(code_lines(script)) <= 12, script
    assert "torch._inductor" not in script and settled.dropped == ("emulate_precision_casts", "fallback_random")
    assert "a = torch.tensor([1.0, 0.5, 6.0, 1.0, 7.0, -1.0])" in script and "manual_seed" not in script
    for harness in ("def run(", "ARGS", "deepcopy", "Float64Sequences", "inputs"):
        assert harness not in script, harness
    ran = run_pasted(script, tmp_path, inductor_cache)
    printed = dict(re.findall(r"^(eager|compiled|Python) +(\[.*\])$", ran.stdout, re.M))
    assert set(printed) == {"eager", "compiled", "Python"}, ran.stdout
    assert printed["eager"] == printed["Python"] != printed["compiled"]  # 1.0 // 0.1 is 9, as Python says
    assert settled.side is Side.COMPILED and settled.expected == "Python"

    # one sentence of expected vs actual, naming the side; PyTorch's template without our tool's words
    first = body.split("\n\n")[1]
    assert first.startswith("Expected `[9.0,") and first.endswith("compiled is wrong.") and "(Python)" in first, first
    assert body.startswith("### 🐛 Describe the bug") and "### Versions" in body
    for ours in ("kept while minimizing", "mechanism", "signature", "(value)", "attached", "repro.py"):
        assert ours not in body, ours
    title = issue_title(signature, Checked(result), settled.side)
    assert title == "[inductor][cpu] `floor_divide`, `div`: torch.compile gives different values from eager", title


def test_eagers_inaccuracy_is_written_as_one() -> None:
    # where the script printed a compiled value nearer the expected one than eager's, the body is about eager
    from minimizer.body import Settled, Shown

    settled = Settled("import torch\n", "float64", Shown(4096.0, 4128.0, 4113.0), Side.EAGER, (), (), 1)
    body = render("import torch\n", None, None, (), False, settled=settled)
    sentence = body.split("\n\n")[1]
    assert sentence == (
        "Expected `4113.0` (float64); `torch.compile` gives `4128.0`, nearer than eager's `4096.0`: eager is wrong "
        "here and compiled is not (an inaccuracy of eager's kernel)."
    ), sentence


def test_a_body_whose_inputs_come_from_op_db_says_what_it_needs_and_others_do_not() -> None:
    op_db = (
        "import torch\nimport torch.testing._internal.common_methods_invocations as cmi\n\ndef fn(x):\n    return x\n"
    )
    assert "needs `expecttest` (`pip install expecttest`" in render(op_db, None, None, (), False)
    assert "expecttest" not in render(CASE.read_text(), None, None, (), False)


def test_the_expected_sentence_names_float64_only_where_it_sides_with_eager_at_the_element_shown() -> None:
    # bf16 arange: over the leaf compiled is further from float64 (63 vs 47), but at the element shown it is nearer
    from engine import LeafKind, LeafResult, Symptom
    from minimizer.report import expected_actual

    figures = dict(
        symptoms=(Symptom.VALUE,),
        worst_index=(4113,),
        eager_value="4096.0",
        compiled_value="4128.0",
        eager_ref_max=47.0,
        compiled_ref_max=63.0,
    )
    expected, actual = expected_actual(
        LeafResult("out", LeafKind.OUTPUT, Verdict.DIVERGENT, "", reference_value="4113.0", **figures)
    )  # type: ignore[arg-type]
    assert "as a float64 run does" not in expected and "(float64: `4113.0`)" in actual
    expected, actual = expected_actual(
        LeafResult("out", LeafKind.OUTPUT, Verdict.DIVERGENT, "", reference_value="4096.0", **figures)
    )  # type: ignore[arg-type]
    assert expected.endswith("as a float64 run does.") and "(float64:" not in actual


ZOO = Path(__file__).resolve().parent.parent / "benchmarks" / "zoo_findings"


def test_each_zoo_body_is_its_script_and_names_the_side() -> None:
    # the script (exits 1 while the bug is present: tests/test_findings.py runs it) is the body's code block plus
    # one exit line, so the body runs as pasted and shows what the script shows; no op_db, no harness, no attachment
    from app.sweep.findings import load

    bodied = [finding for finding in load().findings if finding.body]  # hunt's later entries keep a script only
    assert len(bodied) >= 10  # the ten triaged zoo findings (issue #32)
    for finding in bodied:
        body = (ZOO / finding.body).read_text()
        script = (ZOO / finding.script).read_text().rstrip("\n").splitlines()
        assert script[-1].startswith("raise SystemExit("), finding.id
        code = script[:-2] if script[-2].startswith("# exits 1 while") else script[:-1]  # the exit line's comment
        assert "\n".join(code) + "\n" == code_block(body), finding.id
        for word in ("torch.testing._internal", "ARGS", "def run(", "repro.py", "attached"):
            assert word not in body, f"{finding.id}: {word}"
        assert "op_db" not in code_block(body), finding.id  # the sentence of where it was found may name it
        first = body.split("\n\n")[1].splitlines()[0]
        side = {"compiled": "compiled is wrong", "eager": "eager is wrong", "both": "both are wrong"}[finding.side]
        assert side in first, f"{finding.id}: {first}"


GALLERY = [c for c in load_cases()[0] if c.kind == "real-bug" and c.expected_cpu is Verdict.DIVERGENT]


@pytest.mark.slow
@pytest.mark.parametrize("case", GALLERY, ids=lambda c: c.slug)
def test_each_divergent_gallery_case_gets_a_body_that_runs_as_pasted(
    case, checked_once: Callable[..., CheckResult], inductor_cache: Path, tmp_path: Path
) -> None:
    options = case.options.replace(device="cpu", timeout_s=300)
    # the run tests/test_sample_cases.py judges the case's verdict on (one check of each case per test run)
    result = checked_once(case.source(), options, str(case.path))
    signature = signature_of(result)
    assert signature is not None, result.explanation
    leaf = next(lf for lf in result.leaves if lf.name == signature.leaf)
    settled = settle(
        case.source(), leaf, options, fresh_runner(sys.executable, tmp_path / "s", inductor_cache, 300, None)
    )
    if settled is None:  # a gradient, a module's state or a verbatim script: the body shows the program itself
        assert leaf.kind.value in ("gradient", "state") or "torch.compile(" in case.source(), leaf
        return
    ran = run_pasted(settled.script, tmp_path, inductor_cache)  # exits 0, with nothing of ours importable
    assert "eager" in ran.stdout and "compiled" in ran.stdout, ran.stdout
    assert "torch.testing._internal" not in settled.script and "def run(" not in settled.script
