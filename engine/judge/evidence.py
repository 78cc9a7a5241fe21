"""The records a check-level decision weighs, kept free of torch (results load in processes without it).

`Test` is one test of the element rule on one value (engine/judge/elements.py computes it); `Fallback` is what
a value becomes when the check's false-alarm budget (engine/judge/family.py) keeps none of its tests.
"""

from __future__ import annotations

from dataclasses import dataclass

from engine.judge.verdicts import Nearer, Verdict


@dataclass(frozen=True)
class Test:
    """One test of the element rule on one value.

    `log10p` bounds log10 of the sign-flip tail of the best of `multiplicity` hypotheses (the four ways of the
    direction test, every column); `effect` says whether the favoured side is at least ONE_SIDED times the other;
    `ratio` is that favoured side over the other (the effect's margin; a column's smaller of its two ratios).
    """

    name: str  # "exactness", "distance", "direction" or "column"
    log10p: float
    multiplicity: int = 1
    effect: bool = False
    ratio: float = 0.0


@dataclass(frozen=True)
class Fallback:
    """What a value is when the check-level decision keeps none of its element tests."""

    verdict: Verdict
    explanation: str
    nearer: Nearer | None
