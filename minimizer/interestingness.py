"""What counts as "still interesting": the original divergence's signature, checked through the engine.

The signature is what the engine can say about the divergence, not only where it shows:
- the leaf, its kind and its symptoms: a leaf of the target's kind stays `divergent` with the target's
  symptoms, and at most a stride difference besides (`same_symptoms`: a cut that returns an intermediate may
  expose a layout the output never had), the target leaf itself while the candidate still has a leaf of that
  name; and the check is no error (eager runs, compile works, nothing crashes);
- the mechanism: the original is re-checked once with `fallback_random` and `emulate_precision_casts`
  on. A divergence that survives both is the compiled code computing differently (`kernel`), and every
  candidate is then checked with both switches on, so no candidate can turn into a random-stream or a
  precision-cast difference (PyTorch's issue template asks for `fallback_random` for that reason). One
  that vanishes is named and refused: there is no kernel bug to minimize;
- the eval/no-grad state: the ops that ran in training mode, the random draws and the no-grad state of
  the compiled region, read from the candidate's own Dynamo graph (free: every check captures it). A
  candidate that loses `.eval()` runs dropout in training mode and is refused, whatever it diverges with;
- where it starts: the first diverging intermediate's op (`aten.div.Tensor_mode` for a floor division).
  It costs an instrumented run, so it is checked on adopted candidates only, and only when their set of
  generated kernels changed since the last candidate that passed it (same kernels, same first op).

Candidates run in the engine's warm worker, never here.
"""

from __future__ import annotations

import re
import shutil
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from enum import Enum
from pathlib import Path

from engine import CheckOptions, CheckResult, LeafKind, Runner, Symptom, Verdict, records
from engine.judge import mechanisms
from engine.localization.reports import INTERMEDIATES_FILE, IntermediatesReport
from minimizer.mechanism import GraphFacts, read_graphs
from minimizer.size import count_tokens
from minimizer.syntax import canonical

SWITCHES = ("fallback_random", "emulate_precision_casts")


class NotReproducible(Exception):
    """The starting program shows no divergence to minimize, or shows it only some of the time."""


class Outcome(str, Enum):
    INTERESTING = "interesting"
    NOT_DIVERGENT = "not-divergent"  # match, benign or precision-cast
    OTHER_SYMPTOM = "other-symptom"  # divergent, but not the way the original was
    OTHER_STATE = "other-state"  # the eval/no-grad state or the random draws of the compiled region changed
    OTHER_START = "other-start"  # adopted only if it starts where the original does; it did not
    ERROR = "error"  # eager raised, compile failed, crash, timeout...


class Mechanism(str, Enum):
    KERNEL = "kernel"  # survives fallback_random and emulate_precision_casts: the compiled code computes differently
    RNG = "rng"  # vanishes with fallback_random: Inductor's random stream, not ATen's
    PRECISION_CAST = "precision-cast"  # vanishes with emulate_precision_casts: a skipped low-precision round trip


@dataclass(frozen=True)
class Signature:
    leaf: str
    kind: LeafKind
    symptoms: frozenset[Symptom]
    mechanism: Mechanism = Mechanism.KERNEL
    start: str = "unknown"  # the first-diverging-intermediate step's status: "found", "none-diverges", ...
    first_op: str | None = None  # the op of the first diverging intermediate, when found
    state: GraphFacts = GraphFacts()

    def describe(self) -> str:
        symptoms = ", ".join(sorted(s.value for s in self.symptoms))
        where = f"; starts at `{self.first_op}`" if self.first_op else ""
        return (
            f"leaf `{self.leaf}` ({self.kind.value}) divergent with {symptoms}; mechanism"
            f" {self.mechanism.value}{where}; {self.state.state()}"
        )

    def same_start(self, report: IntermediatesReport | None) -> bool:
        if report is None:
            return False
        if self.first_op is not None:
            return report.status == "found" and report.first is not None and report.first.op == self.first_op
        return report.status == self.start


