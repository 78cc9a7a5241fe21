"""The `solo` marker (tests/solo.py) under pytest-xdist: a solo test runs with no other test beside it, while the
ordinary tests still run side by side."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("xdist", reason="pytest-xdist is not installed (pip install -e '.[test]')")

REPO = Path(__file__).resolve().parent.parent
CONFTEST = """import pytest
from tests.solo import pytest_runtest_protocol  # noqa: F401

def pytest_configure(config):
    config.addinivalue_line("markers", "solo: alone")
"""
TESTS = """import json, os, time
import pytest

def _spend(name):
    start = time.monotonic()
    time.sleep(1.0)
    with open(os.environ["SPANS"], "a") as f:
        f.write(json.dumps([name, start, time.monotonic()]) + "\\n")

@pytest.mark.parametrize("n", range(3))
def test_before(n):
    _spend(f"before{n}")

@pytest.mark.solo
def test_alone():
    _spend("solo")

@pytest.mark.parametrize("n", range(3))
def test_after(n):
    _spend(f"after{n}")
"""


def test_a_solo_test_overlaps_no_other_while_the_others_overlap(tmp_path: Path) -> None:
    (tmp_path / "conftest.py").write_text(CONFTEST)
    (tmp_path / "test_spans.py").write_text(TESTS)
    spans = tmp_path / "spans.jsonl"
    env = {**os.environ, "PYTHONPATH": str(REPO), "SPANS": str(spans)}
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-n", "2", "-p", "no:cacheprovider", "-q", str(tmp_path)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    ran = {name: (start, end) for name, start, end in map(json.loads, spans.read_text().splitlines())}
    assert len(ran) == 7, ran
    solo = ran.pop("solo")
    overlapping = [name for name, (start, end) in ran.items() if start < solo[1] and solo[0] < end]
    assert not overlapping, (solo, ran)
    # and the ordinary tests did run two at a time (else the first assertion would hold without any lock)
    side_by_side = [(a, b) for a in ran for b in ran if a < b and ran[a][0] < ran[b][1] and ran[b][0] < ran[a][1]]
    assert side_by_side, ran
