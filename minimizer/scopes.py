"""What a candidate reads that nothing binds by then: the static check that spares the worker a certain failure.

Deleting a statement the rest still reads is the commonest way a candidate fails to run: `x = self.embed(images)`
gone while `x = layer(x)` still reads it (the module-wide name check passes: `x` is bound elsewhere), or
`self.heads = cfg.heads` gone while `forward` still reads `self.heads`. Each such candidate costs the worker a full
check (a compile) to end in a NameError or AttributeError. Two checks catch them without running anything:

- names, by scope and order (`unbound_reads`): inside a function, a local read before any statement binds it (the
  first iteration of a loop included), or a name no enclosing scope, module or builtin binds. Branches count as
  taken (a name bound in one arm of an `if` counts as bound after it): the check may let a failing candidate through,
  never refuse one that runs;
- attributes the program defines (`defined_attributes`): `self.X` read where the original assigned `self.X` (or
  declared `X` in a class body: a dataclass field, a method) and the candidate no longer does anywhere.
"""

from __future__ import annotations

import ast
import builtins
from collections.abc import Iterable
from dataclasses import dataclass

_BUILTINS = frozenset(dir(builtins)) | {"__name__", "__file__", "__builtins__", "__class__"}
_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)
_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)
_COMPREHENSIONS = (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)


def names_bound_by(node: ast.AST, *, patterns: bool = True) -> tuple[str, ...]:
    """The names one node itself binds (not its children's): an assignment or deletion target, a definition, an
    import alias, an exception handler's name, a `global`/`nonlocal` declaration, a parameter and, with `patterns`, a
    `match` capture. Every walk that collects bindings classifies nodes with this one function."""
    if isinstance(node, ast.Name):
        return (node.id,) if isinstance(node.ctx, (ast.Store, ast.Del)) else ()
    if isinstance(node, (*_FUNCTIONS, ast.ClassDef)):
        return (node.name,)
    if isinstance(node, ast.alias):
        return ((node.asname or node.name).split(".")[0],)
    if isinstance(node, (ast.Global, ast.Nonlocal)):
        return tuple(node.names)
    if isinstance(node, ast.arg):
        return (node.arg,)
    bound = patterns or not isinstance(node, (ast.MatchAs, ast.MatchStar))
    if isinstance(node, (ast.ExceptHandler, ast.MatchAs, ast.MatchStar)) and node.name and bound:
        return (node.name,)
    return ()


def _stores(node: ast.AST, *, scope: bool = True) -> set[str]:
    """The names a node binds in its own scope (nested function, lambda and class bodies excluded); `scope=False`:
    `node` is an expression or statement of the scope around it, even if it is a lambda or a definition."""
    return {name for child in (_walk_scope(node) if scope else _walk([node])) for name in names_bound_by(child)}


def _walk_scope(node: ast.AST) -> Iterable[ast.AST]:
    """`ast.walk` over one scope. A nested function, lambda or class is yielded, with what its definition evaluates
    where it stands (decorators, defaults, bases), but not its body; of `node` itself only its parameters and body are
    (its decorators and defaults belong to the scope around it)."""
    return _walk(_inside(node) if isinstance(node, _SCOPES) else [node])


def _walk(start: list[ast.AST]) -> Iterable[ast.AST]:
    """`ast.walk` from `start`, into no function, lambda or class body (see `_walk_scope`)."""
    todo = list(start)
    while todo:
        current = todo.pop()
        yield current
        if isinstance(current, _SCOPES):
            todo.extend(_outside(current))
        elif not isinstance(current, ast.arg):  # a parameter's annotation is its definition's (`_outside`)
            todo.extend(ast.iter_child_nodes(current))


def _inside(node: ast.AST) -> list[ast.AST]:
    """What runs in the scope `node` opens: its parameters and body."""
    if isinstance(node, ast.ClassDef):
        return [*node.body]
    if isinstance(node, ast.Lambda):
        return [*_args(node), node.body]
    assert isinstance(node, _FUNCTIONS)
    return [*_args(node), *node.body]


def _outside(node: ast.AST) -> list[ast.AST]:
    """What defining the scope `node` evaluates where the definition stands."""
    if isinstance(node, ast.ClassDef):
        return [*node.decorator_list, *node.bases, *node.keywords]
    assert isinstance(node, (*_FUNCTIONS, ast.Lambda))
    found: list[ast.AST] = [*node.args.defaults, *(d for d in node.args.kw_defaults if d is not None)]
    found += [a.annotation for a in _args(node) if a.annotation is not None]
    if isinstance(node, ast.Lambda):
        return found
    return found + [*node.decorator_list] + ([node.returns] if node.returns is not None else [])


def _args(node: ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda) -> list[ast.arg]:
    a = node.args
    return [*a.posonlyargs, *a.args, *a.kwonlyargs, *(p for p in (a.vararg, a.kwarg) if p is not None)]


