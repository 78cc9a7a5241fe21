"""Snippet styles: recognise which contract a file follows (statically), and load it (in a worker).

1. `fn-inputs`: module-level `fn` (callable or nn.Module) and `inputs` (a tuple, or a zero-argument
   callable returning one); optional `compile_kwargs`.
2. `kernelbench`: `class Model`, `get_inputs()`, optional `get_init_inputs()`.
3. `repro`: a verbatim script that calls torch.compile itself; the engine intercepts the call.
"""

from __future__ import annotations

import ast
import linecache
import sys
import types
from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum
from typing import Any


class SnippetStyle(str, Enum):
    FN_INPUTS = "fn-inputs"
    KERNELBENCH = "kernelbench"
    REPRO = "repro"


class SnippetError(Exception):
    """The file cannot be used as a snippet; the message says what was looked for."""


LOOKED_FOR = (
    "module-level `fn` and `inputs` (style 1), `class Model` with `get_inputs()` (KernelBench style), "
    "or a call to torch.compile (a verbatim repro)"
)


def parse(source: str, filename: str = "snippet.py") -> ast.Module:
    try:
        return ast.parse(source, filename=filename)
    except SyntaxError as e:
        line = (e.text or "").rstrip("\n")
        caret = f"\n    {line}\n    {' ' * max((e.offset or 1) - 1, 0)}^" if line else ""
        raise SnippetError(f"syntax error in {filename}, line {e.lineno}: {e.msg}{caret}") from None


def top_level_names(tree: ast.Module) -> set[str]:
    names: set[str] = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            for target in node.targets:
                names.update(n.id for n in ast.walk(target) if isinstance(n, ast.Name))
        elif isinstance(node, (ast.AnnAssign, ast.AugAssign)) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
    return names


def calls_torch_compile(tree: ast.Module) -> bool:
    """True when the code calls torch.compile, a module's .compile(), or `compile` imported from torch."""
    imported_compile = any(
        isinstance(n, ast.ImportFrom) and n.module == "torch" and any(a.name == "compile" for a in n.names)
        for n in ast.walk(tree)
    )
    for node in ast.walk(tree):
        target = node.func if isinstance(node, ast.Call) else node if isinstance(node, ast.Attribute) else None
        if isinstance(target, ast.Attribute) and target.attr == "compile":
            if not (isinstance(target.value, ast.Name) and target.value.id == "re"):
                return True
        if imported_compile and isinstance(target, ast.Name) and target.id == "compile":
            return True
    return False


def detect_style(source: str, filename: str = "snippet.py") -> SnippetStyle:
    tree = parse(source, filename)
    names = top_level_names(tree)
    if {"fn", "inputs"} <= names:
        return SnippetStyle.FN_INPUTS
    if {"Model", "get_inputs"} <= names:
        return SnippetStyle.KERNELBENCH
    if calls_torch_compile(tree):
        return SnippetStyle.REPRO
    partial = ""
    if "fn" in names or "inputs" in names:
        partial = (
            f" It defines `{'fn' if 'fn' in names else 'inputs'}` but not `{'inputs' if 'fn' in names else 'fn'}`."
        )
    elif "Model" in names:
        partial = " It defines `Model` but no `get_inputs()`."
    raise SnippetError(f"{filename} fits no snippet style: looked for {LOOKED_FOR}.{partial}")


@dataclass(frozen=True)
class Program:
    """A loaded fn-inputs or KernelBench snippet: the callable and a way to make its inputs."""

    fn: Callable[..., Any]
    make_inputs: Callable[[], tuple[Any, ...]]
    inputs_are_fixed: bool  # a tuple given at module level: other seeds need a re-execution
    compile_kwargs: dict[str, Any]


def execute(source: str, filename: str, as_main: bool) -> dict[str, Any]:
    """Run the snippet's module code and return its namespace. Exceptions propagate to the caller."""
    module_name = "__main__" if as_main else "__divergence_snippet__"
    module = types.ModuleType(module_name)
    module.__file__ = filename
    # dataclasses, pickling and inspect.getsource (used by Dynamo) look the module and its lines up
    linecache.cache[filename] = (len(source), None, source.splitlines(keepends=True), filename)
    previous = sys.modules.get(module_name)
    sys.modules[module_name] = module
    try:
        # dont_inherit: this module's own `from __future__ import annotations` must not leak into the snippet;
        # a fresh interpreter (the minimizer's repro.py) evaluates annotations, so the check must too
        exec(compile(source, filename, "exec", dont_inherit=True), module.__dict__)
    finally:
        if previous is not None and not as_main:
            sys.modules[module_name] = previous
    return module.__dict__


def program_from_namespace(ns: dict[str, Any], style: SnippetStyle) -> Program:
    if style is SnippetStyle.FN_INPUTS:
        fn, inputs = ns["fn"], ns["inputs"]
        if not callable(fn):
            raise SnippetError(f"`fn` must be a callable or an nn.Module instance, not {type(fn).__name__}")
        kwargs = ns.get("compile_kwargs", {}) or {}
        if not isinstance(kwargs, dict):
            raise SnippetError(f"`compile_kwargs` must be a dict, not {type(kwargs).__name__}")
        if callable(inputs):
            return Program(fn, lambda: _as_args(inputs(), "inputs()"), False, dict(kwargs))
        args = _as_args(inputs, "inputs")
        return Program(fn, lambda: args, True, dict(kwargs))
    model_cls, get_inputs = ns["Model"], ns["get_inputs"]
    init = ns.get("get_init_inputs")
    init_args = _as_args(init() if callable(init) else (), "get_init_inputs()")
    if not isinstance(model_cls, type):
        raise SnippetError("`Model` must be a class")
    model = model_cls(*init_args)
    return Program(model, lambda: _as_args(get_inputs(), "get_inputs()"), False, {})


def _as_args(value: Any, what: str) -> tuple[Any, ...]:
    if isinstance(value, tuple):
        return value
    if isinstance(value, list):
        return tuple(value)
    raise SnippetError(
        f"{what} must be a tuple (or list) of arguments, not {type(value).__name__}; wrap a single tensor as (x,)"
    )
