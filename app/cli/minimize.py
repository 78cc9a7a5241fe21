"""`divergence minimize FILE -o repro.py` and `divergence install-shrinkray`: the minimizer from the command line."""

from __future__ import annotations

import argparse
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from app.cli.arguments import config_pair
from engine.options import BACKENDS, CAST_DTYPES, CheckOptions, OptionsError

if TYPE_CHECKING:  # the minimizer (and torch) are imported when a minimization runs, not to parse arguments
    from minimizer.minimize import MinimizeResult
    from minimizer.reducer import ReduceProgress


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("file", type=Path, help="a divergent snippet (any style the checker accepts)")
    parser.add_argument(
        "-o",
        "--output",
        type=Path,
        default=Path("repro.py"),
        help=(
            "where to write the standalone repro (default %(default)s); the minimized program alone goes beside it as"
            " <name>.snippet.py"
        ),
    )
    parser.add_argument(
        "--report",
        type=Path,
        help="also write a PyTorch PT2 issue body (markdown, one screen) with an ablation over backends",
    )
    parser.add_argument("--budget", type=float, help="stop reducing after this many seconds and keep the best so far")
    parser.add_argument(
        "--checkpoint-dir",
        type=Path,
        default=Path(".divergence-minimize"),
        help="where the best candidate is checkpointed; a re-run resumes from it (default %(default)s)",
    )
    parser.add_argument("--no-shrinkray", dest="shrinkray", action="store_false", help="skip the shrinkray polish")
    parser.add_argument("--no-graph", dest="graph", action="store_false", help="skip the Dynamo-graph rewrite")
    parser.add_argument("--device", choices=("cpu", "cuda"))
    parser.add_argument("--backend", choices=BACKENDS)
    parser.add_argument("--config", type=config_pair, action="append", default=[], metavar="KEY=VALUE")
    parser.add_argument("--dtype", choices=CAST_DTYPES)
    parser.add_argument("--strict", action="store_true")
    parser.add_argument(
        "--timeout", type=float, default=120.0, help="per-candidate wall-time limit (default %(default)s)"
    )
    parser.add_argument("--quiet", "-q", action="store_true")


def run(args: argparse.Namespace) -> int:
    """Exit 0 with a verified repro written, 1 when the result could not be verified, 2 on errors."""
    from engine import Runner
    from minimizer.interestingness import NotReproducible
    from minimizer.minimize import minimize

    if not args.file.is_file():
        print(f"divergence: no such file: {args.file}", file=sys.stderr)
        return 2
    try:
        options = CheckOptions(
            device=args.device,
            backend=args.backend,
            inductor_config=dict(args.config),
            dtype=args.dtype,
            strict=args.strict,
            timeout_s=args.timeout,
        )
    except OptionsError as exc:
        print(f"divergence: {exc}", file=sys.stderr)
        return 2
    progress, note = _reporters(quiet=args.quiet)
    with tempfile.TemporaryDirectory(prefix="minimize-") as tmp, Runner() as runner:
        try:
            result = minimize(
                args.file.read_text(),
                options,
                runner,
                Path(tmp),
                budget_s=args.budget,
                checkpoint_root=args.checkpoint_dir,
                use_graph=args.graph,
                use_shrinkray=args.shrinkray,
                ablation=args.report is not None,
                filename=args.file.name,
                on_progress=progress,
                on_note=note,
            )
        except NotReproducible as exc:
            print(f"\ndivergence: {exc}", file=sys.stderr)
            return 2
        except KeyboardInterrupt:
            print(
                f"\ndivergence: interrupted; the best candidate so far is checkpointed under {args.checkpoint_dir}",
                file=sys.stderr,
            )
            return 130
    print(file=sys.stderr)
    _write(result, args)
    return 0 if result.repro_verified and result.confirmed else 1


def _reporters(*, quiet: bool) -> tuple[Callable[[ReduceProgress], None], Callable[[str], None]]:
    """The progress line (rewritten in place on stderr) and the notes (one line each) of a minimization."""

    def progress(p: ReduceProgress) -> None:
        if not quiet:
            print(
                f"\r[{p.elapsed_s:6.1f}s] {p.pass_name:<24} tried {p.candidates_tried:4d}  oracle calls"
                f" {p.oracle_calls:4d}  size {p.current_tokens:4d} tokens, best {p.best_tokens:4d} of"
                f" {p.initial_tokens}",
                end="",
                file=sys.stderr,
                flush=True,
            )

    def note(text: str) -> None:
        if not quiet:
            print(f"\n{text}", file=sys.stderr, flush=True)

    return progress, note


def _write(result: MinimizeResult, args: argparse.Namespace) -> None:
    """The repro, the minimized program beside it and, when asked, the issue body; a line for each."""
    s0, s1 = result.initial, result.final
    print(
        f"{s0.lines} -> {s1.lines} lines, {s0.tokens} -> {s1.tokens} tokens, {s0.torch_ops} -> {s1.torch_ops} torch"
        f" ops; {result.oracle_calls} oracle calls in {result.elapsed_s:.0f} s"
    )
    if result.stats.passes:  # what each pass cost and won: the one to reorder or drop costs calls for no shrink
        print(result.stats.passes_table(), file=sys.stderr)
    if result.repro is not None:
        args.output.write_text(result.repro)
        print(
            f"repro written to {args.output}"
            f" ({'verified: it exits 1 in a fresh process' if result.repro_verified else 'NOT verified'})"
        )
    snippet = snippet_path(args.output)
    snippet.write_text(result.minimized)
    print(
        f"minimized program written to {snippet} ({result.final.lines} lines; `divergence check {snippet}` checks it)"
    )
    if args.report is not None and result.report is not None:
        args.report.write_text(result.report)
        print(f"bug report written to {args.report}; its title: {result.title}")


def snippet_path(repro: Path) -> Path:
    """`repro.py` -> `repro.snippet.py`: the minimized program alone, beside its self-checking repro."""
    return repro.with_name(f"{repro.stem}.snippet{repro.suffix or '.py'}")


def install_shrinkray_command(args: argparse.Namespace) -> int:
    """`divergence install-shrinkray`: the optional polish's own Python 3.12 venv, where find_shrinkray looks."""
    from minimizer.shrinkray import PINNED, InstallError, default_venv, install_shrinkray

    venv = args.venv or default_venv()
    print(f"installing {PINNED} into {venv} (a Python >= 3.12 venv of its own) ...", file=sys.stderr, flush=True)
    try:
        executable = install_shrinkray(venv, args.python)
    except InstallError as exc:
        print(f"divergence: {exc}", file=sys.stderr)
        return 2
    print(f"shrinkray ready: {executable}")
    if args.venv is not None:
        print(f"outside the default place: export DIVERGENCE_SHRINKRAY={executable}")
    return 0
