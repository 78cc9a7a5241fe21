"""End to end on real CPU divergences: a 120-line model shrinks to its core through the graph path, verified in a fresh process."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from engine import CheckOptions, Runner, Symptom
from minimizer.minimize import minimize

SNIPPET = Path(__file__).resolve().parent / "snippets" / "minimize_floor_divide_noisy.py"
MODEL = Path(__file__).resolve().parent.parent / "benchmarks" / "minimize_corpus" / "time_bucket_encoder.py"


@pytest.mark.slow
def test_the_graph_path_shrinks_a_model_to_its_core(runner: Runner, tmp_path: Path) -> None:
    # an event encoder (config dataclass, embeddings, residual blocks, LayerNorm, GELU, dropout in eval mode,
    # unused helpers) whose timestamps are bucketed with a float floor division; the budget is only a backstop
    result = minimize(
        MODEL.read_text(),
        CheckOptions(device="cpu", timeout_s=120),
        runner,
        tmp_path / "work",
        budget_s=400,
        checkpoint_root=tmp_path / "checkpoints",
        use_shrinkray=False,
        ablation=False,
    )
    assert result.initial.lines > 80 and result.final.lines <= 8, result.minimized
    assert "//" in result.minimized and "class" not in result.minimized
    assert result.signature.symptoms == {Symptom.VALUE} and result.signature.first_op == "aten.div.Tensor_mode"
    assert result.final_check is not None and result.final_check.intermediates is not None
    assert (
        result.final_check.intermediates.first is not None
        and result.final_check.intermediates.first.op == "aten.div.Tensor_mode"
    )
    assert result.confirmed and result.repro_verified and result.repro is not None and not result.fell_back
    repro = tmp_path / "repro.py"
    repro.write_text(result.repro)
    fresh = subprocess.run([sys.executable, str(repro)], capture_output=True, text=True, timeout=300)
    assert fresh.returncode == 1 and "DIVERGENT" in fresh.stdout, fresh.stdout + fresh.stderr
    assert (tmp_path / "checkpoints").exists()  # a re-run would resume from the checkpointed best


@pytest.mark.slow
def test_should_stop_returns_the_best_so_far_without_verifying(runner: Runner, tmp_path: Path) -> None:
    source = SNIPPET.read_text()
    result = minimize(
        source,
        CheckOptions(device="cpu", timeout_s=120),
        runner,
        tmp_path / "work",
        use_shrinkray=False,
        should_stop=lambda: True,
    )
    assert result.stopped and not result.repro_verified and not result.confirmed and result.report is None
    assert (
        result.oracle_calls == 3
    )  # establishing the signature only (twice, then with the switches): no candidate, no re-check
    assert result.repro is not None and "def main" in result.repro


@pytest.mark.slow
def test_the_budget_is_the_reductions_establishing_comes_on_top(runner: Runner, tmp_path: Path) -> None:
    """`--budget` and the app promise a budget for reducing; its clock used to start before the three checks that
    establish the signature (a minute of a cold model on two cores, a third of the default budget), so a budget
    shorter than establishing tested no candidate at all."""
    from minimizer.minimize import finishing_reserve

    result = minimize(
        SNIPPET.read_text(),
        CheckOptions(device="cpu", timeout_s=120),
        runner,
        tmp_path / "work",
        budget_s=2,
        use_shrinkray=False,
        ablation=False,
    )
    assert result.stats.oracle_calls >= 1, result.notes  # candidates were tested after the 3 establishing checks
    assert result.stats.budget_exhausted
    # and the end of a budget is kept for the finishing passes (one expression from a chain of temporaries), which a
    # reduction that ran out of time used to skip
    assert (finishing_reserve(30), finishing_reserve(60), finishing_reserve(300), finishing_reserve(1000)) == (
        15,
        20,
        30,
        100,
    )
