"""The oracle's own self-test: inject known faults into compiled outputs and count who notices.

Over the CPU sample cases whose compiled output is currently acceptable (match or benign), each fault is
injected into the first floating-point output of the real compiled program, and four oracles judge it:
our default verdict, --strict, torch.testing.assert_close with its defaults, and
torch._dynamo.utils.same with an fp64 reference. The false-alarm rate of each is measured on the benign
sample cases (compiled output correct but reassociated), unmutated.

Then the programs of benchmarks/oracle_corpus.py: a benign set of realistic size (each oracle judges the
real compiled output: any alarm is false) and program faults the three-way rule alone cannot see
(compiled more accurate than eager; a fault behind a random reference), with the seconds our check spends
on the faithful reference and the compiles it makes there (none: it re-runs eager and fp64 only).

The oracles other than ours compare the outputs only, as harnesses that use them do; ours also compares
mutated inputs, which is how it sees the "input silently mutated" fault.

Runs in this process (the sample cases are ours, not user code). Usage:
    python benchmarks/oracle_mutation.py [--cases slug,slug]
"""

from __future__ import annotations

import argparse
import itertools
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from app.gallery import load_cases  # noqa: E402
from engine.child import casting  # noqa: E402
from engine.child.comparison import CallSettings, compare_call  # noqa: E402
from engine.child.leaves import flatten, map_tensors  # noqa: E402
from engine.child.seeding import seed_everything  # noqa: E402
from engine.judge.metrics import measure  # noqa: E402
from engine.judge.verdicts import Verdict, worst  # noqa: E402
from engine.snippet import SnippetStyle, detect_style, execute, program_from_namespace  # noqa: E402

Fault = Callable[[torch.Tensor, torch.Tensor], "torch.Tensor | None"]  # (compiled, eager) -> faulty compiled, None: n/a


def _settings(strict: bool, emit: Callable[[str], None] = lambda stage: None) -> CallSettings:
    """The check's default judging (factor 2, 32 ULPs, an fp64 reference, no gradients), strict or not."""
    return CallSettings(
        strict=strict,
        factor=2.0,
        noise_ulps=32.0,
        backward=False,
        fp64_reference=True,
        max_stored_elements=1 << 24,
        emit=emit,
    )


def _ulp(c: torch.Tensor, e: torch.Tensor) -> torch.Tensor | None:
    flat = c.clone().reshape(-1)
    ok = torch.isfinite(flat).nonzero()
    if not len(ok):
        return None
    i = int(ok[0])
    flat[i] = torch.nextafter(flat[i : i + 1], torch.tensor([float("inf")], dtype=flat.dtype))[0]
    return flat.reshape(c.shape)


def _zero_sign(c: torch.Tensor, e: torch.Tensor) -> torch.Tensor | None:
    flat = c.clone().reshape(-1)
    zeros = (flat == 0).nonzero()
    if not len(zeros):
        return None
    i = int(zeros[0])
    flat[i] = -flat[i] if not torch.signbit(flat[i]) else 0.0
    return flat.reshape(c.shape)


def _nan(c: torch.Tensor, e: torch.Tensor) -> torch.Tensor | None:
    flat = c.clone().reshape(-1)
    ok = (~torch.isnan(flat)).nonzero()
    if not len(ok):
        return None
    flat[int(ok[-1])] = float("nan")
    return flat.reshape(c.shape)


def _swap(c: torch.Tensor, e: torch.Tensor) -> torch.Tensor | None:
    flat = c.clone().reshape(-1)
    if flat.numel() < 2:
        return None
    for j in range(1, flat.numel()):
        if not torch.equal(flat[0:1], flat[j : j + 1]) and not (torch.isnan(flat[0]) and torch.isnan(flat[j])):
            flat[0], flat[j] = flat[j].clone(), flat[0].clone()
            return flat.reshape(c.shape)
    return None


