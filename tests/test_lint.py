"""Ruff's lint and format hold over the whole tree (configured in pyproject.toml), so CI fails on a violation.

Run them yourself before a commit: `ruff format .` then `ruff check .` (the test extra installs the ruff this
test runs; its minor version is pinned there, since a new one may format differently).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def ruff(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "ruff", *args], cwd=REPO, capture_output=True, text=True, timeout=300)


def test_ruff_check_passes_on_the_whole_tree() -> None:
    done = ruff("check", "--no-cache", "--output-format", "concise", ".")
    assert done.returncode == 0, f"ruff check found:\n{done.stdout[-6000:]}{done.stderr[-2000:]}"


def test_ruff_format_leaves_the_whole_tree_as_it_is() -> None:
    done = ruff("format", "--no-cache", "--check", ".")
    assert done.returncode == 0, f"`ruff format .` would change:\n{done.stdout[-6000:]}{done.stderr[-2000:]}"


def test_a_violation_is_reported(tmp_path: Path) -> None:
    """The lint runs with the project's configuration and fails on a long line (what the tests above rely on)."""
    bad = tmp_path / "bad.py"
    bad.write_text("x = " + repr("y" * 130) + "\n")
    done = ruff("check", "--no-cache", "--config", str(REPO / "pyproject.toml"), str(bad))
    assert done.returncode == 1 and "E501" in done.stdout
