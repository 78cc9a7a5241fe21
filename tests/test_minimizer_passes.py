"""One-line behavioural tests of each minimizer pass under cheap pure-Python predicates (nothing compiles)."""

from __future__ import annotations

from minimizer.passes import (
    SOURCE_PASSES,
    delete_statements,
    drop_keyword_arguments,
    drop_parameters,
    drop_signs,
    drop_unread_attributes,
    drop_unread_config,
    fold_config,
    fold_self_constants,
    inline_defaults,
    inline_functions,
    inline_modules,
    inline_temporaries,
    lift_branches,
    remove_unused_imports,
    replace_with_operand,
    shorten_floats,
    shrink_integers,
    shrink_sequences,
    simplify_dtypes,
    tidy,
)
from minimizer.reducer import PredicateOracle, Problem, Reducer, reduce_with
from minimizer.syntax import canonical


def test_delete_statements_keeps_only_what_the_predicate_needs() -> None:
    assert (
        reduce_with([delete_statements], "a = 1\nb = 2\nc = 3\nprint(b)\n", lambda s: "print(b)" in s)
        == "b = 2\nprint(b)\n"
    )


def test_delete_statements_reaches_into_function_bodies() -> None:
    assert (
        reduce_with([delete_statements], "def f():\n    x = 1\n    y = 2\n    return y\n", lambda s: "return y" in s)
        == "def f():\n    y = 2\n    return y\n"
    )


def test_lift_branches_keeps_the_taken_branch() -> None:
    assert reduce_with([lift_branches], "if flag:\n    x = 1\nelse:\n    x = 2\n", lambda s: "x = 2" in s) == "x = 2\n"


def test_remove_unused_imports_splits_import_lists() -> None:
    assert (
        reduce_with([remove_unused_imports], "import os, torch\ntorch.ones(1)\n", lambda s: "torch.ones" in s)
        == "import torch\ntorch.ones(1)\n"
    )


def test_drop_parameters_removes_the_matching_input() -> None:
    source = "import torch\ndef fn(a, b):\n    return a\n\ndef inputs():\n    return (torch.ones(2), torch.zeros(3))\n"
    assert "zeros" not in reduce_with([drop_parameters], source, lambda s: "return a" in s and "ones" in s)


def test_replace_with_operand_drops_a_needless_call() -> None:
    assert (
        reduce_with(
            [replace_with_operand],
            "import torch\nv = 1\ny = torch.add(v, torch.zeros_like(v))\n",
            lambda s: "v = 1" in s and "y" in s,
        )
        == "import torch\nv = 1\ny = v\n"
    )


def test_replace_with_operand_drops_a_method_call_to_its_receiver() -> None:
    assert (
        reduce_with([replace_with_operand], "x = 1\ny = x.half().relu()\n", lambda s: "relu" in s)
        == "x = 1\ny = x.relu()\n"
    )


def test_drop_keyword_arguments_keeps_the_one_that_matters() -> None:
    assert (
        reduce_with([drop_keyword_arguments], 'print(1, sep="", end="")\n', lambda s: "end" in s)
        == "print(1, end='')\n"
    )


def test_inline_modules_turns_a_stateless_module_into_a_function() -> None:
    source = (
        "import torch.nn as nn\nclass M(nn.Module):\n    def __init__(self):\n        super().__init__()\n    def"
        " forward(self, x):\n        return x.relu()\nfn = M()\n"
    )
    assert (
        reduce_with([inline_modules], source, lambda s: "relu" in s and "fn = M" in s)
        == "import torch.nn as nn\n\ndef M(x):\n    return x.relu()\nfn = M\n"
    )


def test_inline_modules_leaves_stateful_modules_alone() -> None:
    source = (
        "import torch.nn as nn\nclass M(nn.Module):\n    def forward(self, x):\n        return self.w * x\nfn = M()\n"
    )
    assert reduce_with([inline_modules], source, lambda s: True) == canonical(source)


def test_shrink_integers_shrinks_a_shape_as_far_as_allowed() -> None:
    assert (
        reduce_with([shrink_integers], "import torch\nx = torch.randn(64, 8)\n", lambda s: "8)" in s)
        == "import torch\nx = torch.randn(1, 8)\n"
    )


def test_shrink_integers_stops_where_the_predicate_does() -> None:
    assert (
        reduce_with(
            [shrink_integers], "import torch\nx = torch.randn(64)\n", lambda s: int(s.split("(")[1].split(")")[0]) >= 5
        )
        == "import torch\nx = torch.randn(5)\n"
    )


def test_shrink_integers_takes_longer_steps_while_short_ones_hold() -> None:
    calls = []

    def needs_more_than_8225(s: str) -> bool:
        calls.append(s)
        return int(s.split("(")[1].split(")")[0]) > 8225

    assert (
        reduce_with([shrink_integers], "import torch\nx = torch.arange(9906)\n", needs_more_than_8225)
        == "import torch\nx = torch.arange(8226)\n"
    )
    assert len(calls) < 100  # one step at a time: 1,680 calls


