"""Passes over expressions: replace a call or an operator by an operand, drop keywords, inline modules.

Like every pass, these only propose variants; the reducer adopts one only when it is strictly smaller
and the oracle still sees the same divergence.
"""

from __future__ import annotations

import ast
import copy
from typing import cast

from minimizer.reducer import Problem, walk_sites
from minimizer.syntax import ENTRY_POINTS, fresh, nodes_of, replace_node, unparse

_OPERATIONS = (ast.Call, ast.BinOp, ast.UnaryOp)


def _operands(node: ast.AST) -> list[ast.expr]:
    if isinstance(node, ast.Call):
        receiver = (
            [node.func.value] if isinstance(node.func, ast.Attribute) and not _is_module_path(node.func.value) else []
        )
        return (
            receiver
            + [a for a in node.args if not isinstance(a, ast.Starred)]
            + [k.value for k in node.keywords if k.arg]
        )
    if isinstance(node, ast.BinOp):
        return [node.left, node.right]
    if isinstance(node, ast.UnaryOp):
        return [node.operand]
    return []


def _is_module_path(node: ast.expr) -> bool:
    # `torch.nn.functional` in `torch.nn.functional.gelu(x)` is a namespace, not a tensor receiver
    while isinstance(node, ast.Attribute):
        node = node.value
    return isinstance(node, ast.Name) and node.id in {"torch", "F", "nn", "math", "np", "numpy", "operator"}


def _not_a_literal(node: ast.AST) -> bool:
    # `-1e-08` is a literal, not an operation: dropping its sign is `drop_signs`'s job, at the very end
    return not (isinstance(node, ast.UnaryOp) and isinstance(node.operand, ast.Constant))


def replace_with_operand(problem: Problem) -> None:
    """Replace a call or an arithmetic operation by one of its operands (a method call also by its receiver).

    `torch.add(v, torch.zeros_like(v))` can become `v`; an op the divergence does not need disappears.
    """

    def at(source: str, i: int) -> list[str] | None:
        ops = nodes_of(fresh(source), _OPERATIONS, _not_a_literal)
        if i >= len(ops):
            return None
        out = []
        for k in range(len(_operands(ops[i]))):
            tree = fresh(source)
            node = nodes_of(tree, _OPERATIONS, _not_a_literal)[i]
            replace_node(tree, node, _operands(node)[k])
            out.append(unparse(tree))
        return out

    walk_sites(problem, at)


def drop_keyword_arguments(problem: Problem) -> None:
    """Remove one keyword argument from one call, so that the repro shows only the arguments that matter.

    Defaults such as `dtype=`, `alpha=` or `keepdim=` often do not change the divergence.
    """

    def at(source: str, i: int) -> list[str] | None:
        keywords = [(c, k) for c in nodes_of(fresh(source), ast.Call) for k in range(len(c.keywords))]
        if i >= len(keywords):
            return None
        out = []
        if i == 0 and len(keywords) > 1:  # all of them at once first: one call when none matters
            tree = fresh(source)
            for call in nodes_of(tree, ast.Call):
                call.keywords = [k for k in call.keywords if k.arg is None]
            out.append(unparse(tree))
        tree = fresh(source)
        call, k = [(c, k) for c in nodes_of(tree, ast.Call) for k in range(len(c.keywords))][i]
        del call.keywords[k]
        return out + [unparse(tree)]

    walk_sites(problem, at)


def _inlinable(cls: ast.ClassDef) -> ast.FunctionDef | None:
    """The forward of a module class whose instances carry no state: only forward and an `__init__` that sets
    nothing."""
    forward = None
    for stmt in cls.body:
        if isinstance(stmt, ast.FunctionDef) and stmt.name == "forward":
            forward = stmt
        elif isinstance(stmt, ast.FunctionDef) and stmt.name == "__init__":
            if any(not _is_super_init(s) for s in stmt.body):
                return None
        elif not (isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant)):
            return None
    if forward is None or not forward.args.args:
        return None
    self_name = forward.args.args[0].arg
    if any(isinstance(n, ast.Name) and n.id == self_name for s in forward.body for n in ast.walk(s)):
        return None
    return forward


def _is_super_init(stmt: ast.stmt) -> bool:
    return isinstance(stmt, ast.Pass) or (
        isinstance(stmt, ast.Expr)
        and isinstance(stmt.value, ast.Call)
        and isinstance(stmt.value.func, ast.Attribute)
        and stmt.value.func.attr == "__init__"
    )


def inline_modules(problem: Problem) -> None:
    """Turn a stateless nn.Module class into a plain function of the same name, and `Cls()` into `Cls`.

    `fn = BugModule()` and `torch.compile(BugModule())(x)` keep working, with one class and one method less.
    """

    def at(source: str, i: int) -> list[str] | None:
        classes = nodes_of(fresh(source), ast.ClassDef)
        if i >= len(classes):
            return None
        tree = fresh(source)
        cls = nodes_of(tree, ast.ClassDef)[i]
        forward = _inlinable(cls)
        if forward is None:
            return []
        function = copy.deepcopy(forward)
        function.name = cls.name
        function.args.args = function.args.args[1:]
        replace_node(tree, cls, function)
        for call in nodes_of(tree, ast.Call):
            # `Cls(cfg)` too: a stateless module's constructor arguments configured nothing it keeps
            if isinstance(call.func, ast.Name) and call.func.id == cls.name:
                replace_node(tree, call, ast.Name(cls.name, ast.Load()))
        return [unparse(tree)]

    walk_sites(problem, at)


