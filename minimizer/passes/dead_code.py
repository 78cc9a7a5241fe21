"""Passes over the dead weight of realistic model code: unread attributes, config fields and keys, defaults.

A model file carries a config dataclass or dict of which the forward reads a few entries, attributes
set in `__init__` that nothing reads (`self.name = "residual"`), and parameters nobody passes
(`return_hidden=False`). Statement deletion removes these one oracle call at a time, and only once
nothing refers to them; these passes fold and drop them directly. Each proposes everything at once
first, then site by site; the oracle decides as always.
"""

from __future__ import annotations

import ast
import copy
from collections.abc import Iterator

from minimizer.reducer import Problem, TreeEdit, everything_then_each
from minimizer.syntax import blocks, replace_node


def _attribute_loads(tree: ast.AST) -> set[str]:
    return {n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute) and isinstance(n.ctx, ast.Load)}


def _self_assignments(tree: ast.Module) -> Iterator[tuple[list[ast.stmt], ast.Assign, str]]:
    """`self.X = ...` statements in methods, with the block that holds them."""
    for cls in (n for n in ast.walk(tree) if isinstance(n, ast.ClassDef)):
        for method in (f for f in cls.body if isinstance(f, ast.FunctionDef) and f.args.args):
            me = method.args.args[0].arg
            for block in blocks(method):
                for stmt in block:
                    if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1:
                        t = stmt.targets[0]
                        if isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and t.value.id == me:
                            yield block, stmt, t.attr


def _remove(block: list[ast.stmt], stmt: ast.stmt) -> TreeEdit:
    return lambda tree: block.remove(stmt) if stmt in block else None


def drop_unread_attributes(problem: Problem) -> None:
    """Delete `self.X = ...` where nothing in the program reads an attribute named X.

    `self.activation_name = "gelu"`, `self.calls = 0`, `self.cfg = cfg`: state a model keeps for
    logging or for code paths that did not run.
    """

    def sites(tree: ast.Module) -> list[TreeEdit]:
        read = _attribute_loads(tree)
        return [_remove(block, stmt) for block, stmt, attr in _self_assignments(tree) if attr not in read]

    everything_then_each(problem, sites)


def _dataclasses(tree: ast.Module) -> list[ast.ClassDef]:
    def is_dataclass(d: ast.expr) -> bool:
        target = d.func if isinstance(d, ast.Call) else d
        return (isinstance(target, ast.Name) and target.id == "dataclass") or (
            isinstance(target, ast.Attribute) and target.attr == "dataclass"
        )

    return [c for c in tree.body if isinstance(c, ast.ClassDef) and any(is_dataclass(d) for d in c.decorator_list)]


def _fields(cls: ast.ClassDef) -> list[ast.AnnAssign]:
    return [s for s in cls.body if isinstance(s, ast.AnnAssign) and isinstance(s.target, ast.Name)]


def _config_dicts(tree: ast.Module) -> list[ast.Dict | ast.Call]:
    """Module-level `NAME = {"key": value, ...}` and `NAME = dict(key=value, ...)`."""
    found: list[ast.Dict | ast.Call] = []
    for stmt in tree.body:
        if isinstance(stmt, ast.Assign):
            v = stmt.value
            if (
                isinstance(v, ast.Dict)
                and v.keys
                and all(isinstance(k, ast.Constant) and isinstance(k.value, str) for k in v.keys)
            ):
                found.append(v)
            elif (
                isinstance(v, ast.Call)
                and isinstance(v.func, ast.Name)
                and v.func.id == "dict"
                and not v.args
                and v.keywords
                and all(k.arg for k in v.keywords)
            ):
                found.append(v)
    return found


def _entries(d: ast.Dict | ast.Call) -> list[tuple[str, ast.expr]]:
    if isinstance(d, ast.Dict):
        return [(k.value, v) for k, v in zip(d.keys, d.values, strict=False) if isinstance(k, ast.Constant)]
    return [(k.arg, k.value) for k in d.keywords if k.arg]


def _key_reads(tree: ast.AST) -> set[str]:
    """String keys anything subscripts or `.get`s: `cfg["width"]`, `config.get("eps")`."""
    keys = {
        n.slice.value
        for n in ast.walk(tree)
        if isinstance(n, ast.Subscript) and isinstance(n.slice, ast.Constant) and isinstance(n.slice.value, str)
    }
    keys |= {
        a.value
        for n in ast.walk(tree)
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "get"
        for a in n.args[:1]
        if isinstance(a, ast.Constant) and isinstance(a.value, str)
    }
    return keys