def test_shrink_sequences_deletes_list_elements() -> None:
    assert reduce_with([shrink_sequences], "x = [1, 2, 3, 4, 5]\n", lambda s: "3" in s) == "x = 3\n"


def test_shrink_sequences_unwraps_a_one_element_tuple() -> None:
    assert (
        reduce_with([shrink_sequences], "def f(a, b):\n    return (a, b)\n", lambda s: "a" in s.split("return")[1])
        == "def f(a, b):\n    return a\n"
    )


def test_simplify_dtypes_prefers_float32() -> None:
    assert (
        reduce_with([simplify_dtypes], "import torch\nx = torch.ones(2, dtype=torch.float64)\n", lambda s: "dtype" in s)
        == "import torch\nx = torch.ones(2, dtype=torch.float)\n"
    )


def test_shorten_floats_rounds_needless_digits() -> None:
    assert reduce_with([shorten_floats], "x = 0.30000001\n", lambda s: "0.3" in s) == "x = 0.3\n"


def test_all_passes_together_reach_a_small_program() -> None:
    source = (
        "import os\nimport torch\n\nclass Net(torch.nn.Module):\n    def forward(self, x, unused):\n        if True:\n "
        "           y = torch.add(x, torch.zeros_like(x))\n        z = y.floor_divide(0.1)\n        return (z,)\n\nfn ="
        " Net()\n\ndef inputs():\n    return (torch.randn(64, 32), torch.ones(3))\n"
    )
    reduced = reduce_with(SOURCE_PASSES, source, lambda s: "floor_divide" in s and "inputs" in s and "fn" in s)
    assert len(reduced) < len(source) / 2 and "zeros_like" not in reduced and "os" not in reduced


def test_a_candidate_is_never_tested_twice() -> None:
    seen: list[str] = []
    problem = Problem("a = 1\nb = 2\nprint(b)\n", PredicateOracle(lambda s: seen.append(s) is None and "print(b)" in s))
    Reducer(SOURCE_PASSES).run(problem)
    assert len(seen) == len(set(seen))


def test_candidates_that_read_undefined_names_never_reach_the_predicate() -> None:
    seen: list[str] = []
    reduce_with(
        [delete_statements],
        "import torch\nx = torch.ones(1)\nprint(x)\n",
        lambda s: seen.append(s) is None and "print" in s,
    )
    assert all("torch.ones" not in s or "import torch" in s for s in seen)


def test_shrink_sequences_shrinks_paired_inputs_together() -> None:
    source = "a = [1, 2, 3, 4]\nb = [5, 6, 7, 8]\n"

    def same_length(s: str) -> bool:
        return len(s.split("\n")[0].split(",")) == len(s.split("\n")[1].split(","))

    assert (
        reduce_with(
            [shrink_sequences], source, lambda s: same_length(s) and "3" in s and "7" in s and s.count("[") == 2
        )
        == "a = [3]\nb = [7]\n"
    )


def test_shrink_sequences_moves_literals_of_one_role_together_and_leaves_others() -> None:
    source = "def f(x, y):\n    x[0:, :] = y[0:, :]\n    return (x, y)\n"

    def paired(s: str) -> bool:
        return "return (x, y)" in s and s.split("x[")[1].split("]")[0] == s.split("y[")[1].split("]")[0]

    assert reduce_with([shrink_sequences], source, paired) == "def f(x, y):\n    x[:] = y[:]\n    return (x, y)\n"


def test_tidy_removes_all_noise_in_one_candidate() -> None:
    source = (
        '"""doc"""\nimport os, math\nimport torch\n\ndef _helper(t):\n    return t\n_UNUSED = [1]\n\ndef fn(x):\n   '
        ' """doc"""\n    return x\ninputs = (torch.ones(1),)\n'
    )
    seen: list[str] = []
    reduced = reduce_with([tidy], source, lambda s: seen.append(s) is None)
    assert reduced == "import torch\n\ndef fn(x):\n    return x\ninputs = (torch.ones(1),)\n" and len(seen) == 1


def test_drop_signs_tries_every_sign_at_once_first() -> None:
    seen: list[str] = []
    assert (
        reduce_with([drop_signs], "x = [-1.0, -2.0, -3.0]\n", lambda s: seen.append(s) is None)
        == "x = [1.0, 2.0, 3.0]\n"
    )
    assert seen == ["x = [1.0, 2.0, 3.0]\n"]


def test_drop_keyword_arguments_tries_all_of_them_at_once_first() -> None:
    seen: list[str] = []
    assert (
        reduce_with([drop_keyword_arguments], "print(1, end='')\ndict(b=3)\n", lambda s: seen.append(s) is None)
        == "print(1)\ndict()\n"
    )
    assert len(seen) == 1


def test_replace_with_operand_leaves_negative_literals_alone() -> None:
    assert reduce_with([replace_with_operand], "x = -1.5\n", lambda s: True) == "x = -1.5\n"