def _shift(c: torch.Tensor, e: torch.Tensor) -> torch.Tensor | None:
    if c.numel() < 2 or c.dim() == 0:
        return None
    dim = max(range(c.dim()), key=lambda d: c.shape[d])
    shifted = torch.roll(c, 1, dim)
    return None if torch.equal(shifted.nan_to_num(), c.nan_to_num()) else shifted


def _stride(c: torch.Tensor, e: torch.Tensor) -> torch.Tensor | None:
    if c.numel() < 2:
        return None
    if c.dim() >= 2 and c.shape[-1] > 1 and c.shape[-2] > 1:
        return c.transpose(-1, -2).contiguous().transpose(-1, -2)
    wide = torch.zeros((*c.shape[:-1], 2 * c.shape[-1]), dtype=c.dtype)
    view = wide[..., ::2]
    view.copy_(c)
    return view


def _widen(c: torch.Tensor, e: torch.Tensor) -> torch.Tensor | None:
    return c.double() if c.dtype != torch.float64 else None


FAULTS: dict[str, Fault] = {
    "1-ULP move": _ulp,
    "zero sign flip": _zero_sign,
    "one NaN": _nan,
    "two elements swapped": _swap,
    "off-by-one shift": _shift,
    "stride change": _stride,
    "input silently mutated": lambda c, e: c,  # the output is right; the compiled callable mutates its input
    "widened dtype": _widen,
}
STRUCTURAL = ("zero sign flip", "one NaN", "stride change", "input silently mutated", "widened dtype")
ORACLES = ("default verdict", "--strict", "assert_close", "same(fp64_ref)")


class LoadedCase:
    """A sample case loaded in this process: its program, compiled once, and its inputs."""

    def __init__(self, slug: str, source: str, filename: str) -> None:
        self.slug = slug
        style = detect_style(source, filename)
        seed_everything(0)
        ns = execute(source, filename, as_main=False)
        self.program = program_from_namespace(ns, style)
        self.compiled = torch.compile(self.program.fn, **{"backend": "inductor", **self.program.compile_kwargs})
        seed_everything(0)
        self.args = self.program.make_inputs()

    def run(self, fn: Callable[..., Any]) -> Any:
        args = casting.clone_tree(self.args)
        seed_everything(0)
        return fn(*args), args

    def reference(self) -> Any:
        ref_fn = casting.fp64_program(self.program.fn)
        seed_everything(0)
        return ref_fn(*map_tensors(casting.clone_tree(self.args), casting.to_fp64_tensor))


class CorpusCase(LoadedCase):
    """A program of benchmarks/oracle_corpus.py, with the same interface."""

    def __init__(self, program: Any) -> None:  # oracle_corpus.Program
        self.slug = program.name
        self.program = program
        self.compiled = program.faulty if program.faulty is not None else torch.compile(program.fn)
        seed_everything(0)
        self.args = program.inputs()


def _first_float(out: Any) -> tuple[str, torch.Tensor] | None:
    return next(
        ((k, v) for k, v in flatten(out) if isinstance(v, torch.Tensor) and v.is_floating_point() and v.numel() > 0),
        None,
    )


def _replace_leaf(out: Any, target: torch.Tensor, new: torch.Tensor) -> Any:
    return map_tensors(out, lambda t: new if t is target else t)


WITNESS_COST: list[tuple[str, float, int]] = []  # (case, seconds in the faithful-reference stage, compiles there)


def _ours(case: LoadedCase, compiled_fn: Callable[..., Any], strict: bool) -> bool:
    stages: list[tuple[str, float, int]] = []

    def emit(stage: str) -> None:
        stages.append((stage, time.perf_counter(), _compiles()))

    settings = _settings(strict, emit)
    outcome, _ = compare_call(case.program.fn, compiled_fn, casting.clone_tree(case.args), {}, 0, settings)
    stages.append(("end", time.perf_counter(), _compiles()))
    for (stage, t, n), (_, t_next, n_next) in itertools.pairwise(stages):
        if stage == "faithful reference" and not strict:
            WITNESS_COST.append((case.slug, t_next - t, n_next - n))
    return worst([leaf.verdict for leaf in outcome.leaves]) is Verdict.DIVERGENT


