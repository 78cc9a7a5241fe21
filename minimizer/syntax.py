"""AST helpers shared by the passes: canonical form, node sites, cheap static validity.

Every candidate a pass proposes goes through `canonical` (parse + `ast.unparse`), so two spellings of
one program are one candidate. `statically_plausible` rejects, without running anything, candidates
that cannot work: syntax errors and names that nothing in the module defines.
"""

from __future__ import annotations

import ast
import builtins
import warnings
from collections.abc import Callable
from typing import TypeVar, cast

from minimizer.scopes import Definitions, broken, names_bound_by, unbound_reads

N = TypeVar("N", bound=ast.AST)

_BUILTINS = frozenset(dir(builtins)) | {"__name__", "__file__"}
STATEMENT_FIELDS = ("body", "orelse", "finalbody")


def parse(source: str) -> ast.Module | None:
    try:
        with (
            warnings.catch_warnings()
        ):  # shrinkray's byte-level edits make things like `1e` or `0x`: no stderr line each
            warnings.simplefilter("ignore", SyntaxWarning)
            return ast.parse(source)
    except (SyntaxError, ValueError):
        return None


def canonical(source: str) -> str:
    """The source as `ast.unparse` writes it (comments and formatting dropped); unchanged if it does not parse."""
    tree = parse(source)
    return source if tree is None else unparse(tree)


def unparse(tree: ast.AST) -> str:
    _fill_empty_bodies(tree)
    return ast.unparse(ast.fix_missing_locations(tree)) + "\n"


def _fill_empty_bodies(tree: ast.AST) -> None:
    # deleting every statement of a block leaves it empty, which is not Python; `pass` keeps it valid
    for node in ast.walk(tree):
        if isinstance(node, ast.Module):
            continue
        for name in ("body", "finalbody"):
            block = getattr(node, name, None)
            if (
                isinstance(block, list)
                and not block
                and (name == "body" or isinstance(node, ast.Try) and not node.handlers)
            ):
                block.append(ast.Pass())


def defined_names(tree: ast.AST) -> set[str]:
    """Every name bound anywhere in the tree, whatever its scope (`match` captures not counted: the module-wide check
    has never needed them, and `unbound_reads` counts them by scope)."""
    return {name for node in ast.walk(tree) for name in names_bound_by(node, patterns=False)}


def used_names(tree: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}


def statically_plausible(source: str) -> bool:
    """False for a candidate that cannot run: it does not parse, or it reads a name nothing defines (in its scope,
    before it: `minimizer.scopes`)."""
    tree = parse(source)
    if tree is None:
        return False
    return used_names(tree) <= defined_names(tree) | _BUILTINS and unbound_reads(tree) is None


def nodes_of(
    tree: ast.AST, kind: type[N] | tuple[type[ast.AST], ...], where: Callable[[ast.AST], bool] = lambda n: True
) -> list[N]:
    """Nodes of a kind in a fixed order (breadth first), so index k names the same site in equal trees."""
    return cast("list[N]", [n for n in ast.walk(tree) if isinstance(n, kind) and where(n)])


def blocks(tree: ast.AST) -> list[list[ast.stmt]]:
    """Every statement list (module, function, class, branch and loop bodies), outermost first."""
    found: list[list[ast.stmt]] = []
    for node in ast.walk(tree):
        for name in STATEMENT_FIELDS:
            block = getattr(node, name, None)
            if isinstance(block, list) and block and isinstance(block[0], ast.stmt):
                found.append(block)
    return found


def replace_node(tree: ast.AST, target: ast.AST, new: ast.AST) -> ast.AST:
    """Put `new` where `target` is (by identity) and return the tree."""

    class Swap(ast.NodeTransformer):
        def visit(self, node: ast.AST) -> ast.AST:
            if node is target:
                return new
            return self.generic_visit(node)

    return Swap().visit(tree)


def fresh(source: str) -> ast.Module:
    tree = parse(source)
    if tree is None:
        raise ValueError("a pass was handed source that does not parse")
    return tree


