"""`divergence sweep --ray` on a real local Ray instance (one per module: it takes seconds to start on 2 cores).

The same corpus gets the same verdicts from Ray actors as from the local pool; a job that segfaults,
one that hangs and one that kills its actor end as `error` rows while the rest finish; a job whose
actor is killed from outside runs again on the restarted actor.
"""

from __future__ import annotations

import json
import os
import signal
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from app.store import RunStore
from app.sweep.local_pool import LocalPool
from app.sweep.matrix import parse_axis
from app.sweep.orchestrator import SweepConfig, run_sweep
from app.sweep.state import severity_rank
from engine import Runner
from engine.result import CheckResult
from tests.conftest import REPO

ray = pytest.importorskip("ray")

# fast cases of the gallery in its three snippet styles: divergent, benign, a bf16 case (its .toml casts) that is
# precision-cast
GALLERY = (
    "floor_divide_off_by_one",
    "sum_reduction_order",
    "bf16_muladd_chain",
    "layernorm_gelu_kernelbench",
    "neg_zero_add_reciprocal",
)
ACTOR_OF = """
import os

def actor_pid():
    '''The Ray actor above this check: the first ancestor whose command line is ray's "ray::<Actor>..." title.'''
    pid = os.getppid()
    while pid > 1:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            if f.read().startswith(b"ray::"):
                return pid
        with open(f"/proc/{pid}/stat") as f:
            pid = int(f.read().rsplit(")", 1)[1].split()[1])
    raise RuntimeError("no Ray actor above this process")
"""
TAIL = "\ndef fn(x):\n    return x + 1\n\ndef inputs():\n    return (torch.ones(4),)\n"


@pytest.fixture(scope="module")
def ray_instance(divergence_home: Path, inductor_cache: Path) -> Iterator[None]:
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        yield
    finally:
        ray.shutdown()


def _verdicts(summary) -> dict[str, str]:  # type: ignore[no-untyped-def]
    return {r.key: r.verdict for r in summary.jobs}


@pytest.mark.slow
def test_ray_actors_and_the_local_pool_agree_on_the_gallery(
    ray_instance: None, tmp_path: Path, inductor_cache: Path, runner: Runner
) -> None:
    paths = tuple(str(REPO / "sample_cases" / f"{case}.py") for case in GALLERY)
    config = SweepConfig(
        paths=paths, axes=(parse_axis("backend=inductor,aot_eager"),), slots=2, cache_dir=inductor_cache
    )
    local = run_sweep(
        SweepConfig(**{**config.__dict__, "sweep_dir": tmp_path / "local"}), pool=LocalPool(runner=runner)
    )  # 2 at a time
    # ship_runs: the actors send each run back as an archive, as an actor on another node does
    on_ray = run_sweep(
        SweepConfig(**{**config.__dict__, "sweep_dir": tmp_path / "ray", "ray": "local", "ship_runs": True})
    )
    assert "Ray actors" in on_ray.pool and len(on_ray.jobs) == 2 * len(GALLERY)
    assert _verdicts(on_ray) == _verdicts(local)
    assert {"divergent", "benign"} <= set(_verdicts(local).values()) and "error" not in _verdicts(local).values()
    store = RunStore()
    for row in on_ray.jobs:  # each run came back whole: `divergence show` and the app open it here
        assert row.where_ran and row.where_ran.startswith("ray ")
        assert CheckResult.load(Path(row.run_dir or "")).verdict.value == row.verdict
        assert (record := store.get(row.run_id or "")) is not None and record.verdict == row.verdict
    order = [severity_rank(r.verdict) for r in on_ray.jobs]  # the table: divergent first, then errors, ..., match last
    assert order == sorted(order) and on_ray.jobs[0].label == "backend=inductor"
    data = json.loads(on_ray.json_path.read_text())
    assert data["counts"] == dict(sorted(local.counts.items(), key=lambda kv: list(data["counts"]).index(kv[0])))


@pytest.mark.slow
def test_a_segfault_a_hang_and_a_killed_actor_end_as_errors_while_the_rest_finish(
    ray_instance: None, tmp_path: Path, divergence_home: Path
) -> None:
    marker = f"ACTOR-{uuid.uuid4().hex[:8]}="
    programs = {
        "segfault": "import ctypes\nimport torch\nctypes.string_at(0)\n",
        "hang": "import time\nimport torch\ntime.sleep(3600)\n",
        "kills_its_actor": f"import signal\nimport torch\n{ACTOR_OF}\nos.kill(actor_pid(), signal.SIGKILL)\n",
        # its actor is killed from outside once (below): the job runs again on the restarted actor
        "loses_its_actor": (
            f"import time\nimport torch\n{ACTOR_OF}\nprint('{marker}%d' % actor_pid(), flush=True)\ntime.sleep(3)\n"
        ),
        "fine": "import torch\n",
    }
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    for name, head in programs.items():
        (corpus / f"{name}.py").write_text(head + TAIL)
    killed: list[int] = []
    stop = threading.Event()

    def kill_once() -> None:
        while not stop.is_set() and not killed:
            for log in (divergence_home / "runs").glob("*/output.log"):
                text = log.read_text(errors="replace")
                if marker in text:
                    pid = int(text.split(marker, 1)[1].split()[0])
                    os.kill(pid, signal.SIGKILL)
                    killed.append(pid)
                    return
            time.sleep(0.1)

    killer = threading.Thread(target=kill_once, daemon=True)
    killer.start()
    try:
        summary = run_sweep(
            SweepConfig(
                paths=(str(corpus),),
                base_options={"backend": "aot_eager", "timeout_s": 8.0},
                slots=2,
                sweep_dir=tmp_path / "sweep",
                ray="local",
            )
        )
    finally:
        stop.set()
        killer.join()
    rows = {r.name.removesuffix(".py"): r for r in summary.jobs}
    assert (rows["segfault"].verdict, rows["segfault"].error_kind) == ("error", "crash") and "SIGSEGV" in (
        rows["segfault"].explanation or ""
    )
    assert (rows["hang"].verdict, rows["hang"].error_kind) == ("error", "timeout")
    dead = rows["kills_its_actor"]
    assert (dead.verdict, dead.error_kind) == (
        "error",
        "crash",
    ) and "Ray actor running this check died on each of its 2 attempts" in (dead.explanation or "")
    assert CheckResult.load(Path(dead.run_dir or "")).verdict.value == "error"  # stored like any run
    assert rows["fine"].verdict == "match"
    lost = rows["loses_its_actor"]
    assert killed and lost.verdict == "match" and f"pid {killed[0]}" not in (lost.where_ran or ""), lost
    assert summary.exit_code == 2
