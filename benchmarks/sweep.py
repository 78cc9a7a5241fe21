"""Throughput of `divergence sweep`: jobs per minute on the local pool and on Ray, cold and warm, and Ray's cost per
job.

The corpus is the first CPU cases of the gallery (in slug order) under `--matrix backend=inductor,aot_eager`,
so half the jobs compile with Inductor and half only trace. Each configuration (local pool with 1 and 2
checks at a time, Ray with 1 and 2 actors on a local instance) runs it once with a cold Inductor cache (a
fresh one per configuration) and once warm (a cache filled beforehand). The pool's start (worker start,
Ray instance and actors) is timed apart from the jobs. Ray's cost per job is measured on a second corpus
of tiny programs checked with backend=eager (no compile), where almost all of a job's time is overhead
(median of interleaved repeats), and as the round trip of an actor call that does nothing.

    flock /tmp/cpu-heavy.lock python benchmarks/sweep.py [--cases 8] [--tiny 24] [--repeats 3] [--no-cold]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from app.gallery import load_cases  # noqa: E402
from app.sweep.local_pool import LocalPool  # noqa: E402
from app.sweep.matrix import parse_axis  # noqa: E402
from app.sweep.orchestrator import SweepConfig, run_sweep  # noqa: E402

CONFIGS = (("local", 1), ("local", 2), ("ray", 1), ("ray", 2))
TINY = "import torch\n\ndef fn(x):\n    return x * {k} + 1\n\ndef inputs():\n    return (torch.randn(16),)\n"


def gallery(n: int) -> list[str]:
    cases = [c for c in load_cases()[0] if not c.cuda_only and not c.slow]
    return [str(c.path) for c in cases[:n]]


def measure(
    kind: str, slots: int, paths: list[str], cache: Path, axes: tuple, options: dict
) -> tuple[float, float, int, dict[str, str]]:
    """(pool start s, jobs s, jobs, verdict per job key) for one configuration, in a data folder of its own."""
    home = Path(tempfile.mkdtemp(prefix="sweep-bench-home-"))
    os.environ["DIVERGENCE_HOME"] = str(home)  # read by the workers (and a Ray instance started after this)
    os.environ["TORCHINDUCTOR_CACHE_DIR"] = str(cache)
    started = time.perf_counter()
    if kind == "ray":
        from app.sweep.ray_pool import RayPool

        pool = RayPool("local", slots, cache)
    else:
        pool = LocalPool(slots, cache)
    start_s = time.perf_counter() - started
    try:
        summary = run_sweep(
            SweepConfig(paths=tuple(paths), axes=axes, base_options=options, sweep_dir=home / "sweep", cache_dir=cache),
            pool=pool,
        )
    finally:
        pool.close()
    return start_s, summary.elapsed_s, len(summary.jobs), {r.key: r.verdict or "" for r in summary.jobs}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=8, help="gallery cases in the corpus (x 2 backends)")
    parser.add_argument("--tiny", type=int, default=24, help="tiny programs for Ray's cost per job")
    parser.add_argument("--repeats", type=int, default=3, help="runs of the tiny corpus per configuration")
    parser.add_argument("--no-cold", dest="cold", action="store_false")
    args = parser.parse_args()

    import torch

    paths = gallery(args.cases)
    axes = (parse_axis("backend=inductor,aot_eager"),)
    print(
        f"corpus: {len(paths)} gallery cases x backend=inductor,aot_eager = {2 * len(paths)} jobs; torch"
        f" {torch.__version__}, {len(os.sched_getaffinity(0))} cores",
        flush=True,
    )
    print(f"{'pool':<10} {'cache':<5} {'start s':>8} {'jobs s':>8} {'jobs/min':>9}  verdicts", flush=True)
    reference: dict[str, str] | None = None
    warm = Path(tempfile.mkdtemp(prefix="sweep-bench-warm-"))
    # fill the warm cache (not reported) at both thread counts: a CPU kernel's cache key holds torch's thread
    # count, which is the cores for one check at a time and one each for two (Ray's actors: one too)
    measure("local", 1, paths, warm, axes, {})
    measure("local", 2, paths, warm, axes, {})
    for cache_kind in ("cold", "warm") if args.cold else ("warm",):
        for kind, slots in CONFIGS:
            cache = Path(tempfile.mkdtemp(prefix="sweep-bench-cold-")) if cache_kind == "cold" else warm
            start_s, jobs_s, jobs, verdicts = measure(kind, slots, paths, cache, axes, {})
            reference = reference or verdicts
            same = (
                "same"
                if verdicts == reference
                else f"DIFFER on {sum(verdicts[k] != reference.get(k) for k in verdicts)} jobs"
            )
            print(
                f"{kind + ' x' + str(slots):<10} {cache_kind:<5} {start_s:8.1f} {jobs_s:8.1f} {jobs / jobs_s * 60:9.1f}"
                f"  {same}",
                flush=True,
            )

    tiny_dir = Path(tempfile.mkdtemp(prefix="sweep-bench-tiny-"))
    for k in range(args.tiny):
        (tiny_dir / f"tiny_{k:03d}.py").write_text(TINY.format(k=k + 2))
    print(
        f"\nper-job cost on {args.tiny} tiny programs checked with backend=eager (nothing compiles), median of"
        f" {args.repeats}:",
        flush=True,
    )
    per_job: dict[tuple[str, int], list[float]] = {c: [] for c in CONFIGS}
    for _ in range(args.repeats):  # interleaved, so a noisy minute does not fall on one configuration only
        for kind, slots in CONFIGS:
            _, jobs_s, jobs, _ = measure(kind, slots, [str(tiny_dir)], warm, (), {"backend": "eager"})
            per_job[(kind, slots)].append(jobs_s / jobs)
    for (kind, slots), seconds in per_job.items():
        print(
            f"{kind + ' x' + str(slots):<10} {statistics.median(seconds):6.3f} s per job  (runs:"
            f" {', '.join(f'{x:.3f}' for x in seconds)})",
            flush=True,
        )
    for slots in (1, 2):
        extra = statistics.median(per_job[("ray", slots)]) - statistics.median(per_job[("local", slots)])
        print(f"Ray's cost per job over the local pool, {slots} at a time: {extra * 1000:+.0f} ms", flush=True)
    print(f"a bare Ray actor call (submit, run nothing, get): {ray_round_trip() * 1000:.2f} ms", flush=True)


def ray_round_trip(calls: int = 200) -> float:
    """Seconds per call of a method that does nothing, on one actor of a local instance: Ray's own cost per task."""
    import ray

    @ray.remote(num_cpus=1)
    class Echo:
        def ping(self) -> int:
            return 0

    ray.init(address="local", num_cpus=1, include_dashboard=False, log_to_driver=False)
    try:
        echo = Echo.remote()
        ray.get(echo.ping.remote())
        started = time.perf_counter()
        for _ in range(calls):
            ray.get(echo.ping.remote())
        return (time.perf_counter() - started) / calls
    finally:
        ray.shutdown()


if __name__ == "__main__":
    main()