def signature_of(result: CheckResult) -> Signature | None:
    """The first divergent leaf, the one a report leads with; None when nothing diverges."""
    for leaf in result.leaves:
        if leaf.verdict is Verdict.DIVERGENT:
            return Signature(leaf.name, leaf.kind, frozenset(leaf.symptoms), state=read_graphs(result.code.fx_graphs))
    return None


def same_state(target: GraphFacts, facts: GraphFacts) -> bool:
    """The same ops in training mode, the same no-grad state, and no random draw the original did not make."""
    return (
        facts.training_ops == target.training_ops
        and facts.no_grad == target.no_grad
        and facts.random_ops <= target.random_ops
    )


def classify(signature: Signature, result: CheckResult) -> Outcome:
    if result.verdict is Verdict.ERROR:
        return Outcome.ERROR
    if result.verdict is not Verdict.DIVERGENT:
        return Outcome.NOT_DIVERGENT
    if result.code.fx_graphs and not same_state(signature.state, read_graphs(result.code.fx_graphs)):
        return Outcome.OTHER_STATE
    named = [leaf for leaf in result.leaves if leaf.name == signature.leaf]
    pool = named or [leaf for leaf in result.leaves if leaf.kind in counterparts(signature.kind)]
    if any(
        leaf.verdict is Verdict.DIVERGENT and same_symptoms(signature.symptoms, frozenset(leaf.symptoms))
        for leaf in pool
    ):
        return Outcome.INTERESTING
    return Outcome.OTHER_SYMPTOM


# The graph rewrite makes a module's parameters and buffers explicit inputs: a buffer the original wrote in place (a
# `state` leaf) is a mutated input there, the same value under its new name.
_COUNTERPARTS = {LeafKind.STATE: (LeafKind.STATE, LeafKind.MUTATED_INPUT)}


def counterparts(kind: LeafKind) -> tuple[LeafKind, ...]:
    """The leaf kinds a leaf of `kind` may have become in a candidate."""
    return _COUNTERPARTS.get(kind, (kind,))


def same_symptoms(target: frozenset[Symptom], found: frozenset[Symptom]) -> bool:
    """The target's symptoms, and at most a layout difference besides.

    A cut that returns an intermediate may expose strides Inductor never promised for it, or a rewrite's own layout
    (the SDPA pattern returns attention's output in another layout than the matmul it replaced): the same bug seen
    one node earlier, which the graph path must be able to keep. Nothing else may be gained or lost, and a stride
    difference alone never turns into a value one.
    """
    return target <= found and found - target <= {Symptom.STRIDE}


def lost(signature: Signature, result: CheckResult, outcome: Outcome, report: IntermediatesReport | None = None) -> str:
    """What a refused candidate lost of the signature, in words: the one line a user needs to see why it went."""
    if outcome is Outcome.ERROR:
        message = (result.error.message if result.error is not None else result.explanation).strip()
        kind = result.error.kind.value if result.error is not None else "error"
        return f"{kind}: {message.splitlines()[0][:160] if message else 'no message'}"
    if outcome is Outcome.NOT_DIVERGENT:
        said = result.explanation.removeprefix(f"{result.verdict.value}: ")
        return f"{result.verdict.value}: {said.split(' (')[0][:160]}"
    if outcome is Outcome.OTHER_STATE:
        facts = read_graphs(result.code.fx_graphs)
        return f"the compiled region is in {facts.state()}, the original in {signature.state.state()}"
    if outcome is Outcome.OTHER_START:
        found = (
            f"starts at `{report.first.op}`"
            if report is not None and report.status == "found" and report.first is not None
            else f"first diverging intermediate: {report.status if report is not None else 'not localized'}"
        )
        target = f"`{signature.first_op}`" if signature.first_op else signature.start
        return f"{found}, the original {target}"
    diverging = [leaf for leaf in result.leaves if leaf.verdict is Verdict.DIVERGENT]
    shown = "; ".join(
        f"`{leaf.name}` ({leaf.kind.value}) with {', '.join(sorted(s.value for s in leaf.symptoms)) or 'no symptom'}"
        for leaf in diverging[:3]
    )
    target = ", ".join(sorted(s.value for s in signature.symptoms))
    named = any(leaf.name == signature.leaf for leaf in result.leaves)
    where = "" if named else f" (it has no leaf `{signature.leaf}`: any {signature.kind.value} leaf would do)"
    return f"divergent in {shown or 'no leaf'}; wanted `{signature.leaf}` ({signature.kind.value}) with {target}{where}"