def _compiles() -> int:
    from torch._dynamo.utils import counters

    return int(sum(counters["frames"].values())) if "frames" in counters else 0


def _assert_close(eager: Any, compiled: Any) -> bool:
    try:
        torch.testing.assert_close(compiled, eager)
        return False
    except (AssertionError, TypeError, ValueError):
        return True


def _same(eager: Any, compiled: Any, ref: Any) -> bool:
    from torch._dynamo.utils import same

    try:
        return not same(eager, compiled, fp64_ref=ref)
    except Exception:  # same() raises on structures it cannot compare: that is a detection too
        return True


def judge_all(case: LoadedCase, eager: Any, compiled_out: Any, ref: Any, mutate_input: bool = False) -> dict[str, bool]:
    """Which oracles flag `compiled_out` (returned by a fake compiled callable) as wrong."""

    def fake(*args: Any) -> Any:
        if mutate_input:
            for t in (a for a in args if isinstance(a, torch.Tensor) and a.is_floating_point() and a.numel()):
                with torch.no_grad():
                    t[(0,) * t.dim()] += 1.0
                break
        return map_tensors(
            compiled_out, lambda t: t.clone().as_strided(t.shape, t.stride()) if t.is_contiguous() else _keep_layout(t)
        )

    return {
        "default verdict": _ours(case, fake, strict=False),
        "--strict": _ours(case, fake, strict=True),
        "assert_close": _assert_close(eager, compiled_out),
        "same(fp64_ref)": _same(eager, compiled_out, ref),
    }