def _params(fn: ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda) -> set[str]:
    return {p.arg for p in _args(fn)}


def _reads(node: ast.AST, *, scope: bool = True) -> list[str]:
    found = _walk_scope(node) if scope else _walk([node])
    return [n.id for n in found if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)]


def _read_first(node: ast.AST) -> list[str]:
    """What an expression reads from its scope: a comprehension's or walrus's own targets are bound where read."""
    own = {
        n.id
        for c in _walk([node])
        for target in ([g.target for g in c.generators] if isinstance(c, _COMPREHENSIONS) else [])
        + ([c.target] if isinstance(c, ast.NamedExpr) else [])
        for n in ast.walk(target)
        if isinstance(n, ast.Name)
    }
    return [name for name in _reads(node, scope=False) if name not in own]


_LOOPS = (ast.For, ast.AsyncFor, ast.While)
_CONDITIONAL = (ast.If, ast.Try, ast.Match)


def _in_order(
    body: list[ast.stmt], bound: set[str], local: set[str], pending: frozenset[str], later: frozenset[str]
) -> str | None:
    """The first local name a statement of `body` reads before any earlier statement binds it; `bound` grows.

    `pending`: what an enclosing loop's body binds. Its first iteration must not read them unbound, except under a
    condition (`later`), which a later iteration may be the first to meet (`if i: use(prev)`, then `prev = ...`).
    """
    for stmt in body:
        if isinstance(stmt, (*_FUNCTIONS, ast.ClassDef)):
            bound.add(stmt.name)  # its body runs later: it is checked as a scope of its own
            continue
        blocks = [getattr(stmt, f) for f in ("body", "orelse", "finalbody") if isinstance(getattr(stmt, f, None), list)]
        handlers = getattr(stmt, "handlers", [])
        blocks += [h.body for h in handlers] + [c.body for c in getattr(stmt, "cases", [])]
        heads = [c for c in ast.iter_child_nodes(stmt) if not isinstance(c, (ast.stmt, ast.excepthandler))]
        if isinstance(stmt, ast.Match):  # its patterns bind before their cases run
            heads = [stmt.subject]
            bound |= _stores(stmt, scope=False)
        # what the statement evaluates before its blocks, in the order it does: an assignment's value before its
        # targets, a loop's iterable before its variable, one `with` item after the other
        heads.sort(key=lambda c: c not in (getattr(stmt, "value", None), getattr(stmt, "iter", None)))
        for head in heads:
            missing = next((n for n in _read_first(head) if n in local and n not in bound | later), None)
            if missing is not None:
                return missing
            bound |= _stores(head, scope=False)
        bound |= {h.name for h in handlers if h.name}
        inner_pending = pending | _stores(stmt, scope=False) if isinstance(stmt, _LOOPS) else pending
        inner_later = later | pending if isinstance(stmt, _CONDITIONAL) else later
        for block in blocks:
            missing = _in_order(block, bound, local, inner_pending, inner_later)
            if missing is not None:
                return missing
        bound |= _stores(stmt, scope=False)
    return None


def unbound_reads(tree: ast.Module) -> str | None:
    """A name the program reads where nothing binds it (see the module docstring), or None."""
    return _scope(tree, frozenset(_BUILTINS))


def _scope(node: ast.AST, outer: frozenset[str]) -> str | None:
    local = _stores(node)
    if isinstance(node, (*_FUNCTIONS, ast.Lambda)):
        local |= _params(node)
    visible = outer | local
    for name in _reads(node):
        if name not in visible:
            return name
    if isinstance(node, _FUNCTIONS):
        params = _params(node)
        missing = _in_order(node.body, set(params), local - params - _globals(node), frozenset(), frozenset())
        if missing is not None:
            return missing
    # a class body's names are not visible to its methods; a function's are to what it nests
    inner = outer if isinstance(node, ast.ClassDef) else visible
    for child in _walk_scope(node):
        if child is not node and isinstance(child, _SCOPES):
            missing = _scope(child, inner)
            if missing is not None:
                return missing
    return None


def _globals(fn: ast.AST) -> set[str]:
    return {n for s in _walk_scope(fn) if isinstance(s, (ast.Global, ast.Nonlocal)) for n in s.names}


def defined_attributes(tree: ast.AST) -> set[str]:
    """Attribute names the program itself defines: `self.X = ...`, register_buffer/parameter/module with a literal
    name, and every name a class body binds (dataclass fields, methods, properties)."""
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.ctx, (ast.Store, ast.Del)):
            names.add(node.attr)
        elif isinstance(node, ast.ClassDef):
            names |= _stores(node)
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in ("register_buffer", "register_parameter", "register_module", "add_module")
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
        ):
            names.add(node.args[0].value)
    return names


