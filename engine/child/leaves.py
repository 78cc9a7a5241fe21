"""Find the leaves of whatever a program returns or takes: tensors, Python scalars and named other values.

Names are paths such as `out[0]['logits']`, `out.hidden` or `out.cache.layers[0].keys`, stable between
eager and compiled runs so that leaves pair up by name. Any object is walked, not only containers: a KV
cache is a plain object whose `layers` attribute holds objects whose `keys` attribute is a tensor, and a
program that returns or takes one must be checked like any other. What is neither a tensor nor a Python
scalar nor walkable (a dtype, an enum, a lock) becomes a `Value`, compared for equality and named; only an
iterator, which comparing would consume, is refused.

The walk, first rule that applies:
  1. a tensor; a Python scalar; torch.Size (as a tuple); a `Value`           -> a leaf
  2. dtype, device, layout, memory_format, enum, range, slice, Ellipsis      -> a Value, by ==
     a numpy array -> a tensor; a numpy scalar -> its Python number
  3. an object already on the path (a cycle) or met on another path (an alias) -> a Value naming the first
     path, so aliasing is compared and nothing is walked twice (tensors are leaves at every path)
  4. dataclass -> `.field` (every field, None included: a ModelOutput keeps its `out.logits` names)
  5. namedtuple -> `.field`;  list, tuple and their other subclasses -> `[i]`;  dict and subclasses -> `[key]`
  6. another registered torch pytree node -> the names its flatten_with_keys gives (`[0]`, `['k']`, `.attr`)
  7. another Mapping -> `[key]`;  another Sequence (not str/bytes), a deque -> `[i]`
  8. set, frozenset -> one Value (unordered: compared as a whole)
  9. nn.Module -> a Value of its type (its parameters and buffers are the check's `state` leaves)
 10. an iterator or generator -> UnsupportedOutput
 11. a function, method, class, module or op -> a Value of its qualified name
 12. an object with __dict__ or __slots__ -> `.attr` for every attribute (dunders skipped), in definition order
 13. anything else (an object without attributes too) -> a Value: by == where its type defines __eq__, else by
     its type alone (a lock, a handle)
"""

from __future__ import annotations

import collections
import collections.abc as abc
import copy
import dataclasses
import enum
import types
from collections.abc import Callable, Iterator
from typing import Any

import torch
import torch.utils._pytree as pytree

SCALARS = (bool, int, float, complex, str, bytes, type(None))
ATOMS = (torch.dtype, torch.device, torch.layout, torch.memory_format, enum.Enum, range, slice, type(Ellipsis))
MAX_DEPTH = 64
MAX_LEAVES = 100_000
_NAMED_HERE = (
    list,
    tuple,
    dict,
)  # pytree registers these too; their names are ours (`[0]`, `['k']`), as they always were
_CALLABLES = (
    types.FunctionType,
    types.BuiltinFunctionType,
    types.MethodType,
    types.ModuleType,
    type,
    torch._ops.OpOverload,
    torch._ops.OpOverloadPacket,
)


class UnsupportedOutput(TypeError):
    """The program returned (or took) something that cannot be compared: an iterator, or a structure too deep or
    too large."""


class UncopyableInput(TypeError):
    """An input that carries state could not be copied for each run."""


@dataclasses.dataclass(frozen=True, eq=False)
class Value:
    """A leaf that is neither a tensor nor a Python scalar: `key` is what eager's and compiled's must agree
    on (by ==), `shown` how it reads, `how` what the key stands for (equality, type, name, alias, cycle)."""

    key: Any
    shown: str
    how: str

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Value):
            return NotImplemented
        if self.how != other.how:
            return False
        try:
            return bool(self.key == other.key)
        except Exception:  # an __eq__ that raises or returns an array: fall back to how they read
            return self.shown == other.shown

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return self.shown


ABSENT = Value("<absent>", "<absent>", "absent")  # a path one side has and the other has not


def flatten(value: Any, prefix: str = "out") -> list[tuple[str, Any]]:
    """All leaves of `value`, by name, in a deterministic order."""
    walker = _Walker()
    walker.walk(value, prefix, 0)
    return walker.leaves


def layout_of(t: torch.Tensor) -> str | None:
    """The tensor's layout by name (`sparse_csr`, `sparse_coo`, ...) where not the usual strided one, else None."""
    return None if t.layout == torch.strided else str(t.layout).removeprefix("torch.")


