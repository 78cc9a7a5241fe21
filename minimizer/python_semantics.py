"""Python's own answer: a one-expression `fn` of operations that Python defines, as an expression over its elements.

Where the bug is one operation whose meaning Python fixes (floor division, the sign of a remainder, `math.fmod`,
`math.acosh`), the strongest line of an issue is Python's value beside eager's and compiled's: `1 // 0.1 == 9.0`.
`python_expression(fn)` turns `def fn(t): return t // 0.1` into `t // 0.1` read over Python floats (the script loops
it over the inputs' elements), `torch.remainder(x, y)` into `x % y`, `torch.fmod(x, y)` into `math.fmod(x, y)`.
Anything else (a reduction, a matmul, a call Python has no counterpart for, a statement before the return) gives
None: the body then uses a float64 run, or no expected value.
"""

from __future__ import annotations

import ast
import re

_BINARY = (ast.Add, ast.Sub, ast.Mult, ast.Div, ast.FloorDiv, ast.Mod, ast.Pow)
# torch calls with a Python operator of the same meaning (on floats: Python's % takes the divisor's sign, as
# torch.remainder documents; // is floor(a / b) computed exactly, as torch.floor_divide documents)
_OPERATOR_CALLS: dict[str, type[ast.operator]] = {
    "add": ast.Add,
    "sub": ast.Sub,
    "subtract": ast.Sub,
    "mul": ast.Mult,
    "multiply": ast.Mult,
    "true_divide": ast.Div,
    "floor_divide": ast.FloorDiv,
    "remainder": ast.Mod,
    "pow": ast.Pow,
}
# torch calls with a `math` function of the same meaning
_MATH_CALLS = {
    name: name
    for name in (
        "exp",
        "expm1",
        "log",
        "log1p",
        "log2",
        "log10",
        "sqrt",
        "sin",
        "cos",
        "tan",
        "asin",
        "acos",
        "atan",
        "sinh",
        "cosh",
        "tanh",
        "asinh",
        "acosh",
        "atanh",
        "erf",
        "erfc",
        "lgamma",
        "fmod",
        "atan2",
        "hypot",
        "ldexp",
        "copysign",
    )
} | {"arcsin": "asin", "arccos": "acos", "arctan": "atan", "arcsinh": "asinh", "arccosh": "acosh", "arctanh": "atanh"}


def python_expression(fn: ast.FunctionDef, index: str = "") -> str | None:
    """`fn`'s return value (its element `index`, `[1]`, where it returns a tuple) as a Python expression over its
    parameters' element values, or None where Python has no counterpart for some part of it."""
    if len(fn.body) != 1 or not isinstance(fn.body[0], ast.Return) or fn.body[0].value is None:
        return None
    params = {a.arg for a in fn.args.args}
    if fn.args.vararg or fn.args.kwarg or fn.args.kwonlyargs or not params:
        return None
    value = fn.body[0].value
    if index:
        position = re.fullmatch(r"\[(\d+)\]", index)
        if position is None or not isinstance(value, ast.Tuple) or int(position.group(1)) >= len(value.elts):
            return None
        value = value.elts[int(position.group(1))]
    translated = _scalar(value, params)
    if translated is None or not any(isinstance(n, ast.Name) and n.id in params for n in ast.walk(translated)):
        return None
    return ast.unparse(translated)


def _scalar(node: ast.expr, params: set[str]) -> ast.expr | None:
    if isinstance(node, ast.Name):
        return node if node.id in params else None
    if isinstance(node, ast.Constant):
        return node if isinstance(node.value, (int, float)) and not isinstance(node.value, bool) else None
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        operand = _scalar(node.operand, params)
        return ast.UnaryOp(node.op, operand) if operand is not None else None
    if isinstance(node, ast.BinOp) and isinstance(node.op, _BINARY):
        left, right = _scalar(node.left, params), _scalar(node.right, params)
        return ast.BinOp(left, node.op, right) if left is not None and right is not None else None
    if isinstance(node, ast.Call):
        return _call(node, params)
    return None


