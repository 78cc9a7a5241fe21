"""The first thing a verdict says: one plain sentence and a next step, before any figure.

"compile changed 2,304 of 4,096 values by up to 0.4; eager agrees with float64, compiled does not.
Next: Localize, then Minimize." A reader who knows nothing of ULPs or witnesses learns what happened, how much,
whether it is a bug, and what to click; the leaf table and the sentences with the numbers follow it.

Pure: reads the leaves' figures (any object with LeafResult's fields) and the verdict's vocabulary.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from engine.judge.known import Recognised
from engine.judge.verdicts import ErrorKind, Symptom, Verdict, Witness


class LeafFigures(Protocol):
    """What the headline reads of a judged leaf (engine.result.LeafResult has these fields)."""

    name: str
    verdict: Verdict
    symptoms: tuple[Symptom, ...]
    numel: int
    mismatches: int
    unwritten: int
    max_abs: float
    eager_ref_rms: float | None
    compiled_ref_rms: float | None
    eager_ref_max: float | None
    compiled_ref_max: float | None
    witness: Witness | None


class NodeFigures(Protocol):
    """What the headline reads of the place inside the program where compile first changes a value
    (engine.localization.reports.NodeDiff has these fields)."""

    node: str
    op: str
    mismatches: int
    numel: int

    @property
    def site(self) -> Any: ...  # .line, .code

    @property
    def worst(self) -> Any: ...  # .eager, .compiled, .reference, or None


@dataclass(frozen=True)
class Headline:
    sentence: str
    next_step: str

    @property
    def text(self) -> str:
        return f"{self.sentence}. Next: {self.next_step}"


_STRUCTURE = {
    Symptom.SHAPE: "the shape",
    Symptom.DTYPE: "the dtype",
    Symptom.STRIDE: "the memory layout (strides)",
    Symptom.LAYOUT: "the tensor layout (sparse or dense)",
    Symptom.NAN: "where NaNs are",
    Symptom.INF: "where infinities are",
    Symptom.SIGNED_ZERO: "the sign of zeros",
    Symptom.MUTATION: "which inputs or buffers are modified in place",
    Symptom.TYPE: "the kind or structure of the result",
}
_ERROR_NEXT = {
    ErrorKind.SNIPPET: "fix the program so that it loads and defines what the message asks for",
    ErrorKind.EAGER: "the program fails without compiling too; fix it first",
    ErrorKind.COMPILE: (
        "torch.compile fails where eager runs: read the traceback; a compiler error on valid code is worth reporting"
    ),
    ErrorKind.CRASH: "the process died (a crash in compiled or native code): run it again, and report it if it repeats",
    ErrorKind.TIMEOUT: "allow more time (--timeout) or use smaller inputs",
    ErrorKind.MEMORY: "allow more memory (--memory-mb) or use smaller inputs",
    ErrorKind.OUTPUT: "print less",
    ErrorKind.PROCESSES: "start fewer processes",
    ErrorKind.CANCELLED: "run it again to get a verdict",
    ErrorKind.BUSY: "try again in a moment: every worker is busy",
    ErrorKind.OPTIONS: "change the option the message names",
    ErrorKind.INTERNAL: "this is a bug in Divergence Explorer: report it with the traceback",
}


def headline(
    verdict: Verdict,
    leaves: Sequence[LeafFigures],
    error: ErrorKind | None = None,
    inside: NodeFigures | None = None,
    *,
    known: Recognised | None = None,
) -> Headline:
    """The plain sentence and next step for a check with this verdict and these judged leaves; `inside`: where,
    inside the program, compile first changes a value (the check's inside stage), if it found one. A divergence that
    looks like a known cause (`engine.judge.known.recognise`) says so first, with its link, and the next step says how
    to tell it apart instead of "Minimize"."""
    plain = _headline(verdict, leaves, error, inside)
    if verdict is not Verdict.DIVERGENT or known is None:
        return plain
    if known.unexplained:
        rest = ", ".join(known.unexplained[:3]) + (" and more" if len(known.unexplained) > 3 else "")
        step = f"nothing new to file for {', '.join(known.leaves[:2])}; for {rest}: Localize, then Minimize"
    else:
        case = f"compare with the gallery's `{known.issue.case}`; " if known.issue.case else ""
        step = f"{case}nothing new to file if it is that issue (Minimize only if it differs)"
    return Headline(f"{known.issue.sentence()}: {plain.sentence}", step)


def _headline(
    verdict: Verdict, leaves: Sequence[LeafFigures], error: ErrorKind | None = None, inside: NodeFigures | None = None
) -> Headline:
    if inside is not None and verdict is Verdict.DIVERGENT:
        return Headline(
            f"compile changed a value inside the program: {where_inside(inside)}; {_outputs(leaves)}",
            "Localize, then Minimize",
        )
    if verdict is Verdict.ERROR:
        kind = error or ErrorKind.INTERNAL
        return Headline(
            f"the check could not compare eager with compiled ({kind.value} error)",
            _ERROR_NEXT.get(kind, _ERROR_NEXT[ErrorKind.INTERNAL]),
        )
    if verdict is Verdict.MATCH:
        return _unchanged(leaves)
    these = [leaf for leaf in leaves if leaf.verdict is verdict]
    changed = _changed(these)
    if verdict is Verdict.BENIGN:
        return _harmless(changed, these)
    if verdict is Verdict.PRECISION_CAST:
        return Headline(
            f"{changed}, only because compiled code kept bf16/fp16 intermediates in float32 where eager rounds them"
            " (documented)",
            "nothing to fix; set emulate_precision_casts=True where you need eager's exact bits",
        )
    if verdict is Verdict.RNG:
        return Headline(
            f"{changed}, only because compiled code draws its own random numbers (documented)",
            "nothing to fix; set fallback_random=True where the draws must agree",
        )
    if verdict is Verdict.EAGER_INACCURATE:
        return Headline(
            f"{changed}; eager's kernel is less accurate here; compiled is nearer the exact value",
            "nothing to fix in compile; if eager's error matters, it is eager's kernel to report",
        )
    structural = [s for leaf in these for s in leaf.symptoms if s.structural]
    if structural:
        what = _STRUCTURE.get(structural[0], "the structure of the result")
        names = ", ".join(leaf.name for leaf in these[:3]) + (f" and {len(these) - 3} more" if len(these) > 3 else "")
        return Headline(f"compile changed {what} in {names}", "Localize, then Minimize")
    return Headline(f"{changed}; {_who_is_right(these)}", "Localize, then Minimize")


def _unchanged(leaves: Sequence[LeafFigures]) -> Headline:
    """Every value bit-identical, but for memory nobody wrote (not "all bit-identical" then: nobody defines it)."""
    total = sum(leaf.numel for leaf in leaves)
    unwritten = sum(leaf.unwritten for leaf in leaves)
    if unwritten:
        defined = (
            f"{total - unwritten:,} values are bit-identical to eager's, and {unwritten:,}"
            if total > unwritten
            else f"all {total:,} values"
        )
        return Headline(
            f"compile changed nothing that the program defines: {defined} are uninitialized memory (never written),"
            " which no run defines",
            "nothing to do; write the memory (zeros, fill_) if those values are meant to be read",
        )
    return Headline(
        f"compile changed nothing: all {total:,} values are bit-identical to eager's",
        "nothing to do (Probes try other inputs and layouts)",
    )


def _harmless(changed: str, these: Sequence[LeafFigures]) -> Headline:
    """Benign values: within the noise allowance; never "nothing to do" where compiled is further than eager."""
    further = _further(these)
    if further is not None:
        return Headline(
            f"{changed}, within the noise allowance, but compiled is {further} further from float64 than eager",
            "look inside: Localize shows where compile first changes a value",
        )
    return Headline(
        f"{changed}, no further from float64 than eager's own rounding: harmless reordering of arithmetic",
        "nothing to do",
    )


def _changed(leaves: Sequence[LeafFigures]) -> str:
    mismatches = sum(leaf.mismatches for leaf in leaves)
    numel = sum(leaf.numel for leaf in leaves)
    largest = max((leaf.max_abs for leaf in leaves), default=0.0)
    return f"compile changed {mismatches:,} of {numel:,} values by up to {largest:.2g}"


def _who_is_right(leaves: Sequence[LeafFigures]) -> str:
    judged = [leaf for leaf in leaves if leaf.eager_ref_max is not None and leaf.compiled_ref_max is not None]
    if not judged:
        return "there is no float64 answer to compare with, and the change is beyond torch.testing's tolerances"
    eager = max(leaf.eager_ref_max or 0.0 for leaf in judged)
    compiled = max(leaf.compiled_ref_max or 0.0 for leaf in judged)
    reference = (
        "float64 (run with eager's own roundings)"
        if any(leaf.witness is Witness.FAITHFUL for leaf in judged)
        else "float64"
    )
    if compiled > 2 * eager:
        return f"eager agrees with {reference}, compiled does not"
    return f"compiled is wrong in values where eager agrees exactly with {reference}"


# compiled's error over eager's, in RMS and in the worst element, past which a benign output is not "nothing to do":
# the allowance itself (engine/judge/oracle.py) is 2x plus a noise floor; this only words the headline
FURTHER = 1.5


def _further(leaves: Sequence[LeafFigures]) -> str | None:
    """'2.4x' when compiled is clearly further from float64 than eager in some leaf (RMS and worst element alike)."""
    ratios = [
        min(leaf.compiled_ref_rms / leaf.eager_ref_rms, (leaf.compiled_ref_max or 0.0) / leaf.eager_ref_max)
        for leaf in leaves
        if leaf.compiled_ref_rms is not None and leaf.eager_ref_rms and leaf.eager_ref_max
    ]
    worst = max(ratios, default=0.0)
    return f"{worst:.2g}x" if worst >= FURTHER else None


def where_inside(node: NodeFigures) -> str:
    """'line 18, `bucket = t // STEP`: 5 where eager and float64 give 4 (36 of 192 values)': the program's words."""
    site = node.site
    where = f"line {site.line}, `{site.code}`" if getattr(site, "line", None) else f"node {node.node} ({node.op})"
    count = f"{node.mismatches:,} of {node.numel:,} values"
    w = node.worst
    if w is None:
        return f"{where} differs in {count}"
    if w.reference is not None and _agrees(w.reference, w.eager):
        values = f"{_short(w.compiled)} where eager and float64 give {_short(w.eager)}"
    elif w.reference is not None:
        values = f"{_short(w.compiled)} where eager gives {_short(w.eager)} and float64 {_short(w.reference)}"
    else:
        values = f"{_short(w.compiled)} where eager gives {_short(w.eager)}"
    return f"{where} gives {values} ({count} differ)"


def _outputs(leaves: Sequence[LeafFigures]) -> str:
    """What became of the outputs: unchanged, moved within the allowance, or changed beyond it."""
    moved = [leaf for leaf in leaves if leaf.mismatches]
    if not moved:
        return "the outputs are bit-identical all the same"
    largest = max(leaf.max_abs for leaf in moved)
    if any(leaf.verdict is Verdict.DIVERGENT for leaf in moved):
        return f"the outputs change too, by up to {largest:.2g}"
    return f"the outputs move by up to {largest:.2g}, inside the noise allowance"


def _short(value: str) -> str:
    """A value as a reader writes it: 5 for 5.0, else as printed."""
    try:
        number = float(value)
    except ValueError:
        return value
    return str(int(number)) if number.is_integer() and abs(number) < 1e15 else f"{number:.6g}"


def _agrees(reference: str, eager: str) -> bool:
    """Whether eager's value is the float64 reference's, to eager's precision (a bf16 step at most)."""
    try:
        r, e = float(reference), float(eager)
    except ValueError:
        return reference == eager
    return r == e or abs(r - e) <= 2**-8 * max(abs(e), 1e-30)