def _temporaries(tree: ast.AST) -> list[tuple[ast.FunctionDef, ast.Assign]]:
    """Assignments of a function's body to a plain name that the function stores once and reads once, later."""
    found = []
    for function in nodes_of(tree, ast.FunctionDef):
        names = [n for n in ast.walk(function) if isinstance(n, ast.Name)]
        for stmt in function.body:
            if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
                name = stmt.targets[0].id
                if sum(n.id == name for n in names) == 2 and name not in {a.arg for a in function.args.args}:
                    found.append((function, stmt))
    return found


def _inline(tree: ast.AST, function: ast.FunctionDef, stmt: ast.Assign) -> None:
    name = cast(ast.Name, stmt.targets[0]).id
    use = next(
        n for n in ast.walk(function) if isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Load)
    )
    function.body.remove(stmt)
    replace_node(function, use, stmt.value)


def inline_temporaries(problem: Problem) -> None:
    """Put a name's expression where its only use is, and drop the assignment, all of them at once first.

    The graph path writes one statement per node (`elu = ...; div = torch.div(elu, z)`); inlined, the
    repro reads like hand-written code and saves three tokens per name.
    """

    def at(source: str, i: int) -> list[str] | None:
        sites = _temporaries(fresh(source))
        if i >= len(sites):
            return None
        out = []
        if i == 0 and len(sites) > 1:
            tree = fresh(source)
            while found := _temporaries(tree):
                _inline(tree, *found[0])
            out.append(unparse(tree))
        tree = fresh(source)
        _inline(tree, *_temporaries(tree)[i])
        return out + [unparse(tree)]

    walk_sites(problem, at)


def _one_liner(function: ast.FunctionDef) -> ast.expr | None:
    """The returned expression of `def f(a, b=1): return <expr>` (plain parameters only), else None."""
    args = function.args
    if args.vararg or args.kwarg or args.kwonlyargs or args.posonlyargs or function.decorator_list:
        return None
    body = [s for s in function.body if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))]
    if len(body) != 1 or not isinstance(body[0], ast.Return) or body[0].value is None:
        return None
    return body[0].value


def _substituted(function: ast.FunctionDef, call: ast.Call) -> ast.expr | None:
    """The function's expression with the call's arguments in place of its parameters; None if they do not bind
    simply."""
    expr = _one_liner(function)
    params = [a.arg for a in function.args.args]
    if expr is None or len(call.args) > len(params) or any(isinstance(a, ast.Starred) for a in call.args):
        return None
    bound: dict[str, ast.expr] = dict(zip(params, call.args, strict=False))
    for k in call.keywords:
        if k.arg is None or k.arg not in params or k.arg in bound:
            return None
        bound[k.arg] = k.value
    defaults = dict(zip(params[len(params) - len(function.args.defaults) :], function.args.defaults, strict=False))
    for p in params:
        if p not in bound:
            if p not in defaults:
                return None
            bound[p] = defaults[p]
    uses = {p: sum(isinstance(n, ast.Name) and n.id == p for n in ast.walk(expr)) for p in params}
    if any(uses[p] > 1 and not isinstance(bound[p], (ast.Name, ast.Constant)) for p in params):
        return None  # an argument computed once must not be computed twice
    copied = copy.deepcopy(expr)
    for node in [
        n for n in ast.walk(copied) if isinstance(n, ast.Name) and n.id in bound and isinstance(n.ctx, ast.Load)
    ]:
        replace_node(copied, node, copy.deepcopy(bound[node.id]))
    return copied


def inline_functions(problem: Problem) -> None:
    """Put a one-line helper's expression where it is called: `synthetic_batch(3)` becomes `torch.randn(3, 1) + 1e5`.

    Only `def f(...): return <expr>` helpers at module level, every call at once, and the definition goes
    with its last call (inlined, the helper is usually longer than its call).
    """

    def helpers(tree: ast.Module) -> list[ast.FunctionDef]:
        return [
            s
            for s in tree.body
            if isinstance(s, ast.FunctionDef) and s.name not in ENTRY_POINTS and _one_liner(s) is not None
        ]

    def at(source: str, i: int) -> list[str] | None:
        found = helpers(fresh(source))
        if i >= len(found):
            return None
        tree = fresh(source)
        function = helpers(tree)[i]
        for call in [
            c for c in nodes_of(tree, ast.Call) if isinstance(c.func, ast.Name) and c.func.id == function.name
        ]:
            expr = _substituted(function, call)
            if expr is None:
                return []
            replace_node(tree, call, expr)
        if not any(isinstance(n, ast.Name) and n.id == function.name for n in ast.walk(tree)):
            tree.body.remove(function)
        return [unparse(tree)]

    walk_sites(problem, at)
