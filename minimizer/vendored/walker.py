"""engine/child/leaves.py's leaf names for plain values (see the package's docstring); a repro carries the rest."""

import copy
import dataclasses

import torch

# ---- vendored ----
# ---- leaf names: engine/child/leaves.py's, for tensors, tuples, lists, dicts, namedtuples and dataclasses ----
_ATOMS = (bool, int, float, complex, str, bytes, type(None), torch.Size, torch.dtype, torch.device, torch.nn.Module)


def _leaves(value, path, found=None, seen=None):
    """(name, tensor or module) for everything the engine's walk names inside `value`, in its order."""
    found, seen = [] if found is None else found, {} if seen is None else seen
    if isinstance(value, (torch.Tensor, *_ATOMS)):
        return found + [(path, value)] if isinstance(value, (torch.Tensor, torch.nn.Module)) else found
    if id(value) in seen:  # an object met before is the engine's alias (or cycle): named, not walked again
        return found
    seen[id(value)] = value
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        children = [(f".{f.name}", getattr(value, f.name, None)) for f in dataclasses.fields(value)]
    elif isinstance(value, tuple) and hasattr(value, "_fields"):
        children = [(f".{name}", getattr(value, name)) for name in value._fields]
    elif isinstance(value, (list, tuple)):
        children = [(f"[{i}]", item) for i, item in enumerate(value)]
    elif isinstance(value, dict):
        children = [(f"[{key!r}]", item) for key, item in value.items()]
    else:
        raise TypeError(f"{path} is a {type(value).__qualname__}: this repro names plain values only (emit it again)")
    for name, child in children:
        found = _leaves(child, path + name, found, seen)
    return found


def tensors_of(value, path):
    """Every tensor inside `value`, by the engine's leaf name (`out[0]`, `out['logits']`, `out.hidden`)."""
    return [(name, leaf) for name, leaf in _leaves(value, path) if isinstance(leaf, torch.Tensor)]


def map_tensors(value, fn):
    """A copy of `value` with every tensor replaced by fn(tensor) (one replacement per tensor: aliasing kept)."""
    memo = {}  # modules are shared, not copied
    for _, leaf in _leaves(value, "input"):
        if id(leaf) not in memo:
            memo[id(leaf)] = fn(leaf) if isinstance(leaf, torch.Tensor) else leaf
    return copy.deepcopy(value, memo)
