"""The layers hold: import-linter's contracts (pyproject.toml) pass, and no module imports another's private name."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
PACKAGES = ("app", "engine", "minimizer", "benchmarks", "tests")


def test_import_contracts_are_kept() -> None:
    lint = Path(sys.executable).with_name("lint-imports")
    if not lint.exists():
        pytest.fail("lint-imports is missing: install the test extra (pip install -e '.[test]')")
    done = subprocess.run([str(lint), "--no-cache"], cwd=REPO, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert "0 broken" in done.stdout


def _private_imports(path: Path) -> list[str]:
    """`from project.module import _name` lines: a private name reached from another module."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] in PACKAGES:
            for alias in node.names:
                if alias.name.startswith("_") and not alias.name.startswith("__"):
                    found.append(f"{path.relative_to(REPO)}:{node.lineno}: from {node.module} import {alias.name}")
    return found


def test_no_module_imports_a_private_name_of_another() -> None:
    offenders = [
        line
        for package in PACKAGES
        for path in sorted((REPO / package).rglob("*.py"))
        for line in _private_imports(path)
    ]
    assert offenders == []


def test_the_private_name_scan_sees_an_offender(tmp_path: Path) -> None:
    sample = REPO / "tests" / "snippets" / "_private_import_sample.py"
    try:
        sample.write_text("from engine.child.execution import _pick_device\n")
        assert _private_imports(sample) == [
            "tests/snippets/_private_import_sample.py:1: from engine.child.execution import _pick_device"
        ]
    finally:
        sample.unlink()


def test_the_rooms_contract_sees_a_front_end_importing_another(tmp_path: Path) -> None:
    """A copy of the tree where the command line imports the web app breaks the rooms contract (and only it)."""
    lint = Path(sys.executable).with_name("lint-imports")
    if not lint.exists():
        pytest.fail("lint-imports is missing: install the test extra (pip install -e '.[test]')")
    for name in ("app", "engine", "minimizer"):
        subprocess.run(["cp", "-r", str(REPO / name), str(tmp_path / name)], check=True)
    (tmp_path / "pyproject.toml").write_text((REPO / "pyproject.toml").read_text())
    arguments = tmp_path / "app" / "cli" / "arguments.py"
    arguments.write_text(arguments.read_text() + "\nfrom app.web import editor  # noqa: E402,F401\n")
    done = subprocess.run([str(lint), "--no-cache"], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert done.returncode != 0 and "1 broken" in done.stdout, done.stdout[-3000:]
    assert (
        "app.cli is not allowed to import app.web" in done.stdout
        and "app.cli.arguments -> app.web.editor" in done.stdout
    )


def _named_modules(text: str) -> list[str]:
    """Dotted project names (`engine.judge.oracle`, `app.web.main.PLACEHOLDER`) a text mentions."""
    return re.findall(r"(?<![\w./])((?:app|engine|minimizer)(?:\.[A-Za-z_]\w*)+)", text)


def _resolves(dotted: str) -> bool:
    """A module or package of the tree, or a name a module of the tree mentions."""
    parts = dotted.split(".")
    for i in range(len(parts), 0, -1):
        base = REPO.joinpath(*parts[:i])
        source = base.with_suffix(".py") if base.with_suffix(".py").exists() else base / "__init__.py"
        if source.exists():
            return i == len(parts) or re.search(rf"\b{re.escape(parts[i])}\b", source.read_text()) is not None
    return False


def test_docstrings_and_comments_name_modules_that_exist() -> None:
    stale = [
        f"{path.relative_to(REPO)}: {name}"
        for package in ("app", "engine", "minimizer", "benchmarks")
        for path in sorted((REPO / package).rglob("*.py"))
        for name in _named_modules(path.read_text())
        if not name.endswith(".sqlite") and not _resolves(name)
    ]
    assert stale == []
    assert not _resolves("engine.cases") and _resolves("app.gallery.load_cases")  # the scan can say no
