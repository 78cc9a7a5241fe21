"""What a `divergence check` costs over checking by hand, on programs with large outputs.

For each program: the wall time of `divergence check FILE` against a bare script that imports torch, runs
eager, compiles, runs compiled and calls `torch.testing.assert_close`, each with a cold Inductor cache
(a fresh one per tool) and then warm; a check in an already-running worker (the app's and the
minimizer's case); where the warm check's seconds went (`stage_seconds`, whose sum the runner measures
against its own clock, and the CLI's own start and exit besides); the share of comparing and saving; and
the peak resident memory of the check's process as a multiple of one output's size; and how long the app
takes to show the stored run's heatmap.

    python benchmarks/check_overhead.py [FILE ...]      # default: the 16M- and 1e8-element programs

Take figures on a quiet machine (`flock /tmp/cpu-heavy.lock ...` where several agents share the cores).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
DEFAULT = ["benchmarks/large_outputs/sin_softmax_16m.py", "benchmarks/large_outputs/sin_softmax_1e8.py"]

BARE = """
import sys, runpy, torch
ns = runpy.run_path(sys.argv[1])
if "fn" in ns:
    fn, inputs = ns["fn"], ns["inputs"]
    make = inputs if callable(inputs) else (lambda: inputs)
else:
    fn, make = ns["Model"](*ns.get("get_init_inputs", lambda: [])()), ns["get_inputs"]
torch.manual_seed(0)
args = tuple(make())
clone = lambda: [a.clone() if isinstance(a, torch.Tensor) else a for a in args]
torch.manual_seed(0)
eager = fn(*clone())
torch.manual_seed(0)
compiled = torch.compile(fn)(*clone())
try:
    torch.testing.assert_close(compiled, eager)
    print("close")
except AssertionError as exc:
    print(str(exc).splitlines()[0])
