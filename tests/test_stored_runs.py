"""What was stored on 2026-12-06 still opens: a check's result and arrays, a localization and its steps' side
files, probes, the app's run store and a minimization's outcome, a sweep's state.

The fixture (tests/fixtures/stored_2026_12_06, made by main at d4d0fdf with its make.sh) is data of that day,
never regenerated: a change of a record or of the serializer that cannot read it fails here. Every JSON file is
also written back by today's code: what the file held must come out again (new fields may be added beside it).
"""

from __future__ import annotations

import dataclasses
import json
import math
import shutil
from pathlib import Path
from typing import Any

import pytest

from app.store import RunStore
from app.sweep.report import write_json
from app.sweep.state import SweepState
from app.web.minimize_job import DONE, load_outcome
from engine import CheckOptions, records
from engine.judge.verdicts import Nearer, Verdict, Witness
from engine.localization.conclusion import Stage
from engine.localization.localize import Localization
from engine.localization.probes import ProbeKind, ProbeReport, ProbeStatus
from engine.localization.reports import BisectReport, IntermediatesReport
from engine.provenance import TRACKED
from engine.result import CheckResult

FIXTURE = Path(__file__).parent / "fixtures" / "stored_2026_12_06"
FLOOR_DIVIDE = "runs/check_floor_divide"  # sample_cases/floor_divide_off_by_one.py: 1.0 // 0.1 is 9 eager, 10 compiled
BF16 = "runs/check_bf16"  # tests/snippets/bf16_event_encoder.py: benign, with element tests and a scalar rounding


@pytest.fixture
def stored(tmp_path: Path) -> Path:
    """A copy: the stores open their SQLite files for writing (WAL, migrations), and the fixture stays as made."""
    shutil.copytree(FIXTURE, tmp_path / "stored")
    return tmp_path / "stored"


def written(record: Any) -> dict[str, Any]:
    """Today's serializer's JSON of a record, as a file would hold it."""
    return json.loads(records.dumps(record))


def _same(a: Any, b: Any) -> bool:
    """Equal as stored JSON: NaN and the infinities in any spelling, ints and floats by value."""
    if isinstance(a, (int, float, str)) and isinstance(b, (int, float, str)) and not isinstance(a, bool):
        try:
            x, y = float(a), float(b)
        except ValueError:
            return a == b
        return (math.isnan(x) and math.isnan(y)) or x == y
    return a == b


def missing(stored: Any, now: Any, path: str = "") -> list[str]:
    """Where `now` does not hold what `stored` held (keys `now` adds are fine)."""
    if isinstance(stored, dict):
        if not isinstance(now, dict):
            return [f"{path}: {now!r} is not an object"]
        return [
            p for k, v in stored.items() for p in (missing(v, now[k], f"{path}.{k}") if k in now else [f"{path}.{k}"])
        ]
    if isinstance(stored, list):
        if not isinstance(now, list) or len(now) != len(stored):
            return [f"{path}: {len(stored)} items stored"]
        return [p for i, (s, n) in enumerate(zip(stored, now, strict=True)) for p in missing(s, n, f"{path}[{i}]")]
    return [] if _same(stored, now) else [f"{path}: stored {stored!r}, now {now!r}"]


def test_a_divergent_check_opens_with_its_leaves_inside_node_provenance_and_arrays(stored: Path) -> None:
    result = CheckResult.load(stored / FLOOR_DIVIDE)
    assert result.verdict is Verdict.DIVERGENT and result.style == "fn-inputs"
    assert [(leaf.name, leaf.verdict, leaf.witness, leaf.nearer) for leaf in result.leaves] == [
        ("out[0]", Verdict.DIVERGENT, Witness.FP64, Nearer.EAGER),
        ("out[1]", Verdict.DIVERGENT, Witness.FP64, Nearer.EAGER),
    ]
    leaf = result.leaf("out[0]")
    assert (leaf.shape, leaf.mismatches, leaf.max_abs, leaf.worst_index) == ((6,), 4, 1.0, (3,))
    assert result.inside is not None and result.inside.first is not None
    assert (result.inside.first.op, result.inside.first.site.line) == ("aten.div.Tensor_mode", 6)
    (module,) = result.code.output_code
    assert module.provenance is not None and module.provenance.status == TRACKED
    assert [k.line_numbers for k in module.provenance.kernels] == [(6,)]
    arrays = result.load_arrays(leaf)
    assert (float(arrays["eager"][0]), float(arrays["compiled"][0])) == (9.0, 10.0)  # 1.0 // 0.1
    assert result.load_summary(leaf) is not None


