"""Emit a standalone repro.py from a minimized program (any snippet style), and prove it reproduces in a fresh process.

The emitted script imports only torch (plus what the program itself imports), seeds the RNG before the
program's own module code as the engine does, runs eager and compiled from the same RNG state on cloned
inputs, and judges every output (every input mutated in place, every module buffer and, with `backward`,
every gradient of an input or parameter) under the check's leaf names with the engine's rules. The program comes
first; after it, the judge a maintainer can read: minimizer/vendored (the engine's verdict and element rules on
whole tensors, held equal to engine/judge by tests/test_vendored_judge.py, and the leaf names of values and
objects), plus, only where the program needs them, two engine modules pasted whole: engine/child/faithful.py (the
reference that rounds the scalars eager rounds and replays its draws) and engine/child/leaves.py (the engine's
walker, for a program that may hold a pytree node or a numpy value).
It prints each leaf's verdict and sentence and exits 1 while compiled diverges, 0 once it does not.

- fn + inputs: the program, then the harness calls `fn` on `inputs`.
- KernelBench: the program, then `fn = Model(*get_init_inputs())` and `inputs = get_inputs`, as the engine builds it.
- a verbatim repro: the harness replaces torch.compile before the program runs, so every call of a
  compiled callable is checked (eager on clones first, then compiled on the script's own arguments).

`verify` runs the script in a new interpreter: a repro is only offered when that run exits 1 and its DIVERGENT
line for the signature's leaf names the signature's symptoms.
"""

from __future__ import annotations

import ast
import os
import re
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from engine import CheckOptions, CheckResult, SnippetStyle, detect_style
from engine.judge.verdicts import Witness
from minimizer.mechanism import read_graphs

# fn + inputs and KernelBench (after the adapter has defined fn and inputs)
PROGRAM_DRIVER = """

def _args():
    _seed(SEED)
    made = inputs() if callable(inputs) else inputs
    return map_tensors(tuple(made), lambda t: t.to(DEVICE, DTYPE) if DTYPE and t.is_floating_point() else t.to(DEVICE))


def main():
    module = _module_of(fn)
    if module is not None:
        module.to(DEVICE, DTYPE)  # DTYPE None: the module's own dtypes
    saved = copy.deepcopy(module.state_dict()) if module is not None else None
    eager, trace = _eager(fn, _args(), {}, SEED, module)
    if module is not None:
        module.load_state_dict(saved)  # in place: compiled starts from the state eager started from
    compiled, _ = _run(torch.compile(fn, **COMPILE_KWARGS), _args(), {}, SEED, module)
    if module is not None:
        module.load_state_dict(saved)
    return _finish(_compare(eager, compiled, _reference(fn, _args(), {}, SEED, trace), trace))


if __name__ == "__main__":
    sys.exit(main())
"""

# a verbatim repro: installed before the program runs
REPRO_INTERCEPT = '''
_DIVERGED = []
_CALLS = [0]
_real_compile = torch.compile


def _checked_compile(model=None, **kwargs):
    """torch.compile, but every call of the result is compared with eager on cloned arguments first."""
    if model is None:
        return lambda m: _checked_compile(m, **kwargs)
    compiled = _real_compile(model, **{**kwargs, **COMPILE_KWARGS})

    def call(*args, **kw):
        k = _CALLS[0]
        _CALLS[0] += 1
        seed = SEED + k
        eager, trace = _eager(model, args, kw, seed, _module_of(model))
        reference = _reference(model, args, kw, seed, trace)
        checked, out = _run(compiled, args, kw, seed, _module_of(model), clone=False)
        _DIVERGED.extend(_compare(eager, checked, reference, trace, prefix=f"call{k}: "))
        return out

    return call


torch.compile = _checked_compile
_seed(SEED)

# ---- the program ----
'''

REPRO_FOOTER = """

# ---- harness: the verdict over every compiled call ----
if _CALLS[0] == 0:
    print("the compiled function was never called: nothing was compared")
    sys.exit(2)
sys.exit(_finish(_DIVERGED))
"""