"""


def timed(command: list[str], env: dict[str, str]) -> float:
    start = time.perf_counter()
    done = subprocess.run(command, env=env, capture_output=True, text=True, cwd=REPO)
    elapsed = time.perf_counter() - start
    if done.returncode not in (0, 1):
        raise SystemExit(
            f"{' '.join(command)} failed ({done.returncode}):\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}"
        )
    return elapsed


def last_result(home: str) -> dict:
    runs = sorted((Path(home) / "runs").iterdir(), key=lambda p: p.stat().st_mtime)
    return json.loads((runs[-1] / "result.json").read_text())


def output_bytes(result: dict) -> int:
    return max(
        (
            leaf["numel"] * (2 if leaf["dtype"] in ("bfloat16", "float16") else 8 if leaf["dtype"] == "float64" else 4)
            for leaf in result["leaves"]
        ),
        default=0,
    )


def main() -> None:
    files = sys.argv[1:] or DEFAULT
    divergence = shutil.which("divergence") or str(Path(sys.executable).parent / "divergence")
    ours = [divergence] if Path(divergence).exists() else [sys.executable, "-m", "app.cli.main"]
    rows = []
    for file in files:
        with (
            tempfile.TemporaryDirectory() as bare_cache,
            tempfile.TemporaryDirectory() as our_cache,
            tempfile.TemporaryDirectory() as home,
        ):
            base = {**os.environ, "DIVERGENCE_HOME": home, "PYTHONPATH": str(REPO)}
            bare_env = {**base, "TORCHINDUCTOR_CACHE_DIR": bare_cache}
            our_env = {**base, "TORCHINDUCTOR_CACHE_DIR": our_cache}
            bare_cold = timed([sys.executable, "-c", BARE, file], bare_env)
            ours_cold = timed([*ours, "check", "-q", file], our_env)
            bare_warm = timed([sys.executable, "-c", BARE, file], bare_env)
            ours_warm = timed([*ours, "check", "-q", file], our_env)
            warm = last_result(home)
            # in a process of its own: the app caches its store (of this home) for the process's life
            shown = subprocess.run(
                [sys.executable, __file__, "--first-view", home], capture_output=True, text=True, cwd=REPO, env=base
            )
            if shown.returncode:
                raise SystemExit(f"the app's view of the run failed:\n{shown.stdout[-2000:]}\n{shown.stderr[-2000:]}")
            views = tuple(json.loads(shown.stdout.strip().splitlines()[-1]))
            repeat, in_worker = warm_worker(file, our_cache, home)
        rows.append((file, bare_cold, ours_cold, bare_warm, ours_warm, repeat, warm, in_worker, views))

    print(
        f"{'program':44} {'bare cold':>9} {'ours cold':>9} {'ratio':>6} {'bare warm':>9} {'ours warm':>9} {'ratio':>6}"
        f" {'warm worker':>11}"
    )
    for file, bare_cold, ours_cold, bare_warm, ours_warm, repeat, *_ in rows:
        print(
            f"{Path(file).name:44} {bare_cold:9.2f} {ours_cold:9.2f} {ours_cold / bare_cold:6.2f} "
            f"{bare_warm:9.2f} {ours_warm:9.2f} {ours_warm / bare_warm:6.2f} {repeat:11.2f}"
        )
    print("seconds of wall time; ratio = ours / bare; 'warm worker' = a check in a running worker, warm cache\n")
    for file, _, _, _, ours_warm, _repeat, warm, in_worker, (figures, page) in rows:
        stages = warm["stage_seconds"]
        total = sum(stages.values())
        size = output_bytes(warm)
        print(
            f"{Path(file).name}: warm `divergence check` {ours_warm:.2f} s; its stages sum to {total:.2f} s (the CLI's"
            f" own start and exit: {ours_warm - total:.2f} s)"
        )
        print("  " + " · ".join(f"{name} {seconds:.2f}" for name, seconds in stages.items()))
        for label, result in (("CLI", warm), ("warm worker", in_worker)):
            s = result["stage_seconds"]
            wall = sum(s.values())
            print(
                f"  {label}: comparing {s.get('comparing', 0):.2f} s ({s.get('comparing', 0) / wall:.0%} of the check),"
                f" saving {s.get('saving', 0):.2f} s; peak RSS {result['peak_rss_mb'] / 1024:.2f} GiB ="
                f" {result['peak_rss_mb'] * 2**20 / size:.1f}x one output ({size / 2**20:.0f} MiB)"
            )
        print(
            f"  the app, from the stored run: heatmap + histogram + worst elements {figures * 1000:.0f} ms; the whole"
            f" results page (AppTest) {page:.2f} s"
        )
        print(f"  verdict: {warm['verdict']}; notes: {'; '.join(warm['notes']) or '-'}")


def first_view(home: str) -> tuple[float, float]:
    """The app's first sight of the latest run: seconds to build its worst leaf's heatmap (the Plotly JSON the
    browser gets), histogram and worst-element table from the stored run, as app.web.result_view does; and the
    whole results page rendered headlessly (Streamlit's AppTest), once the app's own worker is up."""
    sys.path.insert(0, str(REPO))
    import plotly.io
    from streamlit.testing.v1 import AppTest

    from app.store import RunRecord, RunStore
    from app.web import heatmap as hm
    from engine import CheckResult

    run_dir = sorted((Path(home) / "runs").iterdir(), key=lambda p: p.stat().st_mtime)[-1]
    start = time.perf_counter()
    result = CheckResult.load(run_dir)
    leaf = max(result.leaves, key=lambda leaf: (leaf.verdict.severity, leaf.max_ulp))
    arrays, summary = result.load_arrays(leaf), result.load_summary(leaf)
    shape = tuple(int(n) for n in summary["shape"])
    spec = hm.default_spec(shape, leaf.worst_index)
    view = hm.heatmap(
        arrays, hm.Metric.ABS, spec, dtype=leaf.dtype, pooled=hm.summary_pooled(summary, hm.Metric.ABS, spec, shape)
    )
    plotly.io.to_json(view.figure, validate=False)
    plotly.io.to_json(hm.histogram_figure(summary["histogram"]), validate=False)
    hm.summary_worst(summary, hm.Metric.ABS, shape, leaf.dtype)
    figures = time.perf_counter() - start

    os.environ["DIVERGENCE_HOME"] = home
    RunStore().add(
        RunRecord(
            id=run_dir.name,
            created=time.time(),
            name="benchmark",
            origin="paste",
            run_dir=str(run_dir),
            options=result.options,
        )
    )
    AppTest.from_file(
        str(REPO / "app" / "web" / "main.py"), default_timeout=300
    ).run()  # imports, and the app starts its worker
    time.sleep(15)  # let that worker import torch, off the measured page
    page = AppTest.from_file(str(REPO / "app" / "web" / "main.py"), default_timeout=300)
    page.query_params["run"] = run_dir.name
    start = time.perf_counter()
    page.run()
    elapsed = time.perf_counter() - start
    if page.exception or not page.get("plotly_chart"):
        raise SystemExit(f"the results page of {run_dir} shows no heatmap: {page.exception}")
    return figures, elapsed


def warm_worker(file: str, cache: str, home: str) -> tuple[float, dict]:
    """One check in a worker that is already running (its imports done; the Inductor cache warm from the CLI's runs)."""
    os.environ["DIVERGENCE_HOME"] = home
    sys.path.insert(0, str(REPO))
    from engine import Runner, records

    source = (REPO / file).read_text()
    with Runner(cache_dir=Path(cache)) as runner:
        runner.start()
        start = time.perf_counter()
        result = runner.check(source, filename=file)
        elapsed = time.perf_counter() - start
    return elapsed, records.to_json(result)


if __name__ == "__main__":
    if sys.argv[1:2] == ["--first-view"]:
        print(json.dumps(first_view(sys.argv[2])))
    else:
        main()
