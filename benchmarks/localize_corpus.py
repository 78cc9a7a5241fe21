"""Does Localize's one conclusion name the bug's own op and line? Over realistic programs around real upstream bugs.

    python benchmarks/localize_corpus.py                 # check + localize every program (resumable), then score
    python benchmarks/localize_corpus.py --only delay_line,probit_flow
    python benchmarks/localize_corpus.py --rescore       # no runs: the conclusion again from the stored steps
    python benchmarks/localize_corpus.py --part fresh    # the part written after the rules last changed
    python benchmarks/localize_corpus.py --part fresh2   # mutation/view bugs, written before the session-3 changes

Each program of benchmarks/localize_corpus/ (listed with its upstream issue, the op names that are the bug's own
and a piece of its line in corpus.toml) is checked, then localized with all three steps; the stored steps are kept
under --out, so a second run resumes and `--rescore` re-derives the conclusion from them with today's
engine/localization/conclusion.py. A program scores when the conclusion's first op, or its line's text, names one of
the bug's ops, and separately when that line is the bug's line. Figures are printed, with the held-out part (bug
families not among the gallery's cases, on which the conclusion was written) apart.
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import tomllib

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from engine import CheckOptions, CheckResult, Localization, Verdict, default_runner, run_localization  # noqa: E402
from engine.localization.conclusion import Conclusion, conclude  # noqa: E402
from engine.localization.sites import base_name  # noqa: E402

CORPUS = ROOT / "benchmarks" / "localize_corpus"
PARTS = {
    "main": (CORPUS, CORPUS / "corpus.toml"),
    "fresh": (CORPUS / "fresh", CORPUS / "fresh.toml"),
    # mutation and view bugs new to the corpus, committed before the changes they evaluate (session 3)
    "fresh2": (CORPUS / "fresh2", CORPUS / "fresh2.toml"),
}


@dataclass(frozen=True)
class Entry:
    directory: Path
    name: str
    upstream: int
    ops: tuple[str, ...]
    line: int | None
    held_out: bool
    options: dict[str, object]

    @property
    def source(self) -> str:
        return (self.directory / f"{self.name}.py").read_text()


@dataclass(frozen=True)
class Score:
    entry: Entry
    verdict: str
    conclusion: Conclusion | None
    seconds: float

    @property
    def op_named(self) -> bool:
        c = self.conclusion
        if c is None or c.site is None:
            return False
        said = {base_name(c.site.op)} | {w.strip("_") for w in _words(c.site.code)}
        return any(base_name(op) in said or op.strip("_") in said for op in self.entry.ops)

    @property
    def line_right(self) -> bool:
        c = self.conclusion
        return c is not None and c.site is not None and self.entry.line is not None and c.site.line == self.entry.line


def _words(code: str) -> set[str]:
    import re

    return set(re.findall(r"[A-Za-z_]\w*", code)) | ({"floordiv"} if "//" in code else set())


def load_corpus(part: str = "main") -> list[Entry]:
    directory, listing = PARTS[part]
    table = tomllib.loads(listing.read_text())
    entries = []
    for name, spec in table.items():
        source = (directory / f"{name}.py").read_text().splitlines()
        line = next((i for i, text in enumerate(source, 1) if spec["line"] in text), None)
        entries.append(
            Entry(
                directory,
                name,
                int(spec["upstream"]),
                tuple(spec["ops"]),
                line,
                bool(spec["held_out"]),
                dict(spec.get("options", {})),
            )
        )
    return entries


def run_one(entry: Entry, out: Path, rescore: bool, timeout: float) -> Score:
    directory = out / entry.name
    check_dir, loc_dir = directory / "check", directory / "localize"
    options = CheckOptions(timeout_s=timeout, **entry.options)  # type: ignore[arg-type]
    started = time.monotonic()
    if (check_dir / "result.json").exists():
        check = CheckResult.load(check_dir)
    elif rescore:
        return Score(entry, "not run", None, 0.0)
    else:
        print(f"  {entry.name}: checking ...", file=sys.stderr, flush=True)
        check = default_runner().check(entry.source, options, f"{entry.name}.py", check_dir)
    if check.verdict is not Verdict.DIVERGENT:
        return Score(entry, check.verdict.value, None, time.monotonic() - started)
    if (loc_dir / "localization.json").exists():
        loc = Localization.load(loc_dir)
    elif rescore:
        return Score(entry, check.verdict.value, None, 0.0)
    else:
        print(f"  {entry.name}: localizing ...", file=sys.stderr, flush=True)
        loc = run_localization(
            default_runner(), entry.source, options, f"{entry.name}.py", loc_dir, check=check,
            on_step=lambda s: print(f"    {s}", file=sys.stderr, flush=True),
        )  # fmt: skip
    conclusion = conclude(loc, check, entry.source) if rescore or loc.conclusion is None else loc.conclusion
    return Score(entry, check.verdict.value, conclusion, time.monotonic() - started)


def report(scores: list[Score]) -> None:
    print(
        f"{'program':<26} {'issue':>6} {'held':>4} {'verdict':<10} {'stage':<15} {'first op (line)':<40} "
        f"{'want':>4} op line"
    )
    for s in scores:
        c = s.conclusion
        site = f"{c.site.op} ({c.site.line})" if c and c.site else "-"
        print(
            f"{s.entry.name:<26} {s.entry.upstream:>6} {'yes' if s.entry.held_out else 'no':>4} {s.verdict:<10} "
            f"{c.stage.value if c else '-':<15} {site[:40]:<40} {s.entry.line or '-':>4} "
            f"{'yes' if s.op_named else 'NO':>3} {'yes' if s.line_right else 'NO':>4}"
        )
    for label, part in (("all", scores), ("held out", [s for s in scores if s.entry.held_out])):
        n = len(part)
        if n:
            op = sum(s.op_named for s in part)
            line = sum(s.line_right for s in part)
            print(f"{label}: op named {op}/{n} ({100 * op / n:.0f}%), line right {line}/{n} ({100 * line / n:.0f}%)")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument(
        "--out", type=Path, default=None, help="where the runs are kept (default: under the data directory)"
    )
    parser.add_argument("--only", help="comma-separated program names")
    parser.add_argument("--rescore", action="store_true", help="run nothing: conclude again from the stored steps")
    parser.add_argument("--timeout", type=float, default=600.0)
    parser.add_argument("--part", choices=sorted(PARTS), default="main", help="which part of the corpus")
    args = parser.parse_args(argv)
    from engine.paths import home

    out = args.out or home() / ("localize-corpus" if args.part == "main" else f"localize-corpus-{args.part}")
    entries = load_corpus(args.part)
    if args.only:
        wanted = set(args.only.split(","))
        unknown = wanted - {e.name for e in entries}
        if unknown:
            parser.error(f"unknown program(s): {', '.join(sorted(unknown))}")
        entries = [e for e in entries if e.name in wanted]
    scores = [run_one(e, out, args.rescore, args.timeout) for e in entries]
    report(scores)
    return 0


if __name__ == "__main__":
    sys.exit(main())
