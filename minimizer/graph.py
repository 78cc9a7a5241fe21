"""The graph path: rewrite the program's compiled region as the straight-line torch code of its Dynamo graph.

Dynamo's FX graph (as the engine captures it) is already user-level torch code: `torch.div(l_a_, l_b_)`,
`l_x_ // 2`, `torch.nn.functional.elu(...)`. Emitting it as `def fn(...)` flattens module classes,
helpers and Python control flow in one step; the ordinary passes then delta-debug its nodes (each node
is one statement). Like PyTorch's fx_minifier, but the result stays code a maintainer can read. The
rewrite is only proposed when it is safe to wire: one graph, and its placeholders are exactly the
entry function's arguments (no lifted parameters or buffers).
"""

from __future__ import annotations

import ast
import re
from typing import Callable, Sequence

from minimizer.reducer import Problem, ReductionPass
from minimizer.size import sort_key
from minimizer.syntax import binds, fresh, parse, tidy_tree, unparse

_PLACEHOLDER = re.compile(r"^L_(?P<name>.+?)_$")


def graph_to_function(graph: str, name: str = "fn") -> ast.FunctionDef | None:
    """The forward of a printed GraphModule as a plain function `name(args)`; None if it cannot be read."""
    start = graph.find("class GraphModule")
    if start < 0:
        return None
    module = parse(_dedent_block(graph[start:]))
    if module is None:
        return None
    forward = next((n for n in ast.walk(module) if isinstance(n, ast.FunctionDef) and n.name == "forward"), None)
    if forward is None:
        return None
    params = [a.arg for a in forward.args.args[1:]]
    renames: dict[str, str] = {}
    for p in params:
        m = _PLACEHOLDER.match(p)
        plain = m.group("name") if m else p
        if plain.startswith("self_") or "modules" in plain or "parameters" in plain or "buffers" in plain:
            return None  # a lifted parameter or buffer: the snippet's inputs cannot supply it
        renames[p] = re.sub(r"\W", "_", plain)
    body: list[ast.stmt] = []
    for stmt in forward.body:
        if isinstance(stmt, ast.Assign) and isinstance(stmt.value, ast.Constant) and stmt.value.value is None:
            continue  # `x = y = None`: Dynamo freeing references early
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name) and isinstance(stmt.value, ast.Name) and stmt.value.id in renames:
            renames[stmt.targets[0].id] = renames[stmt.value.id]  # `l_x_ = L_x_`: an alias of the placeholder
            continue
        if isinstance(stmt, ast.AnnAssign) and stmt.value is not None:
            stmt = ast.Assign(targets=[stmt.target], value=stmt.value, lineno=stmt.lineno)
        body.append(stmt)
    if body and isinstance(body[-1], ast.Return) and isinstance(body[-1].value, ast.Tuple) and len(body[-1].value.elts) == 1:
        body[-1].value = body[-1].value.elts[0]  # Dynamo returns a tuple; a single output was not one
    for node in ast.walk(ast.Module(body=body, type_ignores=[])):
        if isinstance(node, ast.Name) and node.id in renames:
            node.id = renames[node.id]
        if isinstance(node, ast.Subscript):
            node.slice = _as_slice_syntax(node.slice)
    args = [ast.arg(renames[p]) for p in params]
    return ast.FunctionDef(name=name, args=ast.arguments(posonlyargs=[], args=args, kwonlyargs=[], kw_defaults=[], defaults=[]), body=body or [ast.Pass()], decorator_list=[], returns=None, lineno=1)


def _as_slice_syntax(index: ast.expr) -> ast.expr:
    """`(slice(None, None, None), slice(1, 7, None))`, as Dynamo prints an index, back to `:, 1:7`."""
    if isinstance(index, ast.Tuple):
        return ast.Tuple([_as_slice_syntax(e) for e in index.elts], ast.Load())
    if isinstance(index, ast.Call) and isinstance(index.func, ast.Name) and index.func.id == "slice" and not index.keywords and len(index.args) == 3:
        lower, upper, step = (None if isinstance(a, ast.Constant) and a.value is None else a for a in index.args)
        return ast.Slice(lower, upper, step)
    return index


def _dedent_block(text: str) -> str:
    # the log prints the class at column 0 but may carry trailing log lines; keep the class only
    lines = text.splitlines()
    kept = [lines[0]]
    for line in lines[1:]:
        if line and not line.startswith((" ", "\t")):
            break
        kept.append(line)
    return "\n".join(kept) + "\n"


def rewrite_with_graph(source: str, graphs: Sequence[str]) -> str | None:
    """The program with its entry point replaced by the graph's straight-line code; None when not wireable."""
    if len(graphs) != 1:
        return None
    function = graph_to_function(graphs[0])
    if function is None:
        return None
    tree = fresh(source)
    bound = {n for s in tree.body for n in binds(s)}
    if {"fn", "inputs"} <= bound:
        old = [i for i, s in enumerate(tree.body) if "fn" in binds(s)]
        tree.body[old[-1]] = function
        tree.body = [s for i, s in enumerate(tree.body) if i not in old[:-1]]
    elif {"Model", "get_inputs"} <= bound:
        tree.body.extend([function, ast.parse("inputs = get_inputs").body[0]])
    else:
        return None
    tidy_tree(tree)  # the module classes and helpers the graph replaced are dead now, and so are their imports
    return unparse(tree)


def graph_rewrite(fx_graphs: Callable[[str], Sequence[str]]) -> ReductionPass:
    """A pass that proposes the graph rewrite of the current candidate, given a way to get its FX graphs."""

    def graph_rewrite(problem: Problem) -> None:
        """Replace the compiled entry point by the straight-line code of its Dynamo graph.

        Module classes, helper functions and Python-level control flow collapse into one function of
        torch calls, which the statement and expression passes then shrink node by node.
        """
        candidate = rewrite_with_graph(problem.current, fx_graphs(problem.current))
        tidied = fresh(problem.current)
        tidy_tree(tidied)
        # the rewrite tidies too: it must beat tidying alone, or `fn = torch.erf` would become a longer def
        if candidate is not None and sort_key(candidate) < sort_key(unparse(tidied)):
            problem.test(candidate)

    return graph_rewrite
