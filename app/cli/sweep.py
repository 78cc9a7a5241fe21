"""`divergence sweep PATH...`: check a corpus under a matrix of options, here or on a Ray cluster."""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path
from typing import Any

from app.cli.arguments import config_pair
from engine.options import BACKENDS, CAST_DTYPES, MODES

_RAY_ADDRESS = re.compile(r"^(auto|local|ray://.+|[\w.\-]+:\d+)$")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    _corpus_arguments(parser)
    _minimize_arguments(parser)
    _option_arguments(parser)


def _corpus_arguments(parser: argparse.ArgumentParser) -> None:
    """What is checked, under which matrix, where it runs and where its state is kept."""
    parser.add_argument(
        "paths",
        nargs="*",
        metavar="PATH",
        help=(
            "programs: files, directories (searched recursively), globs, or zoo sources:"
            " hf:[small|base][+cache][:ARCH,...] (transformers architectures from their configs),"
            " opinfo:[bf16|fp16|fp32][+ref|+noncontig][:OP,...] (every sample of op_db),"
            " modules:[eval|train][:MODULE,...] (module_db),"
            " chain:[fp32|bf16|fp16][:SEEDS] (op_db ops chained on compatible samples);"
            " an unknown name lists the known ones"
        ),
    )
    parser.add_argument(
        "--matrix",
        action="append",
        default=[],
        metavar="KEY=V1,V2",
        help=(
            "an axis of options (repeatable; every combination is a job): device, backend, mode, dynamic, fullgraph,"
            " dtype, strict, backward, seeds, derive (special, noncontiguous, channels_last, ...), configs (presets:"
            " freezing, cpp_wrapper, max_autotune, no_simd, ...), fallback_random, emulate_precision_casts or"
            " config.NAME; `none` leaves one unset"
        ),
    )
    parser.add_argument(
        "-j",
        "--jobs",
        type=int,
        metavar="N",
        help=(
            "checks at once on this machine, or Ray actors (default: the cores; with --ray, the cluster's GPUs or CPUs)"
        ),
    )
    parser.add_argument(
        "--ray",
        nargs="?",
        const="local",
        metavar="ADDRESS",
        help="run on Ray: a local instance, or the cluster at ADDRESS (e.g. auto, 10.0.0.1:6379, ray://head:10001)",
    )
    parser.add_argument(
        "-o",
        "--output",
        type=Path,
        metavar="SWEEP_DIR",
        help="the sweep's directory (default: one per command under the data folder's sweeps/)",
    )
    parser.add_argument(
        "--report",
        nargs="?",
        const=True,
        metavar="FILE.html",
        help="also write a self-contained HTML summary (default SWEEP_DIR/report.html)",
    )


def _minimize_arguments(parser: argparse.ArgumentParser) -> None:
    """What the sweep does with the bugs it finds."""
    parser.add_argument(
        "--minimize", action="store_true", help="group divergent jobs by bug and minimize each new bug once"
    )
    parser.add_argument(
        "--minimize-budget", type=float, metavar="S", help="seconds of reduction per bug before the best so far is kept"
    )
    parser.add_argument(
        "--minimize-max",
        type=int,
        metavar="N",
        help="minimize at most N new bugs in this run, those most jobs show first (the rest wait for the next run)",
    )
    parser.add_argument(
        "--no-shrinkray", dest="shrinkray", action="store_false", help="minimize without the shrinkray polish"
    )
    parser.add_argument(
        "--no-ablation",
        dest="ablation",
        action="store_false",
        help="leave the ablation over backends out of each bug's issue.md (faster)",
    )
    parser.add_argument(
        "--retry-errors", action="store_true", help="run again the finished jobs that ended in an error"
    )


