"""Emit a standalone repro.py from a minimized fn-inputs program, and prove it reproduces in a fresh process.

The emitted script imports only torch (plus what the program itself imports), seeds the RNG, builds the
inputs, runs eager and compiled from the same RNG state on cloned inputs, prints for every output (and
every input mutated in place) the max abs and ULP difference and both sides' distance from an fp64
run, and exits 1 while compiled diverges, 0 once it does not. `verify` runs it in a new interpreter:
a repro is only offered when that run exits non-zero.
"""

from __future__ import annotations

import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from engine import CheckOptions, SnippetStyle, detect_style

HARNESS = '''

# ---- harness: eager vs torch.compile vs an fp64 reference (written by Divergence Explorer) ----
import copy
import sys

SEED = {seed}
DEVICE = {device!r}
FACTOR = {factor!r}  # compiled may be this many times further from fp64 than eager before it counts
COMPILE_KWARGS = {compile_kwargs}


def _args():
    torch.manual_seed(SEED)
    made = inputs() if callable(inputs) else inputs
    return tuple(a.to(DEVICE) if isinstance(a, torch.Tensor) else a for a in made)


def _leaves(obj, name):
    if isinstance(obj, torch.Tensor):
        yield name, obj
    elif isinstance(obj, (tuple, list)):
        for i, item in enumerate(obj):
            yield from _leaves(item, f"{{name}}[{{i}}]")
    elif isinstance(obj, dict):
        for key, item in obj.items():
            yield from _leaves(item, f"{{name}}[{{key!r}}]")


def _run(call, args):
    args = copy.deepcopy(args)
    torch.manual_seed(SEED)
    with torch.no_grad():
        out = call(*args)
    return dict(_leaves(out, "out")) | {{n: t for i, a in enumerate(args) for n, t in _leaves(a, f"input{{i}}")}}


def _ulp(a, b):
    if not a.is_floating_point() or a.dtype not in (torch.float64, torch.float32, torch.float16, torch.bfloat16):
        return float((a != b).sum())
    ints = {{torch.float64: torch.int64, torch.float32: torch.int32, torch.float16: torch.int16, torch.bfloat16: torch.int16}}[a.dtype]
    def ordered(t):
        i = t.contiguous().view(ints).to(torch.int64)
        return torch.where(i < 0, torch.iinfo(ints).min - i, i)
    finite = torch.isfinite(a) & torch.isfinite(b)
    return float((ordered(a) - ordered(b)).abs()[finite].max()) if finite.any() else 0.0


def main():
    model = fn.to(DEVICE) if isinstance(fn, torch.nn.Module) else fn
    eager = _run(model, _args())
    compiled = _run(torch.compile(model, **COMPILE_KWARGS), _args())
    try:
        to64 = lambda a: a.double() if isinstance(a, torch.Tensor) and a.is_floating_point() else a
        ref_model = copy.deepcopy(model).double() if isinstance(model, torch.nn.Module) else model
        reference = _run(ref_model, tuple(to64(a) for a in _args()))
    except Exception as exc:  # an op without a float64 kernel
        print(f"(no fp64 reference: {{exc}})")
        reference = {{}}
    diverged = []
    for name, e in eager.items():
        c = compiled.get(name)
        if c is None:
            diverged.append(f"{{name}}: missing from the compiled result")
            continue
        problems = []
        if e.shape != c.shape or e.dtype != c.dtype:
            problems.append(f"shape/dtype {{tuple(e.shape)}} {{e.dtype}} vs {{tuple(c.shape)}} {{c.dtype}}")
        elif e.is_floating_point():
            if not torch.equal(e.isnan(), c.isnan()):
                problems.append("NaN pattern differs")
            if not torch.equal(e.isinf() & (e > 0), c.isinf() & (c > 0)) or not torch.equal(e.isinf() & (e < 0), c.isinf() & (c < 0)):
                problems.append("infinity pattern differs")
            if not torch.equal(torch.signbit(e) & (e == 0), torch.signbit(c) & (c == 0)):
                problems.append("signed zeros differ")
            both = torch.isfinite(e) & torch.isfinite(c)
            abs_diff = float((e - c).abs()[both].max()) if both.any() else 0.0
            line = f"{{name}}: max abs diff {{abs_diff:.6g}}, max ULP diff {{_ulp(e, c):.0f}}"
            r = reference.get(name)
            if r is not None and r.shape == e.shape:
                r = r.to(e.device)
                fin = both & torch.isfinite(r)
                if fin.any():
                    err_e = (e.double() - r)[fin].abs()
                    err_c = (c.double() - r)[fin].abs()
                    floor = torch.finfo(e.dtype).eps * float(r[fin].abs().max().clamp(min=1e-30))
                    e_rms, c_rms = float(err_e.pow(2).mean().sqrt()), float(err_c.pow(2).mean().sqrt())
                    line += f"; distance from fp64: eager max {{float(err_e.max()):.3g}} rms {{e_rms:.3g}}, compiled max {{float(err_c.max()):.3g}} rms {{c_rms:.3g}}"
                    if c_rms > FACTOR * e_rms + floor or float(err_c.max()) > FACTOR * float(err_e.max()) + floor:
                        problems.append("compiled is further from the fp64 reference than eager")
            elif abs_diff > 0:
                problems.append("values differ and there is no fp64 reference")
            print(line)
        elif not torch.equal(e, c):
            problems.append(f"{{int((e != c).sum())}} of {{e.numel()}} elements differ")
        if e.stride() != c.stride() and e.shape == c.shape and any(s > 1 for s in e.shape):
            problems.append(f"strides {{e.stride()}} vs {{c.stride()}}")
        if problems:
            diverged.append(f"{{name}}: " + "; ".join(problems))
            print(f"  eager:    {{e.flatten()[:8].tolist()}}")
            print(f"  compiled: {{c.flatten()[:8].tolist()}}")
    for line in diverged:
        print("DIVERGENT", line)
    print("torch", torch.__version__, "- bug present" if diverged else "- no divergence")
    return 1 if diverged else 0


if __name__ == "__main__":
    sys.exit(main())
'''


