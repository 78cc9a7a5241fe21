"""Which of a check's leaves are the outputs that matter, and in what order a reader meets them.

A transformers model returns its logits beside a cache of a dozen leaves: key and value tensors, and a device, a
flag, a layer count, `None`s. The verdict judges them all alike, and a view that listed them in that order opened
on a cache tensor whose only difference is its memory layout, with ten rows of trivia around the logits. Here:

- a **value** leaf is a tensor whose values are judged (an output, a mutated input, a gradient, module state);
- a **layout-only** leaf differs in its strides alone: its values are equal or within rounding noise;
- **trivia** are non-tensor values and one-element flags or counts that match (a device, `is_initialized`, `None`).

Value leaves lead (outputs first), layout-only ones follow, trivia fold away; leaves the user named as the ones
that matter (`CheckOptions.focus`, or later in the app: `save_focus`, kept in the run's directory) lead them all.
Caller side, pure: reads a CheckResult's leaves.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from enum import Enum
from pathlib import Path

from engine.judge.verdicts import LeafKind, Symptom, Verdict
from engine.result import CheckResult, LeafResult

FOCUS_FILE = "focus.json"  # in a run's directory: the outputs the user said matter, set after the run
_KIND_ORDER = {LeafKind.OUTPUT: 0, LeafKind.MUTATED_INPUT: 1, LeafKind.GRADIENT: 2, LeafKind.STATE: 3}


class Role(str, Enum):
    VALUE = "value"
    LAYOUT_ONLY = "layout-only"
    TRIVIA = "trivia"


_FLAG_DTYPES = ("bool", "int8", "int16", "int32", "int64", "uint8")


def role(leaf: LeafResult) -> Role:
    if leaf.verdict is Verdict.MATCH and (
        leaf.shape is None or (leaf.numel <= 1 and (leaf.dtype or "").replace("torch.", "") in _FLAG_DTYPES)
    ):  # a device, a flag, a count, None: nothing to look at when it matches
        return Role.TRIVIA
    if leaf.shape is None:
        return Role.VALUE
    structural = {s for s in leaf.symptoms if s.structural}
    if structural == {Symptom.STRIDE} and values_verdict(leaf) is not Verdict.DIVERGENT:
        return Role.LAYOUT_ONLY
    return Role.VALUE


def values_verdict(leaf: LeafResult) -> Verdict:
    """The verdict of a leaf's values alone: a stride difference makes the leaf divergent whatever its values are.
    Runs before `LeafResult.values_verdict` was kept: match where the sentence says nothing of the values, else
    unknown, so the leaf's own verdict."""
    if leaf.values_verdict is not None:
        return leaf.values_verdict
    if not any(s.structural for s in leaf.symptoms):
        return leaf.verdict
    return Verdict.MATCH if "; values: " not in leaf.explanation else leaf.verdict


def focused(name: str, focus: Iterable[str]) -> bool:
    """A leaf matters when the user named it or a prefix of it (`out.cache` names every cache leaf)."""
    return any(name == f or name.startswith(f + ".") or name.startswith(f + "[") for f in focus)


def ordered(leaves: Sequence[LeafResult], focus: Iterable[str] = ()) -> tuple[LeafResult, ...]:
    """Focused leaves, then values (outputs first), then layout-only leaves, then trivia; each in the check's order."""
    focus = tuple(focus)
    rank = {Role.VALUE: 1, Role.LAYOUT_ONLY: 2, Role.TRIVIA: 3}
    index = {id(leaf): i for i, leaf in enumerate(leaves)}
    return tuple(
        sorted(
            leaves,
            key=lambda leaf: (
                0 if focused(leaf.name, focus) else rank[role(leaf)],
                _KIND_ORDER.get(leaf.kind, 4),
                index[id(leaf)],
            ),
        )
    )


