"""What judging inside the program costs a check: `divergence check` with and without the inside stage.

For each program, back to back on the same machine: the check with `--no-inside` (the check as it was) and the
default check (the inside stage on), each with a fresh Inductor cache of its own (cold), then once more on that
warm cache. Printed per program: wall seconds of the four runs and the ratios, the inside stage's own seconds
(`stage_seconds["inside"]`), the peak RSS of both checks, the verdicts, and what the inside stage found.

    python benchmarks/inside_cost.py [FILE ...]     # default: the realistic programs below

Take figures on a quiet machine (`nice -n 19`, say the load): two compiles at once on two cores are slower.
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
DEFAULT = [
    "tests/snippets/sensor_encoder_pooled.py",  # the issue's pooled bf16 model, written here
    "benchmarks/minimize_corpus/time_bucket_encoder.py",
    "benchmarks/minimize_corpus/permuted_key_attention.py",
    "benchmarks/minimize_corpus/sensor_standardizer.py",
    "benchmarks/minimize_corpus/hyperbolic_distance.py",
    "benchmarks/minimize_corpus/streaming_state_cache.py",
    "benchmarks/minimize_corpus/block_float_decoder.py",
    "sample_cases/forecaster_remainder_bf16.py",
    "sample_cases/layernorm_gelu_kernelbench.py",
    "benchmarks/large_outputs/sin_softmax_16m.py",
    "benchmarks/inside_models/gpt2_small_bf16.py",
    "benchmarks/inside_models/llama_small_bf16.py",
]


def run(file: str, cache: str, home: str, inside: bool) -> tuple[float, dict]:
    divergence = shutil.which("divergence") or str(Path(sys.executable).parent / "divergence")
    command = [divergence, "check", "-q", file, "--json", str(Path(home) / "out.json")]
    if not inside:
        command.append("--no-inside")
    env = {**os.environ, "DIVERGENCE_HOME": home, "PYTHONPATH": str(REPO), "TORCHINDUCTOR_CACHE_DIR": cache}
    start = time.perf_counter()
    done = subprocess.run(command, env=env, capture_output=True, text=True, cwd=REPO)
    elapsed = time.perf_counter() - start
    if done.returncode not in (0, 1):
        raise SystemExit(
            f"{' '.join(command)} failed ({done.returncode}):\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}"
        )
    return elapsed, json.loads((Path(home) / "out.json").read_text())


def main() -> None:
    files = sys.argv[1:] or DEFAULT
    print(f"load before: {os.getloadavg()[0]:.1f}")
    rows = []
    for file in files:
        with tempfile.TemporaryDirectory() as off_cache, tempfile.TemporaryDirectory() as on_cache:
            with tempfile.TemporaryDirectory() as home:
                off_cold, _ = run(file, off_cache, home, inside=False)
                on_cold, _ = run(file, on_cache, home, inside=True)
                off_warm, off = run(file, off_cache, home, inside=False)
                on_warm, on = run(file, on_cache, home, inside=True)
        rows.append((file, off_cold, on_cold, off_warm, on_warm, off, on))
        print(f"{file}: done", flush=True)
    print(
        f"\n{'program':34} {'cold off':>8} {'cold on':>8} {'ratio':>5} {'warm off':>8} {'warm on':>8} {'ratio':>5}"
        f" {'inside s':>8} {'peak MiB off/on':>16}  verdict off -> on"
    )
    for file, off_cold, on_cold, off_warm, on_warm, off, on in rows:
        stage = on["stage_seconds"].get("inside", 0.0)
        print(
            f"{Path(file).stem[:34]:34} {off_cold:8.1f} {on_cold:8.1f} {on_cold / off_cold:5.2f} {off_warm:8.1f}"
            f" {on_warm:8.1f} {on_warm / off_warm:5.2f} {stage:8.2f}"
            f" {off['peak_rss_mb']:7.0f}/{on['peak_rss_mb']:<7.0f}"
            f"  {off['verdict']} -> {on['verdict']}"
        )
    print(
        "\nwall seconds of `divergence check` (the CLI, a fresh worker each); cold: a fresh Inductor cache per variant"
    )
    for file, *_, on in rows:
        inside = on.get("inside") or {}
        print(f"{Path(file).stem}: inside {inside.get('status')}: {inside.get('explanation', '')[:240]}")
    print(f"load after: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
