"""Shared fixtures: one warm worker and one Inductor cache for the whole session (compiles dominate the run time);
and the `solo` marker's turn-taking when pytest-xdist runs the suite on several workers (README's test command)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from engine import CheckOptions, CheckResult, Runner
from tests.solo import pytest_runtest_protocol  # noqa: F401  (a hook: the `solo` marker's turn under pytest-xdist)

REPO = Path(__file__).resolve().parent.parent
SNIPPETS = Path(__file__).resolve().parent / "snippets"


@pytest.fixture(scope="session")
def divergence_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    home = tmp_path_factory.mktemp("divergence-home")
    os.environ["DIVERGENCE_HOME"] = str(home)
    return home


@pytest.fixture(scope="session")
def inductor_cache() -> Path:
    cache = Path(os.environ.get("TORCHINDUCTOR_CACHE_DIR") or REPO / ".cache" / "inductor")
    os.environ["TORCHINDUCTOR_CACHE_DIR"] = str(cache)
    return cache


@pytest.fixture(scope="session")
def runner(divergence_home: Path, inductor_cache: Path) -> Iterator[Runner]:
    with Runner(cache_dir=inductor_cache) as r:
        yield r


@pytest.fixture
def check(runner: Runner, tmp_path: Path) -> Any:
    """check("name" or source, **options): run a snippet from tests/snippets (or given as source) in the shared
    worker."""

    def run(snippet: str, **options: Any) -> CheckResult:
        path = SNIPPETS / f"{snippet}.py"
        source, filename = (
            (path.read_text(), str(path)) if "\n" not in snippet and path.exists() else (snippet, "snippet.py")
        )
        options.setdefault("timeout_s", 240)
        return runner.check(
            source, CheckOptions(**options), filename, run_dir=tmp_path / f"run-{len(list(tmp_path.iterdir()))}"
        )

    return run