def _keep_layout(t: torch.Tensor) -> torch.Tensor:
    out = torch.empty_strided(t.shape, t.stride(), dtype=t.dtype)
    out.copy_(t)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--cases", help="comma-separated slugs (default: every CPU fn-inputs/KernelBench case)")
    parser.add_argument(
        "--no-corpus", action="store_true", help="only the sample cases, not benchmarks/oracle_corpus.py"
    )
    parser.add_argument("--only", choices=("samples", "corpus", "families"), help="run one part of the self-test")
    parser.add_argument(
        "--seeds", type=int, default=2, help="input seeds per program of the one-ULP families (default 2)"
    )
    parser.add_argument("--select", help="only the family programs (and benign models) whose name contains this")
    parser.add_argument("--no-zoo", action="store_true", help="without the transformers models")
    args = parser.parse_args(argv)
    if args.only == "families":
        _families(args.seeds, args.select, not args.no_zoo)
        return 0
    torch.manual_seed(0)
    import logging

    logging.getLogger("torch._dynamo.utils").setLevel(logging.CRITICAL)  # same() logs every RMSE it computes
    started = time.time()
    wanted = set(args.cases.split(",")) if args.cases else None
    detected = {f: dict.fromkeys(ORACLES, 0) for f in FAULTS}
    applied = dict.fromkeys(FAULTS, 0)
    alarms = dict.fromkeys(ORACLES, 0)
    baseline_flagged = dict.fromkeys(ORACLES, 0)  # the unmutated output of the cases faults go into
    benign_total = 0
    used: list[str] = []
    for sample in load_cases()[0] if args.only in (None, "samples") else ():
        if wanted is not None and sample.slug not in wanted:
            continue
        if sample.cuda_only or sample.kind == "rng" or sample.options.dtype or sample.options.backward:
            continue
        source = sample.source()
        if detect_style(source, str(sample.path)) is SnippetStyle.REPRO:
            continue
        try:
            case = LoadedCase(sample.slug, source, str(sample.path))
            eager, _ = case.run(case.program.fn)
            compiled, _ = case.run(case.compiled)
            ref = case.reference()
        except Exception as exc:
            print(f"skip {sample.slug}: {type(exc).__name__}: {str(exc)[:120]}", file=sys.stderr)
            continue
        baseline_divergent = _ours(case, lambda *_, out=compiled: out, strict=False)
        if sample.kind == "benign":
            benign_total += 1
            for oracle, flagged in judge_all(case, eager, compiled, ref).items():
                alarms[oracle] += flagged
        if baseline_divergent:
            continue  # a real bug already: a fault on top of it says nothing about detection
        leaf = _first_float(compiled)
        e_leaf = dict(flatten(eager)).get(leaf[0]) if leaf else None
        if leaf is None or not isinstance(e_leaf, torch.Tensor):
            continue
        used.append(sample.slug)
        for oracle, flagged in judge_all(case, eager, compiled, ref).items():
            baseline_flagged[oracle] += flagged
        for name, fault in FAULTS.items():
            faulty = fault(leaf[1], e_leaf)
            if faulty is None:
                continue
            applied[name] += 1
            for oracle, flagged in judge_all(
                case,
                eager,
                _replace_leaf(compiled, leaf[1], faulty),
                ref,
                mutate_input=name == "input silently mutated",
            ).items():
                detected[name][oracle] += flagged
        torch._dynamo.reset()

    width = 24
    print(f"Oracle self-test over {len(used)} sample cases ({', '.join(used)}); {time.time() - started:.0f} s\n")
    print(f"{'fault (cases applied)':<{width + 6}}" + "".join(f"{o:>18}" for o in ORACLES))
    totals = dict.fromkeys(ORACLES, 0)
    structural_totals = dict.fromkeys(ORACLES, 0)
    for name in FAULTS:
        n = applied[name]
        cells = "".join(
            f"{detected[name][o]:>8}/{n:<3} {100 * detected[name][o] / n if n else 0:>4.0f}%" for o in ORACLES
        )
        print(f"{name + f' ({n})':<{width + 6}}{cells}")
        for o in ORACLES:
            totals[o] += detected[name][o]
            if name in STRUCTURAL:
                structural_totals[o] += detected[name][o]
    n_all = sum(applied.values())
    n_struct = sum(applied[f] for f in STRUCTURAL)
    print(
        f"{'all faults' + f' ({n_all})':<{width + 6}}"
        + "".join(f"{totals[o]:>8}/{n_all:<3} {100 * totals[o] / n_all if n_all else 0:>4.0f}%" for o in ORACLES)
    )
    print(
        f"{'structural' + f' ({n_struct})':<{width + 6}}"
        + "".join(
            f"{structural_totals[o]:>8}/{n_struct:<3} {100 * structural_totals[o] / n_struct if n_struct else 0:>4.0f}%"
            for o in ORACLES
        )
    )
    n_used = len(used)
    print(
        f"{'unmutated, flagged' + f' ({n_used})':<{width + 6}}"
        + "".join(
            f"{baseline_flagged[o]:>8}/{n_used:<3} {100 * baseline_flagged[o] / n_used if n_used else 0:>4.0f}%"
            for o in ORACLES
        )
    )
    print(
        f"{'false alarms, benign' + f' ({benign_total})':<{width + 6}}"
        + "".join(
            f"{alarms[o]:>8}/{benign_total:<3} {100 * alarms[o] / benign_total if benign_total else 0:>4.0f}%"
            for o in ORACLES
        )
    )
    if not args.no_corpus and args.only != "samples":
        _corpus(width)
    if args.only is None:
        _families(args.seeds, args.select, not args.no_zoo)
    return 0


