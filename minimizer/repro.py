"""Emit a standalone repro.py from a minimized program (any snippet style), and prove it reproduces in a fresh process.

The emitted script imports only torch (plus what the program itself imports), seeds the RNG before the
program's own module code as the engine does, runs eager and compiled from the same RNG state on cloned
inputs, prints for every output (every input mutated in place, every module buffer and, with
`backward`, every gradient of an input or parameter) the max abs and ULP difference and both sides'
distance from an fp64 run, and exits 1 while compiled diverges, 0 once it does not.

- fn + inputs: the program, then the harness calls `fn` on `inputs`.
- KernelBench: the program, then `fn = Model(*get_init_inputs())` and `inputs = get_inputs`, as the engine builds it.
- a verbatim repro: the harness replaces torch.compile before the program runs, so every call of a
  compiled callable is checked (eager on clones first, then compiled on the script's own arguments).

`verify` runs the script in a new interpreter: a repro is only offered when that run exits 1 and says DIVERGENT.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Sequence

from engine import CheckOptions, SnippetStyle, detect_style
from engine.result import ScalarRounding

# Shared by every style. Constants (SEED, DEVICE, DTYPE, FACTOR, BACKWARD, COMPILE_KWARGS, ROUNDED_SCALARS) come before it.
HELPERS = '''
def _map(obj, f):
    if isinstance(obj, torch.Tensor):
        return f(obj)
    if isinstance(obj, (tuple, list)):
        return type(obj)(_map(o, f) for o in obj)
    if isinstance(obj, dict):
        return {k: _map(v, f) for k, v in obj.items()}
    return obj


def _tensors(obj, name):
    if isinstance(obj, torch.Tensor):
        yield name, obj
    elif isinstance(obj, (tuple, list)):
        for i, item in enumerate(obj):
            yield from _tensors(item, f"{name}[{i}]")
    elif isinstance(obj, dict):
        for key, item in obj.items():
            yield from _tensors(item, f"{name}[{key!r}]")


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


def _run(call, args, kwargs, seed, module, clone=True):
    """Call once from `seed`; return every compared tensor by name, and the call's own output."""
    if clone:  # detach first: deepcopy refuses non-leaf tensors, and keeps aliasing between inputs
        args, kwargs = copy.deepcopy(_map((args, kwargs), lambda t: t.detach().requires_grad_(t.requires_grad and t.is_leaf)))
    if BACKWARD:
        args, kwargs = _map((args, kwargs), lambda t: t.detach().requires_grad_(True) if _differentiable(t) else t)
    before = {n: t.detach().clone() for n, t in _inputs(args, kwargs)}
    _seed(seed)
    out = call(*args, **kwargs)
    leaves = dict(_tensors(out, "out"))
    # inputs that this side mutated in place: a mutation on one side only shows up as a missing leaf
    leaves.update((n, t) for n, t in _inputs(args, kwargs) if not _same(before[n], t.detach()))
    if module is not None:
        leaves.update((f"self.{n}", b) for n, b in module.named_buffers())
    if BACKWARD:
        leaves.update(_gradients(out, args, kwargs, module, seed))
    return {n: t.detach().clone() for n, t in leaves.items()}, out


def _inputs(args, kwargs):
    return [*_tensors(args, "input"), *_tensors(kwargs, "kwarg")]


def _same(a, b):
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    return bool(((a == b) | (a != a) & (b != b)).all()) if a.is_floating_point() else torch.equal(a, b)


class _RoundScalars(torch.utils._python_dispatch.TorchDispatchMode):
    """In the fp64 run, the Python scalars of ROUNDED_SCALARS rounded to the dtype eager rounds them to."""

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        args, kwargs = list(args), dict(kwargs or {})
        for i, arg in enumerate(func._schema.arguments):
            dtype = ROUNDED_SCALARS.get((str(func), arg.name))
            if dtype is None:
                continue
            if i < len(args) and not arg.kwarg_only and isinstance(args[i], float):
                args[i] = float(torch.tensor(args[i], dtype=dtype))
            elif isinstance(kwargs.get(arg.name), float):
                kwargs[arg.name] = float(torch.tensor(kwargs[arg.name], dtype=dtype))
        return func(*args, **kwargs)


