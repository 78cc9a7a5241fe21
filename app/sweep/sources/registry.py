"""The zoo sources, in one plain list, and the parsing of a pattern that names one of them."""

from __future__ import annotations

from app.sweep.sources import chains, hf, modules, opinfo
from app.sweep.sources.base import Selection, Source, ZooError

SOURCES: tuple[Source, ...] = (hf.SOURCE, opinfo.SOURCE, modules.SOURCE, chains.SOURCE)


def source(prefix: str) -> Source:
    for s in SOURCES:
        if s.prefix == prefix:
            return s
    raise ZooError(f"no zoo source {prefix!r}; the sources are " + "; ".join(s.summary for s in SOURCES))


def is_zoo(pattern: str) -> bool:
    """A sweep PATH that names a zoo source (`hf:`, `opinfo:bf16:add`), not a file, directory or glob."""
    prefix, colon, _ = pattern.partition(":")
    return bool(colon) and any(s.prefix == prefix for s in SOURCES)


def parse(pattern: str) -> tuple[Source, Selection]:
    """`SOURCE:[FLAVOUR][:ITEM,...]` -> the source and what it selects (its default flavour where left out)."""
    prefix, _, rest = pattern.partition(":")
    found = source(prefix)
    flavour, _, items = rest.partition(":")
    flavour = flavour.strip() or found.flavours[0]
    if flavour not in found.flavours:
        raise ZooError(
            f"{pattern}: {prefix}: takes {', '.join(found.flavours)} (default {found.flavours[0]}), not {flavour!r};"
            f" {found.summary}"
        )
    names = tuple(i.strip() for i in items.split(",") if i.strip())
    return found, Selection(prefix, flavour, names)
