"""What counts as "still interesting": the original divergence's signature, checked through the engine.

A candidate is interesting when its check is not an error (eager runs, compile works, nothing crashes)
and a leaf of the target's kind is `divergent` with exactly the target's symptoms. The leaf must be the
target leaf itself when the candidate still has a leaf of that name; when the output structure changed
(an output dropped from a tuple) any leaf of the same kind with the same symptoms counts. Value drift
is only ever `divergent` when compiled is clearly further from the fp64 reference than eager, so the
symptom `value` already carries that meaning. Candidates run in the engine's warm worker, never here.
"""

from __future__ import annotations

import shutil
from collections import Counter
from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import Sequence

from engine import CheckOptions, CheckResult, LeafKind, Runner, Symptom, Verdict
from minimizer.syntax import canonical


class NotReproducible(Exception):
    """The starting program shows no divergence to minimize, or shows it only some of the time."""


class Outcome(str, Enum):
    INTERESTING = "interesting"
    NOT_DIVERGENT = "not-divergent"  # match, benign or precision-cast
    OTHER_SYMPTOM = "other-symptom"  # divergent, but not the way the original was
    ERROR = "error"  # eager raised, compile failed, crash, timeout...


@dataclass(frozen=True)
class Signature:
    leaf: str
    kind: LeafKind
    symptoms: frozenset[Symptom]

    def describe(self) -> str:
        return f"leaf `{self.leaf}` ({self.kind.value}) divergent with {', '.join(sorted(s.value for s in self.symptoms))}"


def signature_of(result: CheckResult) -> Signature | None:
    """The first divergent leaf, the one a report leads with; None when nothing diverges."""
    for leaf in result.leaves:
        if leaf.verdict is Verdict.DIVERGENT:
            return Signature(leaf.name, leaf.kind, frozenset(leaf.symptoms))
    return None


def classify(signature: Signature, result: CheckResult) -> Outcome:
    if result.verdict is Verdict.ERROR:
        return Outcome.ERROR
    if result.verdict is not Verdict.DIVERGENT:
        return Outcome.NOT_DIVERGENT
    named = [l for l in result.leaves if l.name == signature.leaf]
    pool = named or [l for l in result.leaves if l.kind is signature.kind]
    if any(l.verdict is Verdict.DIVERGENT and frozenset(l.symptoms) == signature.symptoms for l in pool):
        return Outcome.INTERESTING
    return Outcome.OTHER_SYMPTOM


class DivergenceOracle:
    """Tests candidates in the engine's worker, up to `parallelism` at a time, against one signature."""

    def __init__(self, runner: Runner, options: CheckOptions, work_dir: Path, filename: str = "snippet.py", parallelism: int = 2) -> None:
        self.runner = runner
        # candidates need no program line <-> kernel map, and with it Inductor's cache is keyed on each one's text
        self.options = options.replace(provenance=False)
        self.work_dir = work_dir
        self.filename = filename
        self.parallelism = parallelism
        self.signature: Signature | None = None
        self.baseline: CheckResult | None = None
        self.outcomes: Counter[Outcome] = Counter()
        self.calls = 0
        self._graphs: dict[str, tuple[str, ...]] = {}

    def _run(self, sources: Sequence[str]) -> list[CheckResult]:
        jobs = []
        for source in sources:
            self.calls += 1
            run_dir = self.work_dir / f"candidate-{self.calls:05d}"
            jobs.append((self.runner.submit(source, self.options, self.filename, run_dir=run_dir), run_dir))
        results = [job.wait() for job, _ in jobs]
        for _, run_dir in jobs:
            shutil.rmtree(run_dir, ignore_errors=True)  # arrays of every candidate would fill the disk
        return results

    def establish(self, source: str, runs: int = 2) -> Signature:
        """Check the original `runs` times (in parallel) and fix the signature; raise if it is absent or flaky."""
        results = self._run([source] * runs)
        signatures = {signature_of(r) for r in results}
        first = results[0]
        if first.verdict is Verdict.ERROR and first.error is not None:
            raise NotReproducible(f"the program does not check cleanly: {first.explanation}")
        if len(signatures) > 1 or len({r.verdict for r in results}) > 1:
            raise NotReproducible(
                "the divergence is flaky: the same program gave different answers on re-runs ("
                + "; ".join(r.explanation for r in results) + ")"
            )
        signature = signatures.pop()
        if signature is None:
            raise NotReproducible(f"nothing to minimize: the check's verdict is {first.verdict.value} ({first.explanation})")
        self.signature, self.baseline = signature, first
        self._graphs[source] = self._graphs[canonical(source)] = first.code.fx_graphs
        return signature

    def classify_many(self, candidates: Sequence[str]) -> list[tuple[Outcome, CheckResult]]:
        assert self.signature is not None, "establish() first"
        results = self._run(candidates)
        outcomes = [(classify(self.signature, r), r) for r in results]
        for candidate, (outcome, result) in zip(candidates, outcomes):
            self.outcomes[outcome] += 1
            if outcome is Outcome.INTERESTING:
                self._graphs[candidate] = result.code.fx_graphs
        return outcomes

    def test_many(self, candidates: Sequence[str]) -> list[bool]:
        return [o is Outcome.INTERESTING for o, _ in self.classify_many(candidates)]

    def confirm(self, source: str) -> bool:
        """Re-run an adopted candidate: a flaky reproduction shows up as a different answer."""
        return self.test_many([source])[0]

    def fx_graphs(self, source: str) -> tuple[str, ...]:
        """The Dynamo graphs of an interesting candidate (captured when it was tested)."""
        return self._graphs.get(source, ())
