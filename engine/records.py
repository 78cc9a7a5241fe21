"""One serializer for every record the project stores: a check's result, a localization and its steps, probes,
a sweep's jobs and bugs, the app's run store, a minimization's outcome.

The records are the frozen dataclasses beside their concepts (engine/result.py, engine/nodes.py, ...); this
module turns one into JSON and back from the dataclass's own type hints, so a new field needs no code here and no
record writes its own `to_json`. The library is pydantic (its `TypeAdapter` over plain dataclasses), chosen on our
records (benchmarks/serialization.py; figures and the comparison with msgspec and cattrs in
docs/figures/serialization.md) for what stored runs need:
- non-finite floats survive: written as "NaN", "Infinity", "-Infinity" (a leaf's `max_abs` is inf where one side
  is NaN); msgspec writes null there and cannot read it back into a float;
- schema evolution: a key the record does not know is ignored (a file of a later version opens), a key it lacks
  takes the field's default (a file of an earlier version opens), and old spellings are read (lists for tuples,
  "nan"/"inf" for floats, a number for a string); a renamed field is one
  `Annotated[..., Field(validation_alias=AliasChoices(new, old))]`;
- speed: its Rust core writes and reads our largest results faster than the hand-written code it replaced.
Its cost, importing pydantic and building a record's schema, is paid once per process on first use, not on import.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from pathlib import Path
from typing import Any, TypeVar

R = TypeVar("R")


class RecordError(ValueError):
    """Data that cannot be read as its record: where (`where`), and what is wrong (`detail`)."""

    def __init__(self, where: str, detail: str) -> None:
        super().__init__(f"{where}: {detail}")
        self.where, self.detail = where, detail


@functools.cache
def _adapter(kind: type) -> Any:
    from pydantic import ConfigDict, TypeAdapter  # here, not at the top: importing the engine stays light

    # the record's own config (a plain dataclass has none): non-finite floats as strings, not null
    kind.__pydantic_config__ = ConfigDict(ser_json_inf_nan="strings")  # type: ignore[attr-defined]
    return TypeAdapter(kind)


def to_json(record: Any) -> dict[str, Any]:
    """The record as JSON values (dicts, lists, strings, numbers): what its file holds."""
    return _adapter(type(record)).dump_python(record, mode="json")  # type: ignore[no-any-return]


def dumps(record: Any, *, indent: int | None = None) -> str:
    return _adapter(type(record)).dump_json(record, indent=indent).decode()  # type: ignore[no-any-return]


def from_json(kind: type[R], data: Mapping[str, Any] | str | bytes, *, where: str = "") -> R:
    """A `kind` from its JSON (parsed or as text). Unknown keys are ignored; a value that cannot be read as its
    field's type raises RecordError naming the field (and `where`, e.g. the file)."""
    from pydantic import ValidationError

    adapter = _adapter(kind)
    try:
        if isinstance(data, (str, bytes)):
            return adapter.validate_json(data)  # type: ignore[no-any-return]
        return adapter.validate_python(data)  # type: ignore[no-any-return]
    except ValidationError as exc:
        raise RecordError(where or kind.__name__, describe(exc)) from None


def describe(exc: Any) -> str:
    """A pydantic ValidationError as `field.path: what is wrong (got the value)`, one per problem; a record's own
    check (a ValueError its __post_init__ raises) in its own words."""
    lines = []
    for error in exc.errors(include_url=False):
        own = error.get("ctx", {}).get("error")
        if isinstance(own, ValueError) and error["type"] == "value_error" and not error["loc"]:
            lines.append(str(own))
            continue
        place = ".".join(str(p) for p in error["loc"]) or "the record"
        lines.append(f"{place}: {error['msg']} (got {repr(error.get('input'))[:80]})")
    return "; ".join(lines)


def save(record: Any, path: Path, *, indent: int | None = 1) -> Path:
    """Write the record's JSON to `path` atomically: a reader never sees half a file."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(dumps(record, indent=indent))
    tmp.replace(path)
    return path


def load(kind: type[R], path: Path) -> R:
    """Read a `kind` from its file; RecordError names the file when it is not one."""
    return from_json(kind, Path(path).read_bytes(), where=str(path))