def keeps_style(original: str) -> Callable[[str], bool]:
    """`statically_plausible`, the candidate still fits the original's snippet style, and it relies on nothing of the
    original's definitions that it deleted (`minimizer.scopes.broken`: a `self.X`, a config field, a base __init__).

    Deleting `def fn`, `inputs` or the torch.compile call of a verbatim repro leaves a program the engine
    refuses outright; rejecting it here spares the worker a round trip.
    """
    from engine.snippet import SnippetError, SnippetStyle, detect_style

    tree = parse(original)
    definitions = Definitions.of(tree) if tree is not None else None
    wraps_inputs = tree is not None and bool(input_tuples(tree))  # `inputs()` must still return a tuple or list
    try:
        style = detect_style(original)
    except SnippetError:
        return statically_plausible
    # the graph path turns a KernelBench program into fn + inputs
    allowed = {style, SnippetStyle.FN_INPUTS} if style is SnippetStyle.KERNELBENCH else {style}

    def plausible(source: str) -> bool:
        if not statically_plausible(source):
            return False
        candidate = parse(source)
        if candidate is None or definitions is not None and broken(candidate, definitions) is not None:
            return False
        if not inputs_fit(candidate) or wraps_inputs and not input_tuples(candidate):
            return False
        try:
            return detect_style(source) in allowed
        except SnippetError:
            return False

    return plausible


# what the engine looks up by name in each snippet style: never dead, whoever reads them
ENTRY_POINTS = frozenset({"fn", "inputs", "compile_kwargs", "Model", "get_inputs", "get_init_inputs"})


def binds(stmt: ast.stmt) -> set[str]:
    """The module-level names a definition or assignment statement binds."""
    if isinstance(stmt, (ast.FunctionDef, ast.ClassDef)):
        return {stmt.name}
    if isinstance(stmt, ast.Assign):
        return {n.id for t in stmt.targets for n in ast.walk(t) if isinstance(n, ast.Name)}
    return set()


def drop_dead_definitions(tree: ast.Module) -> None:
    """Remove module-level functions, classes and assignments that nothing reads any more (to a fixpoint)."""
    while True:
        used = used_names(tree)
        dead = [s for s in tree.body if binds(s) and not (binds(s) & (used | ENTRY_POINTS))]
        if not dead:
            return
        tree.body = [s for s in tree.body if s not in dead]


def drop_unused_imports(tree: ast.Module) -> None:
    """Remove every imported name that nothing reads, and import statements left empty."""
    used = used_names(tree)
    for node in ast.walk(tree):
        for name in STATEMENT_FIELDS:
            block = getattr(node, name, None)
            if not isinstance(block, list):
                continue
            for stmt in [s for s in block if isinstance(s, (ast.Import, ast.ImportFrom))]:
                stmt.names = [a for a in stmt.names if (a.asname or a.name).split(".")[0] in used or a.name == "*"]
                if not stmt.names:
                    block.remove(stmt)


def drop_docstrings(tree: ast.Module) -> None:
    """Remove bare constant expressions (docstrings, stray literals): they never compute anything."""
    for node in ast.walk(tree):
        for name in STATEMENT_FIELDS:
            block = getattr(node, name, None)
            if isinstance(block, list):
                block[:] = [s for s in block if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))]


def mutates(node: ast.AST) -> bool:
    """True when the expression calls an in-place method (`x.add_(1)`, `dst.copy_(src)`): its value is not all it
    does."""
    return any(
        isinstance(n, ast.Call)
        and isinstance(n.func, ast.Attribute)
        and n.func.attr.endswith("_")
        and not n.func.attr.startswith("__")
        for n in ast.walk(node)
    )


def drop_dead_locals(tree: ast.Module) -> None:
    """Remove assignments to plain local names that nothing in their function reads (to a fixpoint).

    An assignment whose value mutates something (`sub_ = x.sub_(1)`, as Dynamo's graph writes an in-place
    op) stays: the mutation is what it is for.
    """
    for function in [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]:
        while True:
            used = used_names(function)
            dead = [
                s
                for s in nodes_of(function, ast.Assign)
                if all(isinstance(t, ast.Name) and t.id not in used for t in s.targets) and not mutates(s.value)
            ]
            if not dead:
                break
            for node in ast.walk(function):
                for name in STATEMENT_FIELDS:
                    block = getattr(node, name, None)
                    if isinstance(block, list):
                        block[:] = [s for s in block if s not in dead]


