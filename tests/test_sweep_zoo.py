"""`divergence sweep` over the zoo sources (hf:, opinfo:, modules:) and PyTorch's own check beside ours.

Real programs throughout: the transformers architectures are built (small configs, random weights), op_db
samples are PyTorch's own, and the checks compile for real.
"""

from __future__ import annotations

import json
import runpy
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from app.sweep.corpus import CorpusError, zoo_programs
from app.sweep.orchestrator import SweepConfig, plan, run_sweep
from app.sweep.pytorch_check import FAIL, OPINFO, PASS, AccuracyRule, disagrees, harness_rule, judge
from app.sweep.report import disagreement_text, table_text
from app.sweep.sources import hf
from app.sweep.sources.base import ZooError
from app.sweep.sources.registry import is_zoo, parse
from app.sweep.state import SweepState
from engine.snippet import SnippetStyle, detect_style
from tests.conftest import REPO


def test_zoo_patterns_pick_their_programs_and_unknown_names_list_the_known(tmp_path: Path) -> None:
    assert is_zoo("hf:") and is_zoo("opinfo:bf16:add") and not is_zoo("sample_cases") and not is_zoo("c:/models")
    assert [parse(p)[1].flavour for p in ("hf:", "opinfo:", "modules:", "hf:base+cache:gpt2")] == [
        "small",
        "bf16",
        "eval",
        "base+cache",
    ]
    with pytest.raises(ZooError, match=r"'gpt3' \(did you mean gpt2\?\).*known: gpt2, bert, vit, llama, t5, whisper"):
        hf.programs(parse("hf:small:gpt3")[1])
    with pytest.raises(ZooError, match="takes small, base"):
        parse("hf:tiny")
    with pytest.raises(CorpusError, match=r"'ad' \(did you mean add"):
        zoo_programs("opinfo:bf16:ad", tmp_path)

    programs = {p.path.name: p for p in zoo_programs("hf:", tmp_path)}
    assert len(programs) == len(hf.ARCHITECTURES) >= 8
    for program in programs.values():  # every one is an ordinary snippet, PyTorch's harness rule beside it
        assert detect_style(program.source, program.path.name) is SnippetStyle.FN_INPUTS
        assert program.accuracy == harness_rule() and program.path.parent == tmp_path / "hf-small"
    assert "use_cache=False" in programs["gpt2.py"].source and "use_cache" not in programs["bert.py"].source
    cached = {p.path.name: p for p in zoo_programs("hf:small+cache:gpt2,bert", tmp_path)}
    assert set(cached) == {"gpt2+cache.py", "bert.py"} and "use_cache=True" in cached["gpt2+cache.py"].source
    assert cached["bert.py"].source == programs["bert.py"].source  # no cache to turn on: the same job
    base = zoo_programs("hf:base:gpt2", tmp_path)[0].source
    assert "GPT2Config(use_cache=False)" in base and "(1, 128)" in base  # gpt2's own shape, a realistic input

    ops = {p.info["op"]: p for p in zoo_programs("opinfo:bf16:sin,histc,take,empty", tmp_path)}
    assert ops["sin"].accuracy == AccuracyRule(OPINFO)  # bf16: assertEqual's defaults (the test never runs bf16)
    assert ops["histc"].info["pytorch_lists"] == ["expected failure (f16)"] and ops["take"].info["pytorch_lists"][
        0
    ].startswith("one sample only")
    assert not ops["empty"].accuracy.values and "it never runs bfloat16" in ops["sin"].source
    fp32 = zoo_programs("opinfo:fp32:nn.functional.interpolate.bicubic,sin", tmp_path)
    assert [(p.accuracy.rtol, p.accuracy.atol) for p in fp32] == [
        (0, 5e-3),
        (1.3e-5, 1.5e-5),
    ]  # the test's override, its fp32 default
    # op_db's own decorators for the test: a toleranceOverride raises assertEqual's fp16 default (1e-3), a skip is
    # listed
    fp16 = {p.info["op"]: p for p in zoo_programs("opinfo:fp16:addmv,masked.logsumexp", tmp_path)}
    assert (fp16["addmv"].accuracy.rtol, fp16["addmv"].accuracy.atol) == (0.003, 1e-5)
    assert fp16["masked.logsumexp"].info["pytorch_lists"] == ["skipped by op_db (every dtype)"]
    written = tmp_path / "opinfo-bf16" / "sin.py"
    stamp = written.stat().st_mtime_ns
    zoo_programs("opinfo:bf16:sin", tmp_path)
    assert written.stat().st_mtime_ns == stamp  # an unchanged program keeps its file
    chunks = zoo_programs(
        "opinfo:bf16:nn.functional.max_pool1d", tmp_path
    )  # 864 samples: one graph of all compiles for minutes
    assert [p.path.name for p in chunks][::8] == [
        "nn.functional.max_pool1d--samples0-99.py",
        "nn.functional.max_pool1d--samples800-863.py",
    ]
    assert (
        "SAMPLES = range(800, 864)" in chunks[-1].source and len(chunks[-1].parts() if chunks[-1].parts else []) == 64
    )
    parts = ops["take"].parts() if ops["take"].parts else []
    assert [p.path.name for p in parts[:2]] == ["take--sample0.py", "take--sample1.py"] and "SAMPLES = [1]" in parts[
        1
    ].source

    modules = zoo_programs("modules:train:nn.Linear", tmp_path)[0]
    assert ".train(True)" in modules.source and detect_style(modules.source, "m.py") is SnippetStyle.FN_INPUTS