class ReproError(ValueError):
    """The program cannot be turned into a standalone repro."""


@dataclass(frozen=True)
class Verification:
    reproduces: bool  # exited 1 and said DIVERGENT (for the expected leaf and symptoms, when there were some)
    exit_code: int | None
    output: str


def emit(program: str, options: CheckOptions, seed: int = 0, result: CheckResult | None = None) -> str:
    """A standalone script around the program, for fn + inputs, KernelBench and verbatim-repro programs.

    Its verdict is the engine's: the compact judge (minimizer/vendored, held equal to engine/judge by a test) and,
    where the program's check (`result`) replayed eager's scalar roundings or draws in its reference, or where no
    check is given, the engine's faithful reference; the engine's own leaf walker where the program may hold values
    the compact one does not name (`Vendored.of`).
    """
    try:
        style = detect_style(program)
    except Exception as exc:  # SnippetError: the program fits no style
        raise ReproError(str(exc)) from None
    future, body = _split_future_imports(program)
    head = (
        '"""Minimized by Divergence Explorer: torch.compile diverges from eager. Exits 1 while the bug is'
        ' present."""\n'
        + future
        + "import collections.abc\nimport contextlib\nimport copy\nimport dataclasses\nimport enum\nimport math\nimport"
        " random\nimport sys\nimport types\n\nimport torch\n\n"
    )
    seed_line, constants = _constants(options, seed, style, program).split("\n", 1)
    constants += "".join(f"torch._inductor.config.{k} = {v!r}\n" for k, v in sorted(options.inductor_config.items()))
    judge = judge_source(Vendored.of(program, options, result))
    if style is SnippetStyle.REPRO:
        # the script drives its own calls: the engine ignores backward, device and dtype for it, and so does this
        return head + seed_line + "\n" + constants + judge + REPRO_INTERCEPT + body.rstrip() + "\n" + REPRO_FOOTER
    body = _without_main_block(body)  # the engine loads these styles as a module, not as __main__
    adapter = ""
    if style is SnippetStyle.KERNELBENCH:
        # built right after the module code, before any re-seeding: the engine draws the weights from the same RNG state
        adapter = '\nfn = Model(*(get_init_inputs() if "get_init_inputs" in globals() else ()))\ninputs = get_inputs\n'
    seeded = f"{seed_line}  # module-level inputs and weights draw from the RNG state the check started from\n"
    seeded += "torch.manual_seed(SEED)\nrandom.seed(SEED)\n"
    if "numpy" in program:
        seeded += "import numpy\nnumpy.random.seed(SEED)\n"
    harness = "\n\n# ---- Divergence Explorer's harness: eager vs torch.compile vs an fp64 reference ----\n"
    return head + seeded + "\n" + body.rstrip() + "\n" + adapter + harness + constants + judge + PROGRAM_DRIVER


@dataclass(frozen=True)
class Vendored:
    """What of the engine a repro carries beyond its compact judge (minimizer/vendored), chosen per program."""

    walker: bool  # engine/child/leaves.py whole: the program may hold what the compact walker does not name
    faithful: bool  # engine/child/faithful.py: the check's reference replayed eager's roundings or draws
    gradients: bool = False  # minimizer/vendored/gradients.py: the check compared gradients (`backward`)
    elements: bool = True  # minimizer/vendored/elements.py: the element rule, which judges bf16/fp16 values only

    @classmethod
    def of(cls, program: str, options: CheckOptions, result: CheckResult | None = None) -> Vendored:
        """Without a check to read, everything. The faithful reference where the check rounded scalars as eager does,
        judged a leaf against that reference, or compiled a random op; and where the program makes float sequences
        (arange) or takes a remainder, for its exact_float64: the check's reference computes sequences in float64 and
        gives remainder's zeros the divisor's sign. The element rule where the check ran in bf16/fp16 or compared a
        bf16/fp16 leaf."""
        if result is None:
            return cls(walker=not _plain(program), faithful=True, gradients=bool(options.backward))
        faithful = bool(result.scalar_roundings) or _SEQUENCES.search(program) is not None
        faithful = faithful or _REMAINDER.search(program) is not None
        faithful = faithful or any(leaf.witness is Witness.FAITHFUL for leaf in result.leaves)
        faithful = faithful or bool(read_graphs(result.code.fx_graphs).random_ops)
        low = options.dtype in ("bf16", "fp16") or any("float16" in (leaf.dtype or "") for leaf in result.leaves)
        return cls(walker=not _plain(program), faithful=faithful, gradients=bool(options.backward), elements=low)


