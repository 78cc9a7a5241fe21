"""tests/conftest.py's `checked_once`: tests that ask different things of one gallery case's run share one check."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from engine import CheckOptions, CheckResult, Runner, Verdict

PROGRAM = "import torch\n\ndef fn(x):\n    return x + 1\n\ndef inputs():\n    return (torch.ones(3),)\n"


def test_a_second_ask_loads_the_first_run(
    checked_once: Callable[..., CheckResult], runner: Runner, monkeypatch: pytest.MonkeyPatch
) -> None:
    checks: list[Any] = []
    check = runner.check
    monkeypatch.setattr(runner, "check", lambda *a, **k: checks.append(a) or check(*a, **k))
    options = CheckOptions(device="cpu", timeout_s=120)
    first = checked_once(PROGRAM, options, "checked_once_probe.py")
    again = checked_once(PROGRAM, options, "checked_once_probe.py")
    assert first.verdict is Verdict.MATCH and again == first and len(checks) == 1
    other = checked_once(
        PROGRAM, options.replace(seed=1), "checked_once_probe.py"
    )  # other settings: a check of its own
    assert other.run_dir != first.run_dir and len(checks) == 2
