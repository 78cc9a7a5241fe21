"""The shrinkray polish for real: installed by `divergence install-shrinkray` into a Python 3.12 venv of its
own, reducing a program while asking our oracle over the socket. Cheap predicates stand in for the oracle
(the plumbing is what is tested; the oracle has its own tests). Skipped, saying why, where no Python >= 3.12
exists to install it with.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from minimizer.minimize import polish_with_shrinkray as _polish_with_shrinkray
from minimizer.reducer import PredicateOracle, Problem
from minimizer.shrinkray import InstallError, find_python312, install_shrinkray

VENV = Path(__file__).resolve().parent.parent / ".cache" / "shrinkray-venv"  # kept between local runs
PROGRAM = """import math
import torch


def helper(x):
    return x * 2 + math.sqrt(4.0)


VALUES = [1, 2, 3, 4]


def fn(x):
    y = helper(x)
    z = torch.erf(y) + math.pi
    return z
"""


def bug_still_there(candidate: str) -> bool:
    return "torch.erf(" in candidate and "def fn" in candidate


@pytest.fixture(scope="session")
def shrinkray() -> str:
    executable = VENV / "bin" / "shrinkray"
    if not executable.exists():
        if find_python312() is None:
            pytest.skip("no Python >= 3.12 here to install shrinkray with")
        done = subprocess.run(
            [sys.executable, "-m", "app.cli.main", "install-shrinkray", "--venv", str(VENV)],
            capture_output=True,
            text=True,
            timeout=900,
        )
        assert done.returncode == 0, done.stdout + done.stderr
        assert f"DIVERGENCE_SHRINKRAY={executable}" in done.stdout
    return str(executable)


@pytest.mark.slow
def test_the_polish_adopts_what_shrinkray_reaches_asking_our_oracle(
    shrinkray: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DIVERGENCE_SHRINKRAY", shrinkray)
    asked: list[str] = []

    def recording(candidate: str) -> bool:
        asked.append(candidate)
        return bug_still_there(candidate)

    oracle = PredicateOracle(recording)
    problem, notes = Problem(PROGRAM, oracle), []
    _polish_with_shrinkray(problem, oracle, None, notes.append)
    assert len(asked) > 5  # shrinkray's candidates reached the oracle through the socket
    assert bug_still_there(problem.current) and len(problem.current) < len(PROGRAM) / 2, problem.current
    assert len(notes) == 1 and notes[0].startswith("shrinkray polish: "), notes


def test_a_missing_shrinkray_is_said_once_and_changes_nothing(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("DIVERGENCE_SHRINKRAY", str(tmp_path / "no-such-shrinkray"))
    problem, notes = Problem(PROGRAM, PredicateOracle(bug_still_there)), []
    before = problem.current
    _polish_with_shrinkray(problem, problem.oracle, None, notes.append)
    assert problem.current == before and len(notes) == 1 and "divergence install-shrinkray" in notes[0]


@pytest.mark.skipif(sys.version_info >= (3, 12), reason="needs the test interpreter to be older than 3.12")
def test_an_interpreter_older_than_3_12_is_refused_before_pip_installs_the_wrong_package(tmp_path: Path) -> None:
    with pytest.raises(InstallError, match="not a Python >= 3.12"):
        install_shrinkray(tmp_path / "venv", python=sys.executable)
    assert not (tmp_path / "venv").exists()
