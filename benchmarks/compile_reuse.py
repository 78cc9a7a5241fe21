"""How much of a check's compile the checks after it reuse through Inductor's cache.

One program (default: the mid Llama in bf16 of benchmarks/memory_models/, whose check re-checks with
emulate_precision_casts), one fresh Inductor cache, four checks in one warm worker, in this order:

  A  the check, cold (its precision re-check compiles a second time);
  B  the same options again: what the minimizer now runs the original with (provenance on, as checked);
  D  fallback_random + emulate_precision_casts, no provenance, no re-check: what the minimizer checks every
     candidate with, and its first compile of the original with both switches;
  C  no provenance: what the minimizer ran the original with before.

It prints each check's seconds, its compile seconds (the `compiling` stage and any re-check), and, where the
engine reports compile phases, how many graphs came from the cache. Run it with `PYTHONPATH=<other checkout>`
for another engine's figures (docs/figures/check-cost.md has both).

    python benchmarks/compile_reuse.py [--program FILE]
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--program", type=Path, default=REPO / "benchmarks" / "memory_models" / "llama_mid_bf16.py")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="compile-reuse-") as scratch:
        os.environ["DIVERGENCE_HOME"] = str(Path(scratch) / "home")
        import engine as checked  # the checkout first on PYTHONPATH
        from engine import CheckOptions, Runner

        print(f"engine: {Path(checked.__file__).parent}; program: {args.program}")
        source = args.program.read_text()
        base = CheckOptions(device="cpu", timeout_s=1800)
        runs = [
            ("A check (cold)", base),
            ("B minimizer's original, now", base),
            (
                "D minimizer's candidates",
                base.replace(
                    provenance=False, recheck_precision_casts=False, recheck_random=False
                ).with_inductor_config(fallback_random=True, emulate_precision_casts=True),
            ),
            ("C minimizer's original, before", base.replace(provenance=False)),
        ]
        with Runner(cache_dir=Path(scratch) / "inductor") as runner:
            print(f"{'run':<32} {'verdict':<15} {'s':>6} {'compile s':>9}  cache")
            for label, options in runs:
                details: list[str] = []
                start = time.perf_counter()
                result = runner.check(
                    source,
                    options,
                    args.program.name,
                    on_progress=lambda p, seen=details: seen.append(getattr(p, "detail", "")),
                )
                seconds = time.perf_counter() - start
                compile_s = sum(v for k, v in result.stage_seconds.items() if k == "compiling" or "recheck" in k)
                phases = [d for i, d in enumerate(details) if d and (i == 0 or d != details[i - 1])]  # each phase once
                loads = sum(1 for d in phases if "from Inductor's cache" in d)
                lowered = sum(1 for d in phases if d.endswith(": lowering"))
                cache = (
                    f"{loads} graph(s) loaded, {lowered} lowered" if any(details) else "(no compile phases reported)"
                )
                print(f"{label:<32} {result.verdict.value:<15} {seconds:>6.1f} {compile_s:>9.1f}  {cache}", flush=True)


if __name__ == "__main__":
    main()
