"""benchmarks/zoo_findings/findings.json: its schema holds, each bug's script shows the bug (exit 1), and the
tables written from it are current."""

from __future__ import annotations

import copy
import subprocess
import sys
from pathlib import Path

import pytest

from app.sweep import findings as F

ENTRY = {
    "id": "demo",
    "title": "a demo",
    "ops": ["sin"],
    "symptom": "value",
    "side": "compiled",
    "judged": "compiled-wrong",
    "config": "default",
    "dtypes": ["float32"],
    "upstream": "none found",
    "new": True,
    "script": "demo.py",
}


def _parse(tmp_path: Path, *entries: dict, explained: list | None = None) -> F.Findings:
    (tmp_path / "demo.py").write_text("raise SystemExit(1)\n")
    return F.parse({"torch": "2.13.0", "findings": list(entries), "explained": explained or []}, tmp_path)


def test_the_file_holds_its_schema_and_new_means_no_upstream_report() -> None:
    found = F.load()
    assert found.torch.startswith("2.")
    for f in found.findings:
        assert f.script_path.is_file() and f.new is (f.upstream == F.NONE_FOUND), f.id
        if f.new:
            assert f.search, f"{f.id}: a new finding says what the upstream search found"


def test_a_broken_entry_is_named_with_what_is_wrong(tmp_path: Path) -> None:
    assert _parse(tmp_path, ENTRY).new[0].id == "demo"
    for change, says in [
        ({"side": "neither"}, "side is one of compiled, eager, both"),
        ({"upstream": "12345"}, "'#NUMBER'"),
        ({"upstream": "#12345"}, "new is true exactly when"),
        ({"script": "../escape.py"}, "not a file under"),
        ({"script": "absent.py"}, "not a file under"),
        ({"ops": []}, "non-empty list"),
        ({"colour": "red"}, "unknown colour"),
        ({"judged": "false-alarm"}, "judged is one of"),
    ]:
        entry = {**copy.deepcopy(ENTRY), **change}
        with pytest.raises(F.FindingsError, match=says):
            _parse(tmp_path, entry)
    with pytest.raises(F.FindingsError, match="missing title"):
        _parse(tmp_path, {k: v for k, v in ENTRY.items() if k != "title"})
    with pytest.raises(F.FindingsError, match="ids used twice: demo"):
        _parse(tmp_path, ENTRY, ENTRY)
    with pytest.raises(F.FindingsError, match="finding 'other' is not an entry's id"):
        _parse(tmp_path, ENTRY, explained=[{"sweep": "s", "program": "p.py", "why": "x", "finding": "other"}])


def test_divergent_jobs_are_accounted_for_by_the_explained_list(tmp_path: Path) -> None:
    found = _parse(
        tmp_path,
        ENTRY,
        explained=[
            {"sweep": "opinfo-fp32-ref", "program": "acosh.py", "label": "", "why": "known upstream: #183768"},
            {"sweep": "opinfo-fp32-ref", "program": "sin.py", "label": "", "why": "finding: demo", "finding": "demo"},
        ],
    )
    jobs = [("acosh.py", ""), ("sin.py", ""), ("cos.py", ""), ("acosh.py", "dynamic=True")]
    assert F.unaccounted(found, "opinfo-fp32-ref", jobs) == [("cos.py", ""), ("acosh.py", "dynamic=True")]
    assert F.unaccounted(found, "another-sweep", jobs[:1]) == [("acosh.py", "")]


def test_the_table_is_written_between_its_markers_only(tmp_path: Path) -> None:
    found = _parse(tmp_path, ENTRY, {**ENTRY, "id": "old", "upstream": "#1", "new": False})
    page = f"# Findings\n\nhand text\n{F.BEGIN}\nstale\n{F.END}\nmore hand text\n"
    written = F.render_into(page, found)
    assert written.startswith("# Findings\n\nhand text\n") and written.endswith(f"{F.END}\nmore hand text\n")
    assert "stale" not in written and "2 findings on torch 2.13.0 CPU, 1 with no upstream report found" in written
    rows = [line for line in written.splitlines() if line.startswith("| `")]
    assert rows[0].startswith("| `demo`") and "**new**" in rows[0]  # the new ones first
    assert "[#1](https://github.com/pytorch/pytorch/issues/1)" in rows[1]
    with pytest.raises(F.FindingsError, match="needs exactly one"):
        F.render_into("no markers", found)


