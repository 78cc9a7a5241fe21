"""The manual: README is a short front page, docs/ builds as an MkDocs site with --strict, and what it names exists."""

from __future__ import annotations

import html
import importlib.util
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import tomllib

REPO = Path(__file__).resolve().parent.parent


def _mkdocs_build(root: Path, site: Path) -> subprocess.CompletedProcess[str]:
    if importlib.util.find_spec("mkdocs") is None or importlib.util.find_spec("material") is None:
        pytest.fail("mkdocs and mkdocs-material are missing: install the test extra (pip install -e '.[test]')")
    return subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site)],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},  # Material's notice about its successor, on every build
    )


def test_the_manual_builds_strict(tmp_path: Path) -> None:
    done = _mkdocs_build(REPO, tmp_path / "site")
    assert done.returncode == 0, done.stderr[-4000:]
    setup = html.unescape(re.sub(r"<[^>]+>", "", (tmp_path / "site" / "setup" / "index.html").read_text()))
    assert "pip install -c constraints.txt -e '.[test]' && .venv/bin/python -m pytest" in setup  # from README


def test_a_broken_anchor_fails_the_strict_build(tmp_path: Path) -> None:
    """The build the test above runs is strict enough to fail: a copy with one link to a missing heading."""
    shutil.copytree(REPO / "docs", tmp_path / "docs")
    for name in ("mkdocs.yml", "README.md"):
        shutil.copy(REPO / name, tmp_path / name)
    page = tmp_path / "docs" / "verdicts.md"
    page.write_text(page.read_text() + "\nSee [nowhere](compared.md#no-such-heading).\n")
    done = _mkdocs_build(tmp_path, tmp_path / "site")
    assert done.returncode != 0 and "no-such-heading" in done.stderr, done.stderr[-3000:]


def test_readme_is_a_front_page_with_two_setup_commands() -> None:
    readme = (REPO / "README.md").read_text()
    assert len(readme.splitlines()) <= 250
    commands = re.findall(r"<!-- (\w+-command) -->\n```bash\n(.+)\n```", readme)
    assert [name for name, _ in commands] == ["app-command", "test-command"]
    # two pytest-xdist workers; loadscope keeps a module's tests on one worker (its module fixtures run once)
    assert commands[1][1].endswith("python -m pytest -n 2 --dist loadscope") and "'.[test]'" in commands[1][1]
    # .ci/run reads the test command the same way
    ci = subprocess.run(
        ["sed", "-n", "/<!-- test-command -->/{n;n;p;}", "README.md"], cwd=REPO, capture_output=True, text=True
    )
    assert ci.stdout.strip() == commands[1][1]


def _named_paths(text: str) -> set[str]:
    """Repository paths a page names in backticks: `engine/child/leaves.py`, `benchmarks/minimize_corpus/`."""
    roots = "app|engine|minimizer|benchmarks|tests|sample_cases|docs"
    return set(re.findall(rf"`((?:{roots})/[\w./-]*\w/?)`", text))


def test_the_paths_the_manual_names_exist() -> None:
    pages = [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]
    missing = sorted(
        f"{page.relative_to(REPO)}: {path}"
        for page in pages
        for path in _named_paths(page.read_text())
        if "*" not in path and not (REPO / path).exists()
    )
    assert missing == []
    assert _named_paths("see `engine/no_such.py` and `app/web/`") == {"engine/no_such.py", "app/web/"}


def test_the_layout_page_explains_every_import_contract() -> None:
    contracts = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"]
    layout = (REPO / "docs" / "layout.md").read_text()
    unexplained = [contract["name"] for contract in contracts if contract["name"] not in layout]
    assert len(contracts) >= 7 and unexplained == []


def _docs_pages_module():
    spec = importlib.util.spec_from_file_location("docs_pages", REPO / "benchmarks" / "docs_pages.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_a_benchmark_rewrites_only_its_own_section(tmp_path: Path) -> None:
    docs_pages = _docs_pages_module()
    page = tmp_path / "figures.md"
    start, end = docs_pages.markers("benchmarks/a.py")
    other_start, other_end = docs_pages.markers("benchmarks/b.py")
    page.write_text(
        f"# Figures\n\nHand-written.\n\n{start}\nold\n{end}\n\nBetween.\n\n{other_start}\nb's\n{other_end}\n"
    )
    docs_pages.write_section(page, "benchmarks/a.py", "| x | 1 |\n")
    docs_pages.write_section(page, "benchmarks/a.py", "| x | 2 |\n")  # twice: the markers stay, once each
    assert page.read_text() == (
        f"# Figures\n\nHand-written.\n\n{start}\n| x | 2 |\n{end}\n\nBetween.\n\n{other_start}\nb's\n{other_end}\n"
    )
    with pytest.raises(docs_pages.MissingMarkers, match="benchmarks/c.py: start"):
        docs_pages.write_section(page, "benchmarks/c.py", "anything")
    assert "| x | 2 |" in page.read_text()  # a refused write changes nothing


def test_the_oracle_page_has_the_calibration_section_for_its_benchmark() -> None:
    """The page benchmarks/oracle_calibration.py writes (the figures once in engine/judge/oracle.py's docstring)."""
    start, end = _docs_pages_module().markers("benchmarks/oracle_calibration.py")
    text = (REPO / "docs" / "figures" / "oracle.md").read_text()
    assert text.count(start) == 1 and text.count(end) == 1
