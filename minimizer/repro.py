"""Emit a standalone repro.py from a minimized program (any snippet style), and prove it reproduces in a fresh process.

The emitted script imports only torch (plus what the program itself imports), seeds the RNG before the
program's own module code as the engine does, runs eager and compiled from the same RNG state on cloned
inputs, and judges every output (every input mutated in place, every module buffer and, with `backward`,
every gradient of an input or parameter) under the check's leaf names with **the engine's own judge**:
engine/judge, the faithful reference's trace (engine/child/faithful.py) and the leaf walker
(engine/child/leaves.py) are embedded verbatim, read as text from the engine beside this package, so the floor,
the element rule, the strides that count, the reference (eager asked per call which scalars it rounds, its draws
replayed in float64) and every leaf's name (a cache's `out.cache.layers[0].keys`, a dataclass's field) are the
check's.
It prints each leaf's verdict and sentence and exits 1 while compiled diverges, 0 once it does not.

- fn + inputs: the program, then the harness calls `fn` on `inputs`.
- KernelBench: the program, then `fn = Model(*get_init_inputs())` and `inputs = get_inputs`, as the engine builds it.
- a verbatim repro: the harness replaces torch.compile before the program runs, so every call of a
  compiled callable is checked (eager on clones first, then compiled on the script's own arguments).

`verify` runs the script in a new interpreter: a repro is only offered when that run exits 1 and its DIVERGENT
line for the signature's leaf names the signature's symptoms.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from engine import CheckOptions, SnippetStyle, detect_style

# Shared by every style. Constants (SEED, DEVICE, DTYPE, FACTOR, NOISE_ULPS, BACKWARD, COMPILE_KWARGS) come before
# it, the judge after it.
HELPERS = '''
def _map(obj, f):
    # the engine's own walker (embedded below): namedtuples, dataclasses, pytree nodes and objects' attributes
    return _judge.leaves.map_tensors(obj, f)


def _tensors(obj, name):
    # every tensor by the engine's leaf name: `out.cache.layers[0].keys` as the check printed it
    return _judge.leaves.tensors_of(obj, name)


def _seed(seed):
    torch.manual_seed(seed)
    random.seed(seed)
    if "numpy" in sys.modules:  # the engine seeds numpy's global generator too
        sys.modules["numpy"].random.seed(seed % 2**32)


def _differentiable(t):
    return t.is_floating_point() or t.is_complex()


def _to64(t):
    if t.is_floating_point():
        return t.detach().double()
    return t.detach().to(torch.complex128) if t.is_complex() else t.detach().clone()


def _prepare(t):
    t = t.to(DEVICE)
    return t.to(DTYPE) if DTYPE is not None and t.is_floating_point() else t


def _module_of(call):
    owner = getattr(call, "__self__", None)
    return call if isinstance(call, torch.nn.Module) else owner if isinstance(owner, torch.nn.Module) else None


def _gradients(out, args, kwargs, module, seed):
    # the engine's loss: a fixed random cotangent per output, drawn in float64 from seed + 1
    outs = [t for _, t in _tensors(out, "out") if t.requires_grad]
    if not outs:
        return {}
    gen = torch.Generator().manual_seed(seed + 1)
    torch.autograd.backward(outs, [torch.randn(t.shape, generator=gen, dtype=torch.float64).to(t.dtype).to(t.device) for t in outs])
    grads = {f"grad {n}": t.grad.detach().clone() for n, t in _inputs(args, kwargs) if t.grad is not None}
    for n, p in module.named_parameters() if module is not None else ():
        if p.grad is not None:
            grads[f"grad self.{n}"] = p.grad.detach().clone()
            p.grad = None  # eager's gradients must not accumulate into compiled's
    return grads


def _run(call, args, kwargs, seed, module, clone=True, mode=None):
    """Call once from `seed` (under a dispatch mode, if given); return every compared tensor by the engine's leaf
    names, and the call's own output."""
    if clone:  # detach first: deepcopy refuses non-leaf tensors, and keeps aliasing between inputs
        args, kwargs = copy.deepcopy(_map((args, kwargs), lambda t: t.detach().requires_grad_(t.requires_grad and t.is_leaf)))
    if BACKWARD:
        args, kwargs = _map((args, kwargs), lambda t: t.detach().requires_grad_(True) if _differentiable(t) else t)
    before = {n: t.detach().clone() for n, t in _inputs(args, kwargs)}
    _seed(seed)
    with mode if mode is not None else contextlib.nullcontext():
        out = call(*args, **kwargs)
        grads = _gradients(out, args, kwargs, module, seed) if BACKWARD else {}
    leaves = dict(_tensors(out, "out"))
    # inputs that this side mutated in place: a mutation on one side only shows up as a missing leaf
    leaves.update((f"input {n}", t) for n, t in _inputs(args, kwargs) if not _same(before[n], t.detach()))
    if module is not None:
        leaves.update((f"state self.{n}", b) for n, b in module.named_buffers())
    leaves.update(grads)
    return {n: t.detach().clone() for n, t in leaves.items()}, out


