"""Passes over literals: shrink shapes and integers, shorten sequences and floats, simplify dtypes.

Every variant is proposed, never forced: the reducer keeps it only when it is strictly smaller (fewer
tokens or characters) and the oracle still reports the same divergence.
"""

from __future__ import annotations

import ast
from collections.abc import Callable

from minimizer.reducer import Problem, TreeEdit, everything_then_each, walk_sites
from minimizer.syntax import fresh, nodes_of, replace_node, unparse

_DTYPES = {"float64", "double", "float16", "half", "bfloat16", "float32", "complex64", "complex128"}


def _ints(tree: ast.AST) -> list[ast.Constant]:
    return [n for n in nodes_of(tree, ast.Constant) if type(n.value) is int and abs(n.value) > 1]


def _floats(tree: ast.AST) -> list[ast.Constant]:
    return [
        n
        for n in nodes_of(tree, ast.Constant)
        if type(n.value) is float and n.value == n.value and abs(n.value) != float("inf")
    ]


def _set_constant(source: str, select: type[int] | type[float], i: int, value: object) -> str:
    tree = fresh(source)
    nodes = _ints(tree) if select is int else _floats(tree)
    nodes[i].value = value
    return unparse(tree)


def shrink_integers(problem: Problem) -> None:
    """Shrink an integer literal (a shape, a size, a repeat count) to 1, to half, or by one; every equal literal first.

    A width appears in several places at once (`torch.randn(2, 32)`, `layer_norm(x, (32,))`,
    `x.view(1, 4, 32)`): changed together they stay consistent, changed alone they raise. Smaller
    tensors compile and run faster and make the repro's numbers readable.

    A literal that shrinks only by small steps (a bug that needs `arange(n)` past 8,225 elements, from 9,906)
    would crawl down one at a time, a check each: after a step taken at a site, the next offers a step twice
    as long, so a run of steps doubles (9,906 -> 8,226: 72 predicate calls, 2,523 one at a time). A literal that does
    not shrink at all costs no more than before.
    """
    last: dict[int, int] = {}  # site -> the value last offered there (a shorter value now: a step was taken)

    def at(source: str, i: int) -> list[str] | None:
        ints = _ints(fresh(source))
        if i >= len(ints):
            return None
        v = ints[i].value
        sign = -1 if v < 0 else 1
        previous, last[i] = last.get(i), v
        taken = abs(previous) - abs(v) if previous is not None and (previous < 0) == (v < 0) else 0
        longer = (abs(v) - 2 * taken,) if taken > 0 else ()
        targets = dict.fromkeys(sign * t for t in (1, abs(v) // 2, *longer, abs(v) - 1) if 0 < t < abs(v))
        together = []
        if sum(n.value == v for n in ints) > 1 and all(
            n.value != v for n in ints[:i]
        ):  # the first literal of its value
            for t in targets:
                tree = fresh(source)
                for node in _ints(tree):
                    if node.value == v:
                        node.value = t
                together.append(unparse(tree))
        return together + [_set_constant(source, int, i, t) for t in targets]

    walk_sites(problem, at)


def shorten_floats(problem: Problem) -> None:
    """Round a float literal to one, two or three significant digits.

    `0.30000001` becomes `0.3` where the divergence does not hang on the last digits.
    """

    def at(source: str, i: int) -> list[str] | None:
        floats = _floats(fresh(source))
        if i >= len(floats):
            return None
        out = []
        if i == 0 and len(floats) > 1:  # every float to one digit at once first
            tree = fresh(source)
            for node in _floats(tree):
                node.value = float(f"{node.value:.1g}")
            out.append(unparse(tree))
        v = floats[i].value
        targets = dict.fromkeys(float(f"{v:.{d}g}") for d in (1, 2, 3))
        return out + [_set_constant(source, float, i, t) for t in targets if t != v and len(repr(t)) < len(repr(v))]

    walk_sites(problem, at)


def _sequences(tree: ast.AST) -> list[ast.List | ast.Tuple]:
    return [
        n for n in ast.walk(tree) if isinstance(n, (ast.List, ast.Tuple)) and isinstance(n.ctx, ast.Load) and n.elts
    ]


def _roles(tree: ast.AST) -> dict[int, tuple[int, str]]:
    """Each literal's length and syntactic role (index, call argument, return value, ...), by node id.

    Literals that share both are the ones that move in step: `dst[0:, :] = src[0:, :]`'s two indices,
    `a = tensor([...])` beside `b = tensor([...])`; a returned pair of inputs is not one of them.
    """
    roles: dict[int, tuple[int, str]] = {}
    for parent in ast.walk(tree):
        for field, child in ast.iter_fields(parent):
            for node in child if isinstance(child, list) else [child]:
                if isinstance(node, (ast.List, ast.Tuple)):
                    roles[id(node)] = (len(node.elts), f"{type(parent).__name__}.{field}")
    return roles


def _in_step(tree: ast.AST, i: int) -> list[ast.List | ast.Tuple]:
    seqs = _sequences(tree)
    roles = _roles(tree)
    return [s for s in seqs if roles[id(s)] == roles[id(seqs[i])]]


KEEP_ONE = 2  # how many "keep only element k" candidates come before the halvings


def shrink_sequences(problem: Problem) -> None:
    """Keep one element of a list or tuple literal, else delete halves, then single ones; unwrap a one-element one.

    Each deletion is tried at once in every literal of the same length and role first (see `_roles`), then
    alone: it shortens paired input values (`torch.tensor([...])`), drops outputs from a returned tuple,
    and so on.
    """

    def at(source: str, i: int) -> list[str] | None:
        seqs = _sequences(fresh(source))
        if i >= len(seqs):
            return None
        n = len(seqs[i].elts)
        chunks = []
        size = n // 2 if n > 1 else 1
        while size >= 1:
            chunks.extend((start, size) for start in range(0, n, size))
            size //= 2

        def each_way(edit: Callable[[ast.AST, ast.List | ast.Tuple], None]) -> list[str]:
            """The edit in every literal in step with literal i at once, then in literal i alone."""
            made = []
            for together in (True, False):
                tree = fresh(source)
                for seq in _in_step(tree, i) if together else [_sequences(tree)[i]]:
                    edit(tree, seq)
                made.append(unparse(tree))
            return made

        out = each_way(lambda tree, seq: replace_node(tree, seq, seq.elts[0])) if n == 1 else []
        # one element kept, before ddmin's halving: often one pair of values carries the bug, and a
        # chain of halvings costs a recompile (a new shape) per step
        for k in range(min(n, KEEP_ONE)) if n > 2 else ():
            out += each_way(lambda tree, seq, k=k: setattr(seq, "elts", [seq.elts[k]]))
        # paired inputs (`a = tensor([...])`, `b = tensor([...])`) must shrink together to keep broadcasting
        for start, size in dict.fromkeys(chunks):
            out += each_way(
                lambda tree, seq, a=start, b=start + size: setattr(seq, "elts", seq.elts[:a] + seq.elts[b:])
            )
        return list(dict.fromkeys(out))  # "together" is "alone" where a literal has no partner

    walk_sites(problem, at)


def simplify_dtypes(problem: Problem) -> None:
    """Replace a `torch.<dtype>` by `torch.float`, the default float32.

    A divergence that survives in float32 needs no half, bfloat16 or double in its repro.
    """

    def at(source: str, i: int) -> list[str] | None:
        def dtype_nodes(tree: ast.AST) -> list[ast.Attribute]:
            return [
                n
                for n in nodes_of(tree, ast.Attribute)
                if n.attr in _DTYPES and isinstance(n.value, ast.Name) and n.value.id == "torch"
            ]

        found = dtype_nodes(fresh(source))
        if i >= len(found):
            return None
        tree = fresh(source)
        dtype_nodes(tree)[i].attr = "float"
        return [unparse(tree)]

    walk_sites(problem, at)


def drop_signs(problem: Problem) -> None:
    """Drop the minus of negative literals, all of them at once first, then one at a time.

    `-1e-08` costs a token more than `1e-08`; this runs last because it rarely saves more than a few tokens.
    """

    def negated(tree: ast.AST) -> list[ast.UnaryOp]:
        return [
            n for n in nodes_of(tree, ast.UnaryOp) if isinstance(n.op, ast.USub) and isinstance(n.operand, ast.Constant)
        ]

    def unsign(node: ast.UnaryOp) -> TreeEdit:
        return lambda tree: replace_node(tree, node, node.operand) and None

    everything_then_each(problem, lambda tree: [unsign(n) for n in negated(tree)])
