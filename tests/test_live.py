"""Live objects, the pytest helper, the Jupyter summary, `divergence export`, and the documented examples."""

from __future__ import annotations

import re
import threading
from pathlib import Path

import pytest
import torch

import engine
from engine import NotShippable, Verdict
from engine.testing import CompileDivergence, assert_compile_matches
from tests.conftest import REPO


def _local_model() -> torch.nn.Module:
    class Local(torch.nn.Module):  # defined in a function: not importable, so it must travel by value
        def __init__(self) -> None:
            super().__init__()
            self.lin = torch.nn.Linear(8, 8)

        def forward(self, x):
            return torch.tanh(self.lin(x))

    return Local()


@pytest.mark.slow
def test_live_module_is_checked_in_a_worker(runner, tmp_path):
    r = engine.check(_local_model(), (torch.randn(4, 8),), runner=runner, run_dir=tmp_path)
    assert r.verdict in (Verdict.MATCH, Verdict.BENIGN) and r.style == "fn-inputs"
    assert (tmp_path / "payload.pkl").exists() and engine.load_result(tmp_path).verdict is r.verdict


def test_unshippable_objects_say_why_and_in_process_works(runner, tmp_path):
    lock = threading.Lock()

    def fn(x):
        with lock:
            return x * 3 + 1

    with pytest.raises(NotShippable, match="in_process=True"):
        engine.check(fn, (torch.randn(5),), runner=runner, run_dir=tmp_path / "a")
    r = engine.check(fn, (torch.randn(5),), in_process=True, run_dir=tmp_path / "b")
    assert r.verdict in (Verdict.MATCH, Verdict.BENIGN) and (tmp_path / "b" / "result.json").exists()


def test_jupyter_summary_shows_verdict_worst_leaves_and_heatmap(check):
    r = check("rng_floor_divide")
    page = r._repr_html_()
    assert "DIVERGENT" in page and "<table" in page and "max ULP per block" in page and "out" in page


@pytest.mark.slow
def test_assert_compile_matches_fails_with_the_explanation(divergence_home):
    with pytest.raises(CompileDivergence) as failure:
        assert_compile_matches(lambda a, b: a // b, (torch.tensor([1.0, 6.0]), torch.tensor([0.1, 0.2])))
    message = str(failure.value)
    assert "further from fp64" in message and "run stored in" in message
    assert Path(failure.value.result.run_dir, "result.json").exists()


@pytest.mark.slow
def test_compile_checker_fixture(compile_checker, divergence_home):
    assert compile_checker(lambda x: x.abs() + 1, (torch.randn(6),)).verdict is Verdict.MATCH


@pytest.mark.slow
def test_export_writes_tlparse_environment_repro_and_issue(check, runner, tmp_path):
    from app.cli.export import export_run

    r = check("graph_break")
    done = export_run(Path(r.run_dir), tmp_path / "export", runner=runner)
    assert done.tlparse_index is not None and done.tlparse_index.exists(), done.notes
    issue = done.issue.read_text()
    assert "### 🐛 Describe the bug" in issue and "divergence check snippet.py" in issue and "PyTorch version" in issue
    assert (tmp_path / "export" / "snippet.py").read_text() == Path(r.run_dir, "snippet.py").read_text()
    assert "torch.compile" in (tmp_path / "export" / "repro.py").read_text()  # the self-checking harness


def _examples() -> list[tuple[str, str]]:
    """Every `<!-- example -->` Python block of README.md and the manual's pages, as (where, code)."""
    pages = [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]
    return [
        (f"{page.relative_to(REPO)} example {i}", code)
        for page in pages
        for i, code in enumerate(re.findall(r"<!-- example -->\n```python\n(.*?)```", page.read_text(), re.S))
    ]


def test_the_examples_are_found() -> None:
    where = [name for name, _ in _examples()]
    assert "README.md example 0" in where and "docs/integration.md example 1" in where, where


@pytest.mark.slow
@pytest.mark.parametrize(("where", "code"), _examples(), ids=[name for name, _ in _examples()])
def test_documented_examples_run(where, code, divergence_home):
    exec(compile(code, where, "exec"), {})