def dense(t: torch.Tensor) -> torch.Tensor:
    """The tensor as a strided one with the same values: itself when strided, else its `to_dense()`.

    A sparse (or other non-strided) tensor has no strides and no `is_contiguous`, and the comparison reads
    elements by their bits; its values are compared in their dense form, and its layout separately, as a
    structural fact (engine/child/leaf_builder.py). Call it where a leaf is first read as numbers.
    """
    if t.layout == torch.strided:
        return t
    try:
        return t.detach().to_dense()
    except (RuntimeError, NotImplementedError, TypeError) as exc:
        raise UnsupportedOutput(
            f"a {layout_of(t)} tensor cannot be made dense to be compared ({type(exc).__name__}: {str(exc)[:200]})"
        ) from None


def tensors_of(value: Any, prefix: str) -> list[tuple[str, torch.Tensor]]:
    """The tensors anywhere inside `value` (objects' attributes included), by name."""
    return [(p, v) for p, v in flatten(value, prefix) if isinstance(v, torch.Tensor)]


class _Walker:
    def __init__(self) -> None:
        self.leaves: list[tuple[str, Any]] = []
        self.kept: list[Any] = []  # objects met as Values that a copy must share, not copy (modules, locks, functions)
        self._seen: dict[
            int, tuple[str, Any]
        ] = {}  # id -> (first path, the object: kept alive, so its id is not reused)
        self._path: set[int] = set()

    def _leaf(self, path: str, leaf: Any) -> None:
        if len(self.leaves) >= MAX_LEAVES:
            raise UnsupportedOutput(f"{path}: more than {MAX_LEAVES:,} leaves")
        self.leaves.append((path, leaf))

    def walk(self, value: Any, path: str, depth: int) -> None:
        if depth > MAX_DEPTH:
            raise UnsupportedOutput(f"{path}: nested more than {MAX_DEPTH} levels deep")
        if isinstance(value, torch.Tensor):
            return self._leaf(path, value)
        if isinstance(value, torch.Size):
            return self._leaf(path, tuple(value))
        if isinstance(value, (*SCALARS, Value)):
            return self._leaf(path, value)
        if isinstance(value, ATOMS):
            return self._leaf(path, Value(value, repr(value), "equality"))
        if type(value).__module__ == "numpy":
            import numpy as np

            if isinstance(value, np.ndarray):
                if value.dtype.kind in "biufc":
                    return self._leaf(path, torch.from_numpy(value.copy()))
                return self._leaf(path, Value(value.tolist(), repr(value)[:200], "equality"))
            if isinstance(value, np.generic):
                return self._leaf(path, value.item())
        ident = id(value)
        if ident in self._seen:
            first = self._seen[ident][0]
            if ident in self._path:
                return self._leaf(path, Value(("cycle", first), f"<cycle: back to {first}>", "cycle"))
            return self._leaf(path, Value(("alias", first), f"<same object as {first}>", "alias"))
        self._seen[ident] = (path, value)
        self._path.add(ident)
        try:
            for child_path, child in self._children(value, path):
                self.walk(child, child_path, depth + 1)
        finally:
            self._path.discard(ident)

    def _children(self, value: Any, path: str) -> Iterator[tuple[str, Any]]:
        kind = type(value)
        if dataclasses.is_dataclass(value) and not isinstance(value, type):
            for f in dataclasses.fields(value):
                yield f"{path}.{f.name}", getattr(value, f.name, None)
            return
        if isinstance(value, tuple) and hasattr(value, "_fields"):
            for name in value._fields:
                yield f"{path}.{name}", getattr(value, name)
            return
        if isinstance(value, (list, tuple)):
            for i, item in enumerate(value):
                yield f"{path}[{i}]", item
            return
        if isinstance(value, dict):
            for key in value:
                yield f"{path}[{key!r}]", value[key]
            return
        node = pytree.SUPPORTED_NODES.get(kind)
        if node is not None and kind not in _NAMED_HERE and node.flatten_with_keys_fn is not None:
            children, _ = node.flatten_with_keys_fn(value)
            for key, child in children:
                yield f"{path}{key}", child  # a KeyEntry reads as `[0]`, `['k']` or `.attr`
            return
        if isinstance(value, abc.Mapping):
            for key in value.keys():
                yield f"{path}[{key!r}]", value[key]
            return
        if isinstance(value, collections.deque) or (
            isinstance(value, abc.Sequence) and not isinstance(value, (str, bytes))
        ):
            for i, item in enumerate(value):
                yield f"{path}[{i}]", item
            return
        yield from self._object_children(value, path)

    def _object_children(self, value: Any, path: str) -> Iterator[tuple[str, Any]]:
        """What is not a container: a set (compared as a whole), a module, a function or a plain object (kept, as
        what a copy must share), an iterator (refused), else an object's attributes."""
        kind = type(value)
        if isinstance(value, (set, frozenset)):
            shown = repr(sorted(map(repr, value)))
            key = frozenset(value) if all(isinstance(v, abc.Hashable) for v in value) else shown
            yield path, Value(key, shown[:200], "equality")
            return
        if isinstance(value, torch.nn.Module):
            self.kept.append(value)
            yield path, Value(_qualname(kind), f"<{_qualname(kind)} module>", "type")
            return
        if isinstance(value, (types.GeneratorType, types.AsyncGeneratorType)) or (
            hasattr(value, "__next__") and hasattr(value, "__iter__")
        ):
            raise UnsupportedOutput(
                f"{path} is a {kind.__name__}; return tensors (e.g. a tuple or list), not an iterator"
            )
        if isinstance(value, _CALLABLES) or (callable(value) and not hasattr(value, "__dict__")):
            self.kept.append(value)
            name = getattr(value, "__qualname__", None) or getattr(value, "__name__", None) or repr(value)
            yield path, Value(f"{getattr(value, '__module__', '')}.{name}", f"<{name}>", "name")
            return
        attributes = _attributes(value)
        if attributes:
            for name, child in attributes:
                yield f"{path}.{name}", child
            return
        if kind.__eq__ is object.__eq__:
            self.kept.append(value)
            yield path, Value(_qualname(kind), f"<{_qualname(kind)} object>", "type")
        else:
            yield path, Value(value, repr(value)[:200], "equality")


