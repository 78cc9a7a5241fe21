"""Shared fixtures: one warm worker and one Inductor cache for the whole session (compiles dominate the run time);
and the `solo` marker's turn-taking when pytest-xdist runs the suite on several workers (README's test command)."""

from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
from collections.abc import Callable, Iterator
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


@pytest.fixture(scope="session")
def checked_once(
    runner: Runner, tmp_path_factory: pytest.TempPathFactory, pytestconfig: pytest.Config
) -> Callable[..., CheckResult]:
    """checked_once(source, options, filename): one check per program, options and file name for the whole test run,
    for tests that ask different things of the same run: a gallery case's verdict, figures and known cause
    (tests/test_sample_cases.py) and its issue body (tests/test_issue_body.py). A check is deterministic (seeded
    inputs, the same compile), so a second one would repeat the first at the cost of its compiles.

    The runs live in the test run's temporary directory, which pytest-xdist's workers share (each worker's own is a
    folder in it): a worker that finds a case checked loads the stored run (`CheckResult.load` gives back an equal
    result), and one that finds it being checked waits on its lock."""
    base = tmp_path_factory.getbasetemp()
    # under xdist, the run's folder (each worker's own is a folder in it)
    shared = (base.parent if hasattr(pytestconfig, "workerinput") else base) / "checked-once"
    shared.mkdir(exist_ok=True)

    def run(source: str, options: CheckOptions, filename: str) -> CheckResult:
        key = hashlib.sha256(repr((source, options, filename)).encode()).hexdigest()[:16]
        run_dir = shared / f"{Path(filename).stem}-{key}"
        with open(shared / f"{run_dir.name}.lock", "a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
            if (run_dir / "checked").exists():
                return CheckResult.load(run_dir)
            shutil.rmtree(run_dir, ignore_errors=True)  # what a check that raised left
            result = runner.check(source, options, filename, run_dir=run_dir)
            (run_dir / "checked").touch()
            return result

    return run


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
