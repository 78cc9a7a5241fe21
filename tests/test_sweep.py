"""`divergence sweep` on this machine: the plan (corpus x matrix), SIGKILL and resume, --minimize, the Sweeps page.

The Ray backend, and its agreement with the local pool on the gallery, are in tests/test_sweep_ray.py.
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from app.sweep.corpus import CorpusError, find_programs
from app.sweep.local_pool import LocalPool
from app.sweep.matrix import MatrixError, cells, parse_axis
from app.sweep.orchestrator import SweepConfig, plan, run_sweep
from app.sweep.state import STATE_FILE, SweepState
from engine import Runner
from engine.runner import descendants
from tests.conftest import REPO

CASES = REPO / "sample_cases"


def _program(body: str, head: str = "") -> str:
    return (
        f"import torch\n{head}\ndef fn(x):\n    return {body}\n\ndef inputs():\n    return (torch.linspace(-3, 3,"
        " 64),)\n"
    )


def test_the_matrix_multiplies_programs_and_bad_axes_say_what_is_wrong(tmp_path: Path) -> None:
    (tmp_path / "kb").mkdir()
    (tmp_path / "kb" / "1_relu.py").write_text(
        "import torch\nclass Model(torch.nn.Module):\n    def forward(self, x):\n        return x.relu()\n"
        "def get_inputs():\n    return [torch.randn(4)]\n"
    )
    (tmp_path / "kb" / "helpers.py").write_text("SCALE = 2\n")  # in a directory, not a program: skipped, and said so
    (tmp_path / "a.py").write_text(_program("x * 2"))
    (tmp_path / "a.toml").write_text(
        'title = "a"\n[options]\ndtype = "bf16"\n'
    )  # a gallery-style .toml: the program's base options
    axes = (
        parse_axis("backend=inductor,aot_eager"),
        parse_axis("config.fallback_random=True,False"),
        parse_axis("dtype=none,fp16"),
    )
    specs, corpus, n_cells = plan(SweepConfig(paths=(str(tmp_path / "*.py"), str(tmp_path / "kb")), axes=axes[:2]))
    assert n_cells == 4 and len(specs) == 8 and len({s.key for s in specs}) == 8
    assert (
        [s.name for s in specs[:4]] == ["a.py"] * 4
        and specs[0].options.dtype == "bf16"
        and specs[4].options.dtype is None
    )
    assert specs[1].label == "backend=inductor config.fallback_random=False" and specs[1].options.inductor_config == {
        "fallback_random": False
    }
    assert len(corpus.skipped) == 1 and "helpers.py" in corpus.skipped[0]
    assert (
        cells(axes)[-1].apply({"dtype": "bf16"}).dtype == "fp16"
        and cells(axes)[0].apply({"dtype": "bf16"}).dtype is None
    )
    for bad, says in [
        ("backend=inductr", "expected one of"),
        ("colour=red", "unknown option"),
        ("dynamic=maybe", "true or false"),
        ("seeds", "KEY=V1"),
    ]:
        with pytest.raises(MatrixError, match=says):
            parse_axis(bad)
    with pytest.raises(CorpusError, match="no such file"):
        find_programs([str(tmp_path / "missing*.py")])


def test_ray_and_report_take_a_program_path_back_when_they_are_given_one() -> None:
    from app.cli.main import build_parser
    from app.cli.sweep import untangle

    for argv, paths, ray, report in [
        (
            ["--ray", "sample_cases"],
            ["sample_cases"],
            "local",
            None,
        ),  # `--ray PATH`: PATH is a program, Ray a local instance
        (["--ray", "10.0.0.1:6379", "sample_cases"], ["sample_cases"], "10.0.0.1:6379", None),
        (["--report", "sample_cases"], ["sample_cases"], None, True),
        (["sample_cases", "--report", "out.html"], ["sample_cases"], None, "out.html"),
    ]:
        args = build_parser().parse_args(["sweep", *argv])
        untangle(args)
        assert (args.paths, args.ray, args.report) == (paths, ray, report), argv


def _sweep_cli(*args: str, home: Path) -> list[str]:
    env = {**os.environ, "DIVERGENCE_HOME": str(home)}
    return [sys.executable, "-m", "app.cli.main", "sweep", *args], env  # type: ignore[return-value]


def _done(state: Path) -> dict[str, tuple[str, str]]:
    """Finished jobs in a state file: key -> (run directory, verdict)."""
    if not state.exists():
        return {}
    conn = sqlite3.connect(state, timeout=10)
    try:
        return {k: (d, v) for k, d, v in conn.execute("SELECT key, run_dir, verdict FROM jobs WHERE status = 'done'")}
    finally:
        conn.close()


def test_a_state_file_appears_with_its_tables(tmp_path: Path) -> None:
    # a reader polling the directory (the Sweeps page, a test) once opened the file before its tables existed
    (tmp_path / (STATE_FILE + ".new")).write_text("left by a sweep killed while it made its state file")
    state = SweepState(tmp_path, lock=True)
    try:
        assert sorted(p.name for p in tmp_path.iterdir()) == [".lock", STATE_FILE]
        conn = sqlite3.connect(tmp_path / STATE_FILE)
        tables = {name for (name,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        assert tables == {"meta", "jobs", "bugs"} and conn.execute("PRAGMA journal_mode").fetchone() == ("wal",)
        conn.close()
    finally:
        state.close()


@pytest.mark.slow
def test_a_sigkilled_sweep_resumes_without_redoing_finished_jobs(tmp_path: Path, inductor_cache: Path) -> None:
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    for i in range(4):  # each takes a second to load: the sweep is killed half way through
        (corpus / f"p{i}.py").write_text(_program(f"x * {i + 2}", head="import time\ntime.sleep(1.0)"))
    out = tmp_path / "sweep"
    command, env = _sweep_cli(str(corpus), "--backend", "eager", "-j", "1", "-o", str(out), home=tmp_path / "home")
    proc = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=REPO)
    deadline = time.monotonic() + 180
    while len(_done(out / STATE_FILE)) < 2:
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, "the sweep finished no two jobs in 180 s"
        time.sleep(0.1)
    below = descendants(proc.pid) - {proc.pid}  # its worker and the child running the third job
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    before = _done(out / STATE_FILE)
    assert 2 <= len(before) < 4
    deadline = time.monotonic() + 15  # the worker sees its input close and kills the check in flight
    while any(Path(f"/proc/{p}").exists() for p in below) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not [p for p in below if Path(f"/proc/{p}").exists()], "the killed sweep left processes behind"

    again = subprocess.run(command, env=env, capture_output=True, text=True, timeout=300, cwd=REPO)
    assert again.returncode == 0, again.stdout + again.stderr
    after = _done(out / STATE_FILE)
    assert len(after) == 4 and all(after[k] == before[k] for k in before)  # the same runs: nothing finished was redone
    assert f"{len(before)} finished before, {4 - len(before)} to run" in again.stderr
    assert f"{4 - len(before)} checked now" in again.stdout
    data = json.loads((out / "sweep.json").read_text())
    assert data["counts"] == {"match": 4} and all(Path(j["run_dir"], "result.json").exists() for j in data["jobs"])


BUCKETS = '''"""A feature encoder that bins readings into buckets of a fixed width (the floor division of floor_divide_off_by_one)."""
import torch


class BucketEncoder(torch.nn.Module):
    def __init__(self, width: float = 0.1, buckets: int = 128):
        super().__init__()
        self.register_buffer("width", torch.tensor(width))
        self.buckets = buckets

    def forward(self, readings):
        return (readings // self.width).clamp(0, self.buckets - 1)


fn = BucketEncoder().eval()


def inputs():
    return (torch.tensor([1.0, 0.5, 0.7, 2.0, 3.0, 6.0, 0.3, 9.9]),)
'''  # noqa: E501  (the text as it runs)


@pytest.fixture(scope="module")
def minimized_sweep(
    tmp_path_factory: pytest.TempPathFactory, divergence_home: Path, inductor_cache: Path, runner: Runner
):  # type: ignore[no-untyped-def]
    """Two programs with the same floor-division bug (different code, different output names) and one erf bug, with
    --minimize."""
    corpus = tmp_path_factory.mktemp("bugs")
    (corpus / "bucket_encoder.py").write_text(BUCKETS)
    for case in ("floor_divide_off_by_one", "erf_small_vectorized"):
        (corpus / f"{case}.py").write_text((CASES / f"{case}.py").read_text())
    # the sweep's directory inside the corpus: its own files (snippets, repros) must not become programs of a re-run
    config = SweepConfig(
        paths=(str(corpus),),
        sweep_dir=corpus / "bug-hunt",
        minimize=True,
        minimize_budget_s=15,
        minimize_max=1,
        shrinkray=False,
        ablation=False,
        cache_dir=inductor_cache,
        report=corpus / "bug-hunt" / "report.html",
    )
    return config, run_sweep(config, pool=LocalPool(runner=runner))  # the session's warm worker


@pytest.mark.slow
def test_minimize_shrinks_each_bug_once_however_many_programs_show_it(minimized_sweep) -> None:  # type: ignore[no-untyped-def]
    config, summary = minimized_sweep
    rows = {r.name: r for r in summary.jobs}
    assert {r.verdict for r in rows.values()} == {"divergent"} and summary.exit_code == 1
    assert (
        rows["bucket_encoder.py"].bug == rows["floor_divide_off_by_one.py"].bug != rows["erf_small_vectorized.py"].bug
    )
    bugs = {b.id: b for b in summary.bugs}
    floor, erf = bugs[rows["floor_divide_off_by_one.py"].bug or ""], bugs[rows["erf_small_vectorized.py"].bug or ""]
    assert len(bugs) == 2 and "aten.div" in floor.description and "aten.erf" in erf.description
    assert floor.representative == rows["floor_divide_off_by_one.py"].key  # the smaller of its two programs
    # --minimize-max 1: the bug two jobs show is minimized, the other waits for the next run
    assert floor.status == "done" and "repro verified in a fresh process" in (floor.message or ""), floor
    assert (
        floor.repro and Path(floor.repro).is_file() and floor.tokens_after is not None
    )  # how far it shrinks is the minimizer's tests' business
    assert (Path(floor.repro).parent / "minimized.py").is_file()
    assert erf.status == "queued" and erf.repro is None
    html = (config.sweep_dir / "report.html").read_text()
    assert html.count('<tr data-v="divergent">') == 3 and floor.description in html and "repro.py" in html
    again = run_sweep(
        SweepConfig(**{**config.__dict__, "minimize_max": 0})
    )  # (and no pool is started: nothing to run)  # nothing is checked again, no done bug minimized again
    assert again.ran == 0 and [(b.id, b.finished) for b in again.bugs] == [(b.id, b.finished) for b in summary.bugs]
    assert len(again.jobs) == 3  # and the sweep's own directory inside the corpus added no program


def test_the_sweeps_page_lists_counts_bugs_and_jobs_and_opens_a_run(minimized_sweep) -> None:  # type: ignore[no-untyped-def]
    config, summary = minimized_sweep

    def page() -> None:
        from app.web.sweeps_page import render

        render()

    at = AppTest.from_function(page, default_timeout=60)
    at.run()
    picker = at.selectbox(key="sweep_dir")  # every sweep of this data folder, this one by its (linked) name
    picker.select_index(next(i for i, label in enumerate(picker.options) if label.startswith("bug-hunt-"))).run()
    assert not at.exception, at.exception
    assert {m.label: m.value for m in at.metric} == {"jobs finished": "3 / 3", "divergent": "3", "errors": "0"}
    bug_table, job_table = at.dataframe  # AppTest does not key dataframes: the bugs come first
    assert sorted(bug_table.value["jobs"]) == [1, 2] and sorted(bug_table.value["minimization"]) == ["done", "queued"]
    assert len(at.get("download_button")) == 1  # the minimized bug's repro.py
    assert list(job_table.value["run"]) == [f"./?run={r.run_id}" for r in summary.jobs]
    at.text_input(key="sweep_filter").input("bucket").run()
    assert list(at.dataframe[1].value["program"]) == ["bucket_encoder.py"]

    check_page = AppTest.from_file(
        str(REPO / "app" / "web" / "main.py"), default_timeout=60
    )  # the link: the check page with ?run=
    check_page.query_params["run"] = summary.jobs[0].run_id
    check_page.run()
    assert not check_page.exception
    assert any(
        e.value.startswith("**Verdict: DIVERGENT**")
        for e in [*check_page.success, *check_page.warning, *check_page.error]
    )