def _qualname(kind: type) -> str:
    return f"{kind.__module__}.{kind.__qualname__}"


def _attributes(value: Any) -> list[tuple[str, Any]] | None:
    """Instance attributes in definition order (__dict__, then __slots__ up the MRO); None without either."""
    found: dict[str, Any] = {}
    own = getattr(value, "__dict__", None)
    if isinstance(own, dict):
        for name, child in own.items():
            if not (name.startswith("__") and name.endswith("__")):
                found[name] = child
    has_slots = False
    for klass in type(value).__mro__:
        slots = getattr(klass, "__slots__", ())
        for slot in (slots,) if isinstance(slots, str) else slots:
            has_slots = True
            if slot in ("__dict__", "__weakref__") or slot in found:
                continue
            try:
                found[slot] = getattr(value, slot)
            except AttributeError:  # a slot never assigned
                continue
    if not isinstance(own, dict) and not has_slots:
        return None
    return list(found.items())


def map_tensors(value: Any, fn: Callable[[torch.Tensor], torch.Tensor]) -> Any:
    """A copy of `value` with every tensor replaced by fn(tensor), whatever holds it.

    One tensor object reached twice gets one replacement, so aliasing is kept. Objects are copied
    (copy.deepcopy, with the replacements in its memo), so an input that carries state, such as a cache the
    program extends, is a fresh object in every run: eager's update cannot leak into compiled's. Modules,
    functions and opaque objects (what the walk names by type) are shared, not copied.
    """
    walker = _Walker()
    walker.walk(value, "input", 0)
    memo: dict[int, Any] = {}
    for _, leaf in walker.leaves:
        if isinstance(leaf, torch.Tensor) and id(leaf) not in memo:
            memo[id(leaf)] = fn(leaf)
    if not _has_objects(value):
        return _rebuild_plain(value, memo)
    for kept in walker.kept:
        memo[id(kept)] = kept
    try:
        return copy.deepcopy(value, memo)
    except Exception as exc:
        raise UncopyableInput(
            f"a {_qualname(type(value))} cannot be copied for each run ({type(exc).__name__}: {str(exc)[:200]}); eager "
            "and compiled must each get their own copy of an input that carries state"
        ) from None


def _has_objects(value: Any) -> bool:
    """Anything beyond tensors, scalars and the builtin containers (which need no deepcopy)."""
    if isinstance(value, (torch.Tensor, *SCALARS)):
        return False
    if type(value) in (list, tuple):
        return any(_has_objects(v) for v in value)
    if type(value) is dict:
        return any(_has_objects(v) for v in value.values())
    return True


def _rebuild_plain(value: Any, memo: dict[int, Any]) -> Any:
    if isinstance(value, torch.Tensor):
        return memo[id(value)]
    if type(value) in (list, tuple):
        return type(value)(_rebuild_plain(v, memo) for v in value)
    if type(value) is dict:
        return {k: _rebuild_plain(v, memo) for k, v in value.items()}
    return value
