"""What is said of a node of the compiled graph: where it came from, what it computes, and how it was judged.

Shared by the check's inside stage (engine/child/inside.py, stored in the result as `CheckResult.inside`) and
Localize's first-diverging-intermediate step (engine/localization/). Plain records, no torch.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from engine.judge.evidence import Test
from engine.judge.verdicts import Verdict


@dataclass(frozen=True)
class NodeSite:
    """Where a node of the instrumented compile came from, as torch recorded it on the node: what places it in
    the check's own compile (a second compile of the same program, whose node names and labels may differ)."""

    line: int | None = None  # the program line of its stack trace's innermost frame in the program
    code: str = ""  # that line's text as torch recorded it (checked against the program before it is trusted)
    source_nodes: tuple[str, ...] = ()  # the Dynamo graph's nodes it came from (its `from_node` chain)


@dataclass(frozen=True)
class NodeDiff:
    graph: int  # which compiled graph (graph breaks make several): the graph-th forward graph of the program
    node: str  # FX node name, as in the graph Inductor compiled
    op: str  # e.g. "aten.floor_divide.default"
    verdict: Verdict
    explanation: str
    mismatches: int = 0
    numel: int = 0
    max_ulp: float = 0.0
    site: NodeSite = field(default_factory=NodeSite)
    worst: WorstElement | None = None  # the element that differs most, with the three values there
    kernel: str | None = None  # the generated kernel that stores the node, where known
    materialised: bool = True  # a buffer compiled code stores; False: a value inside a fused kernel, exposed apart
    nearer: str | None = None  # who is nearer the exact value: "compiled", "eager", "neither" (engine.judge.verdicts)


@dataclass(frozen=True)
class WorstElement:
    """One element of a node: where it is and what eager, compiled and the float64 reference give there."""

    index: tuple[int, ...]
    eager: str
    compiled: str
    reference: str | None = None


@dataclass(frozen=True)
class NodeEvidence:
    """The element rule's tests on one judged buffer (bf16/fp16 values that differ), and where the check's decision
    put them: `margin` is log10 p minus the threshold of the strongest test with its effect (negative: it fired;
    +inf: no test had its effect). What a calibration reads of the benign buffers (engine/judge/family.py)."""

    graph: int
    node: str
    tests: tuple[Test, ...]
    margin: float


@dataclass(frozen=True)
class InsideReport:
    """The check's own judgement of what compiled code materialises inside the program (engine/child/inside.py).

    status: "judged" (every hooked node compared), "skipped" (not run: `explanation` says why, e.g. the size
    budget or `inside=False`), "not-applicable" (no Inductor graph ran), "failed" (best effort: the check stands).
    """

    status: str
    explanation: str
    seconds: float = 0.0
    graphs: int = 0
    hooked: int = 0  # buffers the compiled code reported
    judged: int = 0  # of them, compared with the graph's eager and float64 values
    first: NodeDiff | None = None  # the first diverging node in graph order, among the materialised buffers
    narrowed: NodeDiff | None = None  # the first diverging value inside `first`'s fused kernel, where not `first`
    diverging: tuple[NodeDiff, ...] = ()  # in graph order, the first few
    notes: tuple[str, ...] = ()
    evidence: tuple[NodeEvidence, ...] = ()  # every judged buffer with element tests

    @property
    def origin(self) -> NodeDiff | None:
        """Where compile first changes a value: the narrowed node where there is one, else the first."""
        return self.narrowed or self.first
