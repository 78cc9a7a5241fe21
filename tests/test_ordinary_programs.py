"""Issue #31's false alarms on ordinary programs, checked as a user checks them (real torch.compile, the worker):
each was `divergent` before ties, effects and the check's budget, and must be match or benign (or a named
mechanism) now. And two cases where compiled is the nearer side: `eager-inaccurate`, exit 0.

The programs are benchmarks/ordinary_programs.py's, as a user wrote them; the sizes are the issue's where a check
stays under a minute on CI's two cores.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from engine.judge.verdicts import Nearer, Verdict

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
from ordinary_programs import ordinary_programs  # noqa: E402

ACCEPTED = (Verdict.MATCH, Verdict.BENIGN, Verdict.PRECISION_CAST)
SOURCES = {p.name: p.source for p in ordinary_programs()}

# each divergent on main before issue #31 (measured 2026-12-06, torch 2.13 CPU, seed 0): the direction test on gelu's
# near-ties, exactness on RMSNorm's midpoints, rows and columns of log_softmax, ...
FALSE_ALARMS = [
    "gelu (bf16, std 2, 2048x2048)",
    "rsqrt (bf16, std 2, 2048x2048)",
    "rsqrt (fp16, std 1, 1024x1024)",
    "elu (fp16, std 1, 1024x1024)",
    "RMSNorm written out (bf16, 4x1024x1024)",
    "RMSNorm written out (fp16, 4x1024x1024)",
    "group norm (fp16, 16x64x32x32)",
]
# the fp16 gelu and fp16 attention were not divergent on main here (6 gelu and 4 attention variants, 3 seeds
# each: match or benign); kept, as the issue asks, so that they stay so
STAYS = ["gelu (fp16, std 2, 2048x2048)", "attention written out (fp16, 4x8x512x64)"]
LOG_SOFTMAX = """
import torch
import torch.nn.functional as F


def fn(x):
    return F.log_softmax(x, dim=-1)


def inputs():
    return (torch.randn(4096, 1024).to(torch.{dtype}),)
"""
SOURCES.update({f"log_softmax ({dt}, 4096x1024)": LOG_SOFTMAX.format(dtype=dt) for dt in ("bfloat16", "float16")})
FALSE_ALARMS += ["log_softmax (bfloat16, 4096x1024)", "log_softmax (float16, 4096x1024)"]


@pytest.mark.slow
@pytest.mark.parametrize("name", FALSE_ALARMS + STAYS)
def test_an_ordinary_program_is_not_called_a_compile_bug(check, name: str) -> None:
    result = check(SOURCES[name])
    assert result.verdict in ACCEPTED, result.explanation
    assert result.verdict.exit_code == 0


FRACTIONAL_MAX_POOL = """
import torch
import torch.nn.functional as F


def fn(x, u):
    return F.fractional_max_pool2d(x, 2, output_size=(4, 4), return_indices=True, _random_samples=u)


def inputs():
    return torch.randn(200, 1, 9, 9).to(torch.bfloat16), torch.rand(200, 1, 2).to(torch.bfloat16)
"""


def test_where_compiled_agrees_with_float64_and_eager_does_not_it_is_eager_inaccurate(check) -> None:
    # bf16 fractional_max_pool2d: eager's kernel places some windows one element off; compiled and float64 agree
    result = check(FRACTIONAL_MAX_POOL)
    assert result.verdict is Verdict.EAGER_INACCURATE and result.verdict.exit_code == 0, result.explanation
    indices = result.leaf("out[1]")
    assert indices.verdict is Verdict.EAGER_INACCURATE and indices.nearer is Nearer.COMPILED
    assert "eager's kernel is less accurate here; compiled is nearer the exact value" in indices.explanation
    assert "the float64 reference agrees with compiled at" in indices.explanation


def test_bf16_arange_s_output_is_not_called_a_compile_bug(check) -> None:
    # compiled exact where eager is not in 960 elements, the reverse in 224: the direction test once fired on the 224.
    # The leaf is judged here; the inside stage judges compiled's buffer against the graph Inductor received
    # (iota, then an int64 -> bf16 conversion that eager rounds exactly and compiled's vectorised iota does not, in
    # 434 elements), which is a different claim: see docs/oracle.md
    source = "import torch\n\n\ndef fn():\n    return torch.arange(0, 10000, dtype=torch.bfloat16)\n\n\ninputs = ()\n"
    leaf = check(source, inside=False).leaf("out")
    assert leaf.verdict is not Verdict.DIVERGENT and leaf.nearer is not Nearer.EAGER, leaf.explanation
