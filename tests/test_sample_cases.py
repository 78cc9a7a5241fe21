"""Every sample case gives its expected verdict (CPU here; CUDA expectations where CUDA exists)."""

from __future__ import annotations

import pytest

from engine.cases import load_cases

CASES = load_cases()
RUNS = [
    pytest.param(case, options, expected_cpu, expected_cuda, id=f"{case.slug}{'' if n == 0 else f'-variant{n}'}", marks=[pytest.mark.slow] if case.slow else [])
    for case in CASES
    for n, (options, expected_cpu, expected_cuda) in enumerate(
        [(case.options, case.expected_cpu, case.expected_cuda), *((v.options, v.expected_cpu, v.expected_cuda) for v in case.variants)]
    )
]


def test_gallery_has_what_the_workshop_needs():
    kinds = [c.kind for c in CASES]
    assert len(CASES) >= 24
    assert kinds.count("real-bug") >= 8 and kinds.count("benign") >= 4 and kinds.count("precision-cast") >= 3 and "rng" in kinds


@pytest.mark.parametrize("case, options, expected_cpu, expected_cuda", RUNS)
def test_case_verdict_on_cpu(runner, tmp_path, case, options, expected_cpu, expected_cuda):
    r = runner.check(case.source(), options.replace(device="cpu", timeout_s=300), str(case.path), run_dir=tmp_path)
    assert r.verdict is expected_cpu, f"{case.slug}: {r.explanation}"


@pytest.mark.cuda
@pytest.mark.parametrize("case, options, expected_cpu, expected_cuda", RUNS)
def test_case_verdict_on_cuda(runner, tmp_path, case, options, expected_cpu, expected_cuda):
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA device")
    r = runner.check(case.source(), options.replace(device="cuda", timeout_s=300), str(case.path), run_dir=tmp_path)
    assert r.verdict is expected_cuda, f"{case.slug}: {r.explanation}"