def test_a_batch_adopts_its_smallest_interesting_candidate() -> None:
    oracle = PredicateOracle(lambda s: True)
    oracle.parallelism = 2
    problem = Problem("a = 1\nb = 2\nc = 3\n", oracle)
    problem.adopt_first(["a = 1\nb = 2\n", "a = 1\n"])
    assert problem.current == "a = 1\n"


def test_tidy_drops_dead_locals() -> None:
    source = "def fn(x):\n    a = x + 1\n    b = a * 2\n    return x\n"
    assert reduce_with([tidy], source, lambda s: True) == "def fn(x):\n    return x\n"


def test_inline_temporaries_turns_graph_statements_into_one_expression() -> None:
    source = (
        "import torch\n\ndef fn(x):\n    elu = torch.nn.functional.elu(x)\n    zeros = torch.zeros_like(x)\n    div ="
        " torch.div(elu, zeros)\n    return div\n"
    )
    assert (
        reduce_with([inline_temporaries], source, lambda s: True)
        == "import torch\n\ndef fn(x):\n    return torch.div(torch.nn.functional.elu(x), torch.zeros_like(x))\n"
    )


def test_shrink_integers_shrinks_every_equal_literal_together() -> None:
    source = "import torch\nx = torch.randn(2, 32)\ny = x.view(2, 32)\n"

    def consistent(s: str) -> bool:
        return s.split("randn(")[1].split(")")[0] == s.split("view(")[1].split(")")[0]

    assert (
        reduce_with([shrink_integers], source, consistent) == "import torch\nx = torch.randn(1, 1)\ny = x.view(1, 1)\n"
    )


def test_drop_unread_attributes_removes_state_nothing_reads() -> None:
    source = (
        "class M:\n    def __init__(self):\n        self.name = 'm'\n        self.w = 2\n    def f(self):\n       "
        " return self.w\n"
    )
    assert "self.name" not in reduce_with([drop_unread_attributes], source, lambda s: "self.w" in s)


def test_drop_unread_config_drops_fields_and_keys_nothing_reads() -> None:
    source = (
        "from dataclasses import dataclass\n@dataclass\nclass C:\n    width: int = 4\n    tags: str = 'x'\nCFG ="
        " {'eps': 1e-05, 'name': 'v3'}\nprint(C(tags='y').width, CFG['eps'])\n"
    )
    assert (
        reduce_with([drop_unread_config], source, lambda s: "print" in s)
        == "from dataclasses import dataclass\n\n@dataclass\nclass C:\n    width: int = 4\nCFG = {'eps':"
        " 1e-05}\nprint(C().width, CFG['eps'])\n"
    )


def test_fold_config_replaces_lookups_by_their_values() -> None:
    source = (
        "from dataclasses import dataclass\n@dataclass\nclass Cfg:\n    width: int = 16\nCONFIG = dict(eps=1e-06)\ndef"
        " f(cfg):\n    return cfg.width + CONFIG['eps']\n"
    )
    assert "return 16 + 1e-06" in reduce_with([fold_config], source, lambda s: "def f" in s)


def test_fold_self_constants_makes_a_module_stateless() -> None:
    source = (
        "class B:\n    def __init__(self):\n        self.width = 0.1\n    def forward(self, x):\n        return x //"
        " self.width\n"
    )
    assert "return x // 0.1" in reduce_with([fold_self_constants], source, lambda s: "forward" in s)


def test_inline_defaults_uses_the_default_nobody_overrides() -> None:
    source = "def f(x, hidden=False):\n    if hidden:\n        return 0\n    return x\nprint(f(1))\n"
    assert "if False:" in reduce_with([inline_defaults], source, lambda s: "print(f(1))" in s)


def test_inline_functions_puts_a_one_line_helper_where_it_is_called() -> None:
    source = "import torch\ndef batch(n, offset=1.0):\n    return torch.randn(n, 1) + offset\ninputs = (batch(3),)\n"
    assert (
        reduce_with([inline_functions], source, lambda s: "randn(3, 1)" in s)
        == "import torch\ninputs = (torch.randn(3, 1) + 1.0,)\n"
    )


def test_each_pass_keeps_its_calls_shrinks_and_seconds() -> None:
    """Per-pass counts add up to the reduction's totals, and name the pass that did the work."""
    source = "import os\nimport torch\na = 1\nb = 2\nc = 3\nprint(torch.ones(b))\n"
    problem = Problem(canonical(source), PredicateOracle(lambda s: "torch.ones(b)" in s and "b = 2" in s))
    stats = Reducer([lift_branches, delete_statements, remove_unused_imports]).run(problem)
    by_name = {p.name: p for p in stats.passes}
    assert sum(p.calls for p in stats.passes) == stats.oracle_calls > 0
    assert sum(p.shrinks for p in stats.passes) == stats.accepted > 0
    assert by_name["delete_statements"].shrinks >= 1 and "lift_branches" not in by_name  # no branch: never called
    assert all(p.seconds >= 0 for p in stats.passes) and "delete_statements" in stats.passes_table()
