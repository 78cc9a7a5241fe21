"""The reduction loop: the current best candidate, the oracle that guards it, and the passes run to a fixpoint.

A pass is a plain function `(Problem) -> None` that proposes smaller variants of `problem.current`
through `problem.adopt_first(...)`. The Problem keeps the invariants: a candidate is adopted only if it is
strictly smaller under `sort_key` and interesting; every candidate is hashed and tested at most once;
static non-starters never reach the oracle; the best candidate is checkpointed, so a re-run resumes.
"""

from __future__ import annotations

import ast
import difflib
import hashlib
import json
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from minimizer.size import count_tokens, sort_key
from minimizer.syntax import canonical, fresh, statically_plausible, unparse


class Oracle(Protocol):
    """Decides whether candidates are still interesting; may test up to `parallelism` of them at once."""

    parallelism: int

    def test_many(self, candidates: Sequence[str]) -> list[bool]: ...


class PredicateOracle:
    """An in-process predicate as an oracle: for the pass tests and for anything cheap and pure."""

    parallelism = 1

    def __init__(self, predicate: Callable[[str], bool]) -> None:
        self.predicate = predicate

    def test_many(self, candidates: Sequence[str]) -> list[bool]:
        return [bool(self.predicate(c)) for c in candidates]


class BudgetExhausted(Exception):
    """The time budget ran out; the best candidate so far stands."""


class StopRequested(BudgetExhausted):
    """The caller asked to stop (its `should_stop` said so); the best candidate so far stands."""


@dataclass(frozen=True)
class ReduceProgress:
    pass_name: str
    candidates_tried: int  # every candidate considered, duplicates and static rejects included
    oracle_calls: int
    current_tokens: int  # the candidate tested last
    best_tokens: int
    initial_tokens: int
    elapsed_s: float


@dataclass(frozen=True)
class PassStats:
    """What one pass cost and won over a whole reduction (every round), as Hypothesis's shrinker counts per pass:
    oracle calls, shrinks (candidates adopted) and seconds. A pass that costs many calls for no shrink is the one
    to reorder or drop."""

    name: str
    calls: int
    shrinks: int
    seconds: float


@dataclass
class _PassCounts:
    calls: int = 0
    shrinks: int = 0
    seconds: float = 0.0


@dataclass(frozen=True)
class ReduceStats:
    candidates_tried: int
    duplicates: int
    static_rejects: int
    oracle_calls: int
    accepted: int
    elapsed_s: float
    budget_exhausted: bool
    skipped_edits: int = 0  # candidates not tested because the oracle had refused the same edit before
    passes: tuple[PassStats, ...] = ()  # per pass, in the order they first ran

    def passes_table(self) -> str:
        """The per-pass counts as a small table, for a report or a log."""
        rows = [f"{'pass':<26} {'calls':>6} {'shrinks':>7} {'seconds':>8}"]
        rows += [f"{p.name:<26} {p.calls:>6} {p.shrinks:>7} {p.seconds:>8.1f}" for p in self.passes]
        return "\n".join(rows)


Edit = tuple[tuple[str, ...], tuple[str, ...]]


def edit_of(before: str, after: str) -> Edit:
    """The lines `after` drops from `before` and the lines it adds, in order: a candidate's change, without its
    context."""
    old, new = before.splitlines(), after.splitlines()
    removed: list[str] = []
    added: list[str] = []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, old, new, autojunk=False).get_opcodes():
        if tag != "equal":
            removed.extend(old[i1:i2])
            added.extend(new[j1:j2])
    return tuple(removed), tuple(added)


def digest(source: str) -> str:
    return hashlib.sha256(source.encode()).hexdigest()[:20]


