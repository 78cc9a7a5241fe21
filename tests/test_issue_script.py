"""The issue body's script, piece by piece: Python's own answer, the side that is wrong, and the draft's text (no
harness, no seed or switch it does not need). The runs that settle a script are in test_issue_body.py."""

from __future__ import annotations

import ast

from engine import CheckOptions, LeafKind, LeafResult, Symptom, Verdict, Witness
from minimizer.body import Shown, Side, side_of
from minimizer.python_semantics import python_expression
from minimizer.standalone import Inputs, Literal, draft

FLAGS = {"fallback_random": True, "emulate_precision_casts": True}


def python(source: str) -> str | None:
    return python_expression(ast.parse(source).body[0])  # type: ignore[arg-type]


def test_python_answers_for_the_operations_python_defines() -> None:
    assert python("def fn(t):\n    return t // 0.1") == "t // 0.1"
    assert python("def fn(x, y):\n    return torch.remainder(x, y)") == "x % y"
    assert python("def fn(x, y):\n    return x.fmod(y)") == "math.fmod(x, y)"
    assert python("def fn(a, b):\n    return torch.div(a, b, rounding_mode='floor')") == "a // b"
    assert python("def fn(x):\n    return torch.acosh(x) * 2") == "math.acosh(x) * 2"


def test_no_python_answer_where_python_has_no_counterpart() -> None:
    assert python("def fn(x):\n    return x.sum()") is None  # a reduction
    assert python("def fn(a, b):\n    return torch.div(a, b, rounding_mode='trunc')") is None  # math.trunc is an int
    assert python("def fn(x):\n    y = x // 2\n    return y") is None  # a statement before the return
    assert python("def fn(x):\n    return 3.0") is None  # no input in it


def test_the_side_is_the_one_further_from_the_expected_value() -> None:
    assert side_of(Shown([9.0], [10.0], [9.0])) is Side.COMPILED
    assert side_of(Shown([4096.0], [4128.0], [4113.0])) is Side.EAGER  # bf16 arange: compiled is nearer
    assert side_of(Shown([9.0, 4.0], [10.0, 3.0], [9.0, 3.0])) is Side.BOTH  # each is off somewhere
    assert side_of(Shown([9.0], [10.0], None)) is None  # nothing to judge by


def test_a_zero_of_the_wrong_sign_is_wrong() -> None:
    # remainder: Python gives the divisor's sign [-0, -0, 0, 0]; eager [-0, 0, -0, 0]; compiled all +0
    python_signs, eager, compiled = [-0.0, -0.0, 0.0, 0.0], [-0.0, 0.0, -0.0, 0.0], [0.0, 0.0, 0.0, 0.0]
    assert side_of(Shown(eager, compiled, python_signs)) is Side.BOTH
    assert side_of(Shown([-0.0], [0.0], [-0.0])) is Side.COMPILED


def _leaf(numel: int, symptoms: tuple[Symptom, ...] = (Symptom.VALUE,), **kw: object) -> LeafResult:
    return LeafResult(
        "out",
        LeafKind.OUTPUT,
        Verdict.DIVERGENT,
        "",
        symptoms=symptoms,
        shape=(numel,),
        numel=numel,
        worst_index=(0,),
        witness=Witness.FP64,
        **kw,  # type: ignore[arg-type]
    )


FLOOR = "import torch\n\ndef fn(t):\n    return t // 0.1\n\ndef inputs():\n    return (torch.tensor([1]),)\n"


def test_a_one_op_script_is_the_op_its_literal_input_eager_compiled_and_python() -> None:
    written = Inputs((Literal("torch.tensor([1])", floating=False, numel=1, ndim=1),))
    script = draft(FLOOR, _leaf(1), CheckOptions(inductor_config=FLAGS), flags={}, inputs=written)
    assert script is not None
    code = [line for line in script.text.splitlines() if line.strip()]
    assert code == [
        "import torch",
        "def fn(t):",
        "    return t // 0.1",
        "t = torch.tensor([1])",
        "eager = fn(t)",
        "compiled = torch.compile(fn)(t)",
        'print("eager   ", eager.tolist())',
        'print("compiled", compiled.tolist())',
        "expected = [a // 0.1 for a in t.tolist()]",
        'print("Python  ", expected)',
    ]
    assert script.expected == "Python"


