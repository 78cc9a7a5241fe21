"""The upstream issue body: its code block runs as pasted (a fresh interpreter, nothing of ours importable) and shows
the difference; its text is PyTorch's bug template, without our tool's words."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from engine import CheckOptions, Runner, Verdict
from minimizer.oracle import Checked, signature_of
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


@pytest.mark.slow
def test_the_issue_body_runs_as_pasted_and_shows_the_difference(
    runner: Runner, inductor_cache: Path, tmp_path: Path
) -> None:
    program = CASE.read_text()
    result = runner.check(
        program,
        CheckOptions(device="cpu", inductor_config={"fallback_random": True, "emulate_precision_casts": True}),
        "snippet.py",
        run_dir=tmp_path / "check",
    )
    assert result.verdict is Verdict.DIVERGENT, result.explanation
    signature = signature_of(result)
    body = render(program, signature, Checked(result), (), True)
    leaf = next(l for l in result.leaves if l.name == signature.leaf)

    script = code_block(body)
    assert "torch.compile(" in script and "torch.manual_seed(" in script and "emulate_precision_casts = True" in script
    assert "a.double() if a.is_floating_point()" in script  # the float64 run is one
    ran = run_pasted(script, tmp_path, inductor_cache)
    shown = re.search(r"^at index (\[.*\]) : eager (\S+) \| compiled (\S+) \| float64 (\S+)$", ran.stdout, re.M)
    assert shown is not None, ran.stdout
    assert (
        shown[1] == str(list(leaf.worst_index))
        and (shown[2], shown[3]) == (leaf.eager_value, leaf.compiled_value)
        and shown[2] != shown[3]
    )
    assert shown[4] == leaf.eager_value  # float64 sides with eager: 1.0 // 0.1 is 9
    assert re.search(rf"^{leaf.mismatches} of {leaf.numel} elements differ", ran.stdout, re.M), ran.stdout

    # PyTorch's template, in plain words: no title heading (GitHub's title field gets it), no tool vocabulary
    assert body.startswith("### 🐛 Describe the bug") and "### Error logs" in body and "### Versions" in body
    for ours in ("kept while minimizing", "mechanism", "signature", "(value)"):
        assert ours not in body, ours
    expected, actual = (re.search(rf"^\*\*{k}:\*\* (.*)$", body, re.M)[1] for k in ("Expected", "Actual"))
    for sentence in (expected, actual):
        assert sentence.endswith(".") and ". " not in sentence, sentence  # one sentence each
    assert f"`{leaf.eager_value}`" in expected and f"`{leaf.compiled_value}`" in actual
    title = issue_title(signature, Checked(result))
    assert title == "[inductor][cpu] `floor_divide`, `div`: torch.compile gives different values from eager", title


@pytest.mark.slow
def test_the_float64_run_of_a_bf16_arange_is_exact_as_the_checks_reference(
    runner: Runner, inductor_cache: Path, tmp_path: Path
) -> None:
    # arange(..., dtype=bf16) cast to float64 inputs still runs eager's bf16 kernel: the body's float64 run, like
    # the check's reference, makes the sequence in float64, so it prints the exact value, not eager's
    program = "import torch\n\ndef fn(n):\n    return torch.arange(n, dtype=torch.bfloat16) * 1\n\ndef inputs():\n    return (10000,)\n"
    result = runner.check(
        program,
        CheckOptions(device="cpu", inductor_config={"fallback_random": True, "emulate_precision_casts": True}),
        "snippet.py",
        run_dir=tmp_path / "check",
    )
    assert result.verdict is Verdict.DIVERGENT, result.explanation
    signature = signature_of(result)
    script = code_block(render(program, signature, Checked(result), (), True))
    assert "with Float64Sequences():" in script
    ran = run_pasted(script, tmp_path, inductor_cache)
    shown = re.search(r"^at index \[(\d+)\] : eager (\S+) \| compiled (\S+) \| float64 (\S+)$", ran.stdout, re.M)
    assert shown is not None, ran.stdout
    assert float(shown[4]) == float(shown[1]) != float(shown[2])  # element i of arange is i, and eager's bf16 is not


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