def test_a_bf16_check_keeps_its_element_tests_and_the_scalar_eager_rounds(stored: Path) -> None:
    result = CheckResult.load(stored / BF16)
    assert result.verdict is Verdict.BENIGN
    assert [len(leaf.tests) for leaf in result.leaves] == [4, 3]
    assert all(isinstance(t.log10p, float) for leaf in result.leaves for t in leaf.tests)
    (rounding,) = result.scalar_roundings
    assert (rounding.op, rounding.value, rounding.rounded) == ("aten.remainder.Scalar", 0.7, 0.69921875)
    assert result.leaves[0].witness is Witness.FAITHFUL
    assert result.inside is not None and result.inside.status == "judged"


def test_a_localization_opens_with_its_conclusion_ladder_and_side_files(stored: Path) -> None:
    loc = Localization.load(stored / "localize")
    assert loc.conclusion is not None and loc.conclusion.stage is Stage.LOWERING
    assert loc.conclusion.site is not None and (loc.conclusion.site.op, loc.conclusion.site.line) == (
        "aten.div.Tensor_mode",
        6,
    )
    assert loc.ablation is not None
    assert [row.verdict for row in loc.ablation.rows][:4] == [Verdict.MATCH] * 3 + [Verdict.DIVERGENT]
    bisect = records.load(BisectReport, stored / "localize/bisect/bisect.json")
    assert (bisect.status, bisect.subsystem, bisect.debug_info) == ("found", "lowerings", "div")
    report = records.load(IntermediatesReport, stored / "localize/intermediates/intermediates.json")
    assert report.first is not None and report.first.node == "div"


def test_probes_open(stored: Path) -> None:
    report = ProbeReport.load(stored / "probes")
    seeds = report.outcome(ProbeKind.SEEDS)
    assert (seeds.status, seeds.failing_seed, seeds.first_divergent_leaf) == (ProbeStatus.DIVERGES, 0, "out[0]")
    assert report.outcome(ProbeKind.TRANSPOSED).status is ProbeStatus.NOT_APPLICABLE


def test_the_app_lists_the_stored_runs_and_their_minimization(stored: Path) -> None:
    store = RunStore(stored / "app.sqlite")
    runs = {r.id: r for r in store.recent()}
    assert {(r.verdict, r.status) for r in runs.values()} == {("divergent", "done"), ("benign", "done")}
    floor_divide = runs["20261206-221413-b3e5aa71"]
    assert floor_divide.session == "s1" and floor_divide.options == CheckOptions()  # a typed record now
    kept = store.minimization(floor_divide.id)
    assert kept is not None and kept.status == DONE
    outcome = load_outcome(stored / FLOOR_DIVIDE)
    assert outcome is not None and outcome.state == DONE and outcome.repro_verified
    assert (
        outcome.final_tokens < outcome.initial_tokens
        and outcome.settings is not None
        and outcome.settings.budget_s == 60
    )


def test_a_sweep_opens_with_its_jobs_and_bug(stored: Path) -> None:
    state = SweepState(stored / "sweep")
    jobs = {job.name: job for job in state.jobs()}
    assert (jobs["floor_divide_off_by_one.py"].verdict, jobs["teach_fusion_pointwise.py"].verdict) == (
        "divergent",
        "benign",
    )
    (bug,) = state.bugs()
    assert bug.id == jobs["floor_divide_off_by_one.py"].bug and bug.status == "done"
    assert state.meta()["paths"] == [
        "sample_cases/floor_divide_off_by_one.py",
        "sample_cases/teach_fusion_pointwise.py",
    ]


@pytest.mark.parametrize(
    "path, kind",
    [
        (f"{FLOOR_DIVIDE}/result.json", CheckResult),
        (f"{BF16}/result.json", CheckResult),
        ("localize/localization.json", Localization),
        ("localize/bisect/bisect.json", BisectReport),
        ("localize/intermediates/intermediates.json", IntermediatesReport),
        ("probes/probes.json", ProbeReport),
    ],
)
def test_what_a_file_held_is_written_back(stored: Path, path: str, kind: type) -> None:
    data = json.loads((stored / path).read_text())
    assert missing(data, written(records.load(kind, stored / path))) == []


def test_a_minimization_outcome_and_the_sweep_report_are_written_back(stored: Path) -> None:
    outcome = json.loads((stored / FLOOR_DIVIDE / "minimize/outcome.json").read_text())
    assert missing(outcome, json.loads(json.dumps(dataclasses.asdict(load_outcome(stored / FLOOR_DIVIDE))))) == []
    report = json.loads((stored / "sweep/sweep.json").read_text())
    again = json.loads(write_json(SweepState(stored / "sweep"), stored / "again.json").read_text())
    assert missing({k: report[k] for k in ("jobs", "bugs", "meta", "counts")}, again) == []


def test_missing_names_what_was_lost() -> None:
    assert missing({"a": [1, "nan", {"b": 2}]}, {"a": [1.0, "NaN", {"b": 2, "c": 3}], "d": 4}) == []
    assert missing({"a": [1, {"b": 2}]}, {"a": [1, {"b": 3}]}) == [".a[1].b: stored 2, now 3"]
    assert missing({"a": 1, "b": 2}, {"a": 1}) == [".b"]