def _inputs(args, kwargs):
    return [*_tensors(args, "args"), *_tensors(kwargs, "kwargs")]


def _same(a, b):
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    return bool(((a == b) | (a != a) & (b != b)).all()) if a.is_floating_point() else torch.equal(a, b)


def _eager(call, args, kwargs, seed, module):
    """Eager's run, watched as the check watches it: which Python scalars eager rounds, which random numbers it
    draws."""
    trace = _judge.faithful.EagerTrace()
    leaves, _ = _run(call, args, kwargs, seed, module, mode=trace)
    return leaves, trace.trace


def _reference(call, args, kwargs, seed, trace):
    """The check's faithful fp64 reference: the module and floating inputs in float64, eager's roundings and draws
    replayed; empty when an op has no float64 kernel."""
    try:
        module = _module_of(call)
        if module is not None:
            copied = copy.deepcopy(module).double()
            call = copied if call is module else types.MethodType(call.__func__, copied)
            module = copied
        mode = _judge.faithful.FaithfulMode(trace) if trace.changes_reference else None
        with _judge.faithful.ExactSequences():  # arange/linspace/logspace in float64, as the check's reference
            return _run(call, *_map((args, kwargs), _to64), seed, module, clone=False, mode=mode)[0]
    except Exception as exc:
        print(f"(no fp64 reference: {type(exc).__name__}: {exc})")
        return {}


def _compare(eager, compiled, reference, trace, prefix=""):
    """Judge every leaf with the engine's own rules (the judge embedded below); return one line per divergent leaf."""
    oracle, verdicts = _judge.oracle, _judge.verdicts
    witness = _judge.witness.FaithfulReference(trace.describe()) if trace.changes_reference else None
    diverged = [f"{prefix}{name} [mutation]: only the compiled run changed it in place" for name in compiled if name not in eager]
    for name, e in eager.items():
        c = compiled.get(name)
        label = prefix + name
        if c is None:
            diverged.append(f"{label} [mutation]: missing from the compiled result (eager changed it in place, compiled did not)")
            continue
        if e.shape != c.shape or e.dtype != c.dtype:
            symptoms = ["shape"] * (e.shape != c.shape) + ["dtype"] * (e.dtype != c.dtype)
            diverged.append(f"{label} [{', '.join(symptoms)}]: {tuple(e.shape)} {e.dtype} vs compiled {tuple(c.shape)} {c.dtype}")
            continue
        r = reference.get(name)
        r = r.to(e.device) if r is not None and r.shape == e.shape and e.is_floating_point() else None
        metrics = _judge.metrics.value_metrics(e, c, r)
        j = oracle.judge_values(metrics, strict=False, factor=FACTOR, noise_ulps=NOISE_ULPS, faithful=witness if r is not None else None)
        print(f"{label}: {j.verdict.value}: {j.explanation}")
        symptoms = [s.value for s in j.symptoms] if j.verdict is verdicts.Verdict.DIVERGENT else []
        strides = oracle.significant_strides(e) != oracle.significant_strides(c)
        if strides:
            symptoms.append("stride")
        if symptoms:
            why = j.explanation if j.verdict is verdicts.Verdict.DIVERGENT else f"strides {e.stride()} vs compiled {c.stride()}"
            diverged.append(f"{label} [{', '.join(symptoms)}]: {why}")
            print(f"  eager:    {e.flatten()[:8].tolist()}")
            print(f"  compiled: {c.flatten()[:8].tolist()}")
    return diverged


def _finish(diverged):
    for line in diverged:
        print("DIVERGENT", line)
    print("torch", torch.__version__, "- bug present" if diverged else "- no divergence")
    return 1 if diverged else 0
'''  # noqa: E501  (the script's own lines, as a repro shows them)

# fn + inputs and KernelBench (after the adapter has defined fn and inputs)
PROGRAM_DRIVER = """

def _args():
    _seed(SEED)
    made = inputs() if callable(inputs) else inputs
    return _map(tuple(made), _prepare)


def main():
    module = _module_of(fn)
    if module is not None:
        module.to(DEVICE)
        if DTYPE is not None:
            module.to(DTYPE)
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
'''  # noqa: E501  (the script's own lines, as a repro shows them)

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


