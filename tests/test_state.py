"""The module state across a call's runs (engine/child/state.py): copied while small, watched without a copy above.

In-process: StateGuard on its own, then compare_call with the copy limit at zero, so a small model takes the
path a large one takes (a faulty backend stands in for a compiler that writes to a parameter).
"""

from __future__ import annotations

import pytest
import torch

from engine.child import state as state_module
from engine.child.comparison import CallSettings, compare_call
from engine.child.errors import StageError
from engine.child.state import StateGuard
from engine.judge.verdicts import LeafKind, Symptom, Verdict


def _settings() -> CallSettings:
    return CallSettings(
        strict=False,
        factor=2.0,
        noise_ulps=32.0,
        backward=False,
        fp64_reference=True,
        max_stored_elements=1 << 20,
        emit=lambda stage: None,
    )


def test_buffers_are_copied_and_parameters_above_the_limit_watched():
    model = torch.nn.BatchNorm1d(4)
    live = dict([*model.named_parameters(), *model.named_buffers()])
    guard = StateGuard(live, copied_parameter_bytes=0)
    assert sorted(guard.watched) == ["bias", "weight"]  # parameters: no copy
    assert "running_mean" in guard.before
    model.weight.data.mul_(3)  # through .data: no version counter moves, the CRC does
    model(torch.randn(8, 4))  # training mode: the running statistics move
    assert sorted(guard.changed()) == ["num_batches_tracked", "running_mean", "running_var", "weight"]
    guard.put_back(["running_mean", "running_var"])
    assert torch.equal(model.running_mean, torch.zeros(4)) and torch.equal(model.running_var, torch.ones(4))


def test_a_small_model_is_copied_whole():
    model = torch.nn.Linear(3, 3)
    guard = StateGuard(dict(model.named_parameters()))
    assert guard.watched == [] and guard.changed() == []
    with torch.no_grad():
        model.weight.add_(0)  # a write that changes nothing is no change
    assert guard.changed() == []


class WritesItsWeight(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = torch.nn.Linear(4, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        with torch.no_grad():
            self.lin.weight.mul_(0.5)
        return self.lin(x)


def test_eager_writing_a_watched_parameter_is_refused_with_the_reason(monkeypatch):
    monkeypatch.setattr(state_module, "COPIED_PARAMETER_BYTES", 0)
    model = WritesItsWeight()
    with pytest.raises(
        StageError, match=r"wrote to self\.lin\.weight in place when run eagerly.*buffers are always copied"
    ):
        compare_call(model, model, (torch.randn(2, 4),), {}, 0, _settings())


def test_compiled_writing_a_watched_parameter_is_a_divergent_state_leaf(monkeypatch):
    monkeypatch.setattr(state_module, "COPIED_PARAMETER_BYTES", 0)
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.BatchNorm1d(4)).train()

    def writes_a_parameter(gm, example_inputs):  # Inductor, then a write eager never makes, past the version counter
        from torch._inductor.compile_fx import compile_fx

        compiled = compile_fx(gm, example_inputs)

        def run(*args):
            outs = compiled(*args)
            model[0].weight.data.add_(1.0)
            return outs

        return run

    torch._dynamo.reset()
    outcome, _ = compare_call(
        model, torch.compile(model, backend=writes_a_parameter), (torch.randn(8, 4),), {}, 0, _settings()
    )
    leaves = {leaf.name: leaf for leaf in outcome.leaves}
    written = leaves["state self.0.weight"]
    assert (written.kind, written.verdict, written.symptoms) == (LeafKind.STATE, Verdict.DIVERGENT, (Symptom.MUTATION,))
    assert "compiled wrote to self.0.weight in place but eager did not" in written.explanation
    # the buffers, copied as always, are compared as before: both runs updated them the same way
    assert leaves["state self.1.running_mean"].verdict in (Verdict.MATCH, Verdict.BENIGN)
    assert leaves["out"].verdict in (Verdict.MATCH, Verdict.BENIGN)