@dataclass(frozen=True)
class Refusal:
    """One candidate the oracle refused: in which pass, how large, its verdict and what it lost of the signature."""

    pass_name: str
    tokens: int
    outcome: Outcome
    verdict: str
    lost: str

    def describe(self) -> str:
        return f"{self.pass_name}, {self.tokens} tokens: {self.outcome.value}; {self.lost}"


GRAPH_PASSES = ("graph_rewrite", "truncate_output", "promote_to_inputs")
REFUSALS_KEPT = 400  # a long reduction refuses thousands; the first ones say the most


def refusal_summary(refusals: Sequence[Refusal]) -> list[str]:
    """The report's lines on refused candidates: every graph-path candidate (the moves that shrink most, where one
    refusal explains a model that stays large), then the other passes' refusals by pass and outcome, one example each.
    """
    lines = [f"refused {r.describe()}" for r in refusals if r.pass_name == "graph_rewrite"]
    groups: dict[tuple[str, Outcome], list[Refusal]] = {}
    for r in refusals:
        if r.pass_name != "graph_rewrite":
            groups.setdefault((r.pass_name, r.outcome), []).append(r)
    for (name, outcome), members in groups.items():
        lines.append(
            f"refused {len(members)} in {name}, {outcome.value}, e.g. {members[0].tokens} tokens: {members[0].lost}"
        )
    return lines


def kernel_set(result: CheckResult) -> tuple[str, ...]:
    """The generated kernels by name, numbering dropped: what the compiled code is made of."""
    return tuple(sorted(re.sub(r"_\d+$", "", k.name) for o in result.code.output_code for k in o.kernels))


def read_intermediates(run_dir: Path) -> IntermediatesReport | None:
    path = run_dir / INTERMEDIATES_FILE
    try:
        return records.load(IntermediatesReport, path)
    except (OSError, ValueError, KeyError, TypeError):
        return None


@dataclass(frozen=True)
class Checked:
    """One run of a candidate: its result and, for a guarded run, its first diverging intermediate."""

    result: CheckResult
    intermediates: IntermediatesReport | None = None


