"""What every zoo source shares: the pattern that names a selection, the programs it writes, its errors.

A pattern is `SOURCE:[FLAVOUR][:ITEMS]`, e.g. `opinfo:bf16:add,sin`, `hf:small:gpt2,llama` or `modules:`:
the flavour is what a source varies as a whole (opinfo's dtype, hf's size, modules' training mode) and
the items pick names from its list (all of them when left out). Programs are ordinary snippets (fn +
inputs), written as files under the zoo folder so that `divergence check FILE` re-runs any job as it ran.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from app.sweep.pytorch_check import AccuracyRule, PyTorchReference


class ZooError(ValueError):
    """A zoo pattern names something unknown, or a source cannot run here (a package is missing)."""


@dataclass(frozen=True)
class Selection:
    """A parsed pattern: which source, which flavour (its default when left out), which items (() = all)."""

    source: str
    flavour: str
    items: tuple[str, ...] = ()

    @property
    def pattern(self) -> str:
        return f"{self.source}:{self.flavour}" + (f":{','.join(self.items)}" if self.items else "")


@dataclass(frozen=True)
class ZooProgram:
    """One program of a source: its file name (unique in its folder), its text, and what the sweep needs beside."""

    name: str  # the file's stem, e.g. "nn.functional.instance_norm" or "gpt2"
    source: str  # the program's text
    accuracy: AccuracyRule  # PyTorch's own check for this program's jobs
    options: Mapping[str, Any] = field(
        default_factory=dict
    )  # CheckOptions JSON it starts from (as a .toml's [options])
    info: Mapping[str, Any] = field(default_factory=dict)  # shown beside its jobs (op, dtype, PyTorch's lists, ...)
    # when the whole program ends in an error, these smaller programs (one sample each) run instead, so that
    # one bad sample does not hide the others; computed only when asked (it may import torch)
    parts: Callable[[], Sequence[ZooProgram]] | None = field(default=None, compare=False, repr=False)
    # PyTorch's own reference for its leaves, where it is not the check's fp64 one (op_db: eager on fp32-upcast inputs)
    pytorch_reference: Callable[[], PyTorchReference] | None = field(default=None, compare=False, repr=False)


@dataclass(frozen=True)
class Source:
    """A zoo source: its prefix, the flavours it takes, and how it writes the programs of a selection."""

    prefix: str
    summary: str  # one line for help texts and errors
    flavours: tuple[str, ...]  # the first is the default
    programs: Callable[[Selection], Sequence[ZooProgram]]
    needs: str = ""  # what to install when it cannot import what it needs

    def folder(self, selection: Selection) -> str:
        """Where its programs are written, under the zoo folder: one folder per source and flavour."""
        return f"{self.prefix}-{selection.flavour}"


def pick(known: Sequence[str], wanted: Sequence[str], what: str) -> list[str]:
    """`wanted` in `known`'s order, or a ZooError that names the unknown ones, close matches and the whole list."""
    unknown = [w for w in wanted if w not in known]
    if unknown:
        hints = []
        for name in unknown:
            close = difflib.get_close_matches(name, known, n=3, cutoff=0.6)
            hints.append(f"{name!r}" + (f" (did you mean {', '.join(close)}?)" if close else ""))
        listing = ", ".join(known) if len(known) <= 40 else ", ".join(known[:40]) + f", ... ({len(known)} in all)"
        raise ZooError(f"unknown {what}: {'; '.join(hints)}. The {len(known)} known: {listing}")
    order = {name: i for i, name in enumerate(known)}
    return sorted(dict.fromkeys(wanted), key=order.__getitem__)


def missing(package: str, source: str, extra: str = "zoo") -> ZooError:
    return ZooError(
        f"{source}: needs the Python package {package!r}, which is not installed here: pip install -e '.[{extra}]' "
        f"(or pip install {package})"
    )
