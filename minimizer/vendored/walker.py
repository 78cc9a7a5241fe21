"""engine/child/leaves.py's leaf names for plain values and objects' attributes (see the package's docstring)."""

import collections.abc
import copy
import dataclasses
import enum
import types

import torch

# ---- vendored ----
# ---- leaf names: engine/child/leaves.py's, for containers, dataclasses, namedtuples and objects' attributes ----
_ATOMS = (bool, int, float, complex, str, bytes, type(None), torch.Size, torch.dtype, torch.device, torch.layout)
_ATOMS += (torch.memory_format, enum.Enum, range, slice, type(Ellipsis), set, frozenset)
_KEPT = (torch.nn.Module, types.FunctionType, types.BuiltinFunctionType, types.MethodType, types.ModuleType, type)
_KEPT += (torch._ops.OpOverload, torch._ops.OpOverloadPacket)


def _children(value, path):
    """(name, child) as the engine's walk names them; None for an object shared as it is (a module, a function)."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return [(f".{f.name}", getattr(value, f.name, None)) for f in dataclasses.fields(value)]
    if isinstance(value, tuple) and hasattr(value, "_fields"):
        return [(f".{name}", getattr(value, name)) for name in value._fields]
    if isinstance(value, (list, tuple)):
        return [(f"[{i}]", item) for i, item in enumerate(value)]
    if isinstance(value, dict) or (isinstance(value, collections.abc.Mapping) and not _pytree(value)):
        return [(f"[{key!r}]", value[key]) for key in value.keys()]
    if isinstance(value, collections.abc.Sequence) and not isinstance(value, (str, bytes)) and not _pytree(value):
        return [(f"[{i}]", item) for i, item in enumerate(value)]
    if isinstance(value, _KEPT) or (callable(value) and not hasattr(value, "__dict__")):
        return None
    if _pytree(value) or hasattr(value, "__next__") or type(value).__module__ == "numpy":
        raise TypeError(f"{path} is a {type(value).__qualname__}: this repro cannot name it (emit it again)")
    found = {k: v for k, v in getattr(value, "__dict__", {}).items() if not (k.startswith("__") and k.endswith("__"))}
    for slots in (getattr(klass, "__slots__", ()) for klass in type(value).__mro__):
        for slot in (slots,) if isinstance(slots, str) else slots:
            if slot not in (*found, "__dict__", "__weakref__") and hasattr(value, slot):
                found[slot] = getattr(value, slot)
    return [(f".{name}", child) for name, child in found.items()] or None


def _pytree(value):  # a pytree node the engine names by its keys: only the engine's walker names those
    node = torch.utils._pytree.SUPPORTED_NODES.get(type(value))
    return node is not None and node.flatten_with_keys_fn is not None


def _leaves(value, path, found, seen):
    """(name, tensor) for every tensor the engine's walk names inside `value`, in its order; (name, object) for
    what a copy must share."""
    if isinstance(value, (torch.Tensor, *_ATOMS)):
        return found.append((path, value)) if isinstance(value, torch.Tensor) else None
    if id(value) in seen:  # an object met before is the engine's alias (or cycle): named, not walked again
        return None
    seen[id(value)] = value
    children = _children(value, path)
    if children is None:
        return found.append((path, value))
    for name, child in children:
        _leaves(child, path + name, found, seen)


def tensors_of(value, path):
    """Every tensor inside `value`, by the engine's leaf name (`out[0]`, `out['logits']`, `out.cache.keys`)."""
    _leaves(value, path, found := [], {})
    return [(name, leaf) for name, leaf in found if isinstance(leaf, torch.Tensor)]


def map_tensors(value, fn):
    """A copy of `value` with every tensor replaced by fn(tensor) (one replacement per tensor: aliasing kept)."""
    _leaves(value, "input", found := [], {})
    memo = {}  # modules, functions and objects without attributes are shared, not copied
    for _, leaf in found:
        if id(leaf) not in memo:
            memo[id(leaf)] = fn(leaf) if isinstance(leaf, torch.Tensor) else leaf
    return copy.deepcopy(value, memo)