def drop_unread_config(problem: Problem) -> None:
    """Delete dataclass fields nothing reads (and the keywords that set them), and config dict keys nothing looks up.

    A config of eleven entries of which the forward reads three becomes a config of three.
    """

    def sites(tree: ast.Module) -> list[TreeEdit]:
        read, keys = _attribute_loads(tree), _key_reads(tree)
        if any(
            isinstance(n, ast.Call)
            and isinstance(n.func, ast.Name)
            and n.func.id in ("asdict", "astuple", "vars", "fields")
            for n in ast.walk(tree)
        ):
            read = read | {
                f.target.id for c in _dataclasses(tree) for f in _fields(c) if isinstance(f.target, ast.Name)
            }
        edits: list[TreeEdit] = []
        for cls in _dataclasses(tree):
            for field in _fields(cls):
                name = field.target.id if isinstance(field.target, ast.Name) else ""
                if name not in read:
                    edits.append(_drop_field(cls, field, name))
        # a dict that is unpacked or iterated has every key read
        whole = any(
            (isinstance(n, ast.keyword) and n.arg is None)
            or (isinstance(n, ast.Attribute) and n.attr in ("items", "keys", "values"))
            for n in ast.walk(tree)
        )
        for d in _config_dicts(tree) if not whole else ():
            for key, _ in _entries(d):
                if key not in keys:
                    edits.append(_drop_key(d, key))
        return edits

    everything_then_each(problem, sites)


def _drop_field(cls: ast.ClassDef, field: ast.AnnAssign, name: str) -> TreeEdit:
    def edit(tree: ast.Module) -> None:
        if field in cls.body:
            cls.body.remove(field)
        for call in (
            n
            for n in ast.walk(tree)
            if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == cls.name
        ):
            call.keywords = [k for k in call.keywords if k.arg != name]

    return edit


def _drop_key(d: ast.Dict | ast.Call, key: str) -> TreeEdit:
    def edit(tree: ast.Module) -> None:
        if isinstance(d, ast.Dict):
            kept = [
                (k, v)
                for k, v in zip(d.keys, d.values, strict=False)
                if not (isinstance(k, ast.Constant) and k.value == key)
            ]
            d.keys, d.values = [k for k, _ in kept], [v for _, v in kept]
        else:
            d.keywords = [k for k in d.keywords if k.arg != key]

    return edit


def _constant(node: ast.expr | None) -> bool:
    """A literal worth copying to where it is read: numbers, strings, booleans, None, and tuples of them."""
    if isinstance(node, ast.Constant):
        return True
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        return isinstance(node.operand, ast.Constant)
    return isinstance(node, ast.Tuple) and all(_constant(e) for e in node.elts)


def fold_config(problem: Problem) -> None:
    """Replace a config lookup by its value: `cfg.width` and `cfg["width"]` become `16`.

    Only values the program never overrides: a dataclass field's constant default when no construction
    passes that field, a config dict's constant entry when no other dict has that key. Once folded, the
    field, key or whole config is dead and the other passes remove it.
    """

    def sites(tree: ast.Module) -> list[TreeEdit]:
        defaults: dict[str, ast.expr] = {}
        seen: dict[str, int] = {}
        classes = _dataclasses(tree)
        names = {c.name for c in classes}
        overridden = {
            k.arg
            for n in ast.walk(tree)
            if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id in names
            for k in n.keywords
        }
        positional = any(
            isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id in names and n.args
            for n in ast.walk(tree)
        )
        for cls in classes:
            for field in _fields(cls):
                name = field.target.id if isinstance(field.target, ast.Name) else ""
                seen[name] = seen.get(name, 0) + 1
                if _constant(field.value) and name not in overridden and not positional:
                    assert field.value is not None
                    defaults[name] = field.value
        keyed: dict[str, ast.expr] = {}
        for d in _config_dicts(tree):
            for key, value in _entries(d):
                seen["'" + key] = seen.get("'" + key, 0) + 1
                if _constant(value):
                    keyed[key] = value
        edits: list[TreeEdit] = []
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Attribute)
                and isinstance(node.ctx, ast.Load)
                and node.attr in defaults
                and seen[node.attr] == 1
                and _configish(node.value)
            ):
                edits.append(_fold(node, defaults[node.attr]))
            elif (
                isinstance(node, ast.Subscript)
                and isinstance(node.ctx, ast.Load)
                and isinstance(node.slice, ast.Constant)
                and isinstance(node.slice.value, str)
                and node.slice.value in keyed
                and seen["'" + node.slice.value] == 1
            ):
                edits.append(_fold(node, keyed[node.slice.value]))
        return edits

    everything_then_each(problem, sites)


