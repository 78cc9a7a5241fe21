"""The issue body's script: the program as a short standalone repro that runs as pasted, as PyTorch's bug template asks.

A maintainer pastes the body's code block into a file and runs it: imports, the Inductor switches the check
used, a seed, the program, eager and `torch.compile` on the same inputs, and a few printed lines that show
the difference at the worst element (and against a float64 run where float64 models eager). It is the
counterpart, for people, of the attached repro.py (minimizer/repro.py): that one judges every leaf and exits 1;
this one reads like a hand-written report of one leaf, and imports nothing but torch (and copy).

Where a short script cannot show the leaf (a gradient, a module's state, a program that calls torch.compile
itself), `script` returns None and the body shows the program as it is, pointing at repro.py.
"""

from __future__ import annotations

import ast

from engine import CheckOptions, LeafKind, LeafResult, Symptom, Witness
from engine.snippet import SnippetError, SnippetStyle, detect_style

SUPPORTED = (LeafKind.OUTPUT, LeafKind.MUTATED_INPUT)
DTYPES = {"bf16": "torch.bfloat16", "fp16": "torch.float16"}
SEQUENCES = ("arange", "linspace", "logspace")  # factories whose float dtype the float64 run must widen


def script(program: str, leaf: LeafResult, options: CheckOptions) -> str | None:
    """The standalone script that prints `leaf`'s difference, or None where a short script cannot show it."""
    try:
        style = detect_style(program)
    except SnippetError:
        return None
    if (
        style is SnippetStyle.REPRO
        or leaf.kind not in SUPPORTED
        or not leaf.name.startswith(("out", "args"))
        or leaf.shape is None
    ):
        return None  # a Python scalar leaf has no element to print
    try:
        tree = ast.parse(program)
    except SyntaxError:
        return None
    future = [s for s in tree.body if isinstance(s, ast.ImportFrom) and s.module == "__future__"]
    body = [s for s in tree.body if s not in future and not _main_block(s)]
    if (
        body
        and isinstance(body[0], ast.Expr)
        and isinstance(body[0].value, ast.Constant)
        and isinstance(body[0].value.value, str)
    ):
        body = body[1:]  # the module's docstring: the text says what the program shows
    defines = {t.id for s in body if isinstance(s, ast.Assign) for t in s.targets if isinstance(t, ast.Name)}
    lines = [ast.unparse(s) for s in future] + ["import copy", "", "import torch", ""]
    lines += [f"torch._inductor.config.{k} = {v!r}" for k, v in sorted(options.inductor_config.items())]
    lines += [f"torch.manual_seed({options.seed})", ""]
    lines += [ast.unparse(ast.Module(body=[s for s in body if not _imports_torch_only(s)], type_ignores=[])), ""]
    if style is SnippetStyle.KERNELBENCH:
        lines += ['fn = Model(*(get_init_inputs() if "get_init_inputs" in globals() else ()))', "inputs = get_inputs"]
    lines += _prepare(options)
    compile_kwargs = {
        k: getattr(options, k) for k in ("backend", "mode", "dynamic", "fullgraph") if getattr(options, k) is not None
    }
    given = ", ".join(f"{k}={v!r}" for k, v in compile_kwargs.items())
    compiled_fn = (
        f"torch.compile(fn, **{{**compile_kwargs{', ' + repr(compile_kwargs)[1:-1] if compile_kwargs else ''}}})"
        if "compile_kwargs" in defines
        else f"torch.compile(fn{', ' + given if given else ''})"
    )
    access = leaf.name  # a leaf's name is a path into `out` or `args`: out[0]['logits'], args[1]
    lines += [
        "",
        "def run(f, cast=lambda a: a):  # the same seed and fresh copies of the inputs for each run",
        f"    torch.manual_seed({options.seed})",
        "    args = [cast(a.clone()) if isinstance(a, torch.Tensor) else a for a in ARGS]",
        "    out = f(*args)",
        f"    return {access}",
        "",
        "eager = run(fn)",
        f"compiled = run({compiled_fn})",
    ]
    reference = float64_models_eager(leaf, options)
    if reference:
        run_reference = "run(copy.deepcopy(fn).double() if isinstance(fn, torch.nn.Module) else fn, lambda a: a.double() if a.is_floating_point() else a)"
        lines += ["# float64 (inputs and weights): which side is right"]
        if any(name in program for name in SEQUENCES):
            lines += _exact_sequences() + ["with Float64Sequences():", f"    reference = {run_reference}"]
        else:
            lines += [f"reference = {run_reference}"]
    lines += _prints(leaf, reference)
    return "\n".join(lines).replace("\n\n\n", "\n\n") + "\n"


