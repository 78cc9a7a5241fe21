"""`opinfo:[DTYPE][:OPS]`: every sample of PyTorch's own op_db, one program per op.

op_db (torch.testing._internal.common_methods_invocations) describes each op with the samples PyTorch's
own tests run: on CPU, 551 ops and 15,849 samples in bf16 (torch 2.13). The flavour is a dtype, optionally
with the inputs PyTorch's inductor test never gives the compiler (it runs `sample_inputs`, contiguous, one per op):
`+ref` op_db's reference inputs (236 ops have their own: the samples plus extremal values, NaN, inf, -0.0, large
and small magnitudes, broadcasting, empty and size-1 dimensions; 13,367 samples in fp32 where the samples are
1,531), `+noncontig` every sample made non-contiguous as op_db's own consistency tests make it
(`SampleInput.noncontiguous()`: each tensor a view with gaps, same values). One job per sample would cost
a compile each (3-4 s, some nine hours for bf16 on two cores); a program here runs every sample of one
op, so one compile checks them all, and each sample's outputs are leaves of their own (`out['sample[3]']`,
`out['sample[3]'][0]` for an op that returns a tuple) that our verdict and PyTorch's check judge one by one.
An op of more than CHUNK samples gets a program per CHUNK of them (`nn.functional.max_pool2d--samples0-99`).
When a program ends in an error as a whole (one sample's compile fails, say), its `parts` run each
sample alone, so one bad sample hides nothing else.

The programs do what the inductor OpInfo test does around the op (replace `wrapper_set_seed`, which
reseeds inside some random ops, by a plain call) and pass the sample's kwargs as inputs, so the fp64
reference, the clones and the mutation checks reach their tensors. Unlike the test they ask for samples
without `requires_grad` (the test compiles the training graph where the op has a backward, though it
checks no gradient on CPU): the inference graph is what is compared here. DTYPE is bf16 (the default,
which PyTorch's test never runs), fp16 or fp32; the samples are op_db's own for that dtype.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial
from typing import Any

from app.sweep.pytorch_check import OPINFO, AccuracyRule, PyTorchReference
from app.sweep.sources import opinfo_lists
from app.sweep.sources.base import Selection, Source, ZooError, ZooProgram, missing, pick

DTYPES = {
    "bf16": ("bfloat16", "bf16"),
    "fp16": ("float16", "f16"),
    "fp32": ("float32", "f32"),
}  # flavour's dtype -> (torch name, the test's short name)
# flavour's input variant -> the expression in a program that makes the samples (`{dtype}` the torch name)
VARIANTS = {
    "": 'OP.sample_inputs("cpu", torch.{dtype}, requires_grad=False)',
    "ref": 'OP.reference_inputs("cpu", torch.{dtype}, requires_grad=False)',
    "noncontig": '(s.noncontiguous() for s in OP.sample_inputs("cpu", torch.{dtype}, requires_grad=False))',
}
VARIANT_WORDS = {"": "", "ref": " (op_db's reference inputs)", "noncontig": " (op_db's samples made non-contiguous)"}
FLAVOURS = tuple(d + (f"+{v}" if v else "") for v in VARIANTS for d in DTYPES)
TIMEOUT_S = 900.0  # one compile for every sample of an op, and its re-checks: a few ops take minutes
# at most this many samples per program: compiling grows with the graph (max_pool1d's 864 samples took 276 s, 0.3 s
# each), and an op's whole program that times out loses every sample; 19 of 551 ops have more in bf16
CHUNK = 100

TEMPLATE = '''"""op_db: {what} of `{key}` in {dtype}{inputs_words} on CPU, compiled as one program (torch {torch}).