class Problem:
    """The best candidate so far and the bookkeeping that keeps every test unique and every step smaller."""

    def __init__(
        self,
        initial: str,
        oracle: Oracle,
        on_progress: Callable[[ReduceProgress], None] | None = None,
        deadline: float | None = None,
        checkpoint: Path | None = None,
        rejected: Iterable[str] = (),
        should_stop: Callable[[], bool] | None = None,
        plausible: Callable[[str], bool] = statically_plausible,
        normalize: Callable[[str], str] | None = None,
    ) -> None:
        self.current = initial
        self.normalize = normalize  # applied to every candidate before it is hashed (dead-code removal)
        self.should_stop = should_stop
        self.plausible = plausible
        self.initial_tokens = count_tokens(initial)
        self.oracle = oracle
        self.on_progress = on_progress
        self.deadline = deadline
        self.checkpoint = checkpoint
        # per pass: its oracle calls, shrinks and seconds; `pass_name` is set as each pass starts (see the property)
        self._passes: dict[str, _PassCounts] = {}
        self._pass_name = "start"
        self._pass_started = time.monotonic()
        self.known: dict[str, bool] = dict.fromkeys(rejected, False)
        self.known[digest(initial)] = True
        self.tried = self.duplicates = self.static_rejects = self.calls = self.accepted = self.skipped_edits = 0
        # Edits (lines removed, lines added) the oracle refused: not proposed again in a later context.
        # It trades a little 1-minimality for not re-testing, round after round, what failed before;
        # `tidy` still removes code that a later change left dead.
        self.refused_edits: set[Edit] = set()
        self.last_tested_tokens = self.initial_tokens
        self.started = time.monotonic()
        self.history: list[str] = [initial]  # every adopted candidate, in order: what a failed repro falls back along
        self.bisected: str | None = None  # a program whose earliest diverging cut is itself (minimizer.passes.nodes)

    @property
    def pass_name(self) -> str:
        """The pass now running: what progress, refusals and the per-pass counts are attributed to."""
        return self._pass_name

    @pass_name.setter
    def pass_name(self, name: str) -> None:
        now = time.monotonic()
        self._counts().seconds += now - self._pass_started
        self._pass_name, self._pass_started = name, now

    def _counts(self) -> _PassCounts:
        return self._passes.setdefault(self._pass_name, _PassCounts())

    def _called(self, n: int) -> None:
        self.calls += n
        self._counts().calls += n

    # -- the one entry point passes use --
    def adopt_first(self, candidates: Iterable[str]) -> str | None:
        """Test candidates in order (in parallel batches) and adopt the smallest interesting one of the first
        batch that has any; None if none is."""
        it: Iterator[str] = iter(candidates)
        while True:
            batch = self._next_batch(it)
            if not batch:
                return None
            if self.should_stop is not None and self.should_stop():
                raise StopRequested()
            if self.deadline is not None and time.monotonic() > self.deadline:
                raise BudgetExhausted()
            verdicts = self.oracle.test_many(batch)
            self._called(len(batch))
            self.last_tested_tokens = count_tokens(batch[-1])
            for candidate, ok in zip(batch, verdicts, strict=False):
                self.known[digest(candidate)] = ok
                if not ok:
                    self.refused_edits.add(edit_of(self.current, candidate))
            self._report()
            # the smallest interesting one: the batch's calls are spent either way
            winners = sorted(
                (c for c, ok in zip(batch, verdicts, strict=False) if ok and sort_key(c) < sort_key(self.current)),
                key=sort_key,
            )
            for winner in winners:
                if self._guarded(winner):
                    self._adopt(winner)
                    return winner

    def _guarded(self, candidate: str) -> bool:
        """The oracle's guard for adoption, where it has one (a check that costs an extra run)."""
        guard = getattr(self.oracle, "guard", None)
        if guard is None:
            return True
        if self.deadline is not None and time.monotonic() > self.deadline:
            raise BudgetExhausted()
        if guard(candidate):
            return True
        self.known[digest(candidate)] = False
        self.refused_edits.add(edit_of(self.current, candidate))
        return False

    def adopt_verified(self, candidate: str) -> bool:
        """Adopt a candidate that the same oracle already called interesting elsewhere (shrinkray's result)."""
        candidate = canonical(candidate)
        if sort_key(candidate) >= sort_key(self.current) or not self._guarded(candidate):
            return False
        self.known[digest(candidate)] = True
        self._adopt(candidate)
        return True

    def try_adopt(self, candidate: str) -> bool:
        """Test one candidate and adopt it if it is interesting and smaller; whether it was adopted."""
        return self.adopt_first([candidate]) is not None

    def prepare(self, raw: str) -> str:
        """A candidate as it is hashed and tested: canonical, and pruned where the problem prunes."""
        candidate = canonical(raw)
        if self.normalize is not None:
            try:
                candidate = canonical(self.normalize(candidate))
            except (SyntaxError, ValueError):
                pass
        return candidate

    def probe(self, candidates: Sequence[str]) -> list[bool]:
        """Whether each candidate is interesting, without adopting any: known answers are reused, the rest
        tested in parallel batches. For passes that search (a bisection) before they choose."""
        prepared = [self.prepare(c) for c in candidates]
        todo: list[str] = []
        for candidate in dict.fromkeys(prepared):
            self.tried += 1
            h = digest(candidate)
            if h in self.known:
                self.duplicates += 1
            elif not self.plausible(candidate):
                self.static_rejects += 1
                self.known[h] = False
            else:
                todo.append(candidate)
        for start in range(0, len(todo), self.oracle.parallelism):
            batch = todo[start : start + self.oracle.parallelism]
            if self.should_stop is not None and self.should_stop():
                raise StopRequested()
            if self.deadline is not None and time.monotonic() > self.deadline:
                raise BudgetExhausted()
            for candidate, ok in zip(batch, self.oracle.test_many(batch), strict=False):
                self.known[digest(candidate)] = ok
            self._called(len(batch))
            self.last_tested_tokens = count_tokens(batch[-1])
            self._report()
        return [self.known.get(digest(c), False) for c in prepared]

    def adopt(self, candidate: str) -> bool:
        """Adopt a candidate `probe` called interesting, if it is smaller and passes the oracle's guard."""
        candidate = self.prepare(candidate)
        if (
            not self.known.get(digest(candidate))
            or sort_key(candidate) >= sort_key(self.current)
            or not self._guarded(candidate)
        ):
            return False
        self._adopt(candidate)
        return True

    def _next_batch(self, it: Iterator[str]) -> list[str]:
        batch: list[str] = []
        seen: set[str] = set()
        key = sort_key(self.current)
        for raw in it:
            candidate = self.prepare(raw)
            self.tried += 1
            h = digest(candidate)
            if h in self.known or h in seen or sort_key(candidate) >= key:
                self.duplicates += 1
                continue
            if not self.plausible(candidate):
                self.static_rejects += 1
                self.known[h] = False
                continue
            if edit_of(self.current, candidate) in self.refused_edits:
                self.skipped_edits += 1
                continue
            seen.add(h)
            batch.append(candidate)
            if len(batch) >= self.oracle.parallelism:
                break
        return batch

    def _adopt(self, candidate: str) -> None:
        self.current = candidate
        self.history.append(candidate)
        self.accepted += 1
        self._counts().shrinks += 1
        if self.checkpoint is not None:
            save_checkpoint(self.checkpoint, candidate, [h for h, ok in self.known.items() if not ok])
        self._report()

    def _report(self) -> None:
        if self.on_progress is None:
            return
        best = count_tokens(self.current)
        try:
            self.on_progress(
                ReduceProgress(
                    self.pass_name,
                    self.tried,
                    self.calls,
                    self.last_tested_tokens,
                    best,
                    self.initial_tokens,
                    time.monotonic() - self.started,
                )
            )
        except Exception:  # a broken progress display must not end a long reduction
            pass

    def stats(self, budget_exhausted: bool = False) -> ReduceStats:
        self.pass_name = self.pass_name  # the running pass's seconds so far
        return ReduceStats(
            candidates_tried=self.tried,
            duplicates=self.duplicates,
            static_rejects=self.static_rejects,
            oracle_calls=self.calls,
            accepted=self.accepted,
            elapsed_s=time.monotonic() - self.started,
            budget_exhausted=budget_exhausted,
            skipped_edits=self.skipped_edits,
            passes=tuple(
                PassStats(name, c.calls, c.shrinks, c.seconds)
                for name, c in self._passes.items()
                if c.calls or c.shrinks
            ),
        )


