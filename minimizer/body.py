"""The issue body's script, settled by running it: literal inputs where they are small, only the switches it needs,
and which side is wrong, read from the values it prints.

`settle` runs minimizer/standalone.py's drafts in a fresh interpreter (`python -I`: nothing of ours importable, as
a maintainer runs them), each followed by a few lines of ours that say whether the difference showed:
1. a first draft as the check ran the program, which also reports its inputs (what is small enough to write out);
2. the draft with those inputs written out (kept only where it still shows the difference);
3. each Inductor switch taken out in turn, kept out where the difference still shows (a switch the bug does not
   need makes a maintainer think it matters), except where it is what makes the difference a bug (`settle`);
4. the side: at the elements the script prints, whose value is further from the expected one (Python's arithmetic or
   a float64 run): compiled, eager, or both.
Each run is a compile in a fresh process: a few seconds with the check's Inductor cache, which the runs share.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from dataclasses import dataclass, replace
from enum import Enum
from pathlib import Path

from engine import CheckOptions, LeafResult
from minimizer.repro import verify
from minimizer.standalone import Draft, Inputs, Literal, draft

# printed after the first draft: each input's type, size and, where small, its constructor written out (the shortest
# decimal that gives the same value in the input's dtype)
_INPUTS_PROBE = """
def _literal(t):
    dtype = '' if t.dtype in (torch.float32, torch.int64, torch.bool) else f', dtype={t.dtype}'
    def one(v):
        if isinstance(v, bool) or not t.is_floating_point():
            return repr(v)
        if v != v or v in (float('inf'), float('-inf')):
            return f'float({str(v)!r})'
        for digits in range(1, 18):
            text = f'{v:.{digits}g}'
            if torch.tensor(float(text), dtype=t.dtype).item() == v:
                return text if any(c in text for c in '.en') else text + '.0'
        return repr(v)
    def nested(v):
        return '[' + ', '.join(nested(x) for x in v) + ']' if isinstance(v, list) else one(v)
    return f'torch.tensor({nested(t.tolist())}{dtype})'
_found = []
for _name in _NAMES:
    _v = globals()[_name]
    if isinstance(_v, torch.Tensor):
        _small = _v.numel() <= _SMALL and _v.layout == torch.strided and not _v.is_complex() and _v.is_contiguous()
        _found.append({'text': _literal(_v) if _small else None, 'floating': _v.is_floating_point(),
                       'numel': _v.numel(), 'ndim': _v.dim()})
    else:
        _found.append({'text': None, 'floating': False, 'numel': None, 'ndim': 0})
