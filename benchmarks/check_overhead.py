"""What a `divergence check` costs over doing it by hand.

For three sample programs: the wall time of `divergence check FILE` against a bare script that imports
torch, runs eager, compiles, runs compiled and compares, each with a cold and a warm Inductor cache, and
the time of a repeated check in an already-warm worker (the app's and the minimizer's case).

    python benchmarks/check_overhead.py [FILE ...]
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
DEFAULT = ["sample_cases/floor_divide_off_by_one.py", "sample_cases/layernorm_gelu_kernelbench.py", "sample_cases/rng_dropout.py"]

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
flat = lambda o: [o] if isinstance(o, torch.Tensor) else [t for x in o for t in flat(x)]
print(max(float((e.double() - c.double()).abs().max()) for e, c in zip(flat(eager), flat(compiled))))
"""


def timed(command: list[str], env: dict[str, str]) -> float:
    start = time.perf_counter()
    done = subprocess.run(command, env=env, capture_output=True, text=True, cwd=REPO)
    elapsed = time.perf_counter() - start
    if done.returncode not in (0, 1):
        raise SystemExit(f"{' '.join(command)} failed ({done.returncode}):\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}")
    return elapsed


def main() -> None:
    files = sys.argv[1:] or DEFAULT
    divergence = shutil.which("divergence")
    ours = [divergence] if divergence else [sys.executable, "-m", "app.cli.main"]
    print(f"{'program':40} {'bare cold':>9} {'ours cold':>9} {'ratio':>6} {'bare warm':>9} {'ours warm':>9} {'ratio':>6} {'warm worker':>11}")
    for file in files:
        with tempfile.TemporaryDirectory() as bare_cache, tempfile.TemporaryDirectory() as our_cache, tempfile.TemporaryDirectory() as home:
            base = {**os.environ, "DIVERGENCE_HOME": home, "PYTHONPATH": str(REPO)}
            bare_env = {**base, "TORCHINDUCTOR_CACHE_DIR": bare_cache}
            our_env = {**base, "TORCHINDUCTOR_CACHE_DIR": our_cache}
            bare_cold = timed([sys.executable, "-c", BARE, file], bare_env)
            ours_cold = timed([*ours, "check", "-q", file], our_env)
            bare_warm = timed([sys.executable, "-c", BARE, file], bare_env)
            ours_warm = timed([*ours, "check", "-q", file], our_env)
            repeat = warm_worker_seconds(file, our_cache, home)
        print(
            f"{file:40} {bare_cold:9.2f} {ours_cold:9.2f} {ours_cold / bare_cold:6.2f} "
            f"{bare_warm:9.2f} {ours_warm:9.2f} {ours_warm / bare_warm:6.2f} {repeat:11.2f}"
        )
    print("seconds of wall time; ratio = ours / bare; 'warm worker' = a repeated check in a running worker")


def warm_worker_seconds(file: str, cache: str, home: str) -> float:
    os.environ["DIVERGENCE_HOME"] = home
    sys.path.insert(0, str(REPO))
    from engine import Runner

    with Runner(cache_dir=Path(cache)) as runner:
        runner.start()
        source = (REPO / file).read_text()
        start = time.perf_counter()
        runner.check(source, filename=file)
        return time.perf_counter() - start


if __name__ == "__main__":
    main()
