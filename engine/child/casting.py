"""Moving a program between devices and dtypes, copying inputs, and the float64 copy of a program.

Runs inside the worker. A "program" is a callable: an nn.Module, a bound method of one, or a plain
function whose globals or closure hold modules.
"""

from __future__ import annotations

import copy
import types
from collections.abc import Callable
from typing import Any

import torch

from engine.child.leaves import map_tensors

_FP64 = {torch.complex64: torch.complex128, torch.complex32: torch.complex128}


def reachable_modules(fn: Callable[..., Any]) -> list[tuple[str, torch.nn.Module]]:
    """The modules whose state a call of fn can change, with a label for each."""
    if isinstance(fn, torch.nn.Module):
        return [("self", fn)]
    owner = getattr(fn, "__self__", None)
    if isinstance(owner, torch.nn.Module):
        return [("self", owner)]
    func = getattr(fn, "__func__", fn)
    found: dict[int, tuple[str, torch.nn.Module]] = {}
    code = getattr(func, "__code__", None)
    if code is not None:
        glob = getattr(func, "__globals__", {})
        for name in code.co_names:
            value = glob.get(name)
            if isinstance(value, torch.nn.Module):
                found.setdefault(id(value), (name, value))
        for name, cell in zip(code.co_freevars, getattr(func, "__closure__", None) or (), strict=False):
            try:
                value = cell.cell_contents
            except ValueError:  # an empty cell
                continue
            if isinstance(value, torch.nn.Module):
                found.setdefault(id(value), (name, value))
    return list(found.values())


_WALK_DEPTH = 6  # helpers calling helpers, objects holding objects: deeper is rarely a program's own weight
_WALK_OBJECTS = 10_000


def reachable_tensors(fn: Callable[..., Any]) -> list[torch.Tensor]:
    """Floating tensors a call of fn can read that are no module's parameter or buffer: module-level globals, closure
    cells, plain attributes of modules and of plain objects, reached through the functions and methods fn's code
    names. The fp64 reference casts them as it casts a module's weights (a bf16 conv whose weight is a global
    otherwise meets a float64 input: "expected scalar type Double but found BFloat16")."""
    found: dict[int, torch.Tensor] = {}
    seen: set[int] = set()
    owned: set[int] = set()

    def visit(value: Any, depth: int) -> None:
        if depth > _WALK_DEPTH or id(value) in seen or len(seen) > _WALK_OBJECTS:
            return
        seen.add(id(value))
        if isinstance(value, torch.Tensor):
            if value.is_floating_point() or value.is_complex():
                found.setdefault(id(value), value)
        elif isinstance(value, torch.nn.Module):
            for module in value.modules():
                seen.add(id(module))
                owned.update(id(t) for t in [*module.parameters(recurse=False), *module.buffers(recurse=False)])
                for attribute in vars(module).values():  # plain attributes: `self.table = torch.tensor(...)`
                    if not isinstance(attribute, (dict, torch.nn.Module)):
                        visit(attribute, depth + 1)
                for cls in type(module).__mro__:
                    if cls.__module__.startswith("torch."):
                        break
                    for member in vars(cls).values():
                        visit(getattr(member, "__func__", member), depth + 1)
        elif isinstance(value, types.MethodType):
            visit(value.__func__, depth + 1)
            visit(value.__self__, depth + 1)
        elif isinstance(value, types.FunctionType):
            _visit_code(value.__code__, value.__globals__, visit, depth)
            for cell in value.__closure__ or ():
                try:
                    visit(cell.cell_contents, depth + 1)
                except ValueError:  # an empty cell
                    pass
        elif isinstance(value, (list, tuple, set, frozenset)):
            for item in value:
                visit(item, depth + 1)
        elif isinstance(value, dict):
            for item in value.values():
                visit(item, depth + 1)
        elif not isinstance(value, (type, types.ModuleType, str, bytes, int, float, complex, bool)) and hasattr(
            value, "__dict__"
        ):
            visit(vars(value), depth + 1)
            call = vars(type(value)).get("__call__")
            if isinstance(call, types.FunctionType):
                visit(call, depth + 1)

    visit(fn, 0)
    return [t for ident, t in found.items() if ident not in owned]


def _visit_code(code: types.CodeType, globals_: dict[str, Any], visit: Callable[[Any, int], None], depth: int) -> None:
    """The globals a code object (and the functions and classes defined inside it) names."""
    for name in code.co_names:
        if name in globals_:
            visit(globals_[name], depth + 1)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            _visit_code(const, globals_, visit, depth)


def module_state(modules: list[tuple[str, torch.nn.Module]]) -> dict[str, torch.Tensor]:
    """Every parameter and buffer, by `label.name`, as it is now (not a copy)."""
    state: dict[str, torch.Tensor] = {}
    for label, module in modules:
        for name, t in [*module.named_parameters(), *module.named_buffers()]:
            state[f"{label}.{name}"] = t
    return state