ReductionPass = Callable[[Problem], None]


def walk_sites(problem: Problem, candidates_at: Callable[[str, int], list[str] | None]) -> None:
    """Walk the sites of the current candidate in order; after an adoption, carry on from the same site.

    `candidates_at(source, i)` lists the variants at site i, or None past the last site. Sites are
    enumerated lazily, so the oracle can test variants of consecutive sites in one parallel batch.
    """
    start = 0
    while True:
        source = problem.current
        hits: dict[str, int] = {}

        def variants(source: str = source, start: int = start, hits: dict[str, int] = hits) -> Iterator[str]:
            i = start
            while (found := candidates_at(source, i)) is not None:
                for candidate in found:
                    hits.setdefault(problem.prepare(candidate), i)
                    yield candidate
                i += 1

        adopted = problem.adopt_first(variants())
        if adopted is None:
            return
        start = hits.get(adopted, start)


TreeEdit = Callable[[ast.Module], None]  # an edit of one site, applied in place


def everything_then_each(problem: Problem, sites: Callable[[ast.Module], list[TreeEdit]]) -> None:
    """Try edits of a kind: all of them at once first (one call when they all hold), then one at a time.

    `sites(tree)` lists the edits of that tree, each a function that applies itself to it in place.
    """

    def at(source: str, i: int) -> list[str] | None:
        edits = sites(fresh(source))
        if i >= len(edits):
            return None
        out = []
        if i == 0 and len(edits) > 1:
            tree = fresh(source)
            for edit in sites(tree):
                edit(tree)
            out.append(unparse(tree))
        tree = fresh(source)
        sites(tree)[i](tree)
        return out + [unparse(tree)]

    walk_sites(problem, at)


