"""What a check of a real model holds in memory: peak RSS against the model's weights, and where the time went.

For each program of benchmarks/memory_models/ (transformers configs, random weights: BERT-base, GPT-2 small, a
mid Llama in bf16, and a 1.1B Llama in bf16, which takes some 5 GB and 4 minutes on 2 cores): `divergence
check FILE --json` in a fresh process with a fresh Inductor cache (cold, as a user's first check), and it
prints the verdict, the wall seconds, the stages that dominate, the check's peak RSS (`peak_rss_mb`, the
forked child's own), the same less a trivial check's (the worker: torch, transformers, a compiler) as a
multiple of the weights W, the largest virtual size the check's processes reached (what `--memory-mb`,
an address-space limit on CPU, must allow), each stage's seconds and the verdict's explanation.

    python benchmarks/check_memory.py [NAME ...] [--tree DIR] [--memory-mb M] [--timeout S]

`--tree DIR` checks with another checkout's engine (a `git archive` of an older commit): the before/after
figures in docs/figures/check-cost.md ("Memory") come from this script run on both. Run one program at a time on a
quiet machine, with nothing else big running.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from engine.runner import descendants  # noqa: E402  (the CLI's process, the worker, the check's child, its compilers)

MODELS = REPO / "benchmarks" / "memory_models"
DEFAULT = ["bert_base", "gpt2_124m", "llama_mid_bf16"]  # llama_1b_bf16 only when named
WEIGHTS_MIB = {"bert_base": 417.6, "gpt2_124m": 474.7, "llama_mid_bf16": 297.0, "llama_1b_bf16": 2098.2}
TRIVIAL = "import torch\nimport transformers\ndef fn(x):\n    return x + 1\ninputs = (torch.ones(4),)\n"


def _vm_peak_mb(pids: set[int]) -> float:
    peak = 0.0
    for p in pids:
        try:
            with open(f"/proc/{p}/status") as f:
                for line in f:
                    if line.startswith("VmPeak:"):
                        peak = max(peak, int(line.split()[1]) / 1024)
        except OSError:
            continue
    return peak


def check(tree: Path, program: Path, cache: Path, home: Path, extra: list[str]) -> tuple[dict, float, float]:
    """One `divergence check` in a fresh process: its result, wall seconds, and the largest virtual size seen."""
    out = home / f"{program.stem}.json"
    env = {**os.environ, "PYTHONPATH": str(tree), "DIVERGENCE_HOME": str(home), "TORCHINDUCTOR_CACHE_DIR": str(cache)}
    command = [sys.executable, "-m", "app.cli.main", "check", str(program), "--json", str(out), "-q", *extra]
    start = time.perf_counter()
    proc = subprocess.Popen(command, env=env, cwd=tree, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    vm = [0.0]

    def watch() -> None:
        while proc.poll() is None:
            vm[0] = max(vm[0], _vm_peak_mb(descendants(proc.pid)))
            time.sleep(0.5)

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    output, _ = proc.communicate()
    elapsed = time.perf_counter() - start
    watcher.join()
    if not out.exists():
        raise SystemExit(f"{program.name}: no result ({proc.returncode}):\n{output.decode()[-3000:]}")
    return json.loads(out.read_text()), elapsed, vm[0]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*", default=DEFAULT)
    parser.add_argument("--tree", type=Path, default=REPO, help="the checkout whose engine checks (default: this one)")
    parser.add_argument("--memory-mb", type=int, default=None)
    parser.add_argument("--timeout", type=int, default=1800)
    args = parser.parse_args()
    extra = ["--timeout", str(args.timeout)] + (["--memory-mb", str(args.memory_mb)] if args.memory_mb else [])
    with tempfile.TemporaryDirectory(prefix="check-memory-") as scratch:
        root = Path(scratch)
        trivial = root / "trivial.py"
        trivial.write_text(TRIVIAL)
        base, _, _ = check(args.tree.resolve(), trivial, root / "cache-trivial", root / "home-trivial", extra)
        base_mb = base["peak_rss_mb"]
        print(
            f"engine: {args.tree.resolve()}; a trivial check (torch and transformers imported) peaks at"
            f" {base_mb:,.0f} MiB"
        )
        print(
            f"{'program':<16} {'W MiB':>7} {'verdict':<15} {'s':>6} {'compiling':>9} {'fp64':>6} {'peak MiB':>9}"
            f" {'peak/W':>7} {'(peak-base)/W':>13} {'VmPeak MiB':>10}"
        )
        for name in args.names:
            program = MODELS / f"{name}.py"
            result, seconds, vm = check(
                args.tree.resolve(), program, root / f"cache-{name}", root / f"home-{name}", extra
            )
            weights = WEIGHTS_MIB.get(name, float("nan"))
            stages = result.get("stage_seconds", {})
            compiling = sum(v for k, v in stages.items() if "compil" in k or "recheck" in k)
            fp64 = sum(v for k, v in stages.items() if "reference" in k)
            peak = result.get("peak_rss_mb") or float("nan")
            verdict = result["verdict"] if result["verdict"] != "error" else f"error ({result['error']['kind']})"
            print(
                f"{name:<16} {weights:>7,.0f} {verdict:<15} {seconds:>6.0f} {compiling:>9.0f} {fp64:>6.1f}"
                f" {peak:>9,.0f} {peak / weights:>7.1f} {(peak - base_mb) / weights:>13.1f} {vm:>10,.0f}",
                flush=True,
            )
            print(f"    stages: {', '.join(f'{k} {v:.1f}' for k, v in stages.items() if v >= 0.05)}")
            print(f"    {result['explanation'][:300]}", flush=True)


if __name__ == "__main__":
    main()
