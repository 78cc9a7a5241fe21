"""The `divergence` command line: the parser, and the check, show, export and serve commands."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from app.cli.arguments import config_pair
from engine import arrays as stored_arrays
from engine import records
from engine.options import BACKENDS, CAST_DTYPES, MODES, CheckOptions, OptionsError
from engine.result import CheckResult


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="divergence", description="Find where torch.compile changes a program's answer."
    )
    sub = parser.add_subparsers(dest="command", required=True)
    check = sub.add_parser("check", help="run a snippet eagerly and compiled and compare every element")
    check.add_argument(
        "file", type=Path, help="a snippet: fn+inputs, KernelBench Model+get_inputs, or a repro calling torch.compile"
    )
    _compile_arguments(check)
    _judge_arguments(check)
    _limit_arguments(check)
    _stored_run_parsers(sub)

    from app.cli.minimize import add_arguments as add_minimize_arguments  # light: imports no torch

    add_minimize_arguments(
        sub.add_parser(
            "minimize", help="shrink a divergent snippet to a small repro.py that reproduces in a fresh process"
        )
    )
    _shrinkray_parser(sub)

    from app.cli.localize import add_parsers as add_localize_parsers  # light: imports no torch

    add_localize_parsers(sub)

    from app.cli.sweep import add_arguments as add_sweep_arguments  # light: imports no torch

    add_sweep_arguments(
        sub.add_parser(
            "sweep", help="check a corpus of programs under a matrix of options, here or on a Ray cluster (resumable)"
        )
    )
    _serve_parser(sub)
    return parser


def _compile_arguments(check: argparse.ArgumentParser) -> None:
    """What is compiled, and how: the device, torch.compile's arguments, Inductor's config, the inputs."""
    check.add_argument("--device", choices=("cpu", "cuda"), help="default: cuda when available, else cpu")
    check.add_argument("--backend", choices=BACKENDS)
    check.add_argument("--mode", choices=MODES)
    check.add_argument("--dynamic", action=argparse.BooleanOptionalAction, default=None)
    check.add_argument("--fullgraph", action=argparse.BooleanOptionalAction, default=None)
    check.add_argument(
        "--config",
        type=config_pair,
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="Inductor config override (repeatable)",
    )
    check.add_argument("--fallback-random", action="store_true", help="shorthand for --config fallback_random=True")
    check.add_argument(
        "--emulate-precision-casts", action="store_true", help="shorthand for --config emulate_precision_casts=True"
    )
    check.add_argument("--dtype", choices=CAST_DTYPES, help="cast the model and floating inputs")
    check.add_argument("--backward", action="store_true", help="also compare gradients of inputs and parameters")
    check.add_argument("--seeds", type=int, default=1, help="re-run with N input seeds and report the worst")
    check.add_argument("--seed", type=int, default=0, help="first seed")


def _judge_arguments(check: argparse.ArgumentParser) -> None:
    """How the outputs are judged: exactness, the outputs that matter, the reference and its re-checks, the floor."""
    check.add_argument("--strict", action="store_true", help="bit-exact: any difference is divergent")
    check.add_argument(
        "--focus",
        action="append",
        default=[],
        metavar="LEAF",
        help="an output that matters (a leaf name or its prefix, e.g. out.logits); repeatable. It leads the report",
    )
    check.add_argument("--no-fp64", dest="fp64", action="store_false", help="skip the fp64 reference run")
    check.add_argument(
        "--no-precision-recheck",
        dest="recheck",
        action="store_false",
        help="do not re-check low-precision drift with emulate_precision_casts",
    )
    check.add_argument(
        "--no-rng-recheck",
        dest="recheck_random",
        action="store_false",
        help="do not re-check values of a program that draws random numbers with fallback_random",
    )
    check.add_argument(
        "--no-inside",
        dest="inside",
        action="store_false",
        help="do not judge the intermediates compiled code stores, only what the program returns",
    )
    check.add_argument(
        "--factor",
        type=float,
        default=CheckOptions.benign_factor,
        help="how much further from fp64 than eager compiled may be and stay benign (default %(default)s)",
    )
    check.add_argument(
        "--noise-ulps",
        type=float,
        default=CheckOptions.noise_ulps,
        help="...plus this many ULPs of the output's magnitude (default %(default)s)",
    )


def _limit_arguments(check: argparse.ArgumentParser) -> None:
    """What the check may spend, what else it compiles, and where its result goes."""
    check.add_argument(
        "--timeout", type=float, default=CheckOptions.timeout_s, help="wall-time limit in seconds (default %(default)s)"
    )
    check.add_argument(
        "--memory-mb", type=int, default=CheckOptions.memory_limit_mb, help="memory limit (default %(default)s)"
    )
    check.add_argument(
        "--triton-cpu",
        action="store_true",
        help=(
            "also compile with Inductor's Triton backend on CPU tensors (interpreted; shows the Triton kernels on any"
            " host)"
        ),
    )
    check.add_argument(
        "--json", type=Path, metavar="OUT", help="write the result as JSON (arrays beside it as OUT's stem + .npz)"
    )
    check.add_argument("--quiet", "-q", action="store_true", help="no progress lines")


def _stored_run_parsers(sub: Any) -> None:
    """The commands that read a stored run and run nothing: show, export."""
    show = sub.add_parser("show", help="print a stored run again, without running anything")
    show.add_argument("run_dir", type=Path)
    show.add_argument(
        "--code", action="store_true", help="also print, per generated kernel, the program lines it came from"
    )

    export = sub.add_parser(
        "export", help="gather what PyTorch's bug template asks for: tlparse report, environment, repro, issue.md"
    )
    export.add_argument("run_dir", type=Path)
    export.add_argument("-o", "--out", type=Path, help="output folder (default: RUN_DIR/export)")


def _shrinkray_parser(sub: Any) -> None:
    shrinkray = sub.add_parser(
        "install-shrinkray", help="install the minimizer's optional shrinkray polish into a Python 3.12 venv of its own"
    )
    shrinkray.add_argument(
        "--venv", type=Path, help="where (default: shrinkray-venv in the data folder, where the minimizer looks)"
    )
    shrinkray.add_argument(
        "--python", help="a Python >= 3.12 interpreter (default: python3.13/3.12 on PATH, else pyenv's)"
    )


def _serve_parser(sub: Any) -> None:
    serve = sub.add_parser("serve", help="start the web app (Streamlit), bound to 127.0.0.1 unless told otherwise")
    serve.add_argument("--address", help="interface to listen on (default: $STREAMLIT_SERVER_ADDRESS, else 127.0.0.1)")
    serve.add_argument("--port", type=int, help="port (default: $STREAMLIT_SERVER_PORT, else 8501)")
    serve.add_argument(
        "streamlit_args", nargs=argparse.REMAINDER, help="further `streamlit run` options, e.g. --theme.base dark"
    )


def options_from_args(args: argparse.Namespace) -> CheckOptions:
    config = dict(args.config)
    if args.fallback_random:
        config["fallback_random"] = True
    if args.emulate_precision_casts:
        config["emulate_precision_casts"] = True
    return CheckOptions(
        device=args.device,
        backend=args.backend,
        mode=args.mode,
        dynamic=args.dynamic,
        fullgraph=args.fullgraph,
        inductor_config=config,
        dtype=args.dtype,
        backward=args.backward,
        seeds=args.seeds,
        seed=args.seed,
        strict=args.strict,
        fp64_reference=args.fp64,
        recheck_precision_casts=args.recheck,
        recheck_random=args.recheck_random,
        inside=args.inside,
        benign_factor=args.factor,
        noise_ulps=args.noise_ulps,
        triton_cpu=args.triton_cpu,
        timeout_s=args.timeout,
        memory_limit_mb=args.memory_mb,
        focus=tuple(getattr(args, "focus", ()) or ()),
    )


def write_json(result: CheckResult, out: Path) -> None:
    data = records.to_json(result)
    target = out.with_suffix(".npz")
    keys = [leaf.arrays for leaf in result.leaves if leaf.arrays is not None]
    if result.run_dir and stored_arrays.export(Path(result.run_dir), keys, target):
        data["arrays_file"] = target.name
    out.write_text(json.dumps(data, indent=1))


def _check(args: argparse.Namespace) -> int:
    from app.cli.report import render
    from engine.api import check_file

    if not args.file.is_file():
        print(f"divergence: no such file: {args.file}", file=sys.stderr)
        return 2
    try:
        options = options_from_args(args)
    except OptionsError as exc:
        print(f"divergence: {exc}", file=sys.stderr)
        return 2
    last = [""]

    def progress(p: Any) -> None:
        # a stage, and what it is doing ("compiling: graph 1: lowering"); kernel by kernel counts once per phase
        shown = f"{p.stage}: {p.detail.split(' (')[0]}" if getattr(p, "detail", "") else p.stage
        if shown != last[0] and not args.quiet:
            last[0] = shown
            print(f"[{p.elapsed_s:6.1f}s] {shown}", file=sys.stderr, flush=True)

    result = check_file(args.file, options, on_progress=progress)
    print(render(result))
    if args.json:
        write_json(result, args.json)
    return result.exit_code


def serve_command(args: argparse.Namespace) -> list[str]:
    """The `streamlit run` command line for the app; Streamlit's own STREAMLIT_* settings still apply."""
    import os

    app_main = Path(__file__).resolve().parents[1] / "web" / "main.py"
    address = args.address or os.environ.get("STREAMLIT_SERVER_ADDRESS") or "127.0.0.1"
    command = [sys.executable, "-m", "streamlit", "run", str(app_main), "--server.address", address]
    if args.port is not None:
        command += ["--server.port", str(args.port)]
    if "STREAMLIT_SERVER_HEADLESS" not in os.environ:
        command += ["--server.headless", "true"]  # no browser to open on a server; the URL is printed instead
    if "STREAMLIT_BROWSER_GATHER_USAGE_STATS" not in os.environ:
        command += ["--browser.gatherUsageStats", "false"]
    if "STREAMLIT_CLIENT_TOOLBAR_MODE" not in os.environ:
        command += ["--client.toolbarMode", "minimal"]  # no "Deploy" button or developer menu for the app's users
    return command + [a for a in args.streamlit_args if a != "--"]