# a tensor's data attributes: read through any name, whatever a config class of the program calls its fields
_TENSOR_DATA = frozenset({"shape", "dtype", "device", "T", "mT", "H", "data", "grad", "real", "imag", "ndim", "layout"})


@dataclass(frozen=True)
class Definitions:
    """What the original program defines that its code relies on: a candidate that still relies on a piece of it
    after deleting it fails to run (see `broken`)."""

    attributes: frozenset[str]  # `self.X = ...`, class-body names, registered buffers and parameters
    fields: frozenset[str]  # the data names of class bodies: a config's fields, read as `cfg.X`
    super_init: frozenset[str]  # classes whose __init__ calls the base's (`super().__init__()`)
    constructors: frozenset[str]  # classes whose __init__ takes arguments
    returning: frozenset[str]  # functions and methods (`C.f`) that return a value

    @classmethod
    def of(cls, tree: ast.Module) -> Definitions:
        classes = [c for c in ast.walk(tree) if isinstance(c, ast.ClassDef)]
        inits = {c.name: init for c in classes if (init := _method(c, "__init__")) is not None}
        fields = {
            n.id
            for c in classes
            for s in c.body
            if isinstance(s, (ast.Assign, ast.AnnAssign))
            for t in (s.targets if isinstance(s, ast.Assign) else [s.target])
            for n in ast.walk(t)
            if isinstance(n, ast.Name)
        }
        return cls(
            frozenset(defined_attributes(tree)),
            frozenset(fields - _TENSOR_DATA),
            frozenset(name for name, init in inits.items() if _calls_base_init(init)),
            frozenset(name for name, init in inits.items() if len(_args(init)) > 1),
            frozenset(name for name, f in _functions(tree).items() if _returns_value(f)),
        )


def _method(cls: ast.ClassDef, name: str) -> ast.FunctionDef | None:
    return next((f for f in cls.body if isinstance(f, ast.FunctionDef) and f.name == name), None)


def _calls_base_init(init: ast.FunctionDef) -> bool:
    """`super().__init__(...)`, `super(C, self).__init__()` or `nn.Module.__init__(self)`."""
    return any(
        isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "__init__"
        for n in ast.walk(init)
    )


def _functions(tree: ast.Module) -> dict[str, ast.FunctionDef | ast.AsyncFunctionDef]:
    """Module-level functions by name and methods as `Class.name`."""
    found: dict[str, ast.FunctionDef | ast.AsyncFunctionDef] = {}
    for stmt in tree.body:
        if isinstance(stmt, _FUNCTIONS):
            found[stmt.name] = stmt
        elif isinstance(stmt, ast.ClassDef):
            found.update((f"{stmt.name}.{f.name}", f) for f in stmt.body if isinstance(f, _FUNCTIONS))
    return found


def _returns_value(fn: ast.AST) -> bool:
    return any(isinstance(n, (ast.Return, ast.Yield, ast.YieldFrom)) and n.value is not None for n in _walk_scope(fn))


def broken(tree: ast.Module, original: Definitions) -> str | None:
    """What a candidate still relies on of the original's definitions after deleting it, in words; None if nothing.

    Each is a certain failure once the program runs: `self.X` or `cfg.X` read where nothing defines X any more, an
    nn.Module's __init__ without the base's (`cannot assign module before Module.__init__() call`), a class built
    with arguments whose __init__ is gone, a function whose value is used that now returns None.
    """
    defined = defined_attributes(tree)
    # a config field is read as data (`cfg.dropout`), never called, and not from a module (`F.dropout(x)`)
    modules = {(n.asname or n.name).split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.alias)}
    called = {id(n.func) for n in ast.walk(tree) if isinstance(n, ast.Call)}
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Load) and node.attr not in defined:
            receiver = node.value.id if isinstance(node.value, ast.Name) else None
            if node.attr in original.attributes and receiver == "self":
                return f"reads self.{node.attr}, which nothing defines any more"
            if node.attr in original.fields and id(node) not in called and receiver not in modules:
                return f"reads .{node.attr}, which nothing defines any more"
    classes = {c.name: c for c in ast.walk(tree) if isinstance(c, ast.ClassDef)}
    for name, cls in classes.items():
        init = _method(cls, "__init__")
        if init is not None and name in original.super_init and not _calls_base_init(init):
            return f"{name}.__init__ no longer calls the base's"
        if init is None and name in original.constructors and _built_with_arguments(tree, name):
            return f"{name} is built with arguments, and its __init__ is gone"
    for name, fn in _functions(tree).items():
        if name in original.returning and not _returns_value(fn):
            return f"{name} returns nothing any more"
    return None


def _built_with_arguments(tree: ast.Module, name: str) -> bool:
    return any(
        isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == name and (n.args or n.keywords)
        for n in ast.walk(tree)
    )