Written by `divergence sweep {pattern}`; each sample's outputs are the leaves out['sample[i]'].
PyTorch's inductor OpInfo test on CPU: {lists}.
"""
import torch
import torch.testing._internal.common_methods_invocations as common_methods_invocations

# as PyTorch's inductor OpInfo test does: a random op that reseeds inside (wrapper_set_seed) would stop Dynamo
common_methods_invocations.wrapper_set_seed = lambda op, *args, **kwargs: op(*args, **kwargs)
OP = next(o for o in common_methods_invocations.op_db if (o.name, o.variant_test_name) == ({name!r}, {variant!r}))
SAMPLES = {samples}  # None: every sample; a list of indices: those alone


def fn(samples):
    return {{name: OP.op(*args, **kwargs) for name, (args, kwargs) in samples.items()}}


def inputs():
    # kwargs travel as inputs, so the fp64 reference, the clones and the mutation checks reach their tensors
    samples = {make}
    return ({{f"sample[{{i}}]": ([s.input, *s.args], dict(s.kwargs)) for i, s in enumerate(samples) if SAMPLES is None or i in SAMPLES}},)
'''  # noqa: E501  (lines of the program it writes)


def _op_db() -> Any:
    try:
        import expecttest  # noqa: F401  (op_db's module imports it; say so before torch's own message does)
    except ImportError:
        raise missing("expecttest", "opinfo") from None
    from torch.testing._internal.common_methods_invocations import op_db

    return op_db


def flavour_parts(flavour: str) -> tuple[str, str]:
    """`fp32+ref` -> ("fp32", "ref"); `bf16` -> ("bf16", "")."""
    dtype, _, variant = flavour.partition("+")
    if dtype not in DTYPES or variant not in VARIANTS:
        raise ZooError(
            f"opinfo: the flavour is a dtype ({', '.join(DTYPES)}), optionally with +ref or +noncontig, not {flavour!r}"
        )
    return dtype, variant


def samples_of(op: Any, variant: str, dtype: Any) -> Any:
    """op_db's samples of this flavour's variant, as its program makes them (VARIANTS)."""
    if variant == "ref":
        return op.reference_inputs("cpu", dtype, requires_grad=False)
    samples = op.sample_inputs("cpu", dtype, requires_grad=False)
    return (s.noncontiguous() for s in samples) if variant == "noncontig" else samples


def key_of(op: Any) -> str:
    """The test's op_name: `name`, or `name.variant`."""
    return op.name + (f".{op.variant_test_name}" if op.variant_test_name else "")


def programs(selection: Selection) -> Sequence[ZooProgram]:
    import torch

    flavour_dtype, variant = flavour_parts(selection.flavour)
    dtype_name, short = DTYPES[flavour_dtype]
    dtype = getattr(torch, dtype_name)
    # jiterator ops list CPU dtypes in op_db but raise on CPU ("only supported on CUDA and ROCm"): every sample
    # would be a job that ends in eager's error, 45 of them in a bf16 sweep
    ops = {
        key_of(op): op
        for op in _op_db()
        if dtype in op.supported_dtypes("cpu")
        and not op.name.startswith("jiterator_")
        # +ref: only the ops with reference inputs of their own (the others' are their samples: the plain sweep)
        and (variant != "ref" or op.reference_inputs_func is not None)
    }
    wanted = (
        pick(list(ops), selection.items, f"op_db op with {selection.flavour} on CPU") if selection.items else list(ops)
    )
    found = []
    for key in wanted:
        op = ops[key]
        try:
            count = _count(op, key, dtype_name, variant)
        except ZooError:
            count = 0  # its one program ends in the error that says why
        if count <= CHUNK:
            found.append(_program(op, key, selection, dtype_name, short, torch.__version__))
        else:
            # max_pool2d has 1,440 samples: one graph of them all compiles for minutes, and past the timeout loses all
            found.extend(
                _program(op, key, selection, dtype_name, short, torch.__version__, range(a, min(a + CHUNK, count)))
                for a in range(0, count, CHUNK)
            )
    return found


def decorations(op: Any, dtype_name: str) -> tuple[list[str], tuple[float, float] | None]:
    """op_db's own word on this op in the inductor OpInfo test on CPU (its DecorateInfo entries for
    TestInductorOpInfo.test_comprehensive): skips and expected failures for any dtype, as list entries, and
    the (rtol, atol) its toleranceOverride sets for this dtype, if any."""
    import torch

    dtype = getattr(torch, dtype_name)
    found: list[str] = []
    tolerance = None
    for info in getattr(op, "decorators", ()):
        if getattr(info, "cls_name", None) != "TestInductorOpInfo" or getattr(info, "test_name", None) not in (
            None,
            "test_comprehensive",
        ):
            continue
        if getattr(info, "device_type", None) not in (None, "cpu") or not getattr(info, "active_if", True):
            continue
        dtypes = getattr(info, "dtypes", None)
        which = ", ".join(sorted(str(d).removeprefix("torch.") for d in dtypes)) if dtypes else "every dtype"
        for decorator in getattr(info, "decorators", ()):
            name = getattr(decorator, "__qualname__", type(decorator).__name__)
            if type(decorator).__name__ == "toleranceOverride":
                override = getattr(decorator, "d", {}).get(dtype)
                if override is not None and (dtypes is None or dtype in dtypes):
                    tolerance = (override.rtol, override.atol)
            elif name.startswith("skip") and "Rocm" not in name:
                found.append(f"skipped by op_db ({which})")
            elif "expectedFailure" in name:
                found.append(f"expected failure by op_db ({which})")
    return found, tolerance