_SEQUENCES = re.compile(r"\b(arange|linspace|logspace)\b")
_REMAINDER = re.compile(r"\bremainder\b|%")  # its zeros take the divisor's sign in the check's reference
# what a program may import and still hold only values the compact walker names as the engine does
_PLAIN_IMPORTS = {"torch", "math", "random", "functools", "itertools", "operator", "typing", "dataclasses", "copy"}
_PLAIN_IMPORTS |= {"collections", "__future__", "warnings", "os", "sys", "time"}


def _plain(program: str) -> bool:
    """Whether everything the program returns or takes is named by minimizer/vendored/walker.py as the engine names
    it (tensors, numbers, containers, dataclasses, namedtuples, objects' attributes): it imports nothing that could
    hand it other objects, and registers no pytree node and makes no deque (named by their pytree keys)."""
    if re.search(r"\b(pytree|deque)\b", program):
        return False
    for node in ast.walk(ast.parse(program)):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
            if any(name.split(".")[0] not in _PLAIN_IMPORTS for name in names):
                return False
    return True


_MARK = "# ---- vendored ----"
_VENDORED = Path(__file__).resolve().parent / "vendored"
_ENGINE = Path(__file__).resolve().parents[1] / "engine"  # beside this package: read as text, never imported


def judge_source(vendored: Vendored) -> str:
    """The script's judge and harness: minimizer/vendored's files below their `# ---- vendored ----` line, and the
    engine modules `vendored` asks for, pasted whole as readable text and loaded as modules."""
    parts = [_engine_module("faithful", _faithful_source())] if vendored.faithful else []
    if vendored.walker:
        parts.append(_engine_module("leaves", _without_docstring((_ENGINE / "child" / "leaves.py").read_text())))
        parts.append("tensors_of, map_tensors = _leaves.tensors_of, _leaves.map_tensors\n")
    files = ("elements",) * vendored.elements + ("judge", "harness") + ("gradients",) * vendored.gradients
    for name in files if vendored.walker else ("walker", *files):
        text = (_VENDORED / f"{name}.py").read_text()
        # one blank line between definitions, not ruff's two: the script is read, not edited
        parts.append(re.sub(r"\n\n\n+", "\n\n", text[text.index(_MARK) + len(_MARK) :].strip("\n")) + "\n")
    return "\n\n" + "\n\n".join(parts)


def _engine_module(name: str, source: str) -> str:
    """An engine module as a script section: its source as text, executed as a module named `_<name>`."""
    if "'''" in source or "\\" in source:
        raise ReproError(f"engine/child/{name}.py cannot be pasted into a repro as a raw string")
    variable = f"_{name.upper()}_SOURCE"
    return (
        f"# ---- Divergence Explorer's engine/child/{name}.py, its code as the engine has it ----\n{variable} = r'''\n"
        f"{source}'''\n"
        f'_{name} = types.ModuleType("_{name}")\n'
        f'sys.modules["_{name}"] = _{name}  # dataclasses look their module up\n'
        f'exec(compile({variable}, "<engine/child/{name}.py>", "exec"), _{name}.__dict__)\n'
    )


_FAITHFUL_IMPORTS = (
    "from engine.judge.metrics import LOW_PRECISION, bitwise_equal",
    "from engine.judge.witness import ScalarRounding as Rounding",
)