def _corpus(width: int) -> None:
    """The realistic programs: false alarms on the benign set, detections of the program faults."""
    import oracle_corpus

    started = time.time()
    print("\nPrograms of realistic size (benchmarks/oracle_corpus.py)\n")
    print(f"{'program (fault kind)':<{width + 30}}" + "".join(f"{o:>16}" for o in ORACLES))
    seen: dict[str, dict[str, int]] = {}
    for group, programs in (("benign", oracle_corpus.benign_programs()), ("fault", oracle_corpus.fault_programs())):
        for program in programs:
            case = CorpusCase(program)
            eager, _ = case.run(case.program.fn)
            compiled, _ = case.run(case.compiled)
            ref = case.reference()
            flagged = judge_all(case, eager, compiled, ref)
            label = program.name if group == "benign" else f"{program.name} ({program.fault})"
            verdicts = "".join(
                f"{'ALARM' if flagged[o] else 'ok':>16}"
                if group == "benign"
                else f"{'seen' if flagged[o] else 'MISSED':>16}"
                for o in ORACLES
            )
            print(f"{label:<{width + 30}}{verdicts}")
            key = "false alarms, benign" if group == "benign" else "faults seen"
            totals = seen.setdefault(key, dict.fromkeys(ORACLES, 0) | {"n": 0})
            totals["n"] += 1
            for o in ORACLES:
                totals[o] += flagged[o]
            torch._dynamo.reset()
    for key, totals in seen.items():
        n = totals["n"]
        print(f"{key + f' ({n})':<{width + 30}}" + "".join(f"{totals[o]:>12}/{n:<3}" for o in ORACLES))
    if WITNESS_COST:
        seconds = [s for _, s, _ in WITNESS_COST]
        compiles = sum(c for _, _, c in WITNESS_COST)
        print(
            f"\nfaithful reference (eager re-run under the trace + fp64 re-run), over {len(seconds)} checks with value "
            f"drift: median {sorted(seconds)[len(seconds) // 2]:.3f} s, max {max(seconds):.3f} s "
            f"({max(WITNESS_COST, key=lambda w: w[1])[0]}), "
            f"{compiles} compile(s)"
        )
    print(f"corpus: {time.time() - started:.0f} s")


def _families(seeds: int, select: str | None, zoo: bool) -> None:
    """Issue #24's one-ULP fault families: detection per family beside assert_close and same(), where the fault
    happens (its own leaf) and where it ends up (the final output alone); false alarms on the clean twins, the
    realistic bf16/fp16 programs and the transformers models."""
    import oracle_corpus as oc

    started = time.time()
    pairs = oc.one_ulp_cases()
    faults = [f for f, _ in pairs]
    benign = [c for _, c in pairs] + oc.realistic_benign_cases() + (oc.zoo_models() if zoo else [])
    if select:
        faults = [c for c in faults if select in c.name]
        benign = [c for c in benign if select in c.name]
    columns = ("ours", "ours, final output only", "--strict", "assert_close", "same(fp64_ref)")
    seen: dict[str, dict[str, int]] = {}
    alarms: dict[str, int] = dict.fromkeys(columns, 0)
    n_benign = 0
    print(f"\nOne-ULP fault families (issue #24), {seeds} input seed(s) per program\n")
    for case in faults + benign:
        compiled = torch.compile(case.compiled, options=case.options) if case.options else torch.compile(case.compiled)
        for seed in range(seeds):
            seed_everything(seed)
            args = tuple(case.inputs())
            try:
                flagged, detail = _judge_family_case(case, compiled, args, seed)
            except Exception as exc:
                print(f"  ERROR {case.name} seed {seed}: {type(exc).__name__}: {str(exc)[:200]}")
                continue
            marks = " ".join(f"{c}={'Y' if flagged[c] else '-'}" for c in columns)
            print(f"  {case.family:8} {case.name[:78]:78} seed {seed}: {marks}  {detail}", flush=True)
            if case.family == "benign":
                n_benign += 1
                for c in columns:
                    alarms[c] += flagged[c]
            else:
                tally = seen.setdefault(case.family, dict.fromkeys(columns, 0) | {"n": 0})
                tally["n"] += 1
                for c in columns:
                    tally[c] += flagged[c]
        torch._dynamo.reset()
    width = 62
    print(f"\n{'family (instances)':<{width}}" + "".join(f"{c:>26}" for c in columns))
    total = dict.fromkeys(columns, 0) | {"n": 0}
    for family, label in oc.FAMILIES.items():
        tally = seen.get(family)
        if not tally:
            continue
        n = tally["n"]
        for key in total:
            total[key] += tally[key]
        print(
            f"{label + f' ({n})':<{width}}"
            + "".join(f"{tally[c]:>15}/{n:<3} {100 * tally[c] / n:>5.1f}%" for c in columns)
        )
    n = total["n"]
    if n:
        print(
            f"{f'all one-ULP faults ({n})':<{width}}"
            + "".join(f"{total[c]:>15}/{n:<3} {100 * total[c] / n:>5.1f}%" for c in columns)
        )
    print(
        f"{f'false alarms, benign ({n_benign})':<{width}}"
        + "".join(f"{alarms[c]:>15}/{n_benign:<3} {100 * alarms[c] / max(n_benign, 1):>5.1f}%" for c in columns)
    )
    _margins()
    print(f"families: {time.time() - started:.0f} s")