def _program(
    op: Any,
    key: str,
    selection: Selection,
    dtype_name: str,
    short: str,
    torch_version: str,
    samples: range | None = None,
    sample: int | None = None,
) -> ZooProgram:
    """Every sample of the op (`samples` None), a chunk of them, or one `sample` alone (a part)."""
    variant = flavour_parts(selection.flavour)[1]
    lists = opinfo_lists.entries(key)
    rule, decorated = _rule(op, key, dtype_name, short)
    what, chosen, name = _which(key, samples, sample)
    text = TEMPLATE.format(
        what=what,
        key=key,
        dtype=dtype_name,
        torch=torch_version,
        pattern=f"opinfo:{selection.flavour}:{key}",
        lists=("; ".join(lists) if lists else "not in its skip, expected-failure or one-sample lists")
        + ("" if short in opinfo_lists.TESTED_DTYPES else f"; it never runs {dtype_name}"),
        name=op.name,
        variant=op.variant_test_name,
        samples=chosen,
        make=VARIANTS[variant].format(dtype=dtype_name),
        inputs_words=VARIANT_WORDS[variant],
    )
    info: dict[str, Any] = {
        "op": key,
        "dtype": dtype_name,
        "pytorch_lists": lists + decorated,
        "pytorch_tests_dtype": short in opinfo_lists.TESTED_DTYPES,
    }
    if sample is not None:
        info["sample"] = sample
    elif samples is not None:
        info["samples"] = [samples.start, samples.stop]
    parts = (
        None if sample is not None else partial(_parts, op, key, selection, dtype_name, short, torch_version, samples)
    )
    chosen_samples: Sequence[int] | None = [sample] if sample is not None else samples
    reference = partial(pytorch_reference, key, dtype_name, chosen_samples, variant)
    # one sample alone is a check like any other: the engine's default limit, so that an op whose every sample hangs
    # costs its samples minutes, not hours
    options = {"timeout_s": TIMEOUT_S} if sample is None else {}
    return ZooProgram(name, text, rule, options, info, parts, reference)


def _rule(op: Any, key: str, dtype_name: str, short: str) -> tuple[AccuracyRule, list[str]]:
    """The inductor OpInfo test's tolerances for the op in this dtype, and op_db's decorations that apply."""
    rtol, atol, values = opinfo_lists.tolerances(key, short)
    decorated, override = decorations(op, dtype_name)
    if override is not None:
        # assertEqual takes the larger of the test's tolerance (or its default) and op_db's override
        default_rtol, default_atol = opinfo_lists.ASSERT_DEFAULTS.get(short, (0.0, 0.0))
        rtol, atol = (
            max(default_rtol if rtol is None else rtol, override[0]),
            max(default_atol if atol is None else atol, override[1]),
        )
    return AccuracyRule(OPINFO, rtol=rtol, atol=atol, values=values), decorated


def _which(key: str, samples: range | None, sample: int | None) -> tuple[str, str, str]:
    """(words, the template's SAMPLES value, the program's name) of the samples a program takes."""
    if sample is not None:
        return f"sample {sample}", f"[{sample}]", f"{key}--sample{sample}"
    if samples is not None:
        last = samples.stop - 1
        return f"samples {samples.start}-{last}", repr(samples), f"{key}--samples{samples.start}-{last}"
    return "every sample", "None", key


def _count(op: Any, key: str, dtype_name: str, variant: str) -> int:
    import torch

    try:
        return sum(1 for _ in samples_of(op, variant, getattr(torch, dtype_name)))
    except Exception as exc:  # its samples cannot be made: its program's error will say so
        raise ZooError(f"{key}: its samples cannot be made ({type(exc).__name__}: {exc})") from None


def _parts(
    op: Any, key: str, selection: Selection, dtype_name: str, short: str, torch_version: str, samples: range | None
) -> Sequence[ZooProgram]:
    """One program per sample, for a program that ended in an error as a whole."""
    variant = flavour_parts(selection.flavour)[1]
    chosen = samples if samples is not None else range(_count(op, key, dtype_name, variant))
    return [_program(op, key, selection, dtype_name, short, torch_version, sample=i) for i in chosen]


