"""`divergence probe FILE` and `divergence localize FILE`: the deeper oracle from the command line."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from engine import records
from engine.options import BACKENDS, CAST_DTYPES, CheckOptions, OptionsError


def _common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("file", type=Path, help="a snippet (any of the three styles)")
    parser.add_argument("--device", choices=("cpu", "cuda"))
    parser.add_argument("--backend", choices=BACKENDS)
    parser.add_argument("--seed", type=int, default=0, help="first seed (stored with each result, so failures replay)")
    parser.add_argument("--dtype", choices=CAST_DTYPES, help="cast the model and floating inputs")
    parser.add_argument("--backward", action="store_true", help="also compare gradients of inputs and parameters")
    parser.add_argument("--strict", action="store_true")
    parser.add_argument("--timeout", type=float, default=CheckOptions.timeout_s)
    parser.add_argument(
        "--out", type=Path, help="directory for the runs and the report (default: under the data directory)"
    )
    parser.add_argument("--json", type=Path, metavar="OUT", help="also write the report as JSON")


def add_parsers(sub: Any) -> None:
    from engine.localization.localize import STEPS
    from engine.localization.probes import ProbeKind

    probe = sub.add_parser("probe", help="re-run a snippet with derived inputs and call patterns, one line per probe")
    _common(probe)
    probe.add_argument("--only", help=f"comma-separated probes (default all): {', '.join(k.value for k in ProbeKind)}")
    probe.add_argument("--seeds", type=int, default=3, help="seeds of the seeds probe (default %(default)s)")
    localize = sub.add_parser(
        "localize", help="where a divergence starts: ablation ladder, CompilerBisector, first diverging intermediate"
    )
    _common(localize)
    localize.add_argument("--only", help=f"comma-separated steps (default all): {', '.join(STEPS)}")


def run(args: argparse.Namespace) -> int:
    if not args.file.is_file():
        print(f"divergence: no such file: {args.file}", file=sys.stderr)
        return 2
    try:
        options = CheckOptions(
            device=args.device,
            backend=args.backend,
            seed=args.seed,
            strict=args.strict,
            timeout_s=args.timeout,
            dtype=args.dtype,
            backward=args.backward,
        )
    except OptionsError as exc:
        print(f"divergence: {exc}", file=sys.stderr)
        return 2
    only = [s.strip() for s in args.only.split(",")] if args.only else None
    if args.command == "probe":
        from engine.localization.probes import ProbeStatus, probe_file, render

        try:
            report = probe_file(
                args.file,
                options,
                kinds=only,
                directory=args.out,
                seeds=args.seeds,
                on_outcome=lambda o: print(f"  {o.kind.value}: {o.status.value}", file=sys.stderr, flush=True),
            )
        except ValueError as exc:
            print(f"divergence: {exc}", file=sys.stderr)
            return 2
        print(render(report))
        if args.json:
            records.save(report, args.json)
        return 1 if report.diverging else 2 if any(o.status is ProbeStatus.ERROR for o in report.outcomes) else 0
    from engine.localization.localize import localize_file
    from engine.localization.localize import render as render_localization

    try:
        loc = localize_file(
            args.file,
            options,
            directory=args.out,
            steps=only or ("ablation", "bisect", "intermediates"),
            on_step=lambda s: print(f"  {s}...", file=sys.stderr, flush=True),
        )
    except ValueError as exc:
        print(f"divergence: {exc}", file=sys.stderr)
        return 2
    print(render_localization(loc))
    if args.json:
        records.save(loc, args.json)
    return 0