MARGINS: list[tuple[str, str, Any]] = []  # (family, leaf, ElementCounts) of every low-precision leaf judged


def _margins() -> None:
    """The closest benign value of each test of the element rule to its threshold (engine/judge/family.py), a leaf
    holding the whole budget; benchmarks/oracle_calibration.py measures them on its calibration part."""
    from engine.judge import family

    benign = [(leaf, c) for fam, leaf, c in MARGINS if fam == "benign"]
    if not benign:
        return
    print(f"\nclosest benign value of each test over {len(benign)} low-precision leaves (log10 p above its threshold):")
    for name in ("exactness", "distance", "direction", "column"):
        scored = [
            (t.log10p - family.threshold(t, family.BUDGET), t.effect, leaf)
            for leaf, c in benign
            for t in c.tests
            if t.name == name
        ]
        with_effect = [x for x in scored if x[1]]
        if scored:
            closest = min(scored)
            line = f"  {name:10} any effect {closest[0]:+8.2f} at {closest[2][:70]}"
            if with_effect:
                held = min(with_effect)
                line += f"; with its effect {held[0]:+8.2f} at {held[2][:70]}"
            print(line)


def _judge_family_case(
    case: Any, compiled: Callable[..., Any], args: tuple[Any, ...], seed: int
) -> tuple[dict[str, bool], str]:
    """Each oracle's call on one run of a program (ours on every leaf and on the final output alone)."""
    settings = _settings(False)
    outcome, _ = compare_call(case.fn, compiled, casting.clone_tree(args), {}, seed, settings)
    for name, stored in outcome.arrays.items():  # the element statistics of every low-precision leaf, for the margins
        ops = stored.operands
        counts = measure(ops).elements if ops is not None and ops.ref is not None else None
        if counts is not None and counts.k1 + counts.k2 + counts.worse + counts.better:
            MARGINS.append((case.family, f"{case.name} {name} seed {seed}", counts))
    strict = compare_call(
        case.fn,
        compiled,
        casting.clone_tree(args),
        {},
        seed,
        _settings(True),
    )[0]
    divergent = [leaf for leaf in outcome.leaves if leaf.verdict is Verdict.DIVERGENT]
    final = next((leaf for leaf in outcome.leaves if leaf.name in ("out", "out[0]")), None)
    with torch.no_grad():
        seed_everything(seed)
        eager = case.fn(*casting.clone_tree(args))
        seed_everything(seed)
        got = compiled(*casting.clone_tree(args))
        seed_everything(seed)
        try:
            ref = casting.fp64_program(case.fn)(*map_tensors(casting.clone_tree(args), casting.to_fp64_tensor))
        except RuntimeError:  # no float64 run of this program: same() then judges by its tolerance alone
            ref = None
    flagged = {
        "ours": bool(divergent),
        "ours, final output only": final is not None and final.verdict is Verdict.DIVERGENT,
        "--strict": any(leaf.verdict is Verdict.DIVERGENT for leaf in strict.leaves),
        "assert_close": _assert_close(eager, got),
        "same(fp64_ref)": _same(eager, got, ref),
    }
    shown = (
        [leaf for leaf in outcome.leaves if leaf.name == case.own]
        or divergent
        or [leaf for leaf in outcome.leaves if leaf.mismatches][:1]
    )
    detail = "; ".join(f"{leaf.name} {leaf.verdict.value}: {leaf.explanation[:300]}" for leaf in shown)
    return flagged, detail


if __name__ == "__main__":
    sys.exit(main())
