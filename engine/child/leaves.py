"""Flatten whatever a program returns into named leaves: tensors and Python scalars.

Names are paths such as `out[0]['logits']` or `out.hidden`, stable between eager and compiled runs so
that leaves pair up by name.
"""

from __future__ import annotations

import dataclasses
import types
from typing import Any, Iterator

import torch

SCALARS = (bool, int, float, complex, str, bytes, type(None))


class UnsupportedOutput(TypeError):
    """The program returned something that cannot be compared (a generator, an arbitrary object)."""


def flatten(value: Any, prefix: str = "out") -> list[tuple[str, Any]]:
    """All leaves of a nested output, in a deterministic order."""
    return list(_walk(value, prefix, depth=0))


def _walk(value: Any, path: str, depth: int) -> Iterator[tuple[str, Any]]:
    if depth > 32:
        raise UnsupportedOutput(f"{path}: output nested more than 32 levels deep")
    if isinstance(value, torch.Tensor):
        yield path, value
    elif isinstance(value, SCALARS):
        yield path, value
    elif isinstance(value, torch.Size):
        yield path, tuple(value)
    elif dataclasses.is_dataclass(value) and not isinstance(value, type):
        for f in dataclasses.fields(value):
            yield from _walk(getattr(value, f.name), f"{path}.{f.name}", depth + 1)
    elif isinstance(value, tuple) and hasattr(value, "_fields"):  # namedtuple
        for name in value._fields:
            yield from _walk(getattr(value, name), f"{path}.{name}", depth + 1)
    elif isinstance(value, (tuple, list)):
        for i, item in enumerate(value):
            yield from _walk(item, f"{path}[{i}]", depth + 1)
    elif isinstance(value, dict):
        for key in value:
            yield from _walk(value[key], f"{path}[{key!r}]", depth + 1)
    elif hasattr(value, "to_tuple") and hasattr(value, "keys"):  # transformers' ModelOutput
        for key in value.keys():
            yield from _walk(value[key], f"{path}.{key}", depth + 1)
    elif isinstance(value, (types.GeneratorType, types.AsyncGeneratorType)) or hasattr(value, "__next__"):
        raise UnsupportedOutput(f"{path} is a {type(value).__name__}; return tensors (e.g. a tuple or list), not an iterator")
    else:
        raise UnsupportedOutput(
            f"{path} is a {type(value).__module__}.{type(value).__qualname__}; outputs must be tensors, Python scalars, "
            "or tuples/lists/dicts/dataclasses of them"
        )


def map_tensors(value: Any, fn: Any) -> Any:
    """Rebuild a nested structure with fn applied to every tensor (used for cloning and casting inputs)."""
    if isinstance(value, torch.Tensor):
        return fn(value)
    if isinstance(value, tuple) and hasattr(value, "_fields"):
        return type(value)(*(map_tensors(v, fn) for v in value))
    if isinstance(value, (tuple, list)):
        return type(value)(map_tensors(v, fn) for v in value)
    if isinstance(value, dict):
        return type(value)((k, map_tensors(v, fn)) for k, v in value.items())
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.replace(value, **{f.name: map_tensors(getattr(value, f.name), fn) for f in dataclasses.fields(value) if f.init})
    return value


def tensors_of(value: Any, prefix: str) -> list[tuple[str, torch.Tensor]]:
    """The tensors inside a nested input structure, ignoring everything else."""
    found: list[tuple[str, torch.Tensor]] = []

    def visit(v: Any, path: str) -> None:
        if isinstance(v, torch.Tensor):
            found.append((path, v))
        elif isinstance(v, (tuple, list)):
            for i, item in enumerate(v):
                visit(item, f"{path}[{i}]")
        elif isinstance(v, dict):
            for k, item in v.items():
                visit(item, f"{path}[{k!r}]")
        elif dataclasses.is_dataclass(v) and not isinstance(v, type):
            for f in dataclasses.fields(v):
                visit(getattr(v, f.name), f"{path}.{f.name}")

    visit(value, prefix)
    return found
