"""The runs a repro makes and its comparison of every leaf (see the package's docstring); a repro carries the part
below, after its constants and before its driver."""

import contextlib
import copy
import random
import sys
import types

import torch

from minimizer.vendored.gradients import gradients_of
from minimizer.vendored.judge import judge, significant_strides
from minimizer.vendored.walker import map_tensors, tensors_of

# The script defines these above the harness: its constants, and `_faithful`, the engine's faithful reference
# (engine/child/faithful.py) where the check's reference replayed eager's scalar roundings or draws, else None.
SEED, DEVICE, DTYPE, FACTOR, NOISE_ULPS, BACKWARD = 0, "cpu", None, 2.0, 32.0, False
_faithful = None


# ---- vendored ----
# ---- harness: eager, torch.compile and an fp64 reference, every leaf judged (Divergence Explorer) ----
def _seed(seed):
    torch.manual_seed(seed)
    random.seed(seed)
    if "numpy" in sys.modules:  # the engine seeds numpy's global generator too
        sys.modules["numpy"].random.seed(seed % 2**32)


def _to64(t):
    wide = torch.complex128 if t.is_complex() else torch.float64
    return t.detach().to(wide) if t.is_floating_point() or t.is_complex() else t.detach().clone()


def _module_of(call):
    owner = getattr(call, "__self__", None)
    return call if isinstance(call, torch.nn.Module) else owner if isinstance(owner, torch.nn.Module) else None


def _inputs(args, kwargs):
    return [*tensors_of(args, "args"), *tensors_of(kwargs, "kwargs")]


def _same(a, b):  # NaN where NaN was counts as unchanged
    return a.shape == b.shape and a.dtype == b.dtype and bool(((a == b) | (a != a) & (b != b)).all())


def _detached(t, grad):
    return t.detach().requires_grad_(grad) if t.is_floating_point() or t.is_complex() else t.detach()


def _run(call, args, kwargs, seed, module, clone=True, mode=None):
    """Call once from `seed` (under `mode`, if given): every compared tensor by its leaf name, and the output."""
    if clone:  # detach first: deepcopy refuses non-leaf tensors, and keeps aliasing between inputs
        args, kwargs = copy.deepcopy(map_tensors((args, kwargs), lambda t: _detached(t, t.requires_grad and t.is_leaf)))
    if BACKWARD:
        args, kwargs = map_tensors((args, kwargs), lambda t: _detached(t, True))
    before = {n: t.detach().clone() for n, t in _inputs(args, kwargs)}
    _seed(seed)
    with mode if mode is not None else contextlib.nullcontext():
        out = call(*args, **kwargs)
        grads = gradients_of(out, args, kwargs, module, seed) if BACKWARD else {}
    leaves = dict(tensors_of(out, "out"))
    # inputs that this side mutated in place: a mutation on one side only shows up as a missing leaf
    leaves.update((f"input {n}", t) for n, t in _inputs(args, kwargs) if not _same(before[n], t.detach()))
    if module is not None:
        leaves.update((f"state self.{n}", b) for n, b in module.named_buffers())
    leaves.update(grads)
    return {n: t.detach().clone() for n, t in leaves.items()}, out


def _eager(call, args, kwargs, seed, module):
    """Eager's run, watched as the check watches it where it replays eager's scalar roundings and draws."""
    trace = _faithful.EagerTrace() if _faithful is not None else None
    leaves, _ = _run(call, args, kwargs, seed, module, mode=trace)
    return leaves, trace.trace if trace is not None else None


def _reference(call, args, kwargs, seed, trace):
    """The check's fp64 reference (module and floating inputs in float64); empty when an op has no float64 kernel."""
    try:
        module = _module_of(call)
        if module is not None:
            copied = copy.deepcopy(module).double()
            call = copied if call is module else types.MethodType(call.__func__, copied)
            module = copied
        mode = _faithful.FaithfulMode(trace) if trace is not None and trace.changes_reference else None
        with _faithful.exact_float64() if _faithful is not None else contextlib.nullcontext():
            return _run(call, *map_tensors((args, kwargs), _to64), seed, module, clone=False, mode=mode)[0]
    except Exception as exc:
        print(f"(no fp64 reference: {type(exc).__name__}: {exc})")
        return {}


def _compare(eager, compiled, reference, trace, prefix=""):
    """Judge every leaf with the engine's rules (the judge above); return one line per divergent leaf."""
    lead = "against fp64, "
    if trace is not None and trace.changes_reference:
        lead = f"against the fp64 reference run with eager's semantics ({trace.describe()}), "
    diverged = [f"{prefix}{n} [mutation]: only compiled changed it in place" for n in compiled if n not in eager]
    for name, e in eager.items():
        c, label = compiled.get(name), prefix + name
        if c is None:
            diverged.append(f"{label} [mutation]: missing from the compiled result (eager changed it in place)")
        elif e.shape != c.shape or e.dtype != c.dtype:
            symptoms = ", ".join(["shape"] * (e.shape != c.shape) + ["dtype"] * (e.dtype != c.dtype))
            diverged.append(f"{label} [{symptoms}]: {tuple(e.shape)} {e.dtype} vs compiled {tuple(c.shape)} {c.dtype}")
        else:
            verdict, symptoms, why = judge(e, c, reference.get(name), FACTOR, NOISE_ULPS, lead)
            print(f"{label}: {verdict}: {why}")
            symptoms = symptoms if verdict == "divergent" else []
            if significant_strides(e) != significant_strides(c):
                symptoms.append("stride")
                why = why if verdict == "divergent" else f"strides {e.stride()} vs compiled {c.stride()}"
            if symptoms:
                diverged.append(f"{label} [{', '.join(symptoms)}]: {why}")
                print(f"  eager:    {e.flatten()[:8].tolist()}\n  compiled: {c.flatten()[:8].tolist()}")
    return diverged


def _finish(diverged):
    for line in diverged:
        print("DIVERGENT", line)
    print("torch", torch.__version__, "- bug present" if diverged else "- no divergence")
    return 1 if diverged else 0