def _reference(call, args, kwargs, seed):
    """The same call with the module and the floating inputs in float64; empty when an op has no float64 kernel."""
    try:
        module = _module_of(call)
        if module is not None:
            copied = copy.deepcopy(module).double()
            call = copied if call is module else types.MethodType(call.__func__, copied)
            module = copied
        with _RoundScalars() if ROUNDED_SCALARS else contextlib.nullcontext():  # no dispatch mode where nothing rounds
            return _run(call, *_map((args, kwargs), _to64), seed, module, clone=False)[0]
    except Exception as exc:
        print(f"(no fp64 reference: {type(exc).__name__}: {exc})")
        return {}


def _ulp(a, b):
    ints = {torch.float64: torch.int64, torch.float32: torch.int32, torch.float16: torch.int16, torch.bfloat16: torch.int16}.get(a.dtype)
    if ints is None:
        return float((a != b).sum())
    def ordered(t):
        i = t.contiguous().view(ints).to(torch.int64)
        return torch.where(i < 0, torch.iinfo(ints).min - i, i)
    finite = torch.isfinite(a) & torch.isfinite(b)
    return float((ordered(a) - ordered(b)).abs()[finite].max()) if finite.any() else 0.0


def _compare(eager, compiled, reference, prefix=""):
    """Print one line per floating leaf; return what diverges, one line per leaf."""
    diverged = [f"{prefix}{name}: only in the compiled result (compiled mutated it, eager did not)" for name in compiled if name not in eager]
    for name, e in eager.items():
        c = compiled.get(name)
        label = prefix + name
        if c is None:
            diverged.append(f"{label}: missing from the compiled result")  # e.g. eager mutated an input, compiled did not
            continue
        problems = []
        if e.shape != c.shape or e.dtype != c.dtype:
            problems.append(f"shape/dtype {tuple(e.shape)} {e.dtype} vs {tuple(c.shape)} {c.dtype}")
        elif e.is_floating_point():
            if not torch.equal(e.isnan(), c.isnan()):
                problems.append("NaN pattern differs")
            if not torch.equal(e.isinf() & (e > 0), c.isinf() & (c > 0)) or not torch.equal(e.isinf() & (e < 0), c.isinf() & (c < 0)):
                problems.append("infinity pattern differs")
            if not torch.equal(torch.signbit(e) & (e == 0), torch.signbit(c) & (c == 0)):
                problems.append("signed zeros differ")
            both = torch.isfinite(e) & torch.isfinite(c)
            abs_diff = float((e.double() - c.double()).abs()[both].max()) if both.any() else 0.0
            line = f"{label}: max abs diff {abs_diff:.6g}, max ULP diff {_ulp(e, c):.0f}"
            r = reference.get(name)
            if r is not None and r.shape == e.shape:
                r = r.to(e.device)
                fin = both & torch.isfinite(r)
                if fin.any():
                    err_e = (e.double() - r)[fin].abs()
                    err_c = (c.double() - r)[fin].abs()
                    floor = torch.finfo(e.dtype).eps * float(r[fin].abs().max().clamp(min=1e-30))
                    e_rms, c_rms = float(err_e.pow(2).mean().sqrt()), float(err_c.pow(2).mean().sqrt())
                    line += f"; distance from fp64: eager max {float(err_e.max()):.3g} rms {e_rms:.3g}, compiled max {float(err_c.max()):.3g} rms {c_rms:.3g}"
                    if c_rms > FACTOR * e_rms + floor or float(err_c.max()) > FACTOR * float(err_e.max()) + floor:
                        problems.append("compiled is further from the fp64 reference than eager")
            elif abs_diff > 0:
                problems.append("values differ and there is no fp64 reference")
            print(line)
        elif not torch.equal(e, c):
            problems.append(f"{int((e != c).sum())} of {e.numel()} elements differ")
        if e.shape == c.shape and e.stride() != c.stride() and any(s > 1 for s in e.shape):
            problems.append(f"strides {e.stride()} vs {c.stride()}")
        if problems:
            diverged.append(f"{label}: " + "; ".join(problems))
            print(f"  eager:    {e.flatten()[:8].tolist()}")
            print(f"  compiled: {c.flatten()[:8].tolist()}")
    return diverged


