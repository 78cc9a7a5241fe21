"""Triton code on a host without a GPU: Inductor's Triton backend for CPU tensors, run in Triton's interpreter."""

from __future__ import annotations

from pathlib import Path

import pytest

from engine import CheckOptions, ErrorKind, Runner, Verdict
from engine.api import TRITON_CPU_DIR, with_triton_cpu_pass
from engine.protocol import TRITON_CPU_WORKER_ENV as WORKER_ENV

pytest.importorskip("triton")

FUSED = (
    "import torch\ndef fn(x, y):\n    return torch.relu(x * y + 1.0), (x * 2).sum(-1)\ndef inputs():\n    return"
    " torch.randn(8, 16), torch.randn(8, 16)\n"
)
TANH = "import torch\ndef fn(x):\n    return torch.tanh(x) * 2\ndef inputs():\n    return (torch.randn(8, 16),)\n"
BIG = "import torch\ndef fn(x):\n    return (x * 3).sum(0)\ndef inputs():\n    return (torch.randn(512, 512),)\n"


@pytest.fixture(scope="module")
def triton_runner(divergence_home: Path, inductor_cache: Path):
    with Runner(cache_dir=inductor_cache, env=WORKER_ENV) as r:
        yield r


def triton_pass(runner, triton_runner, tmp_path, source, **options):
    main = runner.check(source, CheckOptions(), run_dir=tmp_path)
    attached = with_triton_cpu_pass(
        main, source, CheckOptions(triton_cpu=True, **options), "snippet.py", runner=triton_runner
    )
    return main, attached.load_triton_cpu()


@pytest.mark.slow
def test_fused_pointwise_and_reduction_get_triton_source_and_an_interpreted_result(runner, triton_runner, tmp_path):
    main, tri = triton_pass(runner, triton_runner, tmp_path, FUSED)
    kernels = [k for o in tri.code.output_code for k in o.kernels]
    assert kernels and all(k.language == "triton" and "@triton.jit" in k.source for k in kernels)
    assert any("tl.sum" in k.source for k in kernels)  # the reduction
    assert [k.language for o in main.code.output_code for k in o.kernels] == ["cpp"]  # the usual check is untouched
    assert tri.verdict in (Verdict.MATCH, Verdict.BENIGN) and tri.leaf("out[0]").verdict is Verdict.MATCH
    assert (tmp_path / TRITON_CPU_DIR / "result.json").exists()


def test_a_kernel_the_interpreter_cannot_run_is_reported_with_its_source(runner, triton_runner, tmp_path):
    _, tri = triton_pass(runner, triton_runner, tmp_path, TANH)
    assert tri.verdict is Verdict.ERROR and tri.error.kind is ErrorKind.COMPILE
    assert "Triton's interpreter could not run" in tri.error.message and "tanh" in tri.error.message
    assert any("tanh" in k.source for o in tri.code.output_code for k in o.kernels)


def test_large_inputs_give_the_source_only(runner, triton_runner, tmp_path):
    _, tri = triton_pass(runner, triton_runner, tmp_path, BIG, triton_interpret_max_elements=100_000)
    assert tri.error.kind is ErrorKind.OPTIONS and tri.error.message.startswith(
        "Triton source only: the inputs hold 262,144 elements"
    )
    assert "0 compatible backends" not in tri.error.message  # the kernels compiled; they were just not run
    assert any(k.language == "triton" and "tl.sum" in k.source for o in tri.code.output_code for k in o.kernels)


@pytest.mark.slow
def test_a_run_out_of_interpreting_time_stops_with_its_source(runner, triton_runner, tmp_path):
    """The live stage names the kernel being interpreted; past the time left for it the run stops, source kept."""
    slow = (
        "import torch\ndef fn(x):\n    return torch.softmax(x, -1)\ndef inputs():\n    return (torch.randn(64,"
        " 1000),)\n"
    )
    _, tri = triton_pass(runner, triton_runner, tmp_path, slow, timeout_s=36)  # 36 s leaves a few for interpreting
    assert tri.error.kind is ErrorKind.TIMEOUT and "still running triton_" in tri.error.message, tri.explanation
    assert any(stage.startswith("interpreting triton_") for stage in tri.stage_seconds)
    assert any("softmax" in k.name for o in tri.code.output_code for k in o.kernels)


def test_the_ordinary_worker_refuses_the_triton_path(runner, tmp_path):
    r = runner.check(FUSED, CheckOptions(triton_cpu=True), run_dir=tmp_path)
    assert r.error.kind is ErrorKind.OPTIONS and "TRITON_INTERPRET=1" in r.error.message


@pytest.mark.cuda
def test_cpu_triton_beside_cuda_triton(runner, triton_runner, tmp_path):
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA device")
    gpu = runner.check(FUSED, CheckOptions(device="cuda"), run_dir=tmp_path / "gpu")
    _, tri = triton_pass(runner, triton_runner, tmp_path / "cpu", FUSED)
    gpu_kernels = {k.name for o in gpu.code.output_code for k in o.kernels if k.language == "triton"}
    cpu_kernels = {k.name for o in tri.code.output_code for k in o.kernels if k.language == "triton"}
    assert gpu_kernels and cpu_kernels and gpu_kernels == cpu_kernels