def _exact_sequences() -> list[str]:
    """The check's ExactSequences (engine/child/faithful.py) as a few lines: a factory asked for bf16 values of a
    formula (`arange(10000, dtype=torch.bfloat16)`) makes them in float64, or the float64 run is eager's own kernel."""
    return [
        "class Float64Sequences(torch.overrides.TorchFunctionMode):  # arange/linspace/logspace made in float64 too",
        "    def __torch_function__(self, f, types, args=(), kwargs=None):",
        "        kwargs = dict(kwargs or {})",
        f"        if f in ({', '.join(f'torch.{n}' for n in SEQUENCES)}) and getattr(kwargs.get('dtype'), 'is_floating_point', False):",
        "            kwargs['dtype'] = torch.float64",
        "        return f(*args, **kwargs)",
        "",
    ]


def float64_models_eager(leaf: LeafResult, options: CheckOptions) -> bool:
    """A plain float64 run of the program is a fair judge: not where the check had to use the faithful reference
    (eager rounds a Python scalar, draws its own numbers) or none, and not for a program cast to bf16/fp16."""
    return leaf.witness is Witness.FP64 and options.dtype is None and Symptom.VALUE in leaf.symptoms


def _main_block(stmt: ast.stmt) -> bool:
    return isinstance(stmt, ast.If) and "__name__" in ast.unparse(stmt.test)


def _imports_torch_only(stmt: ast.stmt) -> bool:
    """`import torch`: the script's own header has it."""
    return isinstance(stmt, ast.Import) and [a.name for a in stmt.names] == ["torch"] and stmt.names[0].asname is None


def _prepare(options: CheckOptions) -> list[str]:
    """The inputs as the check ran them: built once (after the program's own draws), on its device and dtype; the
    float64 run casts them (and a module's weights) itself."""
    lines = ["", "ARGS = list(inputs() if callable(inputs) else inputs)"]
    device, dtype = options.device, DTYPES.get(options.dtype or "")
    if device and device != "cpu":
        lines += [
            f"ARGS = [a.to({device!r}) if isinstance(a, torch.Tensor) else a for a in ARGS]",
            f"fn = fn.to({device!r}) if isinstance(fn, torch.nn.Module) else fn",
        ]
    if dtype:
        lines += [
            f"ARGS = [a.to({dtype}) if isinstance(a, torch.Tensor) and a.is_floating_point() else a for a in ARGS]",
            f"fn = fn.to({dtype}) if isinstance(fn, torch.nn.Module) else fn",
        ]
    return lines


def _prints(leaf: LeafResult, reference: bool) -> list[str]:
    """The lines that show the difference: the symptoms the check found, each as plain torch."""
    symptoms = set(leaf.symptoms)
    out: list[str] = []
    if Symptom.SHAPE in symptoms or Symptom.DTYPE in symptoms:
        out.append(
            'print("shape", tuple(eager.shape), "vs", tuple(compiled.shape), "| dtype", eager.dtype, "vs", compiled.dtype)'
        )
        return out  # element-wise figures need equal shapes and dtypes
    if Symptom.LAYOUT in symptoms:
        out.append('print("layout: eager", eager.layout, "| compiled", compiled.layout)')
        return out  # a sparse tensor and a dense one: element-wise figures would need to_dense() on one side
    if Symptom.STRIDE in symptoms:
        out.append('print("strides: eager", eager.stride(), "| compiled", compiled.stride())')
    if Symptom.NAN in symptoms:
        out.append('print("NaN elements: eager", int(eager.isnan().sum()), "| compiled", int(compiled.isnan().sum()))')
    if Symptom.INF in symptoms:
        out.append('print("inf elements: eager", int(eager.isinf().sum()), "| compiled", int(compiled.isinf().sum()))')
    if Symptom.SIGNED_ZERO in symptoms:
        out.append(
            'print("-0.0 elements: eager", int(((eager == 0) & eager.signbit()).sum()), "| compiled", int(((compiled == 0) & compiled.signbit()).sum()))'
        )
    if symptoms & {Symptom.VALUE, Symptom.BITS, Symptom.MUTATION} or not out:
        out += [
            "differ = eager.double() != compiled.double()",
            'print(f"{int(differ.sum())} of {eager.numel()} elements differ, max abs difference {(eager.double() - compiled.double()).abs().max().item():.4g}")',
        ]
        if leaf.worst_index is not None:
            at = tuple(leaf.worst_index)
            fp64 = ', "| float64", reference[i].item()' if reference else ""
            out += [
                f"i = {at!r}",
                f'print("at index", list(i), ": eager", eager[i].item(), "| compiled", compiled[i].item(){fp64})',
            ]
    return out
