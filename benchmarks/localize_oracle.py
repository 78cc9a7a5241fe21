"""Does the first diverging intermediate name the bug's own op? Over the real bugs of sample_cases/ and
benchmarks/minimize_corpus/, each with the op its bug lives in (BUG_OPS below; the corpus' own `first_op`).

Run it against any checkout (PYTHONPATH picks the engine) to compare the localization's oracle before and after
a change; it prints, per program, the op expected, the op found and whether they agree, then the count.
    python benchmarks/localize_oracle.py [--only name,name]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import tomllib

ROOT = Path(__file__).resolve().parent.parent

# The op where each real-bug sample case's bug lives ("" where the bug is no node's value: a mutation epilogue or
# a graph rewrite, where the step should find no single diverging node); read from each case's explanation.
BUG_OPS = {
    "acosh_large_overflow": "aten.acosh.default",
    "copy_then_mutate_source": "",
    "dtype_view_then_mutate": "",
    "elu_subnormal_div_zero": "aten.expm1.default",  # elu decomposes to expm1, which Inductor computes as exp(x) - 1
    "erf_small_vectorized": "aten.erf.default",
    "erfinv_near_one": "aten.erfinv.default",
    "floor_divide_off_by_one": "aten.div.Tensor_mode",
    "fmod_remainder_scalar_bf16": "aten.fmod.Scalar",
    "forecaster_remainder_bf16": "aten.remainder.Scalar",
    "ldexp_dtype_promotion": "aten.ldexp.Tensor",
    "neg_zero_add_reciprocal": "aten.add.Tensor",  # the add of zeros Inductor drops
    "sdpa_permuted_key": "",
    "var_float32_accumulation": "aten.var_mean.correction[0]",
}


def programs(only: set[str] | None) -> list[tuple[str, str, str, Path]]:
    """(name, expected op, source, path) of every real bug with a forward-only check."""
    out = []
    for name, op in BUG_OPS.items():
        path = ROOT / "sample_cases" / f"{name}.py"
        out.append((name, op, path.read_text(), path))
    corpus = tomllib.loads((ROOT / "benchmarks" / "minimize_corpus" / "corpus.toml").read_text())
    for name, meta in corpus.items():
        path = ROOT / "benchmarks" / "minimize_corpus" / f"{name}.py"
        out.append((f"corpus/{name}", str(meta["first_op"]), path.read_text(), path))
    return [p for p in out if only is None or p[0].split("/")[-1] in only]


def main(argv: list[str] | None = None) -> int:
    sys.path.insert(0, str(ROOT))
    from engine.localization.intermediates import first_diverging_intermediate
    from engine.options import CheckOptions
    from engine.runner import Runner

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--only", help="comma-separated names")
    args = parser.parse_args(argv)
    only = set(args.only.split(",")) if args.only else None
    runner = Runner()
    agree = total = 0
    try:
        for name, expected, source, path in programs(only):
            started = time.time()
            report = first_diverging_intermediate(runner, source, CheckOptions(device="cpu", timeout_s=300), str(path))
            found = report.first.op if report.first is not None else ""
            ok = found == expected if expected else report.status == "none-diverges"
            agree += ok
            total += 1
            shown = found or report.status
            print(
                f"{name:44} expected {expected or '(no node)':32} found {shown:34} {'yes' if ok else 'NO'} "
                f" {time.time() - started:5.1f} s",
                flush=True,
            )
            if not ok and report.first is not None:
                print(f"    {report.first.explanation[:300]}")
    finally:
        runner.close()
    print(f"\nfirst diverging node is the bug's own op: {agree} of {total}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
