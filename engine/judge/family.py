"""One false-alarm budget per check: which element tests survive, over everything the check judged.

A check judges many values: every leaf of every seed and call, and (engine/child, engine/localization) the
intermediates that compiled code materialises. Each value has up to four tests of the element rule
(engine/judge/elements.py), two of them the best of several hypotheses (four directions, every column).
Asking each test at a fixed level would let the false alarms grow with the number of values; `decide` holds
the whole check to BUDGET instead:

- each test's `log10p` bounds the tail of its sign-flip null (eager and compiled swapped block by block), an
  exact bound whatever the dependence inside a block;
- the budget is split in advance (weighted Bonferroni, valid under any dependence between the tests): half to
  the values the program gives back (OUTPUT), half to the intermediates (INSIDE), or all of it to the first
  when nothing inside was judged; equally between the values of a stage that have element tests; inside a
  value, TEST_SHARE per test and equally between a test's hypotheses;
- a test survives when its bound is within its share and its effect holds.

Under the null every benign check raises a false alarm with probability at most BUDGET. Calibration on benign
programs (benchmarks/oracle_calibration.py) measures how far below it honest programs stay; docs/oracle.md
says why this design (a bound rather than resampling: a verdict must not depend on a random draw).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from enum import Enum

from engine.judge.evidence import Test

BUDGET = 1e-3  # false alarms per benign check: one in a thousand
OUTPUT_SHARE = 0.5  # of the budget, for the values the program gives back when intermediates are judged too
TEST_SHARE = {"exactness": 0.25, "distance": 0.25, "direction": 0.25, "column": 0.25}


class Stage(str, Enum):
    OUTPUT = "output"  # a value the program gives back: an output, a mutated input, state, a gradient
    INSIDE = "inside"  # an intermediate that compiled code materialised


@dataclass(frozen=True)
class Item:
    """One judged value with element evidence: a leaf of one seed, or one intermediate node."""

    name: str  # unique in the check
    stage: Stage
    tests: tuple[Test, ...]


def threshold(test: Test, share: float) -> float:
    """The log10 bound a test must reach when its value holds `share` of the budget."""
    portion = share * TEST_SHARE.get(test.name, 0.0) / max(test.multiplicity, 1)
    return math.log10(portion) if portion > 0 else -math.inf


def fired(tests: Iterable[Test], share: float) -> tuple[Test, ...]:
    """The tests of one value that survive when the value holds `share` of the budget."""
    return tuple(t for t in tests if t.effect and t.log10p <= threshold(t, share))


@dataclass(frozen=True)
class Decision:
    """Which tests survive, for every value the check judged."""

    budget: float
    shares: dict[str, float] = field(default_factory=dict)  # item name -> its share of the budget
    survivors: dict[str, tuple[Test, ...]] = field(default_factory=dict)  # item name -> its surviving tests
    tests: dict[str, tuple[Test, ...]] = field(default_factory=dict)  # item name -> all its tests

    def fired(self, name: str) -> tuple[Test, ...]:
        return self.survivors.get(name, ())

    def share(self, name: str) -> float:
        return self.shares.get(name, 0.0)

    @property
    def divergent(self) -> bool:
        return any(self.survivors.values())

    def margin(self, name: str) -> float:
        """How far (log10) the value's strongest test with its effect is above its threshold: negative fires;
        +inf when no test has its effect."""
        share = self.share(name)
        return min((t.log10p - threshold(t, share) for t in self.tests.get(name, ()) if t.effect), default=math.inf)


def decide(items: Sequence[Item], budget: float = BUDGET) -> Decision:
    """The check-level decision over everything it judged (see the module's docstring)."""
    tested = [i for i in items if i.tests]
    names = [i.name for i in tested]
    if len(names) != len(set(names)):
        raise ValueError("every judged value needs a unique name")
    outputs = [i for i in tested if i.stage is Stage.OUTPUT]
    inside = [i for i in tested if i.stage is Stage.INSIDE]
    for_outputs = budget * (OUTPUT_SHARE if inside else 1.0)
    for_inside = budget - for_outputs if outputs else budget
    shares = {i.name: for_outputs / len(outputs) for i in outputs}
    shares.update({i.name: for_inside / len(inside) for i in inside})
    survivors = {i.name: fired(i.tests, shares[i.name]) for i in tested}
    return Decision(budget, shares, {k: v for k, v in survivors.items() if v}, {i.name: i.tests for i in tested})
