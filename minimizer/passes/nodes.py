"""Passes over the nodes of straight-line code (what the graph path writes): cut the output, cut the inputs.

They are the two moves of PyTorch's fx minifier, in source form. `truncate_output` returns an earlier
node instead of the output ("truncate suffix"); `promote_to_inputs` turns a node into a new input of its
shape ("turn a node into a placeholder"), so that everything that only computed it goes. Dead code goes
with every candidate (`syntax.prune`), so one oracle call removes a whole cone of nodes.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Sequence

from minimizer.graph import TensorType, node_types, rewrite_with_graph
from minimizer.reducer import Problem, ReductionPass
from minimizer.size import sort_key
from minimizer.syntax import fresh, input_tuples, mutates, tidy_tree, unparse, used_names


def _entry(tree: ast.Module) -> ast.FunctionDef | None:
    """A module-level `def fn` that ends in a return: the straight-line code these passes cut."""
    fn = next((s for s in tree.body if isinstance(s, ast.FunctionDef) and s.name == "fn"), None)
    if fn is None or not fn.body or not isinstance(fn.body[-1], ast.Return):
        return None
    return fn


def _assigned(stmt: ast.stmt) -> str | None:
    if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
        return stmt.targets[0].id
    return None


def cut_at(source: str, k: int) -> str:
    """The program with `def fn` returning the value of its k-th statement, the statements after it gone."""
    tree = fresh(source)
    fn = _entry(tree)
    assert fn is not None
    name = _assigned(fn.body[k])
    assert name is not None
    fn.body = fn.body[: k + 1] + [ast.Return(ast.Name(name, ast.Load()))]
    return unparse(tree)


def earliest_cut(problem: Problem, source: str, adopting: bool = False) -> str | None:
    """The earliest cut of `source` (an interesting program) that still diverges the same way, or None.

    A divergence that starts at node k usually shows in every node after it, so the cut is bisected
    (two probes per oracle batch, a third of the range apart) instead of tried node by node. `adopting`:
    each interesting cut is adopted as soon as a batch finds it (each later one is earlier, so smaller),
    so that a budget running out mid-bisection keeps the best cut so far instead of nothing.
    """
    fn = _entry(fresh(source))
    if fn is None:
        return None
    sites = [k for k, stmt in enumerate(fn.body[:-1]) if _assigned(stmt) is not None]
    cuts = [cut_at(source, k) for k in sites]
    lo, hi = 0, len(cuts)  # cuts[hi:] may reproduce; the program itself (hi == len) does
    while lo < hi:
        mids = sorted({lo + (hi - lo) // 3, lo + 2 * (hi - lo) // 3})
        answers = problem.probe([cuts[m] for m in mids])
        if answers[0]:
            hi = mids[0]
        elif len(mids) > 1 and answers[1]:
            lo, hi = mids[0] + 1, mids[1]
        else:
            lo = mids[-1] + 1
        if adopting and hi < len(cuts) and any(answers):
            problem.adopt(cuts[hi])
    found = cuts[hi] if hi < len(cuts) else None
    if adopting and found is not None and problem.prepare(found) == problem.current:
        problem.bisected = problem.current  # truncate_output need not bisect this program again
    return found


def truncate_output(problem: Problem) -> None:
    """Return an earlier node instead of the output: the earliest one that still diverges the same way.

    What only the later nodes needed goes with the cut. In-place updates before the cut stay: a mutated
    input is a result too. Skipped where the graph rewrite's own bisection has just adopted this program's cut.
    """
    if problem.bisected == problem.current:
        return
    cut = earliest_cut(problem, problem.current)
    if cut is not None:
        problem.adopt(cut)


def graph_rewrite(fx_graphs: Callable[[str], Sequence[str]]) -> ReductionPass:
    """A pass that proposes the graph rewrite of the current candidate, given a way to get its FX graphs."""

    def graph_rewrite(problem: Problem) -> None:
        """Replace the compiled entry point by the straight-line code of its Dynamo graph, parameters made explicit.

        Module classes, config objects, helpers and Python-level control flow collapse into one function
        of torch calls. Parameters that do not require gradients are tried first (an inference graph),
        with ones that do beside them (the training graph a module's parameters give). A rewrite larger
        than the program (many parameters, little code) is not adopted as it is: its cuts are, each as the
        bisection finds it, down to the earliest.
        """
        graphs = fx_graphs(problem.current)
        variants = [c for c in (rewrite_with_graph(problem.current, graphs, g) for g in (False, True)) if c is not None]
        tidied = fresh(problem.current)
        tidy_tree(tidied)
        # a rewrite that tidying alone beats is no rewrite worth having (`fn = torch.erf` as a longer def)
        if (
            not variants
            or sort_key(problem.prepare(variants[0])) >= sort_key(problem.prepare(unparse(tidied)))
            and _straight(problem.current)
        ):
            return
        rewrite = next((v for v in variants if problem.probe([v])[0]), None)  # the second only if the first fails
        if rewrite is None:
            return
        if not problem.adopt(rewrite):
            # larger than the program: its cuts are adopted as the bisection finds them (anytime: a budget that runs
            # out in the bisection keeps the best cut so far)
            earliest_cut(problem, problem.prepare(rewrite), adopting=True)

    return graph_rewrite


def _straight(source: str) -> bool:
    """Already straight-line code: no classes, and `def fn` (if any) has no control flow."""
    tree = fresh(source)
    if any(isinstance(s, ast.ClassDef) for s in tree.body):
        return False
    return not any(isinstance(n, (ast.If, ast.For, ast.While, ast.With, ast.Try)) for n in ast.walk(tree))


def promoted(source: str, k: int, typed: TensorType) -> str | None:
    """The program with `def fn`'s k-th node made a new last input, drawn as a seeded tensor of its type."""
    tree = fresh(source)
    fn = _entry(tree)
    tuples = input_tuples(tree)
    if fn is None or not tuples or any(len(t.elts) != len(fn.args.args) for t in tuples):
        return None
    name = _assigned(fn.body[k])
    assert name is not None
    del fn.body[k]
    fn.args.args.append(ast.arg(name))
    for t in tuples:
        t.elts.append(typed.maker())
    return unparse(tree)


def promote_to_inputs(fx_graphs: Callable[[str], Sequence[str]]) -> ReductionPass:
    """A pass that makes nodes inputs, given a way to get the current candidate's Dynamo graph (for their types)."""

    def promote_to_inputs(problem: Problem) -> None:
        """Make a node of `def fn` a new input of its shape and dtype, the largest cut first.

        Everything that only computed the node goes with it (the embedding, norm and projection in front of
        an attention, say), so candidates are tried smallest first. A node refused once is not tried
        again in this pass.
        """
        refused: set[str] = set()
        while True:
            source = problem.current
            tree = fresh(source)
            fn = _entry(tree)
            if fn is None:
                return
            returned = used_names(fn.body[-1])
            types = node_types(fx_graphs(source))
            candidates: list[tuple[str, str]] = []
            for k, stmt in enumerate(fn.body[:-1]):
                name = _assigned(stmt)
                if name is None or name in returned or name in refused or name not in types or mutates(stmt.value):
                    continue
                made = promoted(source, k, types[name])
                if made is not None:
                    candidates.append((name, problem.prepare(made)))
            candidates.sort(key=lambda c: sort_key(c[1]))
            adopted = False
            for start in range(0, len(candidates), problem.oracle.parallelism):
                batch = candidates[start : start + problem.oracle.parallelism]
                for (name, candidate), ok in zip(batch, problem.probe([c for _, c in batch]), strict=False):
                    if ok and problem.adopt(candidate):
                        adopted = True
                        break
                    refused.add(name)
                if adopted:
                    break
            if not adopted:
                return

    return promote_to_inputs