class Reducer:
    """Runs passes round after round until a whole round adopts nothing, or the budget runs out."""

    def __init__(self, passes: Sequence[ReductionPass], max_rounds: int = 20) -> None:
        self.passes = list(passes)
        self.max_rounds = max_rounds

    def run(self, problem: Problem) -> ReduceStats:
        try:
            for _ in range(self.max_rounds):
                before = problem.current
                for reduction_pass in self.passes:
                    problem.pass_name = getattr(reduction_pass, "__name__", "pass")
                    reduction_pass(problem)
                if problem.current == before:
                    break
        except BudgetExhausted:
            return problem.stats(budget_exhausted=True)
        return problem.stats()


def reduce_with(passes: Sequence[ReductionPass], source: str, predicate: Callable[[str], bool]) -> str:
    """Reduce `source` with `passes` under a pure predicate; the tests' one-line entry point."""
    problem = Problem(canonical(source), PredicateOracle(predicate))
    Reducer(passes).run(problem)
    return problem.current


# -- checkpoint: the best candidate and the hashes known to be uninteresting --
CHECKPOINT_BEST = "best.py"
CHECKPOINT_STATE = "state.json"


def save_checkpoint(directory: Path, best: str, rejected: Sequence[str]) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    for name, text in ((CHECKPOINT_BEST, best), (CHECKPOINT_STATE, json.dumps({"rejected": list(rejected)}))):
        tmp = directory / (name + ".tmp")
        tmp.write_text(text)
        tmp.replace(directory / name)  # atomic: an interrupt never leaves half a checkpoint


def load_checkpoint(directory: Path) -> tuple[str | None, list[str]]:
    best_path, state_path = directory / CHECKPOINT_BEST, directory / CHECKPOINT_STATE
    best = best_path.read_text() if best_path.exists() else None
    try:
        rejected = list(json.loads(state_path.read_text()).get("rejected", []))
    except (OSError, ValueError):
        rejected = []
    return best, rejected