def test_a_sweep_of_zoo_patterns_is_named_after_them_and_plans_their_programs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DIVERGENCE_HOME", str(tmp_path))
    from app.sweep.orchestrator import default_sweep_dir

    config = SweepConfig(paths=("hf:small:bert,gpt2",), base_options={"dtype": "bf16"})
    specs, corpus, _ = plan(config)
    assert [s.name for s in specs] == ["gpt2.py", "bert.py"] and all(s.accuracy == harness_rule() for s in specs)
    assert Path(specs[0].program).parent == tmp_path / "zoo" / "hf-small" and specs[0].info["architecture"] == "gpt2"
    assert default_sweep_dir(config).name.startswith("hf-small-bert-gpt2-")  # the same wherever it is typed
    backward = plan(SweepConfig(paths=("hf:small:bert",), base_options={"backward": True}))[0]
    assert backward[0].accuracy == harness_rule(backward=True)  # the harness's training tolerance
    # a list longer than a file name may be (255 bytes) is still a zoo pattern, not an OSError
    many = "hf:small:" + ",".join(["bert", "gpt2"] * 40)
    assert [s.name for s in plan(SweepConfig(paths=(many,)))[0]] == ["gpt2.py", "bert.py"]


@pytest.mark.slow
def test_every_small_architecture_builds_offline_and_returns_outputs(tmp_path: Path) -> None:
    import torch

    for program in zoo_programs("hf:", tmp_path):
        ns = runpy.run_path(str(program.path))
        with torch.no_grad():
            out = ns["fn"](*ns["inputs"]())
        assert any(isinstance(v, torch.Tensor) for v in out.values()), program.path.name


def test_old_state_files_gain_the_new_columns_and_read_as_empty(tmp_path: Path) -> None:
    old = (
        "CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL); CREATE TABLE jobs (key TEXT PRIMARY KEY,"
        " position INTEGER NOT NULL, program TEXT NOT NULL, label TEXT NOT NULL, options TEXT NOT NULL, source_sha TEXT"
        " NOT NULL, status TEXT NOT NULL, verdict TEXT, error_kind TEXT, explanation TEXT, worst_leaf TEXT, worst_ulp"
        " REAL, max_abs REAL, symptoms TEXT, seconds REAL, run_dir TEXT, where_ran TEXT, started REAL, finished REAL,"
        " bug TEXT); CREATE TABLE bugs (id TEXT PRIMARY KEY, description TEXT NOT NULL, representative TEXT NOT NULL,"
        " status TEXT NOT NULL, message TEXT, tokens_before INTEGER, tokens_after INTEGER, repro TEXT, started REAL,"
        " finished REAL);INSERT INTO jobs (key, position, program, label, options, source_sha, status, verdict) VALUES"
        " ('k', 0, '/p.py', '', '{}', 's', 'done', 'match');"
    )
    conn = sqlite3.connect(tmp_path / "sweep.sqlite")
    conn.executescript(old)
    conn.close()
    (row,) = SweepState(tmp_path).jobs()  # a reader (the app) of a file no sweep has opened since
    assert row.verdict == "match" and row.pytorch is None and row.peak_rss_mb is None
    with SweepState(tmp_path, lock=True) as state:  # a sweep adds the columns
        (row,) = state.jobs()
        assert row.pytorch is None and row.info is None
    columns = {r[1] for r in sqlite3.connect(tmp_path / "sweep.sqlite").execute("PRAGMA table_info(jobs)")}
    assert {"peak_rss_mb", "pytorch", "pytorch_detail", "info"} <= columns


