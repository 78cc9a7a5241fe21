"""A fault written into Inductor (benchmarks/inductor_faults.py) is in compiled code only: the check of a program
compiled with it finds it, the same program compiled without it is not divergent. Real torch.compile, the worker."""

from __future__ import annotations

from engine.judge.verdicts import Verdict

PROGRAM = """
import sys
sys.path.insert(0, {benchmarks!r})
import torch
import inductor_faults


def fn(x):
    # a bf16 image normalised in float32 with the scalar eager rounds (0.45 -> 0.44921875), then rounded back
    return (x.float() - 0.44921875).to(torch.bfloat16) * 2


def inputs():
    return (torch.rand(64, 256).to(torch.bfloat16),)

{fault}
"""


def _source(fault: bool) -> str:
    from pathlib import Path

    benchmarks = str(Path(__file__).resolve().parent.parent / "benchmarks")
    line = (
        "compile_kwargs = {'options': {'post_grad_custom_post_pass': inductor_faults.RewritePass("
        "'test: 0.45 kept', inductor_faults.swap_scalar(0.44921875, 0.45))}}"
        if fault
        else ""
    )
    return PROGRAM.format(benchmarks=benchmarks, fault=line)


def test_a_scalar_kept_unrounded_inside_inductor_is_found_and_its_absence_is_not(check) -> None:
    faulty = check(_source(fault=True))
    assert faulty.verdict is Verdict.DIVERGENT, faulty.explanation
    assert "compiled is off in" in faulty.leaf("out").explanation  # one step, found element by element
    clean = check(_source(fault=False))
    assert clean.verdict in (Verdict.MATCH, Verdict.BENIGN), clean.explanation