def _configish(node: ast.expr) -> bool:
    """`cfg`, `config`, `self.cfg`, `self.config`: a receiver that names a config, not any object with a `.width`."""
    name = node.attr if isinstance(node, ast.Attribute) else node.id if isinstance(node, ast.Name) else ""
    return "cfg" in name.lower() or "config" in name.lower()


def _fold(node: ast.expr, value: ast.expr) -> TreeEdit:
    return lambda tree: replace_node(tree, node, copy.deepcopy(value)) and None


def inline_defaults(problem: Problem) -> None:
    """Drop a parameter with a default and use the default in its place: `return_hidden=False` nobody passes.

    `if return_hidden:` becomes `if False:`, which branch lifting and statement deletion then remove.
    A call that did pass it fails, and the oracle refuses the candidate.
    """

    def sites(tree: ast.Module) -> list[TreeEdit]:
        passed = {k.arg for n in ast.walk(tree) if isinstance(n, ast.Call) for k in n.keywords}
        edits: list[TreeEdit] = []
        for function in (n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)):
            args, defaults = function.args.args, function.args.defaults
            for arg, default in zip(args[len(args) - len(defaults) :], defaults, strict=False):
                if arg.arg not in passed and _constant(default):
                    edits.append(_inline_default(function, arg, default))
        return edits

    everything_then_each(problem, sites)


def _inline_default(function: ast.FunctionDef, arg: ast.arg, default: ast.expr) -> TreeEdit:
    def edit(tree: ast.Module) -> None:
        args = function.args
        if arg not in args.args:
            return
        index = args.args.index(arg) - (len(args.args) - len(args.defaults))
        args.args.remove(arg)
        del args.defaults[index]
        for node in [
            n for n in ast.walk(function) if isinstance(n, ast.Name) and n.id == arg.arg and isinstance(n.ctx, ast.Load)
        ]:
            replace_node(function, node, copy.deepcopy(default))

    return edit


def fold_self_constants(problem: Problem) -> None:
    """Replace `self.X` by its value where `__init__` sets it once to a literal and nothing else sets it.

    `self.bucket_seconds = 0.1` (a folded config value) then is unread state: a module holding only such
    state becomes stateless, and `inline_modules` turns it into a function.
    """

    def sites(tree: ast.Module) -> list[TreeEdit]:
        stores: dict[str, int] = {}
        for n in ast.walk(tree):
            if isinstance(n, ast.Attribute) and isinstance(n.ctx, ast.Store):
                stores[n.attr] = stores.get(n.attr, 0) + 1
        edits: list[TreeEdit] = []
        for cls in (n for n in ast.walk(tree) if isinstance(n, ast.ClassDef)):
            init = next((f for f in cls.body if isinstance(f, ast.FunctionDef) and f.name == "__init__"), None)
            if init is None:
                continue
            values = {
                s.targets[0].attr: s.value
                for s in init.body
                if isinstance(s, ast.Assign)
                and len(s.targets) == 1
                and isinstance(s.targets[0], ast.Attribute)
                and isinstance(s.targets[0].value, ast.Name)
                and s.targets[0].value.id == "self"
                and _constant(s.value)
            }
            for method in (f for f in cls.body if isinstance(f, ast.FunctionDef) and f is not init):
                for n in ast.walk(method):
                    if (
                        isinstance(n, ast.Attribute)
                        and isinstance(n.ctx, ast.Load)
                        and isinstance(n.value, ast.Name)
                        and n.value.id == "self"
                        and n.attr in values
                        and stores.get(n.attr) == 1
                    ):
                        edits.append(_fold(n, values[n.attr]))
        return edits

    everything_then_each(problem, sites)
