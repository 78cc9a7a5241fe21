"""The process boundary: progress, cancel, concurrent jobs, and a worker that dies."""

from __future__ import annotations

import time

import pytest

from engine import CheckOptions, CheckResult, ErrorKind, Runner, Verdict

LOOP = "import torch\ninputs = (torch.randn(3),)\ndef fn(x):\n    while True:\n        pass\n"
SIMPLE = "import torch\ndef fn(x):\n    return x + 1\ninputs = (torch.ones(3),)\n"


def wait_for_stage(job, stage: str, limit: float = 120.0) -> None:
    deadline = time.monotonic() + limit
    while job.progress.stage != stage:
        assert time.monotonic() < deadline, f"stage {stage!r} never reached; at {job.progress.stage!r}"
        time.sleep(0.05)


def test_progress_stages_arrive_in_order_and_account_for_every_second(runner, tmp_path):
    stages: list[str] = []
    started = time.monotonic()
    result = runner.check(SIMPLE, CheckOptions(), run_dir=tmp_path, on_progress=lambda p: stages.append(p.stage))
    wall = time.monotonic() - started
    seen = list(dict.fromkeys(stages))
    order = ["starting worker", "loading", "eager", "compiling", "fp64 reference", "comparing", "saving", "done"]
    assert [s for s in seen if s in order] == order, seen
    assert set(order[:-1]) | {"finishing"} <= set(result.stage_seconds)
    assert sum(result.stage_seconds.values()) == pytest.approx(
        wall, abs=0.1
    )  # the worker's start and the result's reading too
    assert CheckResult.load(tmp_path).stage_seconds == result.stage_seconds


def test_cancel_stops_the_job_and_nothing_else(runner, tmp_path):
    looping = runner.submit(LOOP, CheckOptions(timeout_s=120), run_dir=tmp_path / "loop")
    wait_for_stage(looping, "eager")
    started = time.monotonic()
    looping.cancel()
    result = looping.wait(30)
    assert result.error.kind is ErrorKind.CANCELLED and time.monotonic() - started < 10
    assert (tmp_path / "loop" / "result.json").exists()  # the cancelled run is kept, marked as such
    assert runner.check(SIMPLE, CheckOptions(), run_dir=tmp_path / "next").verdict is Verdict.MATCH


def test_two_jobs_run_side_by_side(runner, tmp_path):
    looping = runner.submit(LOOP, CheckOptions(timeout_s=120), run_dir=tmp_path / "loop")
    wait_for_stage(looping, "eager")
    assert runner.check(SIMPLE, CheckOptions(), run_dir=tmp_path / "other").verdict is Verdict.MATCH
    assert not looping.done()
    looping.cancel()
    assert looping.wait(30).error.kind is ErrorKind.CANCELLED


@pytest.mark.slow
def test_a_dead_worker_is_replaced(runner, tmp_path):
    runner.start()
    runner._proc.kill()  # what an OOM kill of the warm worker looks like from here
    runner._proc.wait()
    assert runner.check(SIMPLE, CheckOptions(), run_dir=tmp_path).verdict is Verdict.MATCH


@pytest.mark.slow
def test_the_queue_is_bounded_and_a_queued_job_cancels_without_running(inductor_cache, tmp_path):
    with Runner(cache_dir=inductor_cache, max_running=1, max_queued=1) as small:
        looping = small.submit(LOOP, CheckOptions(timeout_s=120), run_dir=tmp_path / "loop")
        waiting = small.submit(SIMPLE, CheckOptions(), run_dir=tmp_path / "waiting")
        refused = small.submit(SIMPLE, CheckOptions(), run_dir=tmp_path / "refused")
        assert refused.wait(5).error.kind is ErrorKind.BUSY and "try again" in refused.wait().error.message
        assert waiting.progress.stage == "queued (next)"
        waiting.cancel()
        assert waiting.wait(5).error.kind is ErrorKind.CANCELLED
        assert not (tmp_path / "waiting" / "output.log").exists()  # it never reached the worker
        follower = small.submit(SIMPLE, CheckOptions(timeout_s=60), run_dir=tmp_path / "follower")  # room again
        wait_for_stage(looping, "eager")
        assert follower.progress.stage == "queued (next)"
        looping.cancel()
        assert looping.wait(30).error.kind is ErrorKind.CANCELLED
        assert follower.wait(120).verdict is Verdict.MATCH  # handed over when the slot freed


def test_a_check_whose_caller_is_gone_records_nothing(tmp_path):
    """A child whose event pipe is closed (its caller was SIGKILLed) writes no result a resumed sweep would keep."""
    import subprocess
    import sys

    script = f"""
import os
from engine.child import worker
from engine import CheckOptions, records
read, write = os.pipe()
os.close(read)  # the caller is gone
request = {{"job": "j", "run_dir": {str(tmp_path / "run")!r}, "source": {SIMPLE!r}, "filename": "p.py",
            "options": records.to_json(CheckOptions(backend="eager"))}}
worker._child(request, worker.Events(write))
"""
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert (tmp_path / "run").is_dir() and not (tmp_path / "run" / "result.json").exists()


def test_the_worker_does_inductors_once_per_process_set_up_before_it_forks_a_check(inductor_cache):
    """Each check is a fork of the worker: Inductor's per-process caches (vector ISA probe, pattern matcher, source
    hashes) are filled in the worker first, so that no check pays them again (engine/child/inductor_warmup.py)."""
    import json
    import os
    import subprocess
    import sys

    env = {**os.environ, "TORCHINDUCTOR_CACHE_DIR": str(inductor_cache)}
    worker = subprocess.Popen(
        [sys.executable, "-m", "engine.child.worker"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env, text=True
    )
    try:
        ready = json.loads(worker.stdout.readline())
    finally:
        worker.communicate('{"op": "exit"}\n', timeout=60)
    assert ready["event"] == "ready"
    assert set(ready["warm"]) == {"vector ISA probe", "pattern matcher patterns", "torch and Triton source hashes"}
    assert all(isinstance(seconds, float) for seconds in ready["warm"].values()), ready["warm"]


def test_a_warmed_process_has_inductors_per_process_caches_filled():
    import subprocess
    import sys

    probe = (
        "from engine.child.inductor_warmup import warm; warm()\n"
        "from torch._inductor import cpu_vec_isa\n"
        "from torch._inductor.fx_passes import joint_graph, post_grad\n"
        "print(cpu_vec_isa.valid_vec_isa_list.cache_info().currsize, joint_graph.lazy_init.cache_info().currsize,"
        " post_grad.lazy_init.cache_info().currsize)\n"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["1", "1", "1"], out