def _faithful_source() -> str:
    """engine/child/faithful.py, its imports from engine/judge replaced by the definitions they name (read from the
    engine's source, not copied by hand)."""
    text = _without_docstring((_ENGINE / "child" / "faithful.py").read_text())
    imports = tuple(line for line in text.splitlines() if line.startswith("from engine."))
    if imports != _FAITHFUL_IMPORTS:
        raise ReproError(f"engine/child/faithful.py imports what a repro does not vendor: {imports}")
    wanted = (("metrics", "_INT_VIEW"), ("metrics", "LOW_PRECISION"), ("metrics", "bitwise_equal"))
    pasted = [_definition(module, name) for module, name in (*wanted, ("witness", "ScalarRounding"))]
    text = text.replace(imports[0] + "\n", "")
    return text.replace(imports[1] + "\n", "\n\n".join(pasted) + "\n\n\nRounding = ScalarRounding\n")


def _definition(module: str, name: str) -> str:
    """One top-level definition of engine/judge/<module>.py, as its source says it (decorators included)."""
    source = (_ENGINE / "judge" / f"{module}.py").read_text()
    for node in ast.parse(source).body:
        targets = [t.id for t in getattr(node, "targets", ()) if isinstance(t, ast.Name)]
        if getattr(node, "name", None) == name or name in targets:
            start = min([node.lineno, *(d.lineno for d in getattr(node, "decorator_list", ()))])
            return "\n".join(source.splitlines()[start - 1 : node.end_lineno])
    raise ReproError(f"engine/judge/{module}.py defines no {name}")


def _without_docstring(source: str) -> str:
    """A module's source without its docstring (a maintainer reads that in the engine)."""
    first = ast.parse(source).body[0]
    if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str):
        return "\n".join(source.splitlines()[first.end_lineno :]).lstrip("\n") + "\n"
    return source


def _constants(options: CheckOptions, seed: int, style: SnippetStyle, program: str) -> str:
    device = repr(options.device) if options.device else '"cuda" if torch.cuda.is_available() else "cpu"'
    dtype = {"bf16": "torch.bfloat16", "fp16": "torch.float16"}.get(options.dtype or "", "None")
    option_kwargs = _option_kwargs(options)
    if style is SnippetStyle.FN_INPUTS and _defines(program, "compile_kwargs"):
        kwargs = f"{{**compile_kwargs, **{option_kwargs!r}}}"
    elif style is SnippetStyle.REPRO:
        kwargs = repr(option_kwargs)  # over the script's own keyword arguments
    else:
        kwargs = repr({"backend": "inductor", **option_kwargs})
    backward = bool(options.backward) and style is not SnippetStyle.REPRO
    return (
        f"SEED = {seed}\nDEVICE = {device}\nDTYPE = {dtype}\nFACTOR = {options.benign_factor!r}  # compiled may be this"
        f" many times further from fp64 than eager before it counts\nNOISE_ULPS = {options.noise_ulps!r}  # plus this"
        f" much of the output's magnitude (the engine's noise floor)\nBACKWARD = {backward}  # also compare the"
        f" gradients of inputs and parameters\nCOMPILE_KWARGS = {kwargs}\n_faithful = None  # engine/child/faithful.py,"
        " pasted below where the check replayed eager's scalar roundings or draws\n"
    )


def _defines(program: str, name: str) -> bool:
    return any(
        isinstance(t, ast.Name) and t.id == name
        for node in ast.parse(program).body
        if isinstance(node, ast.Assign)
        for t in node.targets
    )


def _without_main_block(program: str) -> str:
    tree = ast.parse(program)
    kept = [s for s in tree.body if not (isinstance(s, ast.If) and "__name__" in ast.unparse(s.test))]
    if len(kept) == len(tree.body):
        return program  # untouched: comments and formatting stay
    tree.body = kept
    return ast.unparse(tree) + "\n"


