"""Compiles dominate a model's check: what is compiled is said live, and compiles are shared where they can be.

- the live stage names the compile's phase ("compiling" + "graph 1: lowering");
- a re-check reuses the program as loaded (the snippet is executed once, not once per re-check);
- the precision re-check of a program without random draws compiles what the minimizer compiles (both
  switches on), so the minimizer's first compile is a hit in Inductor's cache;
- checking the same program again loads it from Inductor's cache, the inside stage included;
- the minimizer runs the original as it was checked (provenance included): the same cache entries.
"""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from engine import CheckOptions, Runner, Verdict
from minimizer.interestingness import DivergenceOracle


def _bf16_chain() -> str:
    """A precision-cast program of its own (a unique constant: no earlier test compiled it), that says when it loads."""
    scale = 1.3 + uuid.uuid4().int % 1000 / 1e6
    return f"""
import torch
print("snippet loaded", flush=True)


def fn(x, y):
    return ((x * {scale!r} + y) * 0.71 - x) / 3.0


def inputs():
    return torch.randn(256, dtype=torch.bfloat16), torch.randn(256, dtype=torch.bfloat16)
"""


def _checked(runner: Runner, source: str, options: CheckOptions, run_dir: Path) -> tuple:
    seen: list[tuple[str, str]] = []
    result = runner.check(source, options, run_dir=run_dir, on_progress=lambda p: seen.append((p.stage, p.detail)))
    return result, seen


@pytest.mark.slow
def test_the_live_stage_names_the_phase_and_rechecks_reuse_program_and_compile(runner: Runner, tmp_path: Path) -> None:
    source = _bf16_chain()
    r, seen = _checked(runner, source, CheckOptions(device="cpu", timeout_s=240), tmp_path / "check")
    assert r.verdict is Verdict.PRECISION_CAST, r.explanation
    assert ("compiling", "graph 1: tracing with Dynamo") in seen and ("compiling", "graph 1: lowering") in seen
    assert any(stage == "compiling" and detail.startswith("graph 1: C++ compile (kernel 1)") for stage, detail in seen)
    assert "fallback_random" not in r.explanation  # the re-check's extra switch changes nothing here and is not claimed
    # the precision re-check ran the program as loaded: the snippet was executed once
    assert Path(r.run_dir, "output.log").read_text().count("snippet loaded") == 1
    # what the minimizer's candidates compile (both switches, no provenance, no inside stage: the options it derives
    # itself) was compiled by the re-check: a cache hit
    oracle = DivergenceOracle(runner, CheckOptions(device="cpu", timeout_s=240), tmp_path / "oracle")
    minimizer = oracle.options.with_inductor_config(fallback_random=True, emulate_precision_casts=True).replace(
        recheck_precision_casts=False
    )
    again, seen = _checked(runner, source, minimizer, tmp_path / "minimizer")
    assert again.verdict is Verdict.MATCH, again.explanation
    details = [detail for stage, detail in seen if stage == "compiling"]
    assert "graph 1: loading from Inductor's cache" in details and "graph 1: lowering" not in details, details
    # a user checking the same program again, inside stage on: Inductor's cache again, and still judged inside (the
    # graph Inductor would compile is copied on a cache hit too)
    same, seen = _checked(runner, source, CheckOptions(device="cpu", timeout_s=240), tmp_path / "same")
    assert same.verdict is Verdict.PRECISION_CAST, same.explanation
    details = [detail for stage, detail in seen if stage == "compiling"]
    assert "graph 1: loading from Inductor's cache" in details and "graph 1: lowering" not in details, details
    assert same.inside is not None and same.inside.status == "judged" and same.inside.judged == 1, same.inside


FLOOR_DIVIDE = """
import torch


def fn(a, b):
    return a // b


def inputs():
    return torch.tensor([1.0, 6.0]), torch.tensor([0.1, 0.2])
"""


@pytest.mark.slow
def test_the_minimizer_runs_the_original_as_it_was_checked(runner: Runner, tmp_path: Path) -> None:
    oracle = DivergenceOracle(runner, CheckOptions(device="cpu", timeout_s=120), tmp_path / "oracle")
    oracle.establish(FLOOR_DIVIDE)
    # with provenance, as `divergence check` ran it: the same key in Inductor's cache, so no second compile
    assert oracle.baseline is not None and any(o.provenance is not None for o in oracle.baseline.code.output_code)
    assert not oracle.candidate_options.provenance  # candidates still run without it
