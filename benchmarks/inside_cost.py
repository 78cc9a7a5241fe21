"""What judging inside the program costs a check: `divergence check` with and without the inside stage.

For each program, back to back on the same machine: the check with `--no-inside` (the check as it was) and the
default check (the inside stage on), each with a fresh Inductor cache of its own (cold), then once more on that
warm cache. Printed per program: wall seconds of the four runs and the ratios, the inside stage's own seconds
(`stage_seconds["inside"]`), the peak RSS of both checks, the verdicts, and what the inside stage found.

    python benchmarks/inside_cost.py [--write-docs] [FILE ...]     # default: the realistic programs below

`--write-docs` writes the table into docs/figures/check-cost.md (its generated section; benchmarks/docs_pages.py).
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
SCRIPT = "benchmarks/inside_cost.py"
DEFAULT = [
    "tests/snippets/sensor_encoder_pooled.py",  # the pooled bf16 model, written here
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
    args = sys.argv[1:]
    write_docs = "--write-docs" in args
    files = [a for a in args if a != "--write-docs"] or DEFAULT
    load_before = os.getloadavg()[0]
    print(f"load before: {load_before:.1f}")
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
    load_after = os.getloadavg()[0]
    table = _table(rows)
    print("\n" + table)
    print(f"\nload after: {load_after:.1f}")
    if write_docs:
        sys.path.insert(0, str(REPO))
        from benchmarks.docs_pages import DOCS, write_section

        measured = (
            f"Measured by `nice -n 19 python {SCRIPT} --write-docs {' '.join(files) if sys.argv[1:] else ''}`"
            f" (torch {_torch_version()}, CPU, 2 shared cores, load {load_before:.1f} before and {load_after:.1f}"
            " after; other work ran beside it, so read ratios, not seconds).\n\n"
        )
        write_section(DOCS / "figures" / "check-cost.md", SCRIPT, measured + table)
        print("written: docs/figures/check-cost.md")


def _table(rows: list) -> str:
    """Markdown: seconds of `divergence check` without (`--no-inside`) and with the inside stage, cold and warm."""
    lines = [
        "| program | cold off | cold on | ratio | warm off | warm on | ratio | inside stage s | buffers judged "
        "| peak MiB off / on | verdict off -> on |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for file, off_cold, on_cold, off_warm, on_warm, off, on in rows:
        stage = on["stage_seconds"].get("inside", 0.0)
        inside = on.get("inside") or {}
        judged = f"{inside.get('judged', 0)} of {inside.get('hooked', 0)}" if inside.get("status") == "judged" else "-"
        lines.append(
            f"| {Path(file).stem} | {off_cold:.1f} | {on_cold:.1f} | {on_cold / off_cold:.2f} | {off_warm:.1f} "
            f"| {on_warm:.1f} | {on_warm / off_warm:.2f} | {stage:.2f} | {judged} "
            f"| {off['peak_rss_mb']:.0f} / {on['peak_rss_mb']:.0f} | {off['verdict']} -> {on['verdict']} |"
        )
    lines.append("")
    lines.append(
        "Wall seconds of `divergence check` (the CLI, a fresh worker each); cold: a fresh Inductor cache per variant, "
        "warm: the same check again on it. What the inside stage found:"
    )
    lines.append("")
    for file, *_, on in rows:
        inside = on.get("inside") or {}
        lines.append(f"- {Path(file).stem}: {inside.get('status')}: {inside.get('explanation', '')[:240]}")
    return "\n".join(lines)


def _torch_version() -> str:
    import torch

    return torch.__version__


if __name__ == "__main__":
    main()