@pytest.mark.slow
def test_pytorchs_check_misses_what_allclose_cannot_see_and_agrees_on_a_gross_one(check) -> None:  # type: ignore[no-untyped-def]
    erf = check(
        (REPO / "sample_cases" / "erf_small_vectorized.py").read_text()
    )  # 1e-7 comes out as 0: all relative accuracy lost
    floor = check(
        (REPO / "sample_cases" / "floor_divide_off_by_one.py").read_text()
    )  # 1.0 // 0.1: 9 eagerly, 10 compiled
    assert erf.verdict.value == floor.verdict.value == "divergent"
    missed, caught = judge(harness_rule(), erf.run_dir), judge(harness_rule(), floor.run_dir)
    assert (
        missed.status == PASS
        and disagrees("divergent", missed.status)
        and missed.disagreements == (("out", "divergent", PASS),)
    )
    assert caught.status == FAIL and caught.failed == ("out[0]", "out[1]") and not caught.disagreements
    assert judge(AccuracyRule(OPINFO), erf.run_dir).status == PASS  # assertEqual's atol 1e-5 is blind to it too
    assert judge(AccuracyRule(OPINFO, rtol=0.0, atol=0.0), erf.run_dir).status == FAIL  # and is not vacuous


@pytest.fixture(scope="module")
def zoo_sweep(tmp_path_factory: pytest.TempPathFactory, divergence_home: Path, inductor_cache: Path):  # type: ignore[no-untyped-def]
    sweep_dir = tmp_path_factory.mktemp("zoo") / "sweep"
    # normal.in_place draws random numbers: PyTorch's test compares no values of it (ours: bit-identical under Inductor)
    config = SweepConfig(
        paths=("opinfo:bf16:add,normal.in_place", "hf:small:bert"),
        sweep_dir=sweep_dir,
        slots=1,
        report=sweep_dir / "report.html",
    )
    return config, run_sweep(config)


@pytest.mark.slow
def test_a_zoo_sweep_keeps_time_memory_and_pytorchs_check_beside_each_verdict(zoo_sweep) -> None:  # type: ignore[no-untyped-def]
    config, summary = zoo_sweep
    rows = {r.name: r for r in summary.jobs}
    assert set(rows) == {"add.py", "normal.in_place.py", "bert.py"} and all(
        r.verdict != "error" for r in rows.values()
    ), rows
    for r in rows.values():
        assert r.seconds and r.peak_rss_mb and r.peak_rss_mb > 100 and r.pytorch == PASS, r
        assert r.pytorch_detail is not None and r.pytorch_detail.compared >= 1
    add = rows["add.py"].pytorch_detail
    assert add is not None and add.compared == sum(add.crosstab.values()) == 11  # every sample of add, one leaf each
    # against the test's own reference: the samples made again here, eager on fp32-upcast inputs
    assert "leaves against eager on fp32-upcast inputs, as the test" in add.note and "fp64" not in add.note, add.note
    assert "OpInfo" in add.rule and "same(tol=0.001" in (
        rows["bert.py"].pytorch_detail.rule if rows["bert.py"].pytorch_detail else ""
    )
    text = table_text(list(summary.jobs))
    assert "PyTorch's check" in text and "peak MB" in text
    assert "no disagreement" in disagreement_text(list(summary.jobs))
    data = json.loads(summary.json_path.read_text())
    assert sum(data["pytorch_check"]["jobs"].values()) == 3 and data["jobs"][0]["pytorch_detail"]["status"] == PASS
    assert "PyTorch's own check beside ours" in (config.sweep_dir / "report.html").read_text()

    # a killed sweep may have lost a job's check: the next run computes it again, without re-running the job
    conn = sqlite3.connect(config.sweep_dir / "sweep.sqlite")
    with conn:
        conn.execute("UPDATE jobs SET pytorch = NULL, pytorch_detail = NULL")
    conn.close()
    again = run_sweep(config)
    assert again.ran == 0 and {r.name: r.pytorch for r in again.jobs} == dict.fromkeys(rows, PASS)