def entry_function(tree: ast.Module) -> ast.FunctionDef | None:
    """The function the engine calls: `def fn`, or the forward of the class instantiated as `fn` or named Model."""
    classes = {c.name: c for c in tree.body if isinstance(c, ast.ClassDef)}
    for stmt in tree.body:
        if isinstance(stmt, ast.FunctionDef) and stmt.name == "fn":
            return stmt
        if isinstance(stmt, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "fn" for t in stmt.targets):
            call = stmt.value
            if isinstance(call, ast.Call) and isinstance(call.func, ast.Name) and call.func.id in classes:
                return _forward(classes[call.func.id])
    return _forward(classes["Model"]) if "Model" in classes else None


def _forward(cls: ast.ClassDef) -> ast.FunctionDef | None:
    return next((f for f in cls.body if isinstance(f, ast.FunctionDef) and f.name == "forward"), None)


def input_tuples(tree: ast.Module) -> list[ast.Tuple | ast.List]:
    """The literal argument tuples: `inputs = (...)`, and what `def inputs`/`def get_inputs` return."""
    found: list[ast.Tuple | ast.List] = []
    for stmt in tree.body:
        if isinstance(stmt, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "inputs" for t in stmt.targets):
            if isinstance(stmt.value, (ast.Tuple, ast.List)):
                found.append(stmt.value)
        if isinstance(stmt, ast.FunctionDef) and stmt.name in ("inputs", "get_inputs"):
            found.extend(r.value for r in nodes_of(stmt, ast.Return) if isinstance(r.value, (ast.Tuple, ast.List)))
    return found


def drop_dead_parameters(tree: ast.Module) -> None:
    """Remove the parameters of `def fn` that its body never reads, with the matching element of every input tuple.

    Only where each input tuple is a literal of exactly one element per parameter (anything else could
    be wired differently); the inputs' own code is left to `drop_dead_locals`.
    """
    entry = next((s for s in tree.body if isinstance(s, ast.FunctionDef) and s.name == "fn"), None)
    if entry is None or entry.args.vararg or entry.args.kwarg or entry.args.defaults or entry.args.posonlyargs:
        return
    params = entry.args.args
    tuples = input_tuples(tree)
    if not tuples or any(len(t.elts) != len(params) or any(isinstance(e, ast.Starred) for e in t.elts) for t in tuples):
        return
    used = used_names(ast.Module(body=entry.body, type_ignores=[]))
    dead = [i for i, a in enumerate(params) if a.arg not in used]
    for i in reversed(dead):
        del params[i]
        for t in tuples:
            del t.elts[i]


def prune(tree: ast.Module) -> ast.Module:
    """Dead code out after a step, in place: dead locals and parameters (with their inputs), dead definitions, unused
    imports.

    Applied to every candidate (see `Problem.normalize`), so that deleting a use removes what only it
    needed in the same candidate, instead of one oracle call per leftover.
    """
    drop_dead_locals(tree)
    drop_dead_parameters(tree)
    drop_dead_locals(tree)  # the inputs' code for a dropped parameter
    drop_dead_definitions(tree)
    drop_unused_imports(tree)
    return tree


def tidy_tree(tree: ast.Module) -> None:
    """The clean-ups that practically never change what the program computes, in place (the oracle still checks)."""
    drop_docstrings(tree)
    prune(tree)


def inputs_fit(tree: ast.Module) -> bool:
    """Every literal input tuple has as many elements as the entry point takes arguments (defaults and *args
    counted): a candidate that shrank one without the other fails with `fn() missing 1 required positional
    argument`."""
    entry = entry_function(tree)
    if entry is None or entry.args.kwonlyargs and any(d is None for d in entry.args.kw_defaults):
        return True
    params = [a for a in [*entry.args.posonlyargs, *entry.args.args] if a.arg != "self"]
    least = len(params) - len(entry.args.defaults)
    most = None if entry.args.vararg is not None else len(params)
    for t in input_tuples(tree):
        if any(isinstance(e, ast.Starred) for e in t.elts):
            continue
        if len(t.elts) < least or most is not None and len(t.elts) > most:
            return False
    return True
