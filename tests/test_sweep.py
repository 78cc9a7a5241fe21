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
from app.sweep.matrix import MatrixError, cells, parse_axis
from app.sweep.state import STATE_FILE
from app.sweep.sweep import SweepConfig, plan, run_sweep
from engine.runner import descendants
from tests.conftest import REPO

CASES = REPO / "sample_cases"


def _program(body: str, head: str = "") -> str:
    return f"import torch\n{head}\ndef fn(x):\n    return {body}\n\ndef inputs():\n    return (torch.linspace(-3, 3, 64),)\n"


def test_the_matrix_multiplies_programs_and_bad_axes_say_what_is_wrong(tmp_path: Path) -> None:
    (tmp_path / "kb").mkdir()
    (tmp_path / "kb" / "1_relu.py").write_text("import torch\nclass Model(torch.nn.Module):\n    def forward(self, x):\n        return x.relu()\n"
                                              "def get_inputs():\n    return [torch.randn(4)]\n")
    (tmp_path / "kb" / "helpers.py").write_text("SCALE = 2\n")  # in a directory, not a program: skipped, and said so
    (tmp_path / "a.py").write_text(_program("x * 2"))
    (tmp_path / "a.toml").write_text('title = "a"\n[options]\ndtype = "bf16"\n')  # a gallery-style .toml: the program's base options
    axes = (parse_axis("backend=inductor,aot_eager"), parse_axis("config.fallback_random=True,False"), parse_axis("dtype=none,fp16"))
    specs, corpus, n_cells = plan(SweepConfig(paths=(str(tmp_path / "*.py"), str(tmp_path / "kb")), axes=axes[:2]))
    assert n_cells == 4 and len(specs) == 8 and len({s.key for s in specs}) == 8
    assert [s.name for s in specs[:4]] == ["a.py"] * 4 and specs[0].options.dtype == "bf16" and specs[4].options.dtype is None
    assert specs[1].label == "backend=inductor config.fallback_random=False" and specs[1].options.inductor_config == {"fallback_random": False}
    assert len(corpus.skipped) == 1 and "helpers.py" in corpus.skipped[0]
    assert cells(axes)[-1].apply({"dtype": "bf16"}).dtype == "fp16" and cells(axes)[0].apply({"dtype": "bf16"}).dtype is None
    for bad, says in [("backend=inductr", "expected one of"), ("colour=red", "unknown option"), ("dynamic=maybe", "true or false"), ("seeds", "KEY=V1")]:
        with pytest.raises(MatrixError, match=says):
            parse_axis(bad)
    with pytest.raises(CorpusError, match="no such file"):
        find_programs([str(tmp_path / "missing*.py")])


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
