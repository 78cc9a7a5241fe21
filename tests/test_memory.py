"""What a check holds in memory: the model once, the inputs once more, no float64 copy of either.

Each program carries 256 MiB of weights or input; the check's peak RSS is measured against a trivial
check's in the same worker, so the worker's own size (torch, a compile) cancels out. Before the lean
state and the cast-as-used fp64 reference these took 2,453 and 1,412 MiB against 1,104 and 900 now
(the trivial check: 339).
"""

from __future__ import annotations

import pytest

from engine import Verdict

MIB_256 = 256.0

BIG_WEIGHTS = """
import torch
torch.manual_seed(0)
fn = torch.nn.Sequential(torch.nn.Linear(8192, 8192), torch.nn.ReLU())  # 256 MiB of float32 weights


def inputs():
    return (torch.randn(4, 8192),)
"""

BIG_INTEGER_INPUT = """
import torch


def fn(x):
    return x[:1024].sum() + 1  # reads little of a 256 MiB integer input and changes none of it


def inputs():
    return (torch.randint(0, 100, (64 * 2**20,), dtype=torch.int32),)
"""

TRIVIAL = "import torch\ndef fn(x):\n    return x + 1\ninputs = (torch.ones(4),)\n"


@pytest.fixture
def baseline_mb(check) -> float:
    return check(TRIVIAL).peak_rss_mb


@pytest.mark.slow
def test_a_model_s_weights_are_neither_copied_nor_kept_in_float64(check, baseline_mb):
    r = check(BIG_WEIGHTS)
    assert r.verdict in (Verdict.MATCH, Verdict.BENIGN), r.explanation
    assert r.leaf("out").eager_ref_rms is not None  # judged against the fp64 reference, which ran
    # the weights, and for one op at a time their float64 cast (2x): nothing more of the model's size
    assert r.peak_rss_mb - baseline_mb < 3.5 * MIB_256, (r.peak_rss_mb, baseline_mb)


@pytest.mark.slow
def test_inputs_no_run_changes_are_copied_once_and_integers_get_no_fp64_run(check, baseline_mb):
    r = check(BIG_INTEGER_INPUT)
    assert r.verdict is Verdict.MATCH, r.explanation
    assert "fp64 reference" not in r.stage_seconds  # integers in, integers out: float64 would recompute the same
    assert r.peak_rss_mb - baseline_mb < 3 * MIB_256, (r.peak_rss_mb, baseline_mb)  # the input and eager's copy


@pytest.mark.cuda
def test_on_a_gpu_the_weights_are_not_copied_either(check):
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA device")
    r = check(BIG_WEIGHTS, device="cuda")
    assert r.verdict in (Verdict.MATCH, Verdict.BENIGN), r.explanation
    # the weights, and one op's float64 cast of them; the state is watched on the host (its CRC), not copied
    assert r.peak_device_mb is not None and r.peak_device_mb < 3.5 * MIB_256, r.peak_device_mb
