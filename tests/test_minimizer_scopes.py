"""The static check that spares the worker candidates certain to fail: names by scope and order, lost attributes."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from minimizer.passes import delete_statements
from minimizer.reducer import PredicateOracle, Problem, Reducer
from minimizer.scopes import Definitions, broken, names_bound_by, unbound_reads
from minimizer.syntax import defined_names, keeps_style, statically_plausible

REPO = Path(__file__).resolve().parent.parent

RUNS = {
    "a loop over a value bound before it": "def f(xs):\n    x = 0\n    for l in xs:\n        x = l(x)\n    return x\n",
    "a comprehension's own variable": "def f(xs):\n    return [x * 2 for x in xs]\n",
    "an exception's name in its handler": "def f():\n    try:\n        pass\n    except Exception as e:\n"
    "        print(e)\n",
    "both arms of an if": "def f(a):\n    if a:\n        y = 1\n    else:\n        y = 2\n    return y\n",
    "a closure reading what is bound after it": "def f(a):\n    def g():\n        return a + h\n    h = 1\n"
    "    return g()\n",
    "a class attribute through self": "class M:\n    n: int = 3\n\n    def f(self, x):\n        return x * self.n\n",
    "a lambda's parameter named like a later local": "def f():\n    t = lambda s: s + 1\n    s = 2\n    return t(s)\n",
    "a global rebound": "c = 1\ndef f():\n    global c\n    c = c + 1\n",
    "a property's setter decorator": "class A:\n    @property\n    def p(self):\n        return 1\n\n    @p.setter\n"
    "    def p(self, v):\n        pass\n",
    "a value a later iteration binds, read under a condition": "def f(xs):\n    for i, x in enumerate(xs):\n"
    "        if i:\n            print(prev)\n        prev = x\n",
    "one with item after the other": "def f(a):\n    with open(a) as p, open(p) as q:\n        return q\n",
}
FAILS = {
    "a local the loop reads before anything binds it": (
        "def f(xs):\n    for l in xs:\n        x = l(x)\n    return x\n",
        "x",
    ),
    "a name another function binds": ("def g():\n    b = 1\n    return b\n\ndef f():\n    return b + 1\n", "b"),
    "a class body's name read bare in a method": (
        "class M:\n    n = 3\n\n    def f(self, x):\n        return x * n\n",
        "n",
    ),
    "an assignment reading its own target first": ("def f():\n    x = x + 1\n    return x\n", "x"),
}


@pytest.mark.parametrize("source", RUNS.values(), ids=list(RUNS))
def test_what_python_runs_is_plausible(source: str) -> None:
    assert unbound_reads(ast.parse(source)) is None and statically_plausible(source)


@pytest.mark.parametrize(("source", "name"), FAILS.values(), ids=list(FAILS))
def test_a_name_read_where_nothing_binds_it_is_named(source: str, name: str) -> None:
    assert unbound_reads(ast.parse(source)) == name and not statically_plausible(source)


BINDS = (
    "import os.path as p, sys\nfrom a import b as c\nx, *y = 1, 2\ndel z\nfor i in r: pass\nwith o as w: pass\n"
    "def f(q, *a, k=1, **kw):\n    global g\n    nonlocal_ = 1\nclass K: pass\nlambda m: m\n"
    "try:\n    pass\nexcept E as e:\n    pass\n[v for v in r]\n(n := 1)\n"
    "match t:\n    case [h, *rest]: pass\n    case {'k': 1, **more} as whole: pass\n"
)


def test_one_classification_of_bound_names_serves_both_walks() -> None:
    tree = ast.parse(BINDS)
    everything = {"p", "sys", "c", "x", "y", "z", "i", "w", "f", "q", "a", "k", "kw", "g", "nonlocal_", "K", "m"}
    everything |= {"e", "v", "n"}
    captures = {"h", "rest", "whole"}  # `**more` is a MatchMapping's rest: neither walk has ever counted it
    assert defined_names(tree) == everything  # module-wide: match captures not counted, as before
    assert {n for node in ast.walk(tree) for n in names_bound_by(node)} == everything | captures
    assert names_bound_by(ast.parse("t = 1").body[0]) == ()  # the node itself only: its targets are its children
    # by scope: a match capture read in its case is bound; the same read with no capture is not
    assert unbound_reads(ast.parse("def f(t):\n    match t:\n        case [h]:\n            return h\n")) is None
    assert unbound_reads(ast.parse("def f(t):\n    match t:\n        case [1]:\n            return h\n")) == "h"


def test_every_program_of_the_corpora_and_gallery_is_plausible() -> None:
    # what users wrote runs: the check may let a failing candidate through, never refuse a program that runs
    paths = [*(REPO / "benchmarks" / "minimize_corpus").glob("*.py"), *(REPO / "sample_cases").rglob("*.py")]
    assert len(paths) > 30
    assert [p.name for p in paths if not statically_plausible(p.read_text())] == []
    assert [p.name for p in paths if broken(ast.parse(p.read_text()), Definitions.of(ast.parse(p.read_text())))] == []


BROKEN = {
    "self.X the original set": (
        "class M:\n    def __init__(self):\n        self.h = 4\n\n    def f(self):\n        return self.h\n",
        "class M:\n    def __init__(self):\n        pass\n\n    def f(self):\n        return self.h\n",
    ),
    "a config field": (
        "class C:\n    heads: int = 4\n\ndef f(cfg):\n    return cfg.heads\n",
        "class C:\n    pass\n\ndef f(cfg):\n    return cfg.heads\n",
    ),
    "the base's __init__": (
        "class M(nn.Module):\n    def __init__(self):\n        super().__init__()\n        self.a = nn.Linear(2, 2)\n",
        "class M(nn.Module):\n    def __init__(self):\n        self.a = nn.Linear(2, 2)\n",
    ),
    "an __init__ that takes arguments": (
        "class M:\n    def __init__(self, n):\n        self.n = n\n\nm = M(3)\n",
        "class M:\n    pass\n\nm = M(3)\n",
    ),
    "a method's return": (
        "class M:\n    def f(self, x):\n        return x\n",
        "class M:\n    def f(self, x):\n        pass\n",
    ),
}
KEPT = {
    "a class attribute through self": (
        "class M:\n    def __init__(self):\n        self.h = 4\n",
        "class M:\n    h = 2\n\n    def f(self):\n        return self.h\n",
    ),
    "nn.Module's own attribute": (
        "class M:\n    def __init__(self):\n        self.h = 4\n",
        "class M:\n    def f(self):\n        return self.training\n",
    ),
    "a function of a module named like a field": (
        "class C:\n    dropout: float = 0.1\n",
        "import torch.nn.functional as F\n\ndef f(x):\n    return F.dropout(x)\n",
    ),
    "a tensor's shape beside a field named shape": (
        "class C:\n    shape: int = 1\n",
        "def f(x):\n    return x.shape\n",
    ),
}


@pytest.mark.parametrize(("original", "candidate"), BROKEN.values(), ids=list(BROKEN))
def test_a_candidate_relying_on_a_definition_it_deleted_is_broken(original: str, candidate: str) -> None:
    assert broken(ast.parse(original), Definitions.of(ast.parse(original))) is None
    assert broken(ast.parse(candidate), Definitions.of(ast.parse(original))) is not None


@pytest.mark.parametrize(("original", "candidate"), KEPT.values(), ids=list(KEPT))
def test_what_still_runs_is_not_broken(original: str, candidate: str) -> None:
    assert broken(ast.parse(candidate), Definitions.of(ast.parse(original))) is None


def test_deleting_a_statement_the_rest_reads_never_reaches_the_oracle() -> None:
    source = (
        "import torch\n\nclass Model(torch.nn.Module):\n    def __init__(self):\n        super().__init__()\n"
        "        self.scale = 2.0\n\n    def forward(self, x):\n        y = x * self.scale\n        z = y + 1\n"
        "        return z\n\nfn = Model()\n\ndef inputs():\n    return (torch.ones(2),)\n\ndef helper():\n    y = 0\n"
        "    return y\n"
    )
    asked: list[str] = []
    problem = Problem(source, PredicateOracle(lambda s: asked.append(s) is None), plausible=keeps_style(source))
    Reducer([delete_statements]).run(problem)
    assert asked, "some candidate was tested"
    for candidate in asked:  # none reads `y` or `self.scale` after deleting what bound it
        assert ("y = x" in candidate) >= ("y + 1" in candidate), candidate
        assert ("self.scale = " in candidate) >= ("self.scale" in candidate), candidate


def test_an_input_tuple_that_no_longer_fits_the_entry_point_never_reaches_the_oracle() -> None:
    original = "import torch\n\ndef fn(x, y=1):\n    return x * y\n\ndef inputs():\n    return (torch.ones(2), 3)\n"
    plausible = keeps_style(original)
    assert plausible(original) and plausible(original.replace("(torch.ones(2), 3)", "(torch.ones(2),)"))
    assert not plausible(original.replace("(torch.ones(2), 3)", "()"))  # fn() missing 1 required positional argument
    assert not plausible(original.replace("(torch.ones(2), 3)", "(torch.ones(2), 3, 4)"))  # one too many
    assert not plausible(original.replace("(torch.ones(2), 3)", "torch.ones(2)"))  # inputs() must return a tuple