def pytorch_reference(key: str, dtype_name: str, chosen: Sequence[int] | None, variant: str = "") -> PyTorchReference:
    """The inductor OpInfo test's own reference for a program's samples, by leaf name.

    The samples are made again here as the check made them (op_db's generator after the engine's seeding of
    the inputs, seed 0), and each is run as the test runs it: eagerly on its inputs as they are (to prove
    them the check's: the judge uses a sample's reference only where this eager output equals the stored
    one bit for bit) and on its top-level tensor arguments and kwargs upcast to fp32 (`check_model`'s
    `upcast_fn`: a list of tensors stays as it is), the reference. An input the op mutates is compared too:
    the positional ones after the upcast run (the test compares `ref_inputs` with the compiled run's inputs),
    not the kwargs (it does not compare those). A sample on which the op draws random numbers (found as the
    test finds it, on fake tensors, by an op tagged `nondeterministic_seeded`) gets no reference: the test
    compares its metadata alone. Runs op_db's eager code in this process.
    """
    import random

    import numpy
    import torch

    op = next(o for o in _op_db() if key_of(o) == key)
    dtype = getattr(torch, dtype_name)
    # as the engine before `inputs()` (engine/child/seeding.py): the samples draw their values from these
    torch.manual_seed(0)
    random.seed(0)
    numpy.random.seed(0)
    samples = list(samples_of(op, variant, dtype))
    values: dict[str, Any] = {}
    eager: dict[str, Any] = {}
    seeded: set[str] = set()
    uncompared: set[str] = set()
    for i, sample in enumerate(samples):
        if chosen is not None and i not in chosen:
            continue
        prefix = f"out['sample[{i}]']"
        args, kwargs = [sample.input, *sample.args], dict(sample.kwargs)
        if _draws_random(op, args, kwargs):
            seeded.add(f"sample[{i}]")
            continue
        again_args, again_kwargs = _clones(args), _clones(kwargs)
        upcast_args, upcast_kwargs = (
            [_upcast(a) for a in _clones(args)],
            {k: _upcast(v) for k, v in _clones(kwargs).items()},
        )
        try:
            again = op.op(*again_args, **again_kwargs)
            upcast = op.op(*upcast_args, **upcast_kwargs)
        except Exception:  # the judge falls back to the check's fp64 reference for this sample
            continue
        eager.update(_named(prefix, again))
        values.update(_named(prefix, upcast))
        # the inputs after the call, named as the engine names a mutated input of the program's one argument
        inputs = f"input args[0]['sample[{i}]']"
        eager.update(_named(f"{inputs}[0]", again_args))
        values.update(_named(f"{inputs}[0]", upcast_args))
        uncompared.update(name for name, _ in _named(f"{inputs}[1]", again_kwargs))
    return PyTorchReference(
        values, eager, frozenset(seeded), frozenset(uncompared), "eager on fp32-upcast inputs, as the test"
    )


def _draws_random(op: Any, args: list[Any], kwargs: dict[str, Any]) -> bool:
    """Whether the op draws random numbers on these inputs: the inductor OpInfo test's do_nopython_and_has_rng."""
    import torch
    from torch._subclasses.fake_tensor import FakeTensorMode
    from torch.utils._python_dispatch import TorchDispatchMode
    from torch.utils._pytree import tree_map

    class Seeded(TorchDispatchMode):
        found = False

        def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
            if torch.Tag.nondeterministic_seeded in func.tags:
                self.found = True
            return func(*args, **(kwargs or {}))

    fake = FakeTensorMode()
    seeded = Seeded()
    try:
        fake_args, fake_kwargs = tree_map(
            lambda t: fake.from_tensor(t) if isinstance(t, torch.Tensor) else t, (args, kwargs)
        )
        with seeded, fake:
            op.op(*fake_args, **fake_kwargs)
    except Exception:  # the test stops at a data-dependent output, keeping what it saw so far
        pass
    return seeded.found


def _clones(value: Any) -> Any:
    import torch
    from torch.utils._pytree import tree_map

    return tree_map(lambda t: t.clone() if isinstance(t, torch.Tensor) else t, value)


def _upcast(value: Any) -> Any:
    import torch

    return (
        value.float() if isinstance(value, torch.Tensor) and value.dtype in (torch.bfloat16, torch.float16) else value
    )


def _named(path: str, value: Any) -> list[tuple[str, Any]]:
    """An op's output as the engine names its leaves (tensors; tuples and lists by index, dicts by key)."""
    import torch

    if isinstance(value, torch.Tensor):
        return [(path, value.detach())]
    if isinstance(value, tuple) and hasattr(value, "_fields"):
        return [leaf for name in value._fields for leaf in _named(f"{path}.{name}", getattr(value, name))]
    if isinstance(value, (tuple, list)):
        return [leaf for i, item in enumerate(value) for leaf in _named(f"{path}[{i}]", item)]
    if isinstance(value, dict):
        return [leaf for k, item in value.items() for leaf in _named(f"{path}[{k!r}]", item)]
    return []


SOURCE = Source(
    prefix="opinfo",
    summary="every sample of PyTorch's op_db, one program per op: opinfo:[bf16|fp16|fp32][+ref|+noncontig][:OP,...]",
    flavours=FLAVOURS,
    programs=programs,
    needs="expecttest",
)