@pytest.mark.slow
def test_the_sweeps_page_shows_pytorchs_check_beside_ours(zoo_sweep) -> None:  # type: ignore[no-untyped-def]
    config, summary = zoo_sweep

    def page() -> None:
        from app.web.sweeps_page import render

        render()

    at = AppTest.from_function(page, default_timeout=60)
    at.run()
    picker = at.selectbox(key="sweep_dir")
    picker.select_index(next(i for i, label in enumerate(picker.options) if label.startswith("sweep-"))).run()
    assert not at.exception, at.exception
    jobs_crosstab, leaves_crosstab, job_table = at.dataframe
    assert sum(jobs_crosstab.value["PyTorch's pass"]) == 3 and sum(leaves_crosstab.value["PyTorch's fail"]) == 0
    assert list(job_table.value["PyTorch's check"]) == [PASS] * 3 and all(job_table.value["peak MB"] > 100)
    at.checkbox(key="sweep_disagree").check().run()
    assert len(at.dataframe[2].value) == 0  # they agree on all three


def test_a_zoo_source_without_its_package_says_what_to_install(tmp_path: Path) -> None:
    # a fresh interpreter in which `import expecttest` fails, as where it is not installed (sys.modules[name] = None)
    script = (
        "import sys; sys.modules['expecttest'] = None\n"
        "from app.sweep.corpus import CorpusError, zoo_programs\n"
        f"try:\n    zoo_programs('opinfo:bf16:add', __import__('pathlib').Path({str(tmp_path)!r}))\n"
        "except CorpusError as exc:\n    print(exc)\n"
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=REPO, timeout=120)
    assert "opinfo: needs the Python package 'expecttest'" in out.stdout and "pip install -e '.[zoo]'" in out.stdout, (
        out
    )


def test_a_sample_that_does_not_diverge_alone_is_minimized_with_the_samples_before_it(tmp_path: Path) -> None:
    # op_db's bf16 dropout: sample 8 differs only after sample 4 (p=1) drew when compiled; alone it is rng
    from app.sweep.corpus import split
    from app.sweep.orchestrator import samples_up_to

    program = zoo_programs("opinfo:bf16:nn.functional.dropout", tmp_path)[0]
    part = next(p for p in split(program) if p.info.get("sample") == 8)
    wider = samples_up_to(program.source, part.source)
    assert wider is not None and "SAMPLES = [0, 1, 2, 3, 4, 5, 6, 7, 8]" in wider and "SAMPLES = [8]" in part.source
    (tmp_path / "wider.py").write_text(wider)
    samples = runpy.run_path(str(tmp_path / "wider.py"))["inputs"]()[0]
    assert list(samples) == [f"sample[{i}]" for i in range(9)]
    chunk = program.source.replace("SAMPLES = None", "SAMPLES = range(100, 200)")
    assert "SAMPLES = [100, 101, 102]" in (
        samples_up_to(chunk, part.source.replace("SAMPLES = [8]", "SAMPLES = [102]")) or ""
    )
    assert (
        samples_up_to(program.source, part.source.replace("SAMPLES = [8]", "SAMPLES = [0]")) is None
    )  # nothing before it


def test_one_ops_chunks_with_one_symptom_are_one_bug_and_other_programs_stay_apart() -> None:
    # max_unpool2d's 288 bf16 samples run as three programs; its stride bug has no diverging node (a layout,
    # not a value), so each program was its own bug and minimized three times
    from app.sweep.bugs import bug_of
    from app.sweep.jobs import JobSpec
    from engine import CheckOptions, CheckResult, LeafKind, LeafResult, Symptom, Verdict

    def job(program: str, op: str | None, sample: int) -> tuple[JobSpec, CheckResult]:
        leaf = LeafResult(
            f"out['sample[{sample}]']",
            LeafKind.OUTPUT,
            Verdict.DIVERGENT,
            "strides",
            (Symptom.STRIDE,),
            dtype="bfloat16",
        )
        options = CheckOptions(device="cpu")
        spec = JobSpec(program, program, f"# {program}", options, "", 0, info={"op": op} if op else {})
        return spec, CheckResult(Verdict.DIVERGENT, "strides", options, leaves=(leaf,))

    chunks = [
        bug_of(*job(f"max_unpool2d--samples{i}.py", "nn.functional.max_unpool2d", i), None) for i in (0, 100, 200)
    ]
    grad = bug_of(*job("max_unpool2d.grad.py", "nn.functional.max_unpool2d.grad", 0), None)
    plain = [bug_of(*job(f"model{i}.py", None, 0), None) for i in (1, 2)]
    assert len({b.id for b in chunks if b}) == 1 and "one bug for the op" in chunks[0].description  # type: ignore[union-attr]
    assert grad is not None and grad.id != chunks[0].id  # type: ignore[union-attr]
    assert plain[0] is not None and plain[1] is not None and plain[0].id != plain[1].id
