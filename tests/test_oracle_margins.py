"""The calibration's margins held to bounds (issue #31): a benign calibration program that comes near an alarm, or a
detected fault that comes near silence, fails here.

benchmarks/oracle_margins.json records the calibration part (benchmarks/oracle_calibration.py, every check as a user
runs it) on the torch it names: for each check, the raw element tests of its values closest to firing and how many
values shared the budget. The margins are recomputed from those with the rule as it is now (the budget's split and
each test's hypotheses, engine/judge/family.py), so a change there that erodes a margin fails at once; a torch
upgrade fails the first test until the calibration is run again on it, and then the bounds below decide:

    nice -n 19 python benchmarks/oracle_calibration.py run --part calibration --label L --corpus family,ordinary
    python benchmarks/oracle_calibration.py report --part calibration --label L --margins benchmarks/oracle_margins.json
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))

import oracle_margins  # noqa: E402

RECORD = json.loads(oracle_margins.PATH.read_text())
ACCEPTED = {"match", "benign", "precision-cast", "rng", "eager-inaccurate"}
# log10 units: a benign check's strongest test with its effect stays 10x from its threshold, and a fault the element
# tests find clears its threshold 10x (the calibration run's closest values are well beyond both)
BENIGN_BOUND = 1.0
FAULT_BOUND = 1.0


def _checks(expect: str) -> list[dict]:
    return [c for c in RECORD["checks"] if c["expect"] == expect]


def _closest(check: dict) -> oracle_margins.Margin | None:
    found = oracle_margins.margins(check)
    return min(found, key=lambda m: m.margin, default=None)


def test_the_record_was_measured_on_the_installed_torch() -> None:
    measured, installed = RECORD["torch"].split(".")[:2], torch.__version__.split(".")[:2]
    assert measured == installed, (
        f"benchmarks/oracle_margins.json was measured on torch {RECORD['torch']}, this is {torch.__version__}: run "
        "the calibration part again (see this file's docstring) and commit the new record"
    )


def test_the_record_covers_the_calibration_part() -> None:
    corpora = {(c["corpus"], c["expect"]) for c in RECORD["checks"]}
    assert {("ordinary", "benign"), ("family", "fault")} <= corpora
    assert len(_checks("benign")) >= 40 and len(_checks("fault")) >= 40


def test_no_benign_calibration_check_comes_within_the_bound_of_an_alarm() -> None:
    close = []
    for check in _checks("benign"):
        closest = _closest(check)
        if check["verdict"] not in ACCEPTED or (closest is not None and closest.margin < BENIGN_BOUND):
            close.append((check["name"], check["verdict"], closest))
    assert close == [], f"benign calibration checks near or past an alarm: {close}"


def test_no_benign_calibration_value_has_a_probability_within_the_bound_even_without_its_effect() -> None:
    """Every test needs its probability and its effect; on the calibration part no benign value has the effect at all
    (the closest probability alone is log_softmax's direction test, 10^2.66 from its threshold on torch 2.13), so
    this holds the other guard too: a benign check stays clear of an alarm on both."""
    close = [
        (check["name"], m)
        for check in _checks("benign")
        for m in oracle_margins.margins(check)
        if m.p_margin < BENIGN_BOUND
    ]
    assert close == [], f"benign calibration values whose probability alone comes near its threshold: {close}"


def test_every_fault_the_element_tests_find_clears_its_threshold_by_the_bound() -> None:
    weak = []
    for check in _checks("fault"):
        closest = _closest(check)
        if closest is not None and closest.margin < 0 and closest.margin > -FAULT_BOUND:
            weak.append((check["name"], check["seed"], closest))
    assert weak == [], f"faults found by a test that barely fires: {weak}"