print('@@INPUTS ' + _json.dumps(_found))
"""


class Side(str, Enum):
    """Who is wrong against the expected value (Python's arithmetic, or a float64 run)."""

    COMPILED = "compiled"
    EAGER = "eager"
    BOTH = "both"


@dataclass(frozen=True)
class Shown:
    """What a run of the script printed at the elements it shows."""

    eager: object
    compiled: object
    expected: object  # None where the script prints no expected value


@dataclass(frozen=True)
class Settled:
    script: str
    expected: str  # "Python", "float64" or ""
    shown: Shown
    side: Side | None  # None where there is no expected value to judge by
    flags: tuple[str, ...]  # the Inductor switches it still sets
    dropped: tuple[str, ...]  # the ones it showed the difference without
    runs: int


Runner = Callable[[str], tuple[int | None, str]]  # a script -> (exit code, output)


def settle(
    program: str,
    leaf: LeafResult,
    options: CheckOptions,
    run: Runner,
    *,
    random_calls: bool = False,
    low_precision: bool = False,
    small: int | None = None,
) -> Settled | None:
    """The shortest script that shows `leaf`'s difference, or None where none can (see the module docstring).

    A switch is never taken out where it is what makes the difference mean a bug: `fallback_random` in a program
    that draws random numbers (without it compiled draws its own by design), `emulate_precision_casts` in one that
    computes in bf16/fp16 (without it compiled keeps fp32 intermediates by design): the difference would still
    show, but as documented behaviour.
    """
    first = draft(program, leaf, options, random_calls=random_calls)
    if first is None:
        return None
    runs = 1
    probe = _INPUTS_PROBE.replace("_NAMES", repr(first.names)).replace("_SMALL", str(small or 16))
    code, output = run(first.text + _tail_with(first, probe))
    found = _read(output, "@@INPUTS ")
    if code != 0 or not isinstance(found, list):
        return None  # the draft as the check ran it does not show the difference: no short script
    literals = tuple(Literal(f["text"], f["floating"], f["numel"], f["ndim"]) for f in found)
    best, best_output = first, output
    written = draft(program, leaf, options, inputs=Inputs(literals), random_calls=random_calls)
    drawn = draft(program, leaf, options, inputs=Inputs(tuple(replace(lit, text=None) for lit in literals)))
    for candidate in (written, drawn):
        if candidate is None or candidate.text == best.text:
            continue
        runs += 1
        code, output = run(candidate.text + candidate.tail)
        if code == 0:
            best, best_output = candidate, output
            break
    inputs = Inputs(literals if best is written else tuple(replace(lit, text=None) for lit in literals))
    flags = dict(options.inductor_config)
    dropped: list[str] = []
    needed = {"fallback_random"} if random_calls else set()
    needed |= {"emulate_precision_casts"} if low_precision else set()
    for name in sorted(set(options.inductor_config) - needed):
        fewer = {k: v for k, v in flags.items() if k != name}
        candidate = draft(program, leaf, options, flags=fewer, inputs=inputs, random_calls=random_calls)
        if candidate is None:
            continue
        runs += 1
        code, output = run(candidate.text + candidate.tail)
        if code == 0:
            flags, best, best_output = fewer, candidate, output
            dropped.append(name)
    shown = _shown(best_output)
    return Settled(best.text, best.expected, shown, side_of(shown), tuple(sorted(flags)), tuple(dropped), runs)


def _tail_with(first: Draft, probe: str) -> str:
    """The draft's own tail with the inputs' report before its exit."""
    head, _, exit_line = first.tail.rpartition("raise SystemExit")
    return head + probe + "raise SystemExit" + exit_line


def _read(output: str, marker: str) -> object:
    for line in output.splitlines():
        if line.startswith(marker):
            try:
                return json.loads(line[len(marker) :])
            except ValueError:
                return None
    return None


def _shown(output: str) -> Shown:
    found = _read(output, "@@SHOWN ")
    if not isinstance(found, dict):
        return Shown(None, None, None)
    return Shown(found.get("eager"), found.get("compiled"), found.get("expected"))


def side_of(shown: Shown) -> Side | None:
    """Who is wrong at the printed elements: the side further from the expected value at some element where the
    other is not; both where each is further somewhere, or both are off by the same amount. A sign of zero counts:
    Python's `-6.0 % -2.0` is -0.0."""
    e, c, x = (_flat(v) for v in (shown.eager, shown.compiled, shown.expected))
    if e is None or c is None or x is None or not (len(e) == len(c) == len(x)):
        return None
    eager_off = compiled_off = tie = False
    for ev, cv, xv in zip(e, c, x, strict=True):
        de, dc = _distance(ev, xv), _distance(cv, xv)
        if de == dc:
            tie = tie or (de > 0 and ev != cv)
        elif de < dc:
            compiled_off = True
        else:
            eager_off = True
    if eager_off and compiled_off or tie:
        return Side.BOTH
    if compiled_off:
        return Side.COMPILED
    if eager_off:
        return Side.EAGER
    return None


def _flat(value: object) -> list[float] | None:
    if value is None:
        return None
    if isinstance(value, list):
        out: list[float] = []
        for v in value:
            inner = _flat(v)
            if inner is None:
                return None
            out += inner
        return out
    if isinstance(value, bool):
        return [float(value)]
    if isinstance(value, (int, float)):
        return [float(value)]
    return None


def _distance(value: float, expected: float) -> float:
    """How far `value` is from `expected`: infinite for a NaN on one side only, and a zero of the wrong sign counts
    as a (tiny) distance, so that the sign Python defines decides between two zeros."""
    if math.isnan(value) or math.isnan(expected):
        return 0.0 if math.isnan(value) and math.isnan(expected) else math.inf
    if value == expected:
        return 0.0 if math.copysign(1, value) == math.copysign(1, expected) else 5e-324
    return abs(value - expected)


def fresh_runner(
    python: str, work_dir: Path, inductor_cache: Path | None, timeout_s: float, stop: Callable[[], bool] | None
) -> Runner:
    """Run a script as a maintainer does: a fresh interpreter that imports nothing of ours (`python -I`)."""
    count = 0

    def run(script: str) -> tuple[int | None, str]:
        nonlocal count
        count += 1
        done = verify(script, python, timeout_s, work_dir / f"body-{count}", stop, inductor_cache, isolated=True)
        return done.exit_code, done.output

    return run