def clone_tree(value: Any) -> Any:
    """Deep-clone every tensor, keeping sizes, strides, storage offsets and aliasing between inputs; objects
    that hold tensors (a cache) are copied too (leaves.map_tensors)."""
    return _storage_preserving(value, lambda flat: flat.clone(), keep_grad=True)


def fp64_tree(value: Any) -> Any:
    """The inputs as the float64 reference gets them: floating tensors cast to float64 (integers widened as
    to_fp64_tensor does), keeping sizes, strides, storage offsets and aliasing. Two arguments that are views of one
    storage stay views of one float64 storage, so a write through one is seen through the other as in eager
    (pytorch#139789's overlapping windows); cast one by one, each would be a copy of its own."""
    return _storage_preserving(value, to_fp64_tensor, keep_grad=False)


def _storage_preserving(value: Any, convert: Callable[[torch.Tensor], torch.Tensor], *, keep_grad: bool) -> Any:
    """Every tensor through `convert`, applied once per storage (to the whole of it, flat), each tensor then the same
    view of the converted storage. Where views of one storage differ in dtype (a dtype view) that cannot hold, and
    the later one gets a storage of its own. `keep_grad`: a leaf that requires grad still does."""
    storages: dict[tuple[str, int], tuple[torch.dtype, torch.Tensor]] = {}

    def one(t: torch.Tensor) -> torch.Tensor:
        base = t.detach()
        if base.layout != torch.strided or base.is_sparse or base.numel() == 0:
            return convert(base).requires_grad_(keep_grad and t.requires_grad and t.is_leaf)
        key = (str(base.device), base.untyped_storage().data_ptr())
        found = storages.get(key)
        if found is None or found[0] != base.dtype:
            extent = base.untyped_storage().nbytes() // base.element_size()
            with torch.no_grad():
                found = (base.dtype, convert(torch.as_strided(base, (extent,), (1,), 0)))
            storages[key] = found
        out = found[1].as_strided(base.size(), base.stride(), base.storage_offset())
        return out.requires_grad_() if keep_grad and t.is_leaf and t.requires_grad else out

    return map_tensors(value, one)


def move(value: Any, device: str, dtype: torch.dtype | None) -> Any:
    """Inputs onto the device, floating ones cast to dtype when given."""

    def convert(t: torch.Tensor) -> torch.Tensor:
        target = dtype if dtype is not None and t.is_floating_point() else t.dtype
        if t.device.type == device and t.dtype == target:
            return t
        moved = t.detach().to(device=device, dtype=target)
        return moved.requires_grad_(t.requires_grad) if t.is_leaf and moved.is_floating_point() else moved

    return map_tensors(value, convert)


def move_program(fn: Callable[..., Any], device: str, dtype: torch.dtype | None) -> None:
    """Move the program's modules in place (floating parameters cast to dtype when given)."""
    for _, module in reachable_modules(fn):
        module.to(device=device)
        if dtype is not None:
            module.to(dtype=dtype)


def to_fp64_tensor(t: torch.Tensor) -> torch.Tensor:
    if t.is_floating_point():
        return t.detach().to(torch.float64)
    if t.dtype in _FP64:
        return t.detach().to(_FP64[t.dtype])
    return t.detach().clone()


def fp64_program(fn: Callable[..., Any]) -> Callable[..., Any]:
    """A copy of the program whose modules compute in float64; the original is untouched.

    It costs a float64 copy of the modules (and, for a moment, one in their own dtype): the reference takes
    it only for --backward, or where engine/child/fp64.py's cast-as-used run fails (engine/child/reference.py).
    """
    if isinstance(fn, torch.nn.Module):
        return copy.deepcopy(fn).double()
    owner = getattr(fn, "__self__", None)
    if isinstance(owner, torch.nn.Module):
        return types.MethodType(fn.__func__, copy.deepcopy(owner).double())  # type: ignore[attr-defined]
    if not isinstance(fn, types.FunctionType):
        return fn
    modules = {id(m): copy.deepcopy(m).double() for _, m in reachable_modules(fn)}
    if not modules:
        return fn
    new_globals = dict(fn.__globals__)
    for name in fn.__code__.co_names:
        value = new_globals.get(name)
        if isinstance(value, torch.nn.Module):
            new_globals[name] = modules[id(value)]
    closure = None
    if fn.__closure__:
        cells = []
        for cell in fn.__closure__:
            try:
                value = cell.cell_contents
            except ValueError:
                cells.append(cell)
                continue
            cells.append(types.CellType(modules[id(value)]) if isinstance(value, torch.nn.Module) else cell)
        closure = tuple(cells)
    copied = types.FunctionType(fn.__code__, new_globals, fn.__name__, fn.__defaults__, closure)
    copied.__kwdefaults__ = fn.__kwdefaults__
    return copied
