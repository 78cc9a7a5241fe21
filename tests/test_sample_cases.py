"""Every sample case gives its expected verdict (CPU here; CUDA expectations where CUDA exists).

An expectation binds on the torch release line it was measured on (`expected_cpu_torch`,
`expected_cuda_torch` in the case's toml) and on the torch that constraints.txt pins (the project's own CI
and GPU runs): there a different verdict fails, measured elsewhere or never measured. On any other torch (a
user's own), a different verdict is reported as an expected failure that names what this torch measured.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from app.gallery import load_cases, minor_version
from engine import Verdict
from tests.reference_metrics import stored_figures_disagree

CASES, PROBLEMS = load_cases()
PINNED = re.search(r"^torch==(\S+)", (Path(__file__).resolve().parents[1] / "constraints.txt").read_text(), re.M).group(
    1
)
RUNS = [
    pytest.param(
        case,
        source,
        options,
        expected,
        measured,
        id=f"{case.slug}{'' if n == 0 else f'-variant{n}'}",
        marks=[pytest.mark.slow] if case.slow else [],
    )
    for case in CASES
    for n, (source, options, expected, measured) in enumerate(
        [
            (
                case.source(),
                case.options,
                {
                    "cpu": (case.expected_cpu, case.expected_cpu_torch),
                    "cuda": (case.expected_cuda, case.expected_cuda_torch),
                },
                case.measured_cpu,
            ),
            *(
                (
                    v.source(case.source()),  # a variant may change the program as the case's text suggests
                    v.options,
                    {"cpu": (v.expected_cpu, v.expected_cpu_torch), "cuda": (v.expected_cuda, v.expected_cuda_torch)},
                    (),
                )
                for v in case.variants
            ),
        ]
    )
]


def test_every_measured_figure_in_a_cases_text_is_a_checked_placeholder():
    """What a case's text says it measured ("375 of 65,536 elements differ", "max abs 1.2e-7") comes from its
    [measured_cpu] table, which the CPU run checks: a bare count in the text is a figure no test measures."""
    import tomllib

    for case in CASES:
        raw = tomllib.loads(case.path.with_suffix(".toml").read_text())
        text = raw["summary"] + " " + raw["explanation"]
        bare = re.findall(r"\b\d[\d,]* of \d[\d,]*(?: \w+)? (?:elements?|sums|values|rows)\b", text)
        assert not bare, f"{case.slug}: bare measured counts {bare}"
        if "Measured on" in text or "measured" in text:
            assert case.measured_cpu, f"{case.slug}: its text reports measurements but has no [measured_cpu] table"


def test_gallery_has_what_the_workshop_needs():
    kinds = [c.kind for c in CASES]
    assert len(CASES) >= 24
    assert (
        kinds.count("real-bug") >= 8
        and kinds.count("benign") >= 4
        and kinds.count("precision-cast") >= 3
        and "rng" in kinds
    )
    assert all(c.expected_cpu_torch for c in CASES), "every CPU expectation is measured (CI runs them all)"
    assert not PROBLEMS


def binds(measured_on: str | None, running_torch: str) -> bool:
    """Does a different verdict fail here? On the release line it was measured on, and on the pinned torch."""
    here = minor_version(running_torch)
    return here == measured_on or here == minor_version(PINNED)


def test_an_expectation_binds_where_measured_and_on_the_pinned_torch():
    assert binds("2.11", "2.11.0+cu130") and binds(None, PINNED + "+cu130") and binds("2.11", PINNED)
    assert not binds("2.11", "2.99.1") and not binds(None, "2.99.1")


def _expect(result, case, device: str, expected) -> None:
    import torch

    verdict, measured_on = expected
    if result.verdict is verdict:
        return
    where = f"measured on torch {measured_on}" if measured_on else "never measured"
    message = (
        f"{case.slug}: expected_{device} = {verdict.value} was {where}; torch {torch.__version__} gives "
        f"{result.verdict.value}: {result.explanation[:300]}"
    )
    if binds(measured_on, torch.__version__):
        pytest.fail(message)
    pytest.xfail(message)


def _figures(result, case, measured, measured_on: str | None) -> None:
    """The figures the case's text quotes are what this torch measures: on the torch its CPU expectation binds on,
    exactly."""
    import torch

    leaves = {leaf.name: leaf for leaf in result.leaves}
    wrong = [
        f"{m.name} ({m.leaf} {m.figure}): the text says {m.value!r}, torch {torch.__version__} measures "
        f"{getattr(leaves[m.leaf], m.figure) if m.leaf in leaves else 'no such leaf'!r}"
        for m in measured
        if m.leaf not in leaves or not m.matches(getattr(leaves[m.leaf], m.figure))
    ]
    if not wrong:
        return
    message = f"{case.slug}: " + "; ".join(wrong)
    if binds(measured_on, torch.__version__):
        pytest.fail(message)
    pytest.xfail(message)


@pytest.mark.slow
@pytest.mark.parametrize("case, source, options, expected, measured", RUNS)
def test_case_verdict_on_cpu(checked_once, case, source, options, expected, measured):
    if case.heavy and os.environ.get("DIVERGENCE_HEAVY_CASES") != "1":
        pytest.skip(f"{case.slug} is heavy on CPU ({case.heavy}): run with DIVERGENCE_HEAVY_CASES=1")
    # the run tests/test_issue_body.py writes a divergent case's body from (one check of each case per test run)
    r = checked_once(source, options.replace(device="cpu", timeout_s=300), str(case.path))
    assert not stored_figures_disagree(r)  # the chunked comparison gives the figures of the whole-tensor one
    _expect(r, case, "cpu", expected["cpu"])
    _figures(r, case, measured, expected["cpu"][1])
    _known(r, case)


def _known(result, case) -> None:
    """A gallery case with a known upstream cause is recognised as that cause, and no case as another case's."""
    from engine.judge.known import KNOWN, recognise

    found = recognise(result.leaves, result.code.fx_graphs)
    named = [k for k in KNOWN if k.case == case.slug]
    if named and result.verdict is Verdict.DIVERGENT:
        assert found is not None and found.issue is named[0], f"{case.slug}: recognised as {found}"
    if found is not None:  # another case's cause only where it is the same upstream issue
        same = found.issue.case in (None, case.slug) or found.issue.url == case.upstream
        assert same, f"{case.slug} taken for {found.issue.case}: {found}"


@pytest.mark.cuda
@pytest.mark.parametrize("case, source, options, expected, measured", RUNS)
def test_case_verdict_on_cuda(runner, tmp_path, case, source, options, expected, measured):
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA device")
    r = runner.check(source, options.replace(device="cuda", timeout_s=300), str(case.path), run_dir=tmp_path)
    _expect(r, case, "cuda", expected["cuda"])