def test_a_0d_input_is_flattened_before_python_iterates_it() -> None:
    """The minimizer shrinks inputs to `torch.tensor(1.0)`: its `.tolist()` is a float, which no list comprehension
    iterates (every switch-less script of the floor-division body failed on it, so the body kept both switches)."""
    for ndim, text in ((0, "torch.tensor(1.0)"), (1, "torch.tensor([1.0])"), (2, "torch.tensor([[1.0]])")):
        written = Inputs((Literal(text, floating=True, numel=1, ndim=ndim),))
        script = draft(FLOOR, _leaf(1), CheckOptions(), flags={}, inputs=written)
        assert script is not None
        expected = next(line for line in script.text.splitlines() if line.startswith("expected = "))
        scope: dict[str, object] = {"t": __import__("torch").tensor(1.0).reshape((1,) * ndim)}
        exec(expected, scope)  # noqa: S102  (the script's own line, on the input it names)
        assert scope["expected"] == [9.0], (ndim, expected)


def test_switches_are_written_only_when_asked_and_a_seed_only_before_a_draw() -> None:
    script = draft(FLOOR, _leaf(1), CheckOptions(inductor_config=FLAGS))
    assert script is not None
    assert "torch._inductor.config.fallback_random = True" in script.text and "manual_seed" not in script.text
    drawn = FLOOR.replace("torch.tensor([1])", "torch.randn(64, 64)")
    script = draft(drawn, _leaf(4096), CheckOptions(), flags={})
    assert script is not None and "torch._inductor" not in script.text
    lines = script.text.splitlines()
    assert lines.index("torch.manual_seed(0)") == lines.index("t = torch.randn(64, 64)") - 1


def test_a_mutated_input_is_cloned_for_each_side_and_nothing_else_is() -> None:
    program = (
        "import torch\n\ndef fn(x, idx, v):\n    x.index_put_((idx,), v)\n    x.add_(x.flip(0))\n    return x\n\n"
        "def inputs():\n    return (torch.rand(8, 16), torch.tensor([0, 3, 6]), torch.rand(3, 16))\n"
    )
    leaf = LeafResult(
        "input args[0]",
        LeafKind.MUTATED_INPUT,
        Verdict.DIVERGENT,
        "",
        symptoms=(Symptom.VALUE,),
        shape=(8, 16),
        numel=128,
        worst_index=(7, 1),
    )
    script = draft(program, leaf, CheckOptions(), flags={})
    assert script is not None
    assert "eager, compiled = x.clone(), x.clone()" in script.text
    assert "fn(eager, idx, v)" in script.text and "torch.compile(fn)(compiled, idx, v)" in script.text
    for harness in ("def run(", "ARGS", "deepcopy", "Float64Sequences"):
        assert harness not in script.text


def test_an_input_written_out_is_made_once_and_the_others_as_the_program_made_them() -> None:
    """inputs() made `a` and a drawn `c`; `a` is written out as a literal: the script used to make `a` twice (the
    program's statement, then the literal), which a maintainer reads as a mistake."""
    program = (
        "import torch\n\ndef fn(a, c):\n    return a // 0.1, c + 1\n\n"
        "def inputs():\n    a = torch.tensor([1.0, 0.5])\n    c = torch.randn(4, 8)\n    return a, c\n"
    )
    written = Inputs((Literal("torch.tensor([1.0, 0.5])", floating=True, numel=2, ndim=1), Literal(None, True, 32, 2)))
    script = draft(program, _leaf(2), CheckOptions(), flags={}, inputs=written)
    assert script is not None
    lines = script.text.splitlines()
    assert [line for line in lines if line.startswith("a = ")] == ["a = torch.tensor([1.0, 0.5])"]
    assert lines.index("torch.manual_seed(0)") < lines.index("c = torch.randn(4, 8)"), script.text


def test_pythons_answer_loops_over_the_inputs_its_element_reads_only() -> None:
    """An output beside another whose input has its own size (`relu(c)` beside `a // b`, as a minimization under a
    short budget leaves it): zipping `c` in too raised, so no short script showed the floor division."""
    import dataclasses

    import torch

    program = (
        "import torch\n\ndef fn(a, b, c):\n    return (torch.div(a, b, rounding_mode='floor'), torch.relu(c) + 1)\n\n"
        "def inputs():\n    return (torch.tensor([1.0, 6.0]), torch.tensor([0.1, 0.2]), torch.randn(4, 8))\n"
    )
    leaf = dataclasses.replace(_leaf(2), name="out[0]")
    script = draft(program, leaf, CheckOptions(), flags={})
    assert script is not None
    expected = next(line for line in script.text.splitlines() if line.startswith("expected = "))
    scope: dict[str, object] = {"a": torch.tensor([1.0, 6.0]), "b": torch.tensor([0.1, 0.2]), "c": torch.randn(4, 8)}
    exec(expected, scope)  # noqa: S102  (the script's own line, on the inputs it names)
    assert scope["expected"] == [9.0, 29.0], expected
