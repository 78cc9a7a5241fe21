"""The faithful fp64 reference (eager's scalar roundings and random draws), eagerly and through real checks."""

from __future__ import annotations

import pytest
import torch

import engine
from engine import Verdict, Witness
from engine.child.faithful import FaithfulMode, trace_eager


def test_eager_is_asked_which_scalars_it_rounds():
    x = (torch.randn(64) * 3).bfloat16()
    trace = trace_eager(lambda: (torch.fmod(x, 0.3), x * 0.3, torch.remainder(x, 0.5)))
    # fmod rounds 0.3 to bf16's 0.30078125 (it matters); mul computes with 0.3 in fp32; 0.5 is exact
    assert [(r.op, r.value, r.rounded, r.dtype) for r in trace.roundings] == [
        ("aten.fmod.Scalar", 0.3, 0.30078125, "bfloat16")
    ]
    assert "0.3 -> 0.30078125 (bfloat16) in aten.fmod.Scalar" in trace.describe()


def test_the_faithful_run_rounds_those_scalars_and_replays_the_draws():
    torch.manual_seed(0)
    x = torch.randn(256).bfloat16()

    def fn(t):
        # CPU dropout draws with bernoulli_; CUDA's is the fused native_dropout, whose output is recomputed
        fused = torch.ops.aten.native_dropout.default(t, 0.5, True)[0]
        return torch.fmod(t, 0.3) + torch.rand_like(t) + torch.nn.functional.dropout(t, 0.5) + fused

    torch.manual_seed(1)
    eager = fn(x).double()
    torch.manual_seed(1)
    trace = trace_eager(lambda: fn(x))
    torch.manual_seed(1)
    plain = fn(x.double())
    torch.manual_seed(1)
    mode = FaithfulMode(trace)
    with mode:
        faithful = fn(x.double())
    assert trace.random_ops == {
        "aten.native_dropout.default": 1,
        "aten.rand_like.default": 1,
        "aten.bernoulli_.float": 1,
    }
    assert not mode.unmatched
    # the plain fp64 run draws other numbers and divides by 0.3: far from eager; the faithful one is eager unrounded
    assert (eager - plain).abs().max() > 0.5
    assert (
        eager.abs().max() < 16 and (eager - faithful).abs().max() <= 0.125
    )  # eager's bf16 adds round: two ULPs below 16


def test_a_python_scalar_rounded_in_eager_but_not_by_inductor_is_divergent(runner, tmp_path):
    # pytorch#186875: eager divides by bf16(0.3) = 0.30078125, Inductor by 0.3 (compiled is closer to plain fp64)
    torch.manual_seed(0)
    r = engine.check(
        lambda x: torch.remainder(x, 0.3), ((torch.randn(16) * 3).bfloat16(),), runner=runner, run_dir=tmp_path
    )
    leaf = r.leaf("out")
    assert r.verdict is Verdict.DIVERGENT and leaf.witness is Witness.FAITHFUL
    assert (
        "the plain fp64 reference does not model this program" in leaf.explanation
        and "0.3 -> 0.30078125" in leaf.explanation
    )


@pytest.mark.slow
def test_a_minimization_of_a_bf16_model_with_the_scalar_bug_starts_and_keeps_its_signature(runner, tmp_path):
    from engine import CheckOptions, Symptom
    from minimizer.interestingness import DivergenceOracle, Outcome
    from tests.conftest import REPO

    source = (REPO / "sample_cases" / "forecaster_remainder_bf16.py").read_text()
    oracle = DivergenceOracle(runner, CheckOptions(device="cpu", timeout_s=240), tmp_path)
    signature = oracle.establish(source)  # before the faithful reference: "nothing to minimize: ... benign"
    assert (signature.leaf, signature.symptoms) == ("out", frozenset({Symptom.VALUE}))
    start = source.index("def _unused_smoothing")
    without_dead_code = source[:start] + source[source.index("class Forecaster") :]
    without_the_bug = source.replace("torch.remainder(t_future, self.cfg.period)", "t_future")
    outcomes = [outcome for outcome, _ in oracle.classify_many([without_dead_code, without_the_bug])]
    assert outcomes == [Outcome.INTERESTING, Outcome.NOT_DIVERGENT]
