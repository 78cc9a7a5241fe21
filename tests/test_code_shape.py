"""The code a maintainer reads: functions that fit on a screen in the three packages (issue #34).

A function over MAX_LINES lines fails the test: split it by concept (as PyTorch's fx_minifier splits its strategies
around one small state), with named records where its parts hand each other more than one value.
"""

from __future__ import annotations

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
PACKAGES = ("engine", "minimizer", "app")
MAX_LINES = 60


def function_lengths(root: Path = REPO) -> dict[tuple[str, str], int]:
    """Every function and method of the packages: (file, name) -> lines from its `def` to its last line (the
    longest where a file has two of one name)."""
    found: dict[tuple[str, str], int] = {}
    for package in PACKAGES:
        for path in sorted((root / package).rglob("*.py")):
            tree = ast.parse(path.read_text(), filename=str(path))
            for node in ast.walk(tree):
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    key = (path.relative_to(root).as_posix(), node.name)
                    length = (node.end_lineno or node.lineno) - node.lineno + 1
                    found[key] = max(found.get(key, 0), length)
    return found


def test_no_function_is_longer_than_a_screen() -> None:
    too_long = {key: n for key, n in function_lengths().items() if n > MAX_LINES}
    assert not too_long, f"functions over {MAX_LINES} lines (split them by concept): {too_long}"


def test_the_measure_counts_a_method_from_def_to_its_last_line(tmp_path: Path) -> None:
    (tmp_path / "app").mkdir()
    method = ["    def f(self):"] + ["        x = 1"] * 61
    (tmp_path / "app" / "m.py").write_text("\n".join(["class C:", *method, "", "", "def g():", "    return 1", ""]))
    assert function_lengths(tmp_path) == {("app/m.py", "f"): 62, ("app/m.py", "g"): 2}