class DivergenceOracle:
    """Tests candidates in the engine's worker, up to `parallelism` at a time, against one signature."""

    def __init__(
        self, runner: Runner, options: CheckOptions, work_dir: Path, filename: str = "snippet.py", parallelism: int = 2
    ) -> None:
        self.runner = runner
        # the original runs as it was checked: its compiles are then hits on the check's entries in Inductor's cache
        self.original_options = options
        # candidates need no program line <-> kernel map, and with it Inductor's cache is keyed on each one's text
        # the signature is a leaf's: candidates are judged on what they return (the inside stage would add a graph
        # run per candidate and a compile per divergent one)
        self.options = options.replace(provenance=False, inside=False)  # the user's
        self.candidate_options = self.options  # what candidates run with, once establish() has set the switches
        self.work_dir = work_dir
        self.filename = filename
        self.parallelism = parallelism
        self.signature: Signature | None = None
        self.baseline: CheckResult | None = None
        self.origin: Checked | None = None
        self.outcomes: Counter[Outcome] = Counter()
        self.calls = 0
        self.guard_calls = 0
        self.guard_seconds = 0.0
        self.start_guard = True  # check where adopted candidates start (off: the eval state and mechanism only)
        self._graphs: dict[str, tuple[str, ...]] = {}
        self._kernels: dict[str, tuple[str, ...]] = {}
        self._guarded_kernels: tuple[str, ...] | None = None
        self.pass_name: Callable[[], str] = lambda: "start"  # the reduction's current pass, for the refusals' record
        self.refused: list[Refusal] = []  # the first REFUSALS_KEPT candidates refused, with what each lost
        # where the candidates' seconds go: per stage of their checks (queued, compiling, ...), and per outcome
        self.stage_seconds: Counter[str] = Counter()
        self.outcome_seconds: Counter[Outcome] = Counter()
        self.last: dict[
            str, Checked
        ] = {}  # the last full run of a candidate, by source (the final one feeds the report)

    def _run(self, sources: Sequence[str], options: CheckOptions) -> list[Checked]:
        jobs = []
        for source in sources:
            self.calls += 1
            run_dir = self.work_dir / f"candidate-{self.calls:05d}"
            jobs.append((self.runner.submit(source, options, self.filename, run_dir=run_dir), run_dir))
        checked = []
        for job, run_dir in jobs:
            result = job.wait()
            checked.append(
                Checked(result, read_intermediates(run_dir) if options.localize == "intermediates" else None)
            )
            shutil.rmtree(run_dir, ignore_errors=True)  # arrays of every candidate would fill the disk
        return checked

    def establish(self, source: str, runs: int = 2) -> Signature:
        """Check the original `runs` times (in parallel), then once with both switches and the intermediates.

        Raises NotReproducible when it is absent, flaky, or explained by the random stream or a precision cast.
        """
        results = [c.result for c in self._run([source] * runs, self.original_options)]
        signatures = {signature_of(r) for r in results}
        first = results[0]
        if first.verdict is Verdict.ERROR and first.error is not None:
            raise NotReproducible(f"the program does not check cleanly: {first.explanation}")
        if len(signatures) > 1 or len({r.verdict for r in results}) > 1:
            raise NotReproducible(
                "the divergence is flaky: the same program gave different answers on re-runs ("
                + "; ".join(r.explanation for r in results)
                + ")"
            )
        base = signatures.pop()
        if base is None:
            raise NotReproducible(
                f"nothing to minimize: the check's verdict is {first.verdict.value} ({first.explanation})"
            )
        switches = {k: True for k in SWITCHES if k not in self.options.inductor_config}
        probe = self._run([source], self._guarded(self.options.with_inductor_config(**switches)))[0]
        if classify(base, probe.result) is not Outcome.INTERESTING:
            raise NotReproducible(self._explained(source, base, switches, probe.result))
        report = probe.intermediates
        start = report.status if report is not None else "failed"
        first_op = (
            report.first.op if report is not None and report.status == "found" and report.first is not None else None
        )
        self.signature = replace(base, start=start, first_op=first_op)
        self.origin = probe  # the original's run with its intermediates: where the issue body says it came from
        # a localization that could not run says nothing about where candidates start: only the other guards hold
        self.start_guard = start in ("found", "none-diverges", "backward-not-compared")
        self.baseline = first
        self.candidate_options = self.options.with_inductor_config(**switches).replace(recheck_precision_casts=False)
        self._graphs[source] = self._graphs[canonical(source)] = first.code.fx_graphs
        self._guarded_kernels = kernel_set(probe.result)
        return self.signature

    def _guarded(self, options: CheckOptions) -> CheckOptions:
        return options.replace(localize="intermediates", seeds=1, recheck_precision_casts=False)

    def _explained(self, source: str, base: Signature, switches: dict[str, bool], probe: CheckResult) -> str:
        """Why the divergence vanished with the switches on: name the switch that removes it."""
        culprit = None
        if len(switches) == 2:
            alone = self._run([source], self.options.with_inductor_config(fallback_random=True))[0].result
            culprit = (
                "fallback_random" if classify(base, alone) is not Outcome.INTERESTING else "emulate_precision_casts"
            )
        elif switches:
            culprit = next(iter(switches))
        # a mechanism is named only with evidence of it in the program, as the check names it
        # (engine/judge/mechanisms.py)
        trips = mechanisms.round_trips(probe.code.fx_graphs)
        if culprit == "fallback_random" and base.state.random_ops:
            what = (
                "it vanishes with fallback_random=True, so it is Inductor's random stream differing from eager's "
                f"({', '.join(sorted(base.state.random_ops))}), not a kernel bug (pytorch#118735)"
            )
        elif culprit == "emulate_precision_casts" and trips:
            what = (
                "it vanishes with emulate_precision_casts=True: Inductor skipped a low-precision round trip that eager"
                f" performs ({trips[0].describe()})"
            )
        elif culprit == "fallback_random":
            what = "it " + mechanisms.unexplained(
                "fallback_random=True", "the program calls no op that draws random numbers"
            )
        elif culprit == "emulate_precision_casts":
            what = "it " + mechanisms.unexplained(
                "emulate_precision_casts=True", "the program has no bf16/fp16 value a fused kernel could keep in fp32"
            )
        else:
            what = f"with both switches set by you it is {probe.verdict.value} ({probe.explanation})"
        return (
            f"nothing to minimize: {what}. To minimize that difference anyway, pass "
            f"--config {culprit or 'fallback_random'}=False"
        )

    def classify_many(self, candidates: Sequence[str]) -> list[tuple[Outcome, CheckResult]]:
        assert self.signature is not None, "establish() first"
        checked = self._run(candidates, self.candidate_options)
        outcomes = [(classify(self.signature, c.result), c.result) for c in checked]
        for candidate, (outcome, result), run in zip(candidates, outcomes, checked, strict=False):
            self.outcomes[outcome] += 1
            self.stage_seconds.update(result.stage_seconds)
            self.outcome_seconds[outcome] += sum(result.stage_seconds.values())
            if outcome is not Outcome.INTERESTING:
                self._record(candidate, outcome, result)
            if outcome is Outcome.INTERESTING:
                self._graphs[candidate] = result.code.fx_graphs
                self._kernels[candidate] = kernel_set(result)
                self.last[candidate] = run
        return outcomes

    def test_many(self, candidates: Sequence[str]) -> list[bool]:
        return [o is Outcome.INTERESTING for o, _ in self.classify_many(candidates)]

    def guard(self, candidate: str) -> bool:
        """Called before a candidate is adopted: does it still start where the original does?

        Skipped (True) when its generated kernels are the ones of the last candidate that passed: the same
        kernels compute the same values, so the first diverging one cannot have moved.
        """
        assert self.signature is not None
        kernels = self._kernels.get(candidate)
        if not self.start_guard or (kernels is not None and kernels == self._guarded_kernels):
            return True
        started = time.monotonic()
        self.guard_calls += 1
        run = self._run([candidate], self._guarded(self.candidate_options))[0]
        self.guard_seconds += time.monotonic() - started
        ok = classify(self.signature, run.result) is Outcome.INTERESTING and self.signature.same_start(
            run.intermediates
        )
        if ok:
            self._guarded_kernels = kernel_set(run.result)
        else:
            self.outcomes[Outcome.OTHER_START] += 1
            outcome = classify(self.signature, run.result)
            self._record(
                candidate,
                Outcome.OTHER_START if outcome is Outcome.INTERESTING else outcome,
                run.result,
                run.intermediates,
            )
        return ok

    def _record(
        self, candidate: str, outcome: Outcome, result: CheckResult, report: IntermediatesReport | None = None
    ) -> None:
        if len(self.refused) < REFUSALS_KEPT and self.signature is not None:
            why = lost(self.signature, result, outcome, report)
            self.refused.append(Refusal(self.pass_name(), count_tokens(candidate), outcome, result.verdict.value, why))

    def final_check(self, source: str) -> Checked:
        """Re-run the final candidate with its intermediates: a flip shows flakiness, and its figures feed the
        report."""
        run = self._run([source], self._guarded(self.candidate_options))[0]
        self.last[source] = run
        return run

    def confirmed(self, run: Checked) -> bool:
        assert self.signature is not None
        return classify(self.signature, run.result) is Outcome.INTERESTING and (
            not self.start_guard or self.signature.same_start(run.intermediates)
        )

    def confirm(self, source: str) -> bool:
        """Re-run an adopted candidate: a flaky reproduction shows up as a different answer."""
        return self.confirmed(self.final_check(source))

    def fx_graphs(self, source: str) -> tuple[str, ...]:
        """The Dynamo graphs of an interesting candidate (captured when it was tested)."""
        return self._graphs.get(source, ())

    def refusals(self) -> dict[str, int]:
        return {o.value: n for o, n in self.outcomes.items() if o is not Outcome.INTERESTING}