def _finish(diverged):
    for line in diverged:
        print("DIVERGENT", line)
    print("torch", torch.__version__, "- bug present" if diverged else "- no divergence")
    return 1 if diverged else 0
'''

# fn + inputs and KernelBench (after the adapter has defined fn and inputs)
PROGRAM_DRIVER = '''

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
    eager, _ = _run(fn, _args(), {}, SEED, module)
    if module is not None:
        module.load_state_dict(saved)  # in place: compiled starts from the state eager started from
    compiled, _ = _run(torch.compile(fn, **COMPILE_KWARGS), _args(), {}, SEED, module)
    if module is not None:
        module.load_state_dict(saved)
    return _finish(_compare(eager, compiled, _reference(fn, _args(), {}, SEED)))


if __name__ == "__main__":
    sys.exit(main())
'''

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
        eager, _ = _run(model, args, kw, seed, _module_of(model))
        reference = _reference(model, args, kw, seed)
        checked, out = _run(compiled, args, kw, seed, _module_of(model), clone=False)
        _DIVERGED.extend(_compare(eager, checked, reference, prefix=f"call{k}: "))
        return out

    return call


torch.compile = _checked_compile
_seed(SEED)

# ---- the program ----
'''

REPRO_FOOTER = '''

# ---- harness: the verdict over every compiled call ----
if _CALLS[0] == 0:
    print("the compiled function was never called: nothing was compared")
    sys.exit(2)
sys.exit(_finish(_DIVERGED))
'''


class ReproError(ValueError):
    """The program cannot be turned into a standalone repro."""


@dataclass(frozen=True)
class Verification:
    reproduces: bool  # exited 1 and said DIVERGENT
    exit_code: int | None
    output: str


def emit(program: str, options: CheckOptions, seed: int = 0, roundings: Sequence[ScalarRounding] = ()) -> str:
    """A standalone script around the program, for fn + inputs, KernelBench and verbatim-repro programs.

    `roundings` (the original check's `scalar_roundings`) become ROUNDED_SCALARS: per op and argument, the dtype
    eager rounds a Python scalar to. Keyed without the value, so a float the minimizer shortened still rounds.
    """
    try:
        style = detect_style(program)
    except Exception as exc:  # SnippetError: the program fits no style
        raise ReproError(str(exc)) from None
    future, body = _split_future_imports(program)
    head = (
        f'"""Minimized by Divergence Explorer: torch.compile diverges from eager. Exits 1 while the bug is present."""\n'
        + future
        + "import contextlib\nimport copy\nimport random\nimport sys\nimport types\n\nimport torch\nimport torch.utils._python_dispatch\n\n"
        + _constants(options, seed, style, program)
        + _rounded_scalars(roundings)
        + "".join(f"torch._inductor.config.{k} = {v!r}\n" for k, v in sorted(options.inductor_config.items()))
    )
    if style is SnippetStyle.REPRO:
        # the script drives its own calls: the engine ignores backward, device and dtype for it, and so does this
        return head + HELPERS + REPRO_INTERCEPT + body.rstrip() + "\n" + REPRO_FOOTER
    body = _without_main_block(body)  # the engine loads these styles as a module, not as __main__
    adapter = ""
    if style is SnippetStyle.KERNELBENCH:
        # built right after the module code, before any re-seeding: the engine draws the weights from the same RNG state
        adapter = '\nfn = Model(*(get_init_inputs() if "get_init_inputs" in globals() else ()))\ninputs = get_inputs\n'
    seeded = "# module-level inputs and weights draw from the RNG state the check started from\ntorch.manual_seed(SEED)\nrandom.seed(SEED)\n"
    if "numpy" in program:
        seeded += "import numpy\nnumpy.random.seed(SEED)\n"
    seeded += "\n"
    return head + seeded + body.rstrip() + "\n" + adapter + "\n# ---- harness: eager vs torch.compile vs an fp64 reference (written by Divergence Explorer) ----\n" + HELPERS + PROGRAM_DRIVER


