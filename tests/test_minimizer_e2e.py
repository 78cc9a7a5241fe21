"""End to end on a real CPU divergence: minimize a noisy floor-division bug, then run its repro in a fresh process."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from engine import CheckOptions, Runner, Symptom
from minimizer.minimize import minimize

SNIPPET = Path(__file__).resolve().parent / "snippets" / "minimize_floor_divide_noisy.py"


@pytest.mark.slow
def test_minimize_a_real_divergence_to_a_verified_repro(runner: Runner, tmp_path: Path) -> None:
    # the fixpoint comes after 60-125 s here; the budget is only a backstop, generous so that a loaded
    # machine does not cut the reduction short and fail the size assertions
    result = minimize(
        SNIPPET.read_text(), CheckOptions(device="cpu", timeout_s=120), runner, tmp_path / "work",
        budget_s=300, checkpoint_root=tmp_path / "checkpoints", use_shrinkray=False, ablation=False,
    )
    assert result.signature.symptoms == {Symptom.VALUE}
    assert result.final.tokens < result.initial.tokens / 2, result.minimized
    assert "class Net" not in result.minimized and "randn" not in result.minimized
    assert result.confirmed and result.repro_verified and result.repro is not None
    repro = tmp_path / "repro.py"
    repro.write_text(result.repro)
    fresh = subprocess.run([sys.executable, str(repro)], capture_output=True, text=True, timeout=300)
    assert fresh.returncode == 1 and "DIVERGENT" in fresh.stdout, fresh.stdout + fresh.stderr
    assert (tmp_path / "checkpoints").exists()  # a re-run would resume from the checkpointed best


@pytest.mark.slow
def test_should_stop_returns_the_best_so_far_without_verifying(runner: Runner, tmp_path: Path) -> None:
    source = SNIPPET.read_text()
    result = minimize(source, CheckOptions(device="cpu", timeout_s=120), runner, tmp_path / "work", use_shrinkray=False, should_stop=lambda: True)
    assert result.stopped and not result.repro_verified and not result.confirmed and result.report is None
    assert result.oracle_calls == 2  # establishing the signature only: no candidate, no re-check
    assert result.repro is not None and "def main" in result.repro
