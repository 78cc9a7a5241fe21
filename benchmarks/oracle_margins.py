"""The calibration's margins as a small committed record, so that a test can hold them to bounds.

A margin is how far (log10) a value's strongest element test stands from firing at its share of the check's
false-alarm budget (engine/judge/family.py): positive for a value that does not fire, negative for one that
does. `record(rows)` keeps, for every check of a calibration run, the tests of its few closest values (output
leaves and the intermediates the inside stage judged) with how many values of each stage shared the budget, so
that `margins(check)` recomputes them with the rule as it is now: a change of the budget's split or of a test's
hypotheses shows in the margins without a new run. tests/test_oracle_margins.py holds the record to its bounds and
to the torch it was measured on; `python benchmarks/oracle_calibration.py report --part calibration --label L
--margins benchmarks/oracle_margins.json` writes it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from engine.judge import family
from engine.judge.evidence import Test

PATH = Path(__file__).resolve().parent / "oracle_margins.json"
KEEP = 3  # values kept per stage and check: the closest to firing (the others only count for the shares)


@dataclass(frozen=True)
class Margin:
    """One value's strongest test, recomputed: `margin` with its effect held (inf: none has), `p_margin` whatever
    the effect."""

    item: str
    test: str
    margin: float
    p_margin: float


def _test(t: dict[str, Any]) -> Test:
    ratio = t.get("ratio")
    ratio = math.inf if ratio in ("inf", "Infinity") or ratio == math.inf else float(ratio or 0.0)
    return Test(t["name"], float(t["log10p"]), int(t["multiplicity"]), bool(t["effect"]), ratio)


def items(row: dict[str, Any]) -> list[family.Item]:
    """The values of one check that have element tests: its output leaves and its judged intermediates."""
    out = [
        family.Item(leaf["name"], family.Stage.OUTPUT, tuple(_test(t) for t in leaf["tests"]))
        for leaf in row["leaves"]
        if leaf["tests"]
    ]
    for e in (row.get("inside") or {}).get("evidence") or ():
        out.append(
            family.Item(
                f"graph {e['graph']} node {e['node']}", family.Stage.INSIDE, tuple(_test(t) for t in e["tests"])
            )
        )
    return out


def _shares(n_output: int, n_inside: int, budget: float = family.BUDGET) -> tuple[float, float]:
    """Each output's and each intermediate's share, as family.decide splits the budget."""
    for_outputs = budget * (family.OUTPUT_SHARE if n_inside else 1.0)
    for_inside = budget - for_outputs if n_output else budget
    return for_outputs / max(n_output, 1), for_inside / max(n_inside, 1)


def _closest(item: family.Item, share: float) -> Margin:
    def gap(t: Test) -> float:
        return t.log10p - family.threshold(t, share)

    held = [t for t in item.tests if t.effect]
    best = min(held, key=gap, default=None)
    anyway = min(item.tests, key=gap)
    return Margin(item.name, (best or anyway).name, gap(best) if best else math.inf, gap(anyway))


def margins(check: dict[str, Any]) -> list[Margin]:
    """Every kept value's margin under today's rule (a check of the record, or a result row)."""
    kept = [*check["output"], *check["inside"]] if "output" in check else items(check)
    n_output = check.get("n_output", sum(1 for i in kept if _stage(i) is family.Stage.OUTPUT))
    n_inside = check.get("n_inside", sum(1 for i in kept if _stage(i) is family.Stage.INSIDE))
    per_output, per_inside = _shares(n_output, n_inside)
    out = []
    for raw in kept:
        item = raw if isinstance(raw, family.Item) else _item(raw)
        out.append(_closest(item, per_output if item.stage is family.Stage.OUTPUT else per_inside))
    return out


def _stage(i: Any) -> family.Stage:
    return i.stage if isinstance(i, family.Item) else family.Stage(i["stage"])


def _item(raw: dict[str, Any]) -> family.Item:
    return family.Item(raw["name"], family.Stage(raw["stage"]), tuple(_test(t) for t in raw["tests"]))


def _raw(item: family.Item) -> dict[str, Any]:
    tests = [
        {
            "name": t.name,
            "log10p": round(t.log10p, 4),
            "multiplicity": t.multiplicity,
            "effect": t.effect,
            "ratio": "inf" if t.ratio == math.inf else round(t.ratio, 4),
        }
        for t in item.tests
    ]
    return {"name": item.name, "stage": item.stage.value, "tests": tests}


def record(rows: list[dict[str, Any]], label: str, torch_version: str) -> dict[str, Any]:
    """The committed record of a calibration run's margins."""
    checks = []
    for row in sorted(rows, key=lambda r: (r["job"]["corpus"], r["job"]["name"], r["job"]["seed"])):
        found = items(row)
        check = {"n_output": 0, "n_inside": 0, "output": [], "inside": []}
        check["n_output"] = sum(1 for i in found if i.stage is family.Stage.OUTPUT)
        check["n_inside"] = len(found) - check["n_output"]
        order = {m.item: m.margin if m.margin != math.inf else m.p_margin + 1e6 for m in margins(row)}
        for stage, key in ((family.Stage.OUTPUT, "output"), (family.Stage.INSIDE, "inside")):
            closest = sorted((i for i in found if i.stage is stage), key=lambda i: order[i.name])[:KEEP]
            check[key] = [_raw(i) for i in closest]
        job = row["job"]
        checks.append(
            {
                "name": job["name"],
                "seed": job["seed"],
                "corpus": job["corpus"],
                "expect": job["expect"],
                "output": job["output"],
                "verdict": row["verdict"],
                **check,
            }
        )
    return {"torch": torch_version, "label": label, "part": "calibration", "budget": family.BUDGET, "checks": checks}