def _constants(options: CheckOptions, seed: int, style: SnippetStyle, program: str) -> str:
    device = repr(options.device) if options.device else '"cuda" if torch.cuda.is_available() else "cpu"'
    dtype = {"bf16": "torch.bfloat16", "fp16": "torch.float16"}.get(options.dtype or "", "None")
    option_kwargs = _option_kwargs(options)
    if style is SnippetStyle.FN_INPUTS and _defines(program, "compile_kwargs"):
        kwargs = "{**compile_kwargs, **%r}" % option_kwargs
    elif style is SnippetStyle.REPRO:
        kwargs = repr(option_kwargs)  # over the script's own keyword arguments
    else:
        kwargs = repr({"backend": "inductor", **option_kwargs})
    backward = bool(options.backward) and style is not SnippetStyle.REPRO
    return (
        f"SEED = {seed}\n"
        f"DEVICE = {device}\n"
        f"DTYPE = {dtype}\n"
        f"FACTOR = {options.benign_factor!r}  # compiled may be this many times further from fp64 than eager before it counts\n"
        f"BACKWARD = {backward}  # also compare the gradients of inputs and parameters\n"
        f"COMPILE_KWARGS = {kwargs}\n"
    )


def _rounded_scalars(roundings: Sequence[ScalarRounding]) -> str:
    entries = {(r.op, r.argument): r.dtype for r in roundings}
    body = "".join(f"    ({op!r}, {argument!r}): torch.{dtype},\n" for (op, argument), dtype in sorted(entries.items()))
    return (
        "# Python scalars eager rounds to a low-precision operand's dtype (asked of eager by the check, per op and argument):\n"
        "# the fp64 reference rounds them too, or it is not the program eager runs\n"
        + ("ROUNDED_SCALARS = {\n" + body + "}\n" if body else "ROUNDED_SCALARS = {}\n")
    )


def _defines(program: str, name: str) -> bool:
    import ast

    return any(isinstance(t, ast.Name) and t.id == name for node in ast.parse(program).body if isinstance(node, ast.Assign) for t in node.targets)


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
    return {k: getattr(options, k) for k in ("backend", "mode", "dynamic", "fullgraph") if getattr(options, k) is not None}


def verify(script: str, python: str | None = None, timeout_s: float = 300.0, work_dir: Path | None = None,
           should_stop: Callable[[], bool] | None = None, inductor_cache: Path | None = None) -> Verification:
    """Run the script in a fresh interpreter (no state shared with anything that ran before).

    `should_stop` is polled while it runs; when it returns True the interpreter is killed and the
    script counts as not verified. `inductor_cache` lends it the oracle's compile cache: the repro
    compiles the graph the last check compiled, so it loads the same kernels instead of running g++.
    """
    directory = Path(work_dir or tempfile.mkdtemp(prefix="repro-"))
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / "repro.py"
    path.write_text(script)
    out_path, err_path = directory / "repro.out", directory / "repro.err"
    # files, not pipes: a chatty script must not block on a full pipe while this loop polls
    with open(out_path, "w") as out_file, open(err_path, "w") as err_file:
        env = dict(os.environ, TORCHINDUCTOR_CACHE_DIR=str(inductor_cache)) if inductor_cache is not None else None
        process = subprocess.Popen([python or sys.executable, str(path)], stdout=out_file, stderr=err_file, cwd=directory, env=env)
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
    return Verification(process.returncode == 1 and "DIVERGENT" in stdout, process.returncode, output)
