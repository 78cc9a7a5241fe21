"""Passes over statements: delete them, unwrap their blocks, drop unused imports and parameters.

Each pass proposes variants of `problem.current` via `walk_sites`, so it keeps the reducer's invariants:
only strictly smaller, interesting candidates are adopted, and every site is revisited after a change.
"""

from __future__ import annotations

import ast

from minimizer.reducer import Problem, walk_sites
from minimizer.syntax import blocks, entry_function, fresh, input_tuples, nodes_of, tidy_tree, unparse, used_names

_COMPOUND = (ast.If, ast.For, ast.While, ast.With, ast.Try)


def tidy(problem: Problem) -> None:
    """Propose one candidate without docstrings, dead module-level definitions and unused imports.

    Noise that a human would delete at a glance goes in one oracle call instead of one call per
    statement; when the oracle disagrees, the finer passes below do the same piece by piece.
    """
    tree = fresh(problem.current)
    tidy_tree(tree)
    problem.try_adopt(unparse(tree))


def _chunk_sites(tree: ast.Module) -> list[tuple[int, int, int]]:
    """(block, start, size) for every block, large chunks first: ddmin's granularity schedule."""
    sites: list[tuple[int, int, int]] = []
    for b, block in enumerate(blocks(tree)):
        n = len(block)
        size = n
        while size >= 1:
            sites.extend((b, start, size) for start in range(0, n, size))
            size //= 2
    sites.sort(key=lambda s: -s[2])
    return sites


def delete_statements(problem: Problem) -> None:
    """Delete runs of consecutive statements in every block, whole blocks first, then halves, down to one.

    This is ddmin over each statement list: it removes dead helpers, unrelated layers and prints.
    """

    def at(source: str, i: int) -> list[str] | None:
        tree = fresh(source)
        sites = _chunk_sites(tree)
        if i >= len(sites):
            return None
        b, start, size = sites[i]
        del blocks(tree)[b][start : start + size]
        return [unparse(tree)]

    walk_sites(problem, at)


def lift_branches(problem: Problem) -> None:
    """Replace an if/for/while/with/try statement by its body (an if also by its else branch).

    It flattens control flow that the divergence does not depend on, leaving straight-line code.
    """

    def at(source: str, i: int) -> list[str] | None:
        compound = nodes_of(fresh(source), _COMPOUND)
        if i >= len(compound):
            return None
        out = []
        for field in ("body", "orelse"):
            tree = fresh(source)
            node = nodes_of(tree, _COMPOUND)[i]
            replacement = getattr(node, field, None)
            if not replacement:
                continue
            for block in blocks(tree):
                for k, stmt in enumerate(block):
                    if stmt is node:
                        block[k : k + 1] = replacement
            out.append(unparse(tree))
        return out

    walk_sites(problem, at)


def remove_unused_imports(problem: Problem) -> None:
    """Drop imported names that nothing reads, one alias at a time.

    Deleting whole statements cannot split `import a, b`; this pass can, and it tries only unused names.
    """

    def at(source: str, i: int) -> list[str] | None:
        tree = fresh(source)
        used = used_names(tree)
        imports: list[ast.Import | ast.ImportFrom] = [
            n for n in ast.walk(tree) if isinstance(n, (ast.Import, ast.ImportFrom))
        ]
        aliases = [(imp, a) for imp in imports for a in imp.names]
        if i >= len(aliases):
            return None
        imp, alias = aliases[i]
        if (alias.asname or alias.name).split(".")[0] in used:
            return []
        imp.names.remove(alias)
        if not imp.names:
            for block in blocks(tree):
                if imp in block:
                    block.remove(imp)
        return [unparse(tree)]

    walk_sites(problem, at)


def drop_parameters(problem: Problem) -> None:
    """Remove one parameter of the entry function together with the matching element of its inputs.

    Inputs that the divergence does not need go, and so does the code that built them once it is dead.
    """

    def at(source: str, i: int) -> list[str] | None:
        tree = fresh(source)
        entry = entry_function(tree)
        if entry is None:
            return None
        params = [a for a in entry.args.args if a.arg != "self"]
        if i >= len(params):
            return None
        tuples = input_tuples(tree)
        if not tuples or any(len(t.elts) != len(params) for t in tuples):
            return []
        entry.args.args.remove(params[i])
        for t in tuples:
            del t.elts[i]
        return [unparse(tree)]

    walk_sites(problem, at)