def emit(program: str, options: CheckOptions, seed: int = 0) -> str:
    """A standalone script around the program, for fn + inputs, KernelBench and verbatim-repro programs.

    Its verdict is the engine's: the judge (engine/judge and the faithful reference's trace) is embedded verbatim,
    and eager's run is asked, call by call, which Python scalars it rounds and which numbers it draws.
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
        + "import contextlib\nimport copy\nimport random\nimport sys\nimport types\n\nimport torch\nimport"
        " torch.utils._python_dispatch\n\n"
        + _constants(options, seed, style, program)
        + "".join(f"torch._inductor.config.{k} = {v!r}\n" for k, v in sorted(options.inductor_config.items()))
    )
    if style is SnippetStyle.REPRO:
        # the script drives its own calls: the engine ignores backward, device and dtype for it, and so does this
        return head + HELPERS + judge_source() + REPRO_INTERCEPT + body.rstrip() + "\n" + REPRO_FOOTER
    body = _without_main_block(body)  # the engine loads these styles as a module, not as __main__
    adapter = ""
    if style is SnippetStyle.KERNELBENCH:
        # built right after the module code, before any re-seeding: the engine draws the weights from the same RNG state
        adapter = '\nfn = Model(*(get_init_inputs() if "get_init_inputs" in globals() else ()))\ninputs = get_inputs\n'
    seeded = (
        "# module-level inputs and weights draw from the RNG state the check started"
        " from\ntorch.manual_seed(SEED)\nrandom.seed(SEED)\n"
    )
    if "numpy" in program:
        seeded += "import numpy\nnumpy.random.seed(SEED)\n"
    seeded += "\n"
    return (
        head
        + seeded
        + body.rstrip()
        + "\n"
        + adapter
        + "\n# ---- harness: eager vs torch.compile vs an fp64 reference (written by Divergence Explorer) ----\n"
        + HELPERS
        + judge_source()
        + PROGRAM_DRIVER
    )


# The modules of the engine's judge a repro embeds, in dependency order, and where they are.
JUDGE_MODULES = ("verdicts", "evidence", "elements", "metrics", "witness", "family", "oracle", "faithful", "leaves")
_CHILD_MODULES = ("faithful", "leaves")  # in engine/child: the reference's trace and the one leaf walker
_JUDGE_PACKAGE = "_divergence_judge"


def judge_source() -> str:
    """The engine's judge as a script section: each module's source verbatim (imports renamed to a private
    package), loaded into sys.modules by a few lines; `_judge` then holds them."""
    root = (
        Path(__file__).resolve().parents[1] / "engine"
    )  # the engine beside this package (read as text, never imported)
    sources = {}
    for name in JUDGE_MODULES:
        text = (root / ("child" if name in _CHILD_MODULES else "judge") / f"{name}.py").read_text()
        text = text.replace("from engine.judge.", f"from {_JUDGE_PACKAGE}.").replace(
            "from engine.judge import", f"from {_JUDGE_PACKAGE} import"
        )
        if "from engine" in text:
            raise ReproError(f"the judge's module {name} imports more of the engine than a repro can embed")
        sources[name] = text
    body = "".join(f"    {name!r}: {text!r},\n" for name, text in sources.items())
    return (
        "\n\n# ---- the engine's judge, verbatim (Divergence Explorer's engine/judge and its faithful reference's"
        f" trace) ----\n_JUDGE_SOURCES = {{\n{body}}}\n\n\ndef _load_judge():\n    package ="
        f" types.ModuleType({_JUDGE_PACKAGE!r})\n    package.__path__ = []\n    sys.modules[package.__name__] ="
        " package\n    for name, source in _JUDGE_SOURCES.items():\n        module ="
        " types.ModuleType(f'{package.__name__}.{name}')\n        sys.modules[module.__name__] = module\n       "
        " exec(compile(source, f'<judge: {name}>', 'exec'), module.__dict__)\n        setattr(package, name,"
        " module)\n    return package\n\n\n_judge = _load_judge()\n"
    )


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
        f" gradients of inputs and parameters\nCOMPILE_KWARGS = {kwargs}\n"
    )


def _defines(program: str, name: str) -> bool:
    import ast

    return any(
        isinstance(t, ast.Name) and t.id == name
        for node in ast.parse(program).body
        if isinstance(node, ast.Assign)
        for t in node.targets
    )


def _without_main_block(program: str) -> str:
    import ast

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