def _option_arguments(parser: argparse.ArgumentParser) -> None:
    """The check's options, for every job (a program's .toml and the matrix override them)."""
    parser.add_argument("--device", choices=("cpu", "cuda"))
    parser.add_argument("--backend", choices=BACKENDS)
    parser.add_argument("--mode", choices=MODES)
    parser.add_argument("--dtype", choices=CAST_DTYPES)
    parser.add_argument(
        "--config",
        type=config_pair,
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="Inductor config override for every job",
    )
    parser.add_argument("--seeds", type=int, help="input seeds per job (the worst is reported)")
    parser.add_argument("--seed", type=int)
    parser.add_argument("--strict", action="store_true", default=None)
    parser.add_argument("--backward", action="store_true", default=None)
    parser.add_argument("--timeout", type=float, help="per job, in seconds (default 300)")
    parser.add_argument("--memory-mb", type=int, help="per job (default 8192)")
    parser.add_argument("--quiet", "-q", action="store_true", help="no progress lines")


def base_options(args: argparse.Namespace) -> dict[str, Any]:
    """Only the options given outright: the rest come from each program's .toml, then the defaults."""
    given = {
        "device": args.device,
        "backend": args.backend,
        "mode": args.mode,
        "dtype": args.dtype,
        "seeds": args.seeds,
        "seed": args.seed,
        "strict": args.strict,
        "backward": args.backward,
        "timeout_s": args.timeout,
        "memory_limit_mb": args.memory_mb,
    }
    options = {k: v for k, v in given.items() if v is not None}
    if args.config:
        options["inductor_config"] = dict(args.config)
    return options


def untangle(args: argparse.Namespace) -> None:
    """`--ray PATH` and `--report PATH` took a program path for their optional value: give it back."""
    if args.ray not in (None, "local") and not _RAY_ADDRESS.match(args.ray) and Path(args.ray).exists():
        args.paths.insert(0, args.ray)
        args.ray = "local"
    if isinstance(args.report, str) and not args.report.endswith((".html", ".htm")) and Path(args.report).exists():
        args.paths.insert(0, args.report)
        args.report = True


def run(args: argparse.Namespace, argv: list[str] | None = None) -> int:
    from app.sweep.corpus import CorpusError
    from app.sweep.matrix import MatrixError, parse_axis
    from app.sweep.orchestrator import SweepConfig, print_summary, run_sweep
    from app.sweep.progress import SweepProgress
    from app.sweep.ray_pool import RayUnavailable
    from app.sweep.report import REPORT_FILE
    from app.sweep.state import SweepBusy
    from engine.options import OptionsError

    untangle(args)
    if not args.paths:
        print("divergence sweep: give at least one PATH (a program, a directory or a glob)", file=sys.stderr)
        return 2
    if args.jobs is not None and args.jobs < 1:
        print("divergence sweep: -j needs at least 1", file=sys.stderr)
        return 2
    try:
        axes = tuple(parse_axis(a) for a in args.matrix)
        config = SweepConfig(
            paths=tuple(args.paths),
            axes=axes,
            base_options=base_options(args),
            sweep_dir=args.output,
            slots=args.jobs,
            ray=args.ray,
            minimize=args.minimize,
            minimize_budget_s=args.minimize_budget,
            minimize_max=args.minimize_max,
            shrinkray=args.shrinkray,
            ablation=args.ablation,
            retry_errors=args.retry_errors,
            report=None,
            command=("divergence", *(argv if argv is not None else sys.argv[1:])),
        )
        if args.report is not None:
            from app.sweep.orchestrator import default_sweep_dir

            target = (
                Path(args.report)
                if isinstance(args.report, str)
                else (args.output or default_sweep_dir(config)) / REPORT_FILE
            )
            config = SweepConfig(**{**config.__dict__, "report": target})
        summary = run_sweep(config, SweepProgress(quiet=args.quiet))
    except (CorpusError, MatrixError, OptionsError, SweepBusy, RayUnavailable) as exc:
        print(f"divergence sweep: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(
            "\ndivergence sweep: interrupted; every finished job is kept, and the same command resumes", file=sys.stderr
        )
        return 130
    print_summary(summary)
    return summary.exit_code