def first_to_show(leaves: Sequence[LeafResult], focus: Iterable[str] = ()) -> LeafResult | None:
    """The leaf a view opens on: the first focused one, else the most severe value leaf (outputs before the rest)."""
    focus = tuple(focus)
    chosen = [leaf for leaf in leaves if focused(leaf.name, focus)]
    if chosen:
        return chosen[0]
    values = [leaf for leaf in leaves if role(leaf) is Role.VALUE and leaf.shape is not None]
    if not values:
        return max(leaves, key=lambda leaf: (leaf.verdict.severity, leaf.max_ulp), default=None)
    return max(values, key=lambda leaf: (leaf.verdict.severity, -_KIND_ORDER.get(leaf.kind, 4), -values.index(leaf)))


def summary(leaves: Sequence[LeafResult], focus: Iterable[str] = ()) -> tuple[str, str]:
    """(what the outputs that matter say, what the layout-only leaves say), each one line, '' where there is none."""
    focus = tuple(focus)
    chosen = [leaf for leaf in leaves if focused(leaf.name, focus)] or [
        leaf for leaf in leaves if role(leaf) is Role.VALUE and leaf.kind is LeafKind.OUTPUT and leaf.shape is not None
    ]
    lead = ""
    if chosen:
        words = "; ".join(f"`{leaf.name}` {_verdict_words(leaf)}" for leaf in chosen[:6])
        more = f" and {len(chosen) - 6} more" if len(chosen) > 6 else ""
        lead = f"{'Outputs you marked' if focus else 'Value outputs'}: {words}{more}"
    layout = [leaf for leaf in leaves if role(leaf) is Role.LAYOUT_ONLY and not focused(leaf.name, focus)]
    said = ""
    if layout:
        values = sorted({values_verdict(leaf).value for leaf in layout})
        names = ", ".join(f"`{leaf.name}`" for leaf in layout[:3]) + (
            f" and {len(layout) - 3} more" if len(layout) > 3 else ""
        )
        said = f"Layout only: {len(layout)} tensor(s) ({names}) have other strides, their values {' or '.join(values)}"
    return lead, said


def layout_only_sentence(leaves: Sequence[LeafResult], focus: Iterable[str] = ()) -> str | None:
    """Where every divergent leaf differs in its strides alone: the headline in those words, the value outputs'
    verdicts after it ("compile changed only the memory layout of 4 tensors ...; value outputs: `out.logits`
    precision-cast"). None when some leaf's values diverge."""
    divergent = [leaf for leaf in leaves if leaf.verdict is Verdict.DIVERGENT]
    if not divergent or any(role(leaf) is not Role.LAYOUT_ONLY for leaf in divergent):
        return None
    values = sorted({values_verdict(leaf).value for leaf in divergent})
    names = ", ".join(f"`{leaf.name}`" for leaf in divergent[:2]) + (
        f" and {len(divergent) - 2} more" if len(divergent) > 2 else ""
    )
    lead, _ = summary(leaves, focus)
    after = f"; {lead[0].lower() + lead[1:]}" if lead else ""
    return (
        f"compile changed only the memory layout of {len(divergent)} tensor(s) ({names}: other strides, their values "
        f"{' or '.join(values)}){after}"
    )


def _verdict_words(leaf: LeafResult) -> str:
    if role(leaf) is Role.LAYOUT_ONLY:
        return f"layout only (values {values_verdict(leaf).value})"
    return leaf.verdict.value


def load_focus(result: CheckResult) -> tuple[str, ...]:
    """The outputs that matter for a stored run: what the user set after it ran, else what it was checked with."""
    if result.run_dir is not None:
        path = Path(result.run_dir) / FOCUS_FILE
        try:
            data = json.loads(path.read_text())
            if isinstance(data, list) and all(isinstance(x, str) for x in data):
                return tuple(data)
        except (OSError, ValueError):
            pass
    return tuple(result.options.focus)


def save_focus(run_dir: str | Path, names: Iterable[str]) -> None:
    """Keep the outputs that matter with a run (its directory), so every later view of it leads with them."""
    path = Path(run_dir) / FOCUS_FILE
    path.write_text(json.dumps([str(n) for n in names]))
