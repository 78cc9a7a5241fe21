"""The issue body's script: the shortest program that shows the bug on a stock torch, as a maintainer pastes it.

Imports, the program's own definitions, its inputs written out (small tensors as literals, larger ones drawn after
a seed), eager, `torch.compile`, and a few printed values with the expected one beside them: Python's own
arithmetic where the program is one expression of operations Python defines (`t // 0.1`, `x % y`,
`math.fmod`), else a float64 run where a float64 run of the program is a fair judge. Nothing of a harness: no
helper function, no argument list, no deep copies, no seed the program does not need, no Inductor switch that the
bug does not need (minimizer/body.py removes them one by one and keeps the script that still shows it).

`draft` writes the script from what is known statically plus what a first run of it found (`Inputs`: which inputs
are small enough to write out, their values and dtypes). The counterpart for tools is repro.py
(minimizer/repro.py): that one judges every leaf and exits 1; this one reads like a hand-written report.

Where a short script cannot show the leaf (a gradient, a module's state, a program that calls torch.compile
itself), `draft` returns None and the body shows the program as it is.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field

from engine import CheckOptions, LeafKind, LeafResult, Symptom, Witness
from engine.snippet import SnippetError, SnippetStyle, detect_style
from minimizer.python_semantics import numpy_expression, python_expression

DTYPES = {"bf16": "torch.bfloat16", "fp16": "torch.float16"}
SMALL = 16  # elements: an input this small is written out, and a leaf this small is printed whole
SEQUENCES = ("arange", "linspace", "logspace")  # factories whose float dtype a float64 run must widen itself


@dataclass(frozen=True)
class Literal:
    """One input as a first run of the script saw it: its constructor written out where it is small."""

    text: str | None  # `torch.tensor([1.0, 2.0], dtype=torch.bfloat16)`, or None where it is drawn or not a tensor
    floating: bool = False
    numel: int | None = None  # None: not a tensor
    ndim: int = 0


@dataclass(frozen=True)
class Inputs:
    """What a first run found out about the inputs, by position (minimizer/body.py fills it)."""

    literals: tuple[Literal, ...] = ()


@dataclass(frozen=True)
class Draft:
    text: str  # the script as pasted
    tail: str  # lines run after it by minimizer/body.py only: exit 0 when the difference shows, print what it saw
    flags: tuple[str, ...]  # the Inductor switches it sets
    expected: str  # "Python", "float64" or "": what the printed expected value is
    names: tuple[str, ...] = field(default=())  # the input variables, in the program's order


def draft(
    program: str,
    leaf: LeafResult,
    options: CheckOptions,
    *,
    flags: dict[str, object] | None = None,
    inputs: Inputs | None = None,
    random_calls: bool = False,
) -> Draft | None:
    """The script that shows `leaf`'s difference, or None where a short script cannot show it.

    `flags` are the Inductor switches to set (default: the check's); `random_calls`: the program draws random
    numbers when it runs, so each run starts from the same seed.
    """
    try:
        style = detect_style(program)
        tree = ast.parse(program)
    except (SnippetError, SyntaxError):
        return None
    target = _target(leaf)
    if style is SnippetStyle.REPRO or target is None or leaf.shape is None:
        return None
    flags = dict(options.inductor_config if flags is None else flags)
    made = _inputs(tree, style)
    if made is None:
        return None
    setup, expressions = made
    definitions = [s for s in tree.body if not _harness(s)]
    params = _parameters(tree, style, len(expressions))
    names = _names(params, expressions, tree)
    literals = inputs.literals if inputs is not None else ()
    expected = _expected(tree, style, leaf, options, names, literals, target, program)
    lines = [ast.unparse(s) for s in tree.body if isinstance(s, ast.ImportFrom) and s.module == "__future__"]
    lines += _imports(definitions, expected.whole if expected is not None else "") + [""]
    lines += [f"torch._inductor.config.{k} = {v!r}" for k, v in sorted(flags.items())]
    body = [s for s in definitions if not _is_import(s)]
    seed = f"torch.manual_seed({options.seed})"
    if _draws(body):  # module-level weights: drawn from the seed the check started from
        lines.append(seed)
    if body:
        lines += ["", ast.unparse(ast.Module(body=body, type_ignores=[])), ""]
    drawn = [e for i, e in enumerate(expressions) if not (i < len(literals) and literals[i].text is not None)]
    written = {n for i, n in enumerate(names) if i < len(literals) and literals[i].text is not None}
    # every input written out: the statements that made them are dead; else only those that made a written one
    setup = _live_setup(setup, drawn, written) if drawn else []
    if not _draws(body) and _draws([*setup, *(ast.Expr(e) for e in drawn)]):
        lines.append(seed)
    if style is SnippetStyle.KERNELBENCH:
        lines.append('fn = Model(*(get_init_inputs() if "get_init_inputs" in globals() else ()))')
    lines += [ast.unparse(s) for s in setup]
    lines += _assignments(names, expressions, literals, options)
    lines += _runs(tree, params, names, options, target, seed if random_calls else None)
    small = leaf.numel <= SMALL
    lines += _prints(leaf, expected, small)
    text = re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).strip() + "\n"
    how = expected.how if expected is not None else ""
    return Draft(text, _tail(leaf, expected, small), tuple(sorted(flags)), how, tuple(names))


def _runs(
    tree: ast.Module,
    params: list[str],
    names: list[str],
    options: CheckOptions,
    target: tuple[str, object],
    seed: str | None,
) -> list[str]:
    """The two runs, eager's then compiled's, each from `seed` where the program draws random numbers as it runs."""
    # an input the program writes in place is handed to each run as a copy: eager's write must not reach compiled
    written_to = _mutated(tree, params)
    given = [f"{n}.clone()" if p in written_to else n for n, p in zip(names, params, strict=True)]
    compiled_fn = _compiled(tree, options)
    kind, index = target
    lines: list[str] = []
    if kind == "input":
        mutated = names[index]
        lines += [f"eager, compiled = {mutated}.clone(), {mutated}.clone()"]
        for side, fn in (("eager", "fn"), ("compiled", compiled_fn)):
            lines += [seed] if seed else []
            lines.append(f"{fn}({', '.join(side if i == index else n for i, n in enumerate(names))})")
        return lines
    lines += [seed] if seed else []
    lines.append(f"eager = fn({', '.join(given)}){index}")
    lines += [seed] if seed else []
    lines.append(f"compiled = {compiled_fn}({', '.join(given)}){index}")
    return lines


# -- what the script is made of --
def _target(leaf: LeafResult) -> tuple[str, object] | None:
    """("output", "['logits']") for `out['logits']`, ("input", 2) for `input args[2]`; None for what a short script
    cannot show (a gradient, a module's state, a Python scalar)."""
    if leaf.kind is LeafKind.OUTPUT:
        name = re.sub(r"^call\d+: ", "", leaf.name)
        return ("output", name[len("out") :]) if name.startswith("out") else None
    if leaf.kind is LeafKind.MUTATED_INPUT:
        m = re.fullmatch(r"(?:input )?args\[(\d+)\]", leaf.name)
        return ("input", int(m.group(1))) if m else None
    return None


_ENTRY = {"inputs", "get_inputs", "compile_kwargs"}


def _mutated(tree: ast.Module, params: list[str]) -> set[str]:
    """The entry point's parameters it writes in place (`x.add_(...)`, `x[i] = ...`), by name."""
    fn = next((s for s in tree.body if isinstance(s, ast.FunctionDef) and s.name == "fn"), None)
    if fn is None:
        return set()
    written: set[str] = set()
    for node in ast.walk(fn):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr.endswith("_")
            and not node.func.attr.startswith("__")
            and isinstance(node.func.value, ast.Name)
        ):
            written.add(node.func.value.id)
        if isinstance(node, (ast.Assign, ast.AugAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            written |= {t.value.id for t in targets if isinstance(t, ast.Subscript) and isinstance(t.value, ast.Name)}
    return written & set(params)


def _binds(stmt: ast.stmt) -> set[str]:
    if isinstance(stmt, (ast.FunctionDef, ast.ClassDef)):
        return {stmt.name}
    if isinstance(stmt, ast.Assign):
        return {t.id for t in stmt.targets if isinstance(t, ast.Name)}
    return set()


def _harness(stmt: ast.stmt) -> bool:
    """What the script writes its own way: the inputs, compile_kwargs, a docstring, `if __name__`, `from __future__`."""
    if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant) and isinstance(stmt.value.value, str):
        return True
    if isinstance(stmt, ast.If) and "__name__" in ast.unparse(stmt.test):
        return True
    if isinstance(stmt, ast.ImportFrom) and stmt.module == "__future__":
        return True
    return bool(_binds(stmt) & _ENTRY)


def _is_import(stmt: ast.stmt) -> bool:
    return isinstance(stmt, (ast.Import, ast.ImportFrom))


def _imports(definitions: list[ast.stmt], expected: str) -> list[str]:
    """The program's imports, torch once, and `math` or `numpy` where the expected value needs them."""
    own = [ast.unparse(s) for s in definitions if _is_import(s)]
    first = [f"import {m}" for m in ("math", "numpy") if f"{m}." in expected or f"import {m}" in own]
    return first + ["import torch"] + [i for i in own if i not in first and i != "import torch"]


def _inputs(tree: ast.Module, style: SnippetStyle) -> tuple[list[ast.stmt], list[ast.expr]] | None:
    """The statements that make the inputs and one expression per input, from `inputs`/`get_inputs`."""
    name = "get_inputs" if style is SnippetStyle.KERNELBENCH else "inputs"
    for stmt in tree.body:
        if isinstance(stmt, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name for t in stmt.targets):
            value = stmt.value
            return ([], list(value.elts)) if isinstance(value, (ast.Tuple, ast.List)) else None
        if isinstance(stmt, ast.FunctionDef) and stmt.name == name and not stmt.args.args:
            last = stmt.body[-1] if stmt.body else None
            if not isinstance(last, ast.Return) or last.value is None:
                return None
            value = last.value
            elts = list(value.elts) if isinstance(value, (ast.Tuple, ast.List)) else None
            if elts is None or any(isinstance(e, ast.Starred) for e in elts):
                return None
            return list(stmt.body[:-1]), elts
    return None


def _parameters(tree: ast.Module, style: SnippetStyle, count: int) -> list[str]:
    """The entry point's parameter names (`def fn`, or the module's forward), for the input variables."""
    candidates = [s for s in tree.body if isinstance(s, ast.FunctionDef) and s.name == "fn"]
    candidates += [
        f
        for c in tree.body
        if isinstance(c, ast.ClassDef)
        for f in c.body
        if isinstance(f, ast.FunctionDef) and f.name == "forward"
    ]
    for function in candidates:
        params = [a.arg for a in function.args.posonlyargs + function.args.args]
        if function.name == "forward":
            params = params[1:]
        if len(params) >= count and not function.args.vararg:
            return params[:count]
    return [f"x{i}" for i in range(count)]


def _names(params: list[str], expressions: list[ast.expr], tree: ast.Module) -> list[str]:
    """One variable per input: the name `inputs` already gives it (`a` of `return (a, b)`), else the entry point's
    parameter name, never shadowing the program's own names."""
    taken = {n for s in tree.body for n in _binds(s)} | {"torch", "eager", "compiled", "expected", "i", "fn"}
    names: list[str] = []
    for p, expr in zip(params, expressions, strict=True):
        if isinstance(expr, ast.Name) and expr.id not in taken and expr.id not in names:
            names.append(expr.id)
            continue
        name = p
        while name in taken or name in names:
            name += "_"
        names.append(name)
    return names


# calls that make the same values on every run: a statement of only these needs no seed
_DETERMINISTIC = frozenset(
    {
        "tensor",
        "as_tensor",
        "arange",
        "linspace",
        "logspace",
        "zeros",
        "ones",
        "full",
        "empty",
        "eye",
        "zeros_like",
        "ones_like",
        "full_like",
        "device",
        "float",
        "int",
        "bool",
        "tuple",
        "list",
        "dict",
        "range",
        "len",
        "to",
        "view",
        "reshape",
        "expand",
        "transpose",
        "permute",
        "t",
        "contiguous",
        "clone",
        "double",
        "half",
        "bfloat16",
        "long",
        "requires_grad_",
        "eval",
    }
)


def _live_setup(setup: list[ast.stmt], drawn: list[ast.expr], written: set[str]) -> list[ast.stmt]:
    """inputs()'s statements a script still needs: one that only makes an input written out as a literal below is
    dead (the literal assignment would follow it and say the same twice), unless another statement or an input's
    expression reads what it binds."""

    def reads(nodes: list[ast.AST]) -> set[str]:
        return {n.id for x in nodes for n in ast.walk(x) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}

    kept = list(setup)
    for stmt in setup:
        bound = _binds(stmt)
        others = [s for s in kept if s is not stmt]
        if bound and bound <= written and not bound & reads([*others, *drawn]):
            kept = others
    return kept


def _draws(statements: list[ast.stmt]) -> bool:
    """Whether these statements may draw from torch's generator when they run (a module's weights, a random input):
    any call outside the deterministic factories and views above."""
    for stmt in statements:
        if isinstance(stmt, (ast.FunctionDef, ast.ClassDef, ast.Import, ast.ImportFrom)):
            continue
        for node in ast.walk(stmt):
            if isinstance(node, ast.Call):
                func = node.func
                name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
                if name not in _DETERMINISTIC:
                    return True
    return False


def _assignments(
    names: list[str], exprs: list[ast.expr], literals: tuple[Literal, ...], options: CheckOptions
) -> list[str]:
    """`t = torch.tensor([1])`: a literal where a first run wrote one out, else the program's own expression, cast to
    the check's dtype where the check cast it."""
    cast = DTYPES.get(options.dtype or "")
    device = options.device if options.device and options.device != "cpu" else None
    lines = []
    for i, (name, expr) in enumerate(zip(names, exprs, strict=True)):
        known = literals[i] if i < len(literals) else None
        cast_it = bool(cast) and known is not None and known.floating and known.text is None
        if isinstance(expr, ast.Name) and expr.id == name and (known is None or known.text is None) and not cast_it:
            continue  # `a = ...` in inputs() already made it under this name
        text = known.text if known is not None and known.text is not None else ast.unparse(expr)
        if cast_it:
            simple = isinstance(expr, (ast.Call, ast.Name, ast.Attribute, ast.Subscript))
            text = f"{text}.to({cast})" if simple else f"({text}).to({cast})"
        if device:
            text += f".to({device!r})"
        lines.append(f"{name} = {text}")
    return lines


def _compiled(tree: ast.Module, options: CheckOptions) -> str:
    """`torch.compile(fn)` with the compile arguments the check used, and no others."""
    kwargs = {k: getattr(options, k) for k in ("backend", "mode", "dynamic", "fullgraph") if getattr(options, k)}
    for stmt in tree.body:  # the program's own compile_kwargs, written out
        if (
            isinstance(stmt, ast.Assign)
            and any(isinstance(t, ast.Name) and t.id == "compile_kwargs" for t in stmt.targets)
            and isinstance(stmt.value, ast.Dict)
        ):
            for k, v in zip(stmt.value.keys, stmt.value.values, strict=True):
                if isinstance(k, ast.Constant) and isinstance(k.value, str) and k.value not in kwargs:
                    kwargs[k.value] = ast.literal_eval(v) if isinstance(v, ast.Constant) else ast.unparse(v)
    if kwargs.get("backend") == "inductor":
        del kwargs["backend"]  # the default: a maintainer reads it as a choice
    given = ", ".join(f"{k}={v!r}" for k, v in kwargs.items())
    return f"torch.compile(fn{', ' + given if given else ''})"


# -- the expected value --
@dataclass(frozen=True)
class Expectation:
    how: str  # "Python", "NumPy" or "float64": what the printed expected value is
    whole: str  # the expected leaf: a list over the elements (Python) or a float64 run's tensor
    at: str  # the expected value at element `i`


def _expected(
    tree: ast.Module,
    style: SnippetStyle,
    leaf: LeafResult,
    options: CheckOptions,
    names: list[str],
    literals: tuple[Literal, ...],
    target: tuple[str, object],
    program: str,
) -> Expectation | None:
    """The expected value: Python's where the program is one Python-defined expression over inputs of the leaf's size,
    else a float64 run where that is a fair judge; None where neither is (strides, shapes: eager's is the promise)."""
    if not set(leaf.symptoms) & {Symptom.VALUE, Symptom.SIGNED_ZERO, Symptom.NAN, Symptom.INF}:
        return None
    fn = next((s for s in tree.body if isinstance(s, ast.FunctionDef) and s.name == "fn"), None)
    kind, index = target
    if fn is None or kind != "output":
        return None
    scalar = python_expression(fn, str(index))
    position = {a.arg: i for i, a in enumerate(fn.args.args)}
    # only the inputs the element's expression reads: another output's input (`relu(c)` beside `a // b`) has its own
    # size and no say in this element's value
    read = (
        set() if scalar is None else {n.id for n in ast.walk(ast.parse(scalar, mode="eval")) if isinstance(n, ast.Name)}
    )
    params = [p for p in position if p in read]
    same_size = all(position[p] < len(literals) and literals[position[p]].numel == leaf.numel for p in params)
    if scalar is not None and params and (same_size or not literals):
        var = {p: names[position[p]] for p in params}
        # a 1-d input's .tolist() is the list Python iterates; a 0-d one's is a float, a 2-d one's a list of lists
        flat = "" if literals and all(literals[position[p]].ndim == 1 for p in params) else ".flatten()"
        sources = [f"{var[p]}{flat}.tolist()" for p in params]
        loop = f"zip({', '.join(sources)}, strict=True)" if len(params) > 1 else sources[0]
        # the elements get names of their own (a, b, ...): `[a // 0.1 for a in t.tolist()]`
        element = {p: chr(ord("a") + i) for i, p in enumerate(params)}
        over, at = ast.parse(scalar, mode="eval"), ast.parse(scalar, mode="eval")
        for tree_, names_ in ((over, element), (at, {p: f"{var[p]}[i].item()" for p in params})):
            for node in ast.walk(tree_):
                if isinstance(node, ast.Name) and node.id in names_:
                    node.id = names_[node.id]
        loop_vars = ", ".join(element[p] for p in params)
        return Expectation("Python", f"[{ast.unparse(over)} for {loop_vars} in {loop}]", ast.unparse(at))
    reduction = numpy_expression(fn, str(index))
    if reduction is not None and len(params) == 1:
        whole = reduction.replace(f"{params[0]}.double()", f"{names[0]}.double()")
        return Expectation("NumPy", whole, whole)
    if style is not SnippetStyle.FN_INPUTS or any(name in program for name in SEQUENCES):
        return None
    if not _float64_is_fair(leaf, options, literals):
        return None
    cast = ", ".join(f"{n}.double()" if i < len(literals) and literals[i].floating else n for i, n in enumerate(names))
    return Expectation("float64", f"fn({cast}){index}", "expected[i].item()")


def _float64_is_fair(leaf: LeafResult, options: CheckOptions, literals: tuple[Literal, ...]) -> bool:
    """A float64 run judges only where the check's own reference was a plain float64 run (no scalar eager rounds, no
    draw of its own), the program was not cast to bf16/fp16 by the check, and some input is floating (else float64
    is eager's own op again)."""
    return (
        leaf.witness is Witness.FP64
        and options.dtype is None
        and Symptom.VALUE in leaf.symptoms
        and any(lit.floating for lit in literals)
    )


# -- what it prints --
def _prints(leaf: LeafResult, expected: Expectation | None, small: bool) -> list[str]:
    symptoms = set(leaf.symptoms)
    if Symptom.SHAPE in symptoms or Symptom.DTYPE in symptoms:
        return ['print("eager", tuple(eager.shape), eager.dtype, "| compiled", tuple(compiled.shape), compiled.dtype)']
    if Symptom.LAYOUT in symptoms:
        return ['print("eager", eager.layout, "| compiled", compiled.layout)']
    out: list[str] = []
    if Symptom.STRIDE in symptoms:
        out.append('print("strides: eager", eager.stride(), "| compiled", compiled.stride())')
    values = symptoms & {Symptom.VALUE, Symptom.BITS, Symptom.MUTATION, Symptom.SIGNED_ZERO, Symptom.NAN, Symptom.INF}
    if not values:
        return out or ['print("eager", eager, "| compiled", compiled)']
    if small:
        width = len("compiled")
        out += [f'print("{"eager":<{width}}", eager.tolist())', f'print("{"compiled":<{width}}", compiled.tolist())']
        if expected is not None:
            out += [f"expected = {expected.whole}", f'print("{expected.how:<{width}}", expected)']
        return out
    if Symptom.SIGNED_ZERO in symptoms and not symptoms & {Symptom.VALUE, Symptom.BITS}:
        out.append(
            'print("-0.0 elements: eager", int((eager == 0).logical_and(eager.signbit()).sum()), '
            '"| compiled", int((compiled == 0).logical_and(compiled.signbit()).sum()))'
        )
        return out
    if Symptom.NAN in symptoms:
        out.append('print("NaN elements: eager", int(eager.isnan().sum()), "| compiled", int(compiled.isnan().sum()))')
    if Symptom.INF in symptoms:
        out.append('print("inf elements: eager", int(eager.isinf().sum()), "| compiled", int(compiled.isinf().sum()))')
    out.append('print(int((eager != compiled).sum()), "of", eager.numel(), "elements differ")')
    if leaf.worst_index is not None:
        out.append(f"i = {tuple(leaf.worst_index)!r}")
        shown = 'print("at", list(i), "eager", eager[i].item(), "| compiled", compiled[i].item()'
        if expected is not None:
            if expected.how == "float64":
                out.append(f"expected = {expected.whole}")
            shown += f', "| {expected.how}", {expected.at}'
        out.append(shown + ")")
    return out


def _tail(leaf: LeafResult, expected: Expectation | None, small: bool) -> str:
    """Run after the script by minimizer/body.py: print what it showed as JSON, exit 0 when the difference shows."""
    symptoms = set(leaf.symptoms)
    tests = []
    if symptoms & {Symptom.SHAPE, Symptom.DTYPE}:
        tests.append("eager.shape != compiled.shape or eager.dtype != compiled.dtype")
    elif Symptom.LAYOUT in symptoms:
        tests.append("eager.layout != compiled.layout")
    else:
        if Symptom.STRIDE in symptoms:
            tests.append("eager.stride() != compiled.stride()")
        if symptoms & {Symptom.VALUE, Symptom.BITS, Symptom.MUTATION}:
            tests.append("bool(((eager != compiled) & ~(_nan(eager) & _nan(compiled))).any())")
        if Symptom.NAN in symptoms:
            tests.append("bool((_nan(eager) != _nan(compiled)).any())")
        if Symptom.INF in symptoms:
            tests.append("bool((_inf(eager) != _inf(compiled)).any())")
        if Symptom.SIGNED_ZERO in symptoms:
            tests.append("bool((_sign(eager) != _sign(compiled)).any())")
    at = expected.at if expected is not None else "None"
    values = symptoms & {Symptom.VALUE, Symptom.BITS, Symptom.MUTATION, Symptom.SIGNED_ZERO, Symptom.NAN, Symptom.INF}
    if Symptom.STRIDE in symptoms and not values:
        shown = "list(eager.stride()), list(compiled.stride()), None"  # the layout is what differs
    elif small:
        shown = "eager.tolist(), compiled.tolist(), globals().get('expected')"
    elif leaf.worst_index is not None:
        shown = f"eager[i].item(), compiled[i].item(), {at}"
    else:
        shown = "None, None, None"
    return (
        "\n# ---- run by the issue writer only: did it show the difference, and which values ----\n"
        "import json as _json\n"
        "_none = torch.zeros_like\n"
        "def _nan(t):\n    return t.isnan() if t.is_floating_point() or t.is_complex() else _none(t, dtype=bool)\n"
        "def _inf(t):\n    return t.isinf() if t.is_floating_point() else _none(t, dtype=torch.bool)\n"
        "def _sign(t):\n    return t.signbit() & (t == 0) if t.is_floating_point() else _none(t, dtype=torch.bool)\n"
        f"_shows = any([{', '.join(tests) or 'False'}])\n"
        "try:\n"
        f"    _e, _c, _x = {shown}\n"
        "except Exception:\n"
        "    _e = _c = _x = None\n"
        "_seen = {'shows': _shows, 'eager': _e, 'compiled': _c, 'expected': _x}\n"
        "print('@@SHOWN ' + _json.dumps(_seen, default=repr))\n"
        "raise SystemExit(0 if _shows else 3)\n"
    )