def _split_future_imports(program: str) -> tuple[str, str]:
    # `from __future__` must stay the first statement of the file, ahead of the harness's imports
    lines = program.splitlines(keepends=True)
    future = [line for line in lines if line.startswith("from __future__ import")]
    return "".join(future), "".join(line for line in lines if line not in future)


def _option_kwargs(options: CheckOptions) -> dict[str, object]:
    return {
        k: getattr(options, k) for k in ("backend", "mode", "dynamic", "fullgraph") if getattr(options, k) is not None
    }


def verify(
    script: str,
    python: str | None = None,
    timeout_s: float = 300.0,
    work_dir: Path | None = None,
    should_stop: Callable[[], bool] | None = None,
    inductor_cache: Path | None = None,
    expect: tuple[str, Iterable[str]] | None = None,
    isolated: bool = False,
) -> Verification:
    """Run the script in a fresh interpreter (no state shared with anything that ran before).

    It reproduces when it exits 1 saying DIVERGENT; with `expect` (a signature's leaf and symptoms), only when its
    line for that leaf names every one of those symptoms: another leaf or another symptom is another bug.

    `should_stop` is polled while it runs; when it returns True the interpreter is killed and the
    script counts as not verified. `inductor_cache` lends it the oracle's compile cache: the repro
    compiles the graph the last check compiled, so it loads the same kernels instead of running g++. `isolated`
    runs it as `python -I` (no PYTHONPATH, no user site: nothing of ours importable), as a maintainer pastes it.
    """
    directory = Path(work_dir or tempfile.mkdtemp(prefix="repro-"))
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / "repro.py"
    path.write_text(script)
    out_path, err_path = directory / "repro.out", directory / "repro.err"
    # files, not pipes: a chatty script must not block on a full pipe while this loop polls
    with open(out_path, "w") as out_file, open(err_path, "w") as err_file:
        env = dict(os.environ, TORCHINDUCTOR_CACHE_DIR=str(inductor_cache)) if inductor_cache is not None else None
        process = subprocess.Popen(
            [python or sys.executable, *(["-I"] if isolated else []), str(path)],
            stdout=out_file,
            stderr=err_file,
            cwd=directory,
            env=env,
        )
        deadline = time.monotonic() + timeout_s
        why = ""
        while why == "":
            try:
                process.wait(timeout=0.2)
                break
            except subprocess.TimeoutExpired:
                pass
            if should_stop is not None and should_stop():
                why = "stopped before the repro finished"
            elif time.monotonic() > deadline:
                why = f"timed out after {timeout_s:g} s"
        if why:
            process.kill()
            process.wait()
    stdout = out_path.read_text(errors="replace")
    output = (stdout + err_path.read_text(errors="replace"))[-8000:]
    if why:
        return Verification(False, None, f"{why}\n{output}")
    # a traceback is not a reproduction: only the harness's own exit status 1 counts
    return Verification(process.returncode == 1 and shows(stdout, expect), process.returncode, output)


def shows(stdout: str, expect: tuple[str, Iterable[str]] | None) -> bool:
    """Does the repro's output say DIVERGENT, for the expected leaf with all the expected symptoms when given?"""
    lines = [line[len("DIVERGENT ") :] for line in stdout.splitlines() if line.startswith("DIVERGENT ")]
    if expect is None:
        return bool(lines)
    leaf, symptoms = expect
    # as the oracle classifies (minimizer/interestingness.classify): the leaf by its name while the program still has
    # it; once a
    # graph pass has changed what the program returns (`out['sample[24]']` became `out`), any leaf with those symptoms
    present = any(line.startswith((f"{leaf}: ", f"{leaf} [")) for line in stdout.splitlines())
    for line in lines:
        if present and not line.startswith(f"{leaf} ["):
            continue
        found = _LINE.match(line[len(leaf) :] if present else line)
        if found is not None and set(symptoms) <= set(found["symptoms"].split(", ")):
            return True
    return False


_LINE = re.compile(r"^.*? \[(?P<symptoms>[a-z_]+(?:, [a-z_]+)*)\]: ")  # "name [value, stride]: why"