class ReproError(ValueError):
    """The program cannot be turned into a standalone repro (its style is not fn + inputs)."""


@dataclass(frozen=True)
class Verification:
    reproduces: bool  # exited non-zero
    exit_code: int | None
    output: str


def emit(program: str, options: CheckOptions, seed: int = 0) -> str:
    """A standalone script around an fn-inputs program; raises ReproError for other styles."""
    if detect_style(program) is not SnippetStyle.FN_INPUTS:
        raise ReproError("only fn + inputs programs get a generated harness; a verbatim repro is its own script")
    config = "".join(f"torch._inductor.config.{k} = {v!r}\n" for k, v in sorted(options.inductor_config.items()))
    preamble = "" if "import torch\n" in program else "import torch\n"
    has_kwargs = "compile_kwargs" in program
    kwargs = "{**compile_kwargs, **%r}" % _option_kwargs(options) if has_kwargs else repr({"backend": "inductor", **_option_kwargs(options)})
    return (
        f'"""Minimized by Divergence Explorer: torch.compile diverges from eager. Exits 1 while the bug is present."""\n'
        + preamble
        + program.rstrip()
        + "\n"
        + ("\n" + config if config else "")
        + HARNESS.format(seed=seed, device=options.device or "cpu", factor=options.benign_factor, compile_kwargs=kwargs)
    )


def _option_kwargs(options: CheckOptions) -> dict[str, object]:
    return {k: getattr(options, k) for k in ("backend", "mode", "dynamic", "fullgraph") if getattr(options, k) is not None}


def verify(script: str, python: str | None = None, timeout_s: float = 300.0, work_dir: Path | None = None) -> Verification:
    """Run the script in a fresh interpreter (no state shared with anything that ran before)."""
    import tempfile

    directory = Path(work_dir or tempfile.mkdtemp(prefix="repro-"))
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / "repro.py"
    path.write_text(script)
    try:
        done = subprocess.run([python or sys.executable, str(path)], capture_output=True, text=True, timeout=timeout_s, cwd=directory)
    except subprocess.TimeoutExpired as exc:
        return Verification(False, None, f"timed out after {timeout_s:g} s\n{exc.stdout or ''}")
    output = (done.stdout + done.stderr)[-8000:]
    # a traceback is not a reproduction: only the harness's own exit status 1 counts
    return Verification(done.returncode == 1 and "DIVERGENT" in done.stdout, done.returncode, output)
