"""Inductor's provenance: each program line lands on the kernel torch says it became (C++ and Triton on CPU)."""

from __future__ import annotations

import io
from contextlib import redirect_stdout
from pathlib import Path

import pytest

from app.cli.main import main as cli
from engine import CheckOptions, CheckResult, Runner, records
from engine.protocol import TRITON_CPU_WORKER_ENV
from engine.provenance import TRACKED, UNKNOWN, Artifacts, Provenance, build

# three pointwise ops on three lines: one fused kernel
FUSED = """import torch


def fn(x, y):
    a = x * y
    b = a + 1.0
    return torch.relu(b)


def inputs():
    return torch.randn(8, 16), torch.randn(8, 16)
"""
# a matmul between two pointwise lines: two generated kernels, the library's mm between them
TWO = """import torch


def fn(x, w):
    h = torch.sigmoid(x * 2.0)
    o = h @ w
    return torch.relu(o) + 1.0


def inputs():
    return torch.randn(8, 16), torch.randn(16, 4)
"""


def kernels_by_line(result: CheckResult) -> dict[int, list[str]]:
    (module,) = result.code.output_code
    prov = module.provenance
    assert prov is not None and prov.status == TRACKED, prov
    found: dict[int, list[str]] = {}
    for k in prov.kernels:
        for s in k.lines:
            found.setdefault(s.line, []).append(k.name)
    return found


def assert_fused(result: CheckResult, kind: str) -> None:
    """All three lines on the one generated kernel, which computes exactly their three FX nodes."""
    lines = kernels_by_line(result)
    assert sorted(lines) == [5, 6, 7]
    (name,) = {n for names in lines.values() for n in names}
    assert name.startswith(f"{kind}_") and "fused" in name and all(op in name for op in ("mul", "add", "relu"))
    prov = result.code.output_code[0].provenance
    kernel = prov.kernel(name)
    assert set(kernel.nodes) == {"mul", "add", "relu"} and not kernel.extern
    assert {n.name: n.line for n in prov.nodes} == {"mul": 5, "add": 6, "relu": 7}
    source = result.code.output_code[0].source.splitlines()
    first, last = kernel.wrapper_spans[0]
    assert source[first - 1].startswith(f"{name} = async_compile.") and any(
        f"{name}(" in source[a - 1] or f"{name}.run(" in source[a - 1] for a, _ in kernel.wrapper_spans[1:]
    )


def assert_two(result: CheckResult, kind: str) -> None:
    lines = kernels_by_line(result)
    assert sorted(lines) == [5, 6, 7]
    (first,), (mm,), (second,) = lines[5], lines[6], lines[7]
    assert first.startswith(kind) and "sigmoid" in first
    assert mm == "extern_kernels.mm"
    assert second.startswith(kind) and "relu" in second and first != second
    prov = result.code.output_code[0].provenance
    assert prov.kernel(mm).extern and prov.kernel(mm).nodes == ("mm",)
    assert prov.writers_of_output(0) == (prov.kernel(second),)  # the returned value is the second kernel's


@pytest.mark.slow
def test_cpp_kernels_carry_their_program_lines_also_on_a_cache_hit_and_after_lines_move(check, tmp_path):
    assert_fused(check(FUSED), "cpp")
    again = check(FUSED)  # same text: an Inductor cache hit, the records come from the cache entry
    assert_fused(again, "cpp")
    stored = CheckResult.load(Path(again.run_dir))  # through result.json
    assert stored.code.output_code[0].provenance == again.code.output_code[0].provenance
    # the same graph with every line one lower: the cache is keyed on the program's text, so no stale lines
    moved = check("# one more line on top\n" + FUSED)
    assert sorted(kernels_by_line(moved)) == [6, 7, 8]
    out = io.StringIO()
    with redirect_stdout(out):
        assert cli(["show", again.run_dir, "--code"]) == 0
    text = out.getvalue()
    assert "snippet.py:5     a = x * y" in text and "snippet.py:7     return torch.relu(b)" in text


def test_cpp_two_kernels_each_line_on_its_own(check):
    assert_two(check(TWO), "cpp")


@pytest.mark.slow
def test_backward_kernels_have_lines_though_torch_maps_no_nodes(check):
    result = check(
        TWO.replace(
            "torch.randn(8, 16), torch.randn(16, 4)", "torch.randn(8, 16, requires_grad=True), torch.randn(16, 4)"
        ),
        backward=True,
    )
    backward = next(o for o in result.code.output_code if o.label.endswith("backward"))
    assert backward.provenance.status == TRACKED and "no kernel -> FX node map" in backward.provenance.reason
    assert {s.line for k in backward.provenance.kernels for s in k.lines} <= {5, 6, 7}
    assert any(k.lines for k in backward.provenance.kernels)


@pytest.fixture(scope="module")
def triton_runner(divergence_home: Path, inductor_cache: Path):
    pytest.importorskip("triton")
    with Runner(cache_dir=inductor_cache, env=TRITON_CPU_WORKER_ENV) as r:
        yield r


@pytest.mark.slow
@pytest.mark.parametrize("program, expect", [(FUSED, assert_fused), (TWO, assert_two)], ids=["fused", "two-kernels"])
def test_triton_on_cpu_kernels_carry_their_program_lines(triton_runner, tmp_path, program, expect):
    result = triton_runner.check(program, CheckOptions(triton_cpu=True, timeout_s=240), run_dir=tmp_path)
    assert result.error is None, result.explanation
    expect(result, "triton")


def test_a_stale_record_is_refused_not_shown():
    """Lines torch recorded for another version of the program (a cache entry) must not be shown as this one's."""
    wrapper = (
        "cpp_fused_relu_0 = async_compile.cpp_pybinding([], r'''\nvoid kernel() {}\n''')\n\ndef call(args):\n    #"
        " [Provenance debug handles] cpp_fused_relu_0:1\n    cpp_fused_relu_0(buf0)\n"
    )
    trace = '  File "snippet.py", line 2, in fn\n    return torch.relu(x)\n           ^^^^^^^^^^^^^\n'
    artifacts = Artifacts(
        stack_traces={"cpp_fused_relu_0:1": [trace]}, node_mappings={"cppCodeToPost": {"cpp_fused_relu_0:1": ["relu"]}}
    )
    fresh = build(wrapper, ["cpp_fused_relu_0"], artifacts, "snippet.py", "def fn(x):\n    return torch.relu(x)\n")
    assert (
        fresh.status == TRACKED
        and fresh.kernels[0].line_numbers == (2,)
        and fresh.kernels[0].wrapper_spans == ((1, 3), (7, 7))
    )
    stale = build(
        wrapper, ["cpp_fused_relu_0"], artifacts, "snippet.py", "# moved\ndef fn(x):\n    return torch.relu(x)\n"
    )
    assert stale.status == UNKNOWN and "do not match this program" in stale.reason and not stale.kernels[0].lines
    assert stale.kernels[0].nodes == ("relu",)  # the graph-level map stays true
    assert build(wrapper, ["cpp_fused_relu_0"], None, "snippet.py", "").status == UNKNOWN
    assert records.from_json(Provenance, records.dumps(fresh)) == fresh
