"""Uninitialized memory (torch.empty and its family) is not a value: elements nobody wrote are left out of the
comparison."""

from __future__ import annotations

import torch

from engine.child.uninitialized import undefined_elements
from engine.judge.verdicts import Verdict


def _program(x: torch.Tensor) -> tuple[torch.Tensor, ...]:
    half = torch.empty(8)
    half[:3] = x[:3] * 2  # written: defined
    mask = torch.empty_like(x).bernoulli_(0.5)  # written by the draw: defined
    grown = x.new_empty_strided((2, 3), (1, 2))  # never written
    return half, mask, grown, x + 1


def test_elements_nobody_wrote_are_undefined_and_written_ones_are_not():
    x = torch.randn(8)

    def rerun() -> tuple[torch.Tensor, ...]:
        torch.manual_seed(0)
        return _program(x)

    found = undefined_elements(rerun)
    assert found.masks["out[0]"].tolist() == [False] * 3 + [True] * 5
    assert found.masks["out[2]"].all() and "out[1]" not in found.masks and "out[3]" not in found.masks
    assert found.ops == ("aten.empty", "aten.empty_like", "aten.new_empty_strided")


def test_a_program_without_uninitialized_memory_costs_one_rerun_and_finds_nothing():
    calls = []

    def rerun() -> torch.Tensor:
        calls.append(1)
        return torch.zeros(4) + 1

    assert not undefined_elements(rerun) and len(calls) == 1


def test_unwritten_memory_in_a_compiled_program_is_left_out_and_said(check):
    # op_db's samples of empty, empty_strided, new_empty... return memory nobody wrote; the sweep called them
    # divergent. The defined half of `half` and the other outputs are still judged.
    r = check(
        "import torch\n\n"
        "def fn(x, w):\n"
        "    half = torch.empty(2 * x.shape[0], dtype=x.dtype)\n"
        "    half[: x.shape[0]] = (x @ w).sum(-1)\n"
        "    return half, torch.empty_strided((5, 3), (1, 5), dtype=torch.bfloat16), torch.softmax(x, dim=-1)\n\n"
        "def inputs():\n"
        "    return torch.randn(64, 256), torch.randn(256, 128)\n"
    )
    half, strided = r.leaf("out[0]"), r.leaf("out[1]")
    assert (half.unwritten, strided.unwritten) == (64, 15)
    assert "64 of 128 values are uninitialized memory (aten.empty" in half.explanation
    assert strided.verdict is Verdict.MATCH and "only shape, dtype and strides are compared" in strided.explanation
    assert r.verdict in (Verdict.BENIGN, Verdict.MATCH)
