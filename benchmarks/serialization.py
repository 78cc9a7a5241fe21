"""Which library serializes our records: write and read time on real stored results, and what each one does with
what stored runs hold (non-finite floats, files of another version).

    python benchmarks/serialization.py [RESULT.json ...] [--write-docs]   # default: the stored-runs fixture's results

Libraries not installed are skipped (msgspec and cattrs are not dependencies: `pip install --target DIR msgspec
cattrs` and put DIR on PYTHONPATH to compare). The figures and the choice are in docs/figures/serialization.md.
"""

from __future__ import annotations

import dataclasses
import json
import math
import statistics
import sys
import time
import typing
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from engine import records  # noqa: E402
from engine.result import CheckResult  # noqa: E402

FIXTURE = REPO / "tests" / "fixtures" / "stored_2026_12_06" / "runs"
Codec = tuple[Callable[[Any], Any], Callable[[Any], Any]]  # (write, read)


def _record_classes() -> set[type]:
    """Every dataclass a CheckResult holds (what a library needs to know of)."""
    seen: set[type] = set()
    todo: list[Any] = [CheckResult]
    while todo:
        kind = todo.pop()
        if kind in seen or not dataclasses.is_dataclass(kind):
            continue
        seen.add(kind)
        for hint in typing.get_type_hints(kind).values():
            stack = [hint]
            while stack:
                t = stack.pop()
                stack.extend(typing.get_args(t))
                todo.append(t)
    return seen


def codecs() -> dict[str, Codec]:
    found: dict[str, Codec] = {
        "pydantic (engine.records)": (records.dumps, lambda s: records.from_json(CheckResult, s))
    }
    if hasattr(CheckResult, "from_json"):  # the hand-written code, while it exists
        found["hand-written"] = (
            lambda r: json.dumps(r.to_json()),
            lambda s: CheckResult.from_json(json.loads(s)),  # type: ignore[attr-defined]
        )
    try:
        import msgspec

        encoder = msgspec.json.Encoder()
        found[f"msgspec {msgspec.__version__}"] = (
            encoder.encode,
            lambda s: msgspec.json.decode(s, type=CheckResult, strict=False),
        )
    except ImportError:
        print("(msgspec not installed: skipped)")
    try:
        from importlib.metadata import version

        from cattrs.preconf.json import make_converter

        converter = make_converter()
        converter.register_unstructure_hook(float, lambda x: x if math.isfinite(x) else repr(x))
        converter.register_structure_hook(float, lambda v, _: float(v))
        found[f"cattrs {version('cattrs')}"] = (converter.dumps, lambda s: converter.loads(s, CheckResult))
    except ImportError:
        print("(cattrs not installed: skipped)")
    return found


def _median_ms(fn: Callable[[], Any], repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1e3


def _outcome(fn: Callable[[], bool]) -> str:
    try:
        return "yes" if fn() else "NO"
    except Exception as exc:
        return f"fails ({type(exc).__name__})"


def _non_finite(result: CheckResult) -> CheckResult:
    """The result with a leaf whose figures are inf, NaN and -inf (as where one side computes NaN)."""
    leaf = dataclasses.replace(result.leaves[0], max_abs=math.inf, max_rel=math.nan, eager_ref_rms=-math.inf)
    return dataclasses.replace(result, leaves=(leaf, *result.leaves[1:]))


def table(path: Path, found: dict[str, Codec]) -> str:
    text = path.read_text()
    original = records.from_json(CheckResult, text)
    same = records.to_json  # compared by today's JSON of the record: NaN-safe
    special = _non_finite(original)
    repeats = 20 if len(text) < 500_000 else 5
    rows = [
        f"`{path.name}` from `{path.parent.name}`: {len(text) / 1024:.0f} KiB, {len(original.leaves)} leaves",
        "",
        "| library | write (ms) | read (ms) | reads the stored file | round trip | inf/NaN survive |",
        "|---|---:|---:|---|---|---|",
    ]
    for name, (write, read) in found.items():
        stored = _outcome(lambda read=read: same(read(text)) == same(original))
        back = _outcome(lambda read=read, write=write: same(read(write(original))) == same(original))
        kept = _outcome(lambda read=read, write=write: repr(read(write(special)).leaves[0]) == repr(special.leaves[0]))
        w = _median_ms(lambda write=write: write(original), repeats)
        try:
            r = f"{_median_ms(lambda read=read: read(text), repeats):.2f}"
        except Exception:
            r = "-"
        rows.append(f"| {name} | {w:.2f} | {r} | {stored} | {back} | {kept} |")
    return "\n".join(rows)


_FIRST_USE = {
    "pydantic (engine.records)": "from engine import records; records._adapter(CheckResult)",
    "msgspec": "import msgspec; msgspec.json.Decoder(CheckResult)",
    "cattrs": "from cattrs.preconf.json import make_converter; make_converter().get_structure_hook(CheckResult)",
}


def first_use() -> str:
    """What a fresh process pays before its first record: importing the library and building the result's codec
    (median of 5 processes; the engine's own import is not counted)."""
    import subprocess

    rows = ["| library | first use in a fresh process (ms) |", "|---|---:|"]
    for name, code in _FIRST_USE.items():
        probe = (
            f"import sys, time; sys.path.insert(0, {str(REPO)!r}); from engine.result import CheckResult; "
            f"t = time.perf_counter(); {code}; print((time.perf_counter() - t) * 1e3)"
        )
        runs = [subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True) for _ in range(5)]
        if any(r.returncode for r in runs):
            continue
        rows.append(f"| {name} | {statistics.median(float(r.stdout) for r in runs):.0f} |")
    return "\n".join(rows)


def main(argv: list[str]) -> None:
    write_docs = "--write-docs" in argv
    paths = [Path(a) for a in argv if a != "--write-docs"] or [
        FIXTURE / "check_floor_divide" / "result.json",
        FIXTURE / "check_bf16" / "result.json",
    ]
    _record_classes()  # every record type resolves its hints (a library that needs them would fail here first)
    found = codecs()
    sections = [table(path, found) for path in paths] + [first_use()]
    markdown = "\n\n".join(sections)
    print(markdown)
    if write_docs:
        from benchmarks.docs_pages import DOCS, write_section

        write_section(DOCS / "figures" / "serialization.md", "benchmarks/serialization.py", markdown)


if __name__ == "__main__":
    main(sys.argv[1:])