def _serve(args: argparse.Namespace) -> int:
    import importlib.util
    import os

    if importlib.util.find_spec("streamlit") is None:
        print("divergence: the web app needs streamlit and plotly: pip install -e .", file=sys.stderr)
        return 2
    command = serve_command(args)
    address = command[command.index("--server.address") + 1]
    port = args.port or os.environ.get("STREAMLIT_SERVER_PORT") or 8501
    host = f"[{address}]" if ":" in address else address
    print(f"Divergence Explorer: http://{host}:{port}", flush=True)
    if address in ("127.0.0.1", "localhost", "::1"):
        print(
            f"  bound to {address} only: other machines cannot reach it (--address 0.0.0.0 shares it; see"
            " docs/running.md on what is isolated)",
            flush=True,
        )
    else:
        print(
            f"  bound to {address}: reachable from other machines; anyone who reaches it can run code as this user",
            flush=True,
        )
    os.execv(command[0], command)  # Streamlit owns the process from here: signals reach it directly
    return 0  # not reached


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.command == "check":
        try:
            return _check(args)
        except KeyboardInterrupt:
            print("divergence: interrupted", file=sys.stderr)
            return 130
    if args.command in ("probe", "localize"):
        from app.cli.localize import run as run_localize

        return run_localize(args)
    if args.command == "serve":
        return _serve(args)
    if args.command == "sweep":
        from app.cli.sweep import run as run_sweep

        return run_sweep(args, list(argv) if argv is not None else None)
    if args.command == "minimize":
        from app.cli.minimize import run as run_minimize

        return run_minimize(args)
    if args.command == "install-shrinkray":
        from app.cli.minimize import install_shrinkray_command

        return install_shrinkray_command(args)
    if args.command == "export":
        from app.cli.export import export_run

        if not (args.run_dir / "result.json").exists():
            print(f"divergence: no stored run in {args.run_dir}", file=sys.stderr)
            return 2
        done = export_run(args.run_dir, args.out or args.run_dir / "export")
        print(f"issue body: {done.issue}")
        print(f"tlparse report: {done.tlparse_index or 'not available'}")
        for note in done.notes:
            print(f"note: {note}")
        return 0
    if args.command == "show":
        from app.cli.report import render, render_code

        try:
            result = CheckResult.load(args.run_dir)
        except FileNotFoundError:
            print(f"divergence: no stored run in {args.run_dir}", file=sys.stderr)
            return 2
        print(render(result))
        if args.code:
            snippet = args.run_dir / "snippet.py"
            print()
            print(render_code(result, snippet.read_text() if snippet.exists() else None))
        return 0
    return 2


if __name__ == "__main__":
    sys.exit(main())
