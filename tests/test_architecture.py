"""The layers hold: import-linter's contracts (pyproject.toml) pass, and no module imports another's private name."""

from __future__ import annotations

import ast
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
    offenders = [line for package in PACKAGES for path in sorted((REPO / package).rglob("*.py")) for line in _private_imports(path)]
    assert offenders == []


def test_the_private_name_scan_sees_an_offender(tmp_path: Path) -> None:
    sample = REPO / "tests" / "snippets" / "_private_import_sample.py"
    try:
        sample.write_text("from engine.child.execution import _pick_device\n")
        assert _private_imports(sample) == ["tests/snippets/_private_import_sample.py:1: from engine.child.execution import _pick_device"]
    finally:
        sample.unlink()