def _call(node: ast.Call, params: set[str]) -> ast.expr | None:
    """`torch.f(a, b)` or `a.f(b)` with f one of the calls above; keywords only where they keep Python's meaning."""
    func = node.func
    if not isinstance(func, ast.Attribute):
        return None
    if isinstance(func.value, ast.Name) and func.value.id == "torch":
        operands = list(node.args)
    else:
        operands = [func.value, *node.args]
    name = func.attr
    rounding = next((k.value for k in node.keywords if k.arg == "rounding_mode"), None)
    if name in ("div", "divide"):
        if rounding is None:
            name = "true_divide"
        elif isinstance(rounding, ast.Constant) and rounding.value == "floor":
            name = "floor_divide"
        else:
            return None  # 'trunc': Python's math.trunc returns an int, not the float torch gives
    elif node.keywords:
        return None
    args = [_scalar(a, params) for a in operands]
    if any(a is None for a in args):
        return None
    if name in _OPERATOR_CALLS and len(args) == 2:
        return ast.BinOp(args[0], _OPERATOR_CALLS[name](), args[1])  # type: ignore[arg-type]
    if name == "neg" and len(args) == 1:
        return ast.UnaryOp(ast.USub(), args[0])  # type: ignore[arg-type]
    if name == "abs" and len(args) == 1:
        return ast.Call(ast.Name("abs", ast.Load()), args, [])  # type: ignore[arg-type]
    if name in _MATH_CALLS and len(args) in (1, 2):
        if name == "ldexp":  # math.ldexp takes an int exponent; torch's is a tensor of any dtype
            args = [args[0], ast.Call(ast.Name("int", ast.Load()), [args[1]], [])]  # type: ignore[list-item]
        math = ast.Attribute(ast.Name("math", ast.Load()), _MATH_CALLS[name], ast.Load())
        return ast.Call(math, args, [])  # type: ignore[arg-type]
    return None


# whole-tensor reductions with a NumPy counterpart (NumPy defines the empty cases: the mean of nothing is NaN), by
# torch name: (NumPy function, extra arguments), per element of what torch returns
_NUMPY_REDUCTIONS: dict[str, tuple[tuple[str, str], ...]] = {
    "mean": (("mean", ""),),
    "sum": (("sum", ""),),
    "prod": (("prod", ""),),
    "var": (("var", ", ddof=1"),),
    "std": (("std", ", ddof=1"),),
    "var_mean": (("var", ", ddof=1"), ("mean", "")),
    "std_mean": (("std", ", ddof=1"), ("mean", "")),
}


def numpy_expression(fn: ast.FunctionDef, index: str = "") -> str | None:
    """`def fn(x): return torch.var_mean(x)` (element `index` of what it returns) as NumPy over the whole input, read
    in float64: `float(numpy.mean(x.double().numpy()))`; None for anything else (a dim, a keyword, a second op)."""
    if len(fn.body) != 1 or not isinstance(fn.body[0], ast.Return) or not isinstance(fn.body[0].value, ast.Call):
        return None
    call = fn.body[0].value
    params = [a.arg for a in fn.args.args]
    func = call.func
    if not isinstance(func, ast.Attribute) or call.keywords:
        return None
    if isinstance(func.value, ast.Name) and func.value.id == "torch":
        operands = call.args
    else:
        operands = [func.value, *call.args]
    if len(operands) != 1 or not isinstance(operands[0], ast.Name) or operands[0].id not in params:
        return None
    parts = _NUMPY_REDUCTIONS.get(func.attr)
    position = re.fullmatch(r"\[(\d+)\]", index) if index else None
    k = int(position.group(1)) if position else 0
    if parts is None or (index and position is None) or k >= len(parts) or (len(parts) > 1) != bool(index):
        return None
    name, extra = parts[k]
    return f"float(numpy.{name}({operands[0].id}.double().numpy(){extra}))"
