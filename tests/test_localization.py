"""Probes, the ablation ladder, the bisector and the first diverging intermediate, on real programs.

Compiles dominate: each test runs few probes, and the snippets are tiny so cold compiles stay short.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from engine import CheckOptions, Runner, Verdict
from engine.localization.ablation import AblationRow, conclude
from engine.localization.intermediates import first_diverging_intermediate
from engine.localization.localize import Localization, localize
from engine.localization.probes import ProbeKind, ProbeReport, ProbeStatus, run_probes

SNIPPETS = Path(__file__).resolve().parent / "snippets"
REPO = Path(__file__).resolve().parent.parent
CPU = CheckOptions(device="cpu", timeout_s=240)


def _source(name: str) -> tuple[str, str]:
    path = SNIPPETS / f"{name}.py"
    return path.read_text(), str(path)


@pytest.mark.slow
def test_only_special_values_diverge_and_the_failure_replays(runner: Runner, tmp_path: Path) -> None:
    source, filename = _source("probe_acosh_special")
    report = run_probes(runner, source, CPU, filename, kinds=["seeds", "special", "transposed"], directory=tmp_path)
    assert report.outcome("seeds").status is ProbeStatus.OK  # ordinary inputs: acosh is fine
    special = report.outcome(ProbeKind.SPECIAL)
    assert special.status is ProbeStatus.DIVERGES, special.explanation
    assert "infinity" in special.explanation and special.failing_seed == 0
    assert report.outcome("transposed").status is ProbeStatus.NOT_APPLICABLE  # a 1-d input has no transpose
    # the stored options replay the failure exactly
    again = runner.check(source, special.options, filename, run_dir=tmp_path / "replay")
    assert again.verdict is Verdict.DIVERGENT and again.leaves[0].inf_mismatches == report_leaf_infs(special.run_dir)
    assert ProbeReport.load(tmp_path) == report


def report_leaf_infs(run_dir: str | None) -> int:
    from engine import load_result

    assert run_dir is not None
    return load_result(run_dir).leaves[0].inf_mismatches


@pytest.mark.slow
def test_only_a_second_call_diverges(runner: Runner, tmp_path: Path) -> None:
    source, filename = _source("probe_stale_cache")
    plain = runner.check(source, CPU, filename, run_dir=tmp_path / "plain")
    assert plain.verdict in (Verdict.MATCH, Verdict.BENIGN), plain.explanation
    report = run_probes(runner, source, CPU, filename, kinds=["second-call"], directory=tmp_path / "probes")
    recall = report.outcome(ProbeKind.RECALL)
    assert recall.status is ProbeStatus.DIVERGES
    assert recall.first_divergent_leaf == "call1: out" and recall.failing_seed == 1
    stored = __import__("engine").load_result(recall.run_dir)
    assert stored.leaf("call0: out").verdict in (Verdict.MATCH, Verdict.BENIGN)


@pytest.mark.slow
def test_layout_probes_and_eager_rejecting_inputs(runner: Runner, tmp_path: Path) -> None:
    source, filename = _source("probe_linear")
    report = run_probes(
        runner, source, CPU, filename, kinds=["odd_sizes", "noncontiguous", "offset", "backward"], directory=tmp_path
    )
    odd = report.outcome("odd_sizes")
    assert odd.status is ProbeStatus.NOT_APPLICABLE and "eager itself raises" in odd.explanation
    for kind in ("noncontiguous", "offset", "backward"):
        assert report.outcome(kind).status is ProbeStatus.OK, report.outcome(kind).explanation
    assert any(
        leaf.name.startswith("grad ")
        for leaf in __import__("engine").load_result(report.outcome("backward").run_dir).leaves
    )


@pytest.mark.slow
def test_ablation_and_bisector_name_inductors_division_lowering(runner: Runner, tmp_path: Path) -> None:
    path = REPO / "sample_cases" / "floor_divide_off_by_one.py"
    loc = localize(runner, path.read_text(), CPU, str(path), tmp_path, steps=("ablation", "bisect"))
    assert loc.ablation is not None and loc.bisect is not None
    assert [r.diverges for r in loc.ablation.rows[:4]] == [False, False, False, True]
    assert loc.ablation.first_diverging == "inductor" and loc.ablation.layer.startswith("Inductor")
    assert loc.bisect.status == "found", loc.bisect.explanation
    assert (loc.bisect.backend, loc.bisect.subsystem, loc.bisect.debug_info) == ("inductor", "lowerings", "div")
    # the bisector's state stayed in its own run directory and is gone with it
    assert not (Path(runner.cache_dir) / "bisect").exists()
    assert Localization.load(tmp_path) == loc


@pytest.mark.slow
def test_first_diverging_node_is_the_injected_fault(runner: Runner, tmp_path: Path) -> None:
    source, filename = _source("fault_one_node")
    report = first_diverging_intermediate(runner, source, CPU, filename, tmp_path)
    assert report.status == "found", report.explanation
    assert report.first is not None and report.first.node == "mul" and report.first.op == "aten.mul.Tensor"
    assert report.kernel and report.kernel.startswith("cpp_fused") and "mul" in report.kernel
    assert report.anchor == f"kernel-{report.kernel}" and report.kernel_source and report.wrapper_line
    assert report.reproduced and report.diverging_nodes[0].startswith("mul ")
    assert "sin" not in [n.split()[0] for n in report.diverging_nodes]  # upstream of the fault: still equal
    # where it came from, as torch records it on the node: what places it in the check's own compile
    assert (report.first.site.line, report.first.site.code, report.first.site.source_nodes) == (
        20,
        "b = a * y",
        ("b",),
    )  # the Dynamo graph names it after the variable


def test_ladder_conclusions() -> None:
    def rows(*diverging: str) -> tuple[AblationRow, ...]:
        labels = (
            "eager",
            "aot_eager",
            "aot_eager_decomp_partition",
            "inductor",
            "inductor + emulate_precision_casts",
            "inductor + fallback_random",
        )
        return tuple(
            AblationRow(
                label, label, {}, Verdict.DIVERGENT if label in diverging else Verdict.MATCH, label in diverging, ""
            )
            for label in labels
        )

    assert conclude(rows())[0] is None
    assert conclude(rows("aot_eager", "aot_eager_decomp_partition", "inductor"))[0] == "aot_eager"
    assert "precision" in conclude(rows("inductor", "inductor + fallback_random"))[1]
    assert "random" in conclude(rows("inductor", "inductor + emulate_precision_casts"))[1]


def test_derivations() -> None:
    torch = pytest.importorskip("torch")
    from engine.child.derive import NotApplicable, derive, special_values

    x, idx = torch.randn(8, 6), torch.arange(6)
    special = derive("special", (x, idx), seed=3)[0]
    assert torch.isnan(special).any() and torch.isinf(special).any() and bool((special == 0).any())
    assert torch.equal(derive("special", (x, idx), seed=3)[0].nan_to_num(), special.nan_to_num())  # seeded: replays
    for value in special_values(torch.float32):
        assert (special.view(-1) == value).any() or value != value
    t = derive("transposed", (x,), 0)[0]
    assert torch.equal(t, x) and t.stride() == (1, 8)
    n, o = derive("noncontiguous", (x,), 0)[0], derive("offset", (x,), 0)[0]
    assert torch.equal(n, x) and n.stride() == (12, 2) and torch.equal(o, x) and o.storage_offset() == 3
    a, b = derive("odd_sizes", (x, torch.randn(6, 4)), 0)
    assert a.shape == (9, 7) and b.shape == (7, 5)  # the same size maps to the same new size
    with pytest.raises(NotApplicable):
        derive("transposed", (torch.randn(5),), 0)


def test_cli_parses_probe_and_localize() -> None:
    from app.cli.main import build_parser

    args = build_parser().parse_args(["probe", "x.py", "--only", "special,second-call", "--seeds", "2"])
    assert (args.command, args.only, args.seeds) == ("probe", "special,second-call", 2)
    assert build_parser().parse_args(["localize", "x.py", "--only", "ablation"]).command == "localize"
