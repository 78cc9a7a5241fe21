"""The generated repro.py, run in a fresh interpreter on real divergences of every snippet style, backward included."""

from __future__ import annotations

import ast
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from app.gallery import load_cases
from minimizer.repro import emit, verify

CASES = {c.slug: c for c in load_cases()[0]}


def _script(slug: str, **changes: object) -> str:
    case = CASES[slug]
    return emit(case.source(), case.options.replace(device="cpu", **changes), seed=0)


def test_every_style_gets_a_harness_that_parses() -> None:
    for slug in ("floor_divide_off_by_one", "layernorm_gelu_kernelbench", "neg_zero_add_reciprocal", "interpolate_conv_pool_backward"):  # one of each style
        ast.parse(_script(slug))
    assert "BACKWARD = True" in _script("interpolate_conv_pool_backward")
    assert "fn = Model(" in _script("layernorm_gelu_kernelbench")
    assert "torch.compile = _checked_compile" in _script("neg_zero_add_reciprocal")


@pytest.mark.slow
def test_a_backward_divergence_reproduces_through_its_gradients(tmp_path: Path) -> None:
    # the forward pass of #185509 is within noise: only comparing the gradients shows the bug
    check = verify(_script("interpolate_conv_pool_backward"), timeout_s=300, work_dir=tmp_path)
    assert check.reproduces, check.output
    divergent = [line for line in check.output.splitlines() if line.startswith("DIVERGENT")]
    assert divergent and all(line.startswith("DIVERGENT grad ") for line in divergent), check.output
    assert "distance from fp64" in check.output and "max ULP diff" in check.output


KERNELBENCH_FLOOR_DIVIDE = """import torch


class Model(torch.nn.Module):
    def __init__(self, scale):
        super().__init__()
        self.scale = scale

    def forward(self, a):
        return a // (self.scale * torch.ones_like(a))


def get_init_inputs():
    return (0.1,)


def get_inputs():
    return (torch.tensor([1.0, 0.5, 6.0, 7.0]),)
"""


@pytest.mark.slow
def test_verbatim_and_kernelbench_programs_run_as_standalone_repros(tmp_path: Path) -> None:
    # -0.0 + 0.0 keeps its sign in a verbatim repro; 1.0 // 0.1 is 10 under Inductor in a KernelBench Model
    kernelbench = emit(KERNELBENCH_FLOOR_DIVIDE, CASES["floor_divide_off_by_one"].options.replace(device="cpu"))
    with ThreadPoolExecutor(2) as pool:
        runs = [pool.submit(verify, script, None, 300, tmp_path / name) for name, script in (("verbatim", _script("neg_zero_add_reciprocal")), ("kernelbench", kernelbench))]
    verbatim, model = (r.result() for r in runs)
    assert verbatim.reproduces and "DIVERGENT call0: out: infinity pattern differs" in verbatim.output, verbatim.output
    assert model.reproduces and "DIVERGENT out: compiled is further from the fp64 reference than eager" in model.output, model.output


SCALAR_REMAINDER = """import torch


def fn(x):
    return torch.remainder(x, 1.7)


def inputs():
    x = torch.randn(64) * 3
    x[:2] = torch.tensor([15.3125, -15.3125])  # between 9 x 1.7 and 9 x bf16(1.7): a period apart
    return (x.to(torch.bfloat16),)
"""


@pytest.mark.slow
def test_a_scalar_eager_rounds_reproduces_only_against_a_reference_that_rounds_it_too(tmp_path: Path) -> None:
    # remainder(x_bf16, 1.7): compiled keeps 1.7, eager divides by 1.703125, so compiled is *closer* to a plain fp64
    # run; the repro's fp64 run must round the scalar as the check found eager does, or it calls the bug noise
    from engine import CheckOptions
    from engine.result import ScalarRounding

    rounding = ScalarRounding("aten.remainder.Scalar", "other", 1.7, 1.703125, "bfloat16")
    script = emit(SCALAR_REMAINDER, CheckOptions(device="cpu"), seed=0)
    rounded = emit(SCALAR_REMAINDER, CheckOptions(device="cpu"), seed=0, roundings=[rounding])
    assert "ROUNDED_SCALARS = {}" in script and "('aten.remainder.Scalar', 'other'): torch.bfloat16" in rounded
    with ThreadPoolExecutor(2) as pool:
        runs = [pool.submit(verify, s, None, 300, tmp_path / name) for name, s in (("plain", script), ("rounded", rounded))]
    plain, faithful = (r.result() for r in runs)
    assert not plain.reproduces, plain.output
    assert faithful.reproduces and "DIVERGENT out: compiled is further from the fp64 reference" in faithful.output, faithful.output