@pytest.mark.slow
@pytest.mark.parametrize("finding", F.load().findings, ids=lambda f: f.id)
def test_each_script_shows_its_bug(finding: F.Finding) -> None:
    """Run as a user would: a fresh interpreter, the script alone; 1 while the bug is present (torch 2.13)."""
    text = finding.script_path.read_text()
    imports = {line.split()[1].split(".")[0] for line in text.splitlines() if line.startswith(("import ", "from "))} - {
        "__future__"
    }
    assert imports <= {"torch", "numpy", "sys", "math"}, f"{finding.script} imports {sorted(imports)}"
    done = subprocess.run(
        [sys.executable, str(finding.script_path)],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=finding.script_path.parent,
    )
    assert done.returncode == 1, f"{finding.script}: exit {done.returncode}\n{done.stdout}\n{done.stderr[-2000:]}"


def _sweep(sweep_dir: Path, jobs: list[tuple[str, str, str, str | None]]) -> None:
    """A real sweep state file holding finished jobs (program, label, verdict, error kind)."""
    from app.sweep.jobs import JobOutcome, JobSpec
    from app.sweep.state import SweepState
    from engine.judge.verdicts import Verdict
    from engine.options import CheckOptions

    specs = [
        JobSpec(f"k{i}", f"/zoo/{program}", "x = 1\n", CheckOptions(), label, i)
        for i, (program, label, _, _) in enumerate(jobs)
    ]
    with SweepState(sweep_dir, lock=True) as state:
        state.plan(specs)
        for spec, (_, _, verdict, kind) in zip(specs, jobs, strict=True):
            state.start(spec.key, sweep_dir / spec.key)
            state.finish(
                spec.key, JobOutcome(Verdict(verdict), f"{verdict} here", str(sweep_dir / spec.key), 1.0, kind)
            )


def test_a_sweeps_divergent_jobs_are_listed_with_their_reasons_and_the_unexplained_fail(tmp_path: Path) -> None:
    sweep_dir = tmp_path / "opinfo-fp32-ref"
    _sweep(
        sweep_dir,
        [
            ("acosh.py", "", "divergent", None),
            ("sin.py", "", "match", None),
            ("cos.py", "", "benign", None),
            ("rrelu.py", "", "error", "compile"),  # the compiled side alone raised: a divergence
            ("bad.py", "", "error", "eager"),  # eager raised: nothing compared
            ("acosh.py", "dynamic=True", "divergent", None),
        ],
    )
    found = _parse(
        tmp_path,
        ENTRY,
        explained=[
            {"sweep": "opinfo-fp32-ref", "program": "acosh.py", "why": "known upstream: #183768"},
            {"sweep": "opinfo-fp32-ref", "program": "rrelu.py", "why": "finding: demo", "finding": "demo"},
        ],
    )
    assert F.divergent_jobs(sweep_dir) == [
        ("acosh.py", "", "divergent here"),
        ("rrelu.py", "", "error here"),
        ("acosh.py", "dynamic=True", "divergent here"),
    ]
    report, missing = F.accounting(found, [sweep_dir])
    assert missing == 1
    assert report.splitlines() == [
        "opinfo-fp32-ref: 3 divergent jobs, 1 not accounted for",
        "  acosh.py: known upstream: #183768",
        "  rrelu.py: finding: demo",
        "  acosh.py [dynamic=True]: NOT ACCOUNTED FOR: divergent here",
    ]
    with pytest.raises(F.FindingsError, match="not a sweep directory"):
        F.divergent_jobs(tmp_path / "absent")
    assert F.main(["--accounted", str(tmp_path / "absent")]) == 2


def test_the_file_explains_the_divergent_jobs_of_the_sweeps_that_ran() -> None:
    # the sweeps' state files live outside the repository (`--accounted SWEEP_DIR` checks them); the file's
    # own list is not empty and each entry names a program and a reason, and a finding only by its id
    found = F.load()
    assert found.explained, "findings.json explains the divergent jobs of the sweeps that ran"
    for e in found.explained:
        assert e.program.endswith(".py") and e.why, e
        assert e.finding is None or found.by_id(e.finding).id == e.finding
