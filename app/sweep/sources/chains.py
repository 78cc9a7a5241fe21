"""`chain:[DTYPE][:SEEDS]`: op_db ops chained 2 to 4 deep, each op's input the previous op's output.

Fusion bugs need neighbours: an op alone compiles to one kernel that PyTorch's own test checks, but a norm
into an activation into a reduction is one fused loop whose indexing, accumulation and casts no single-op test
sees. A chain starts at an op_db sample and continues with a sample of another op whose input has the shape
and dtype of the output so far: the next op is called on the running value with that sample's own arguments
(its weights, dims, kwargs), so every step is an input op_db itself declares valid. Which samples fit is read
from a catalog of every op's samples (input and output shape and dtype, made once per dtype and torch version
by running op_db eagerly, a few minutes, kept under the zoo folder); samples that draw random numbers or
return uninitialized memory are left out of it.

A program is one seed: CHAINS_PER_PROGRAM chains drawn by `random.Random(f"{dtype}:{seed}")`, one compile
for all, each chain's result its own leaf (`out['sample[3]']` for chain 3, named as op_db's samples so that
a divergent chain narrows to itself for minimizing). SEEDS is `0-99` (the default), `5`, or `0-9,40`: the
same seed always gives the same chains, and a sweep over more seeds re-uses the jobs of those it ran.
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

from app.sweep.pytorch_check import harness_rule
from app.sweep.sources.base import Selection, Source, ZooError, ZooProgram, missing
from app.sweep.sources.opinfo import DTYPES

CHAINS_PER_PROGRAM = 8
LENGTHS = (2, 3, 4)
DEFAULT_SEEDS = range(100)
SAMPLES_PER_OP = 40  # an op's first samples in the catalog: enough shapes to meet others, a bounded catalog
CATALOG_VERSION = 2
# the families a chain draws from (a family first, then an op of it, then a sample), named for what Inductor
# does with them: pointwise ops fuse into their neighbours' loops, reductions end or split a loop, norms and
# activations are the decompositions a model's block is made of, index ops and scatters write through computed
# addresses, layout ops change strides under a fused loop. Ops of no family (linalg, fft, factories, sorting,
# ops of data-dependent shape) stay out: they are extern calls or graph breaks, with no neighbour to fuse with.
FAMILIES = ("pointwise", "reduction", "norm-activation", "conv-pool", "index", "layout")
_REDUCTIONS = {
    "sum",
    "mean",
    "prod",
    "amax",
    "amin",
    "max",
    "min",
    "var",
    "std",
    "var_mean",
    "std_mean",
    "logsumexp",
    "softmax",
    "log_softmax",
    "cumsum",
    "cumprod",
    "logcumsumexp",
    "cummax",
    "cummin",
    "norm",
    "nansum",
    "nanmean",
    "argmax",
    "argmin",
    "all",
    "any",
    "count_nonzero",
    "renorm",
    "dist",
    "aminmax",
    "diff",
}
_INDEX = {
    "gather",
    "scatter",
    "scatter_add",
    "scatter_reduce",
    "index_select",
    "index_add",
    "index_copy",
    "index_fill",
    "index_put",
    "index_reduce",
    "take",
    "take_along_dim",
    "masked_fill",
    "masked_scatter",
    "where",
    "put",
    "select_scatter",
    "slice_scatter",
    "diagonal_scatter",
    "_unsafe_masked_index",
    "__getitem__",
}
_LAYOUT = {
    "transpose",
    "permute",
    "flip",
    "fliplr",
    "flipud",
    "roll",
    "rot90",
    "narrow",
    "select",
    "t",
    "mT",
    "movedim",
    "reshape",
    "view",
    "expand",
    "repeat",
    "unfold",
    "diagonal",
    "squeeze",
    "unsqueeze",
    "flatten",
    "unflatten",
    "contiguous",
    "clone",
    "constant_pad_nd",
    "tril",
    "triu",
    "slice",
    "as_strided",
    "ravel",
    "tile",
}
# ops that raise on values outside a domain (a probability, an index): only as a chain's first op, on op_db's
# own input, since a previous op's output would rarely be in it
_FIRST_ONLY = {"nn.functional.binary_cross_entropy", "nn.functional.embedding", "nn.functional.embedding_bag", "take"}
# ops that hash their input's bits: after another op, one step of honest reassociation upstream becomes a wholly
# other integer (a chain:fp32 job judged divergent on margin_ranking_loss -> hash_tensor); first only as well
_FIRST_ONLY |= {"hash_tensor"}
_CONV_POOL = re.compile(r"^nn\.functional\.(conv|.*pool|interpolate|upsample|pad|unfold|fold|pixel_|grid_sample)")
# ops whose output is not a function of their inputs: random draws, uninitialized memory (and their catalog
# check would miss a draw hidden behind a generator argument)
_UNSTABLE = re.compile(r"rand|normal|bernoulli|multinomial|dropout|uniform|cauchy|exponential|geometric|empty|rrelu")
_UNINITIALIZED = {"empty", "empty_like", "empty_strided", "empty_permuted", "new_empty", "new_empty_strided"}

TEMPLATE = '''"""chain:{dtype} seed {seed}: {count} chains of op_db ops, each on the last's output (torch {torch}).

Written by `divergence sweep {pattern}`; chain i's result is the leaf out['sample[i]'].
{listing}
"""
import torch
import torch.testing._internal.common_methods_invocations as common_methods_invocations

# as PyTorch's inductor OpInfo test does: a random op that reseeds inside (wrapper_set_seed) would stop Dynamo
common_methods_invocations.wrapper_set_seed = lambda op, *args, **kwargs: op(*args, **kwargs)
# each chain: (op name, variant, sample index) per step; the first step's sample gives the input
CHAINS = {chains}
SAMPLES = {samples}  # None: every chain; a list of indices: those alone
OPS = {{
    (o.name, o.variant_test_name): o
    for o in common_methods_invocations.op_db
    if (o.name, o.variant_test_name) in {{(n, v) for chain in CHAINS for n, v, _ in chain}}
}}


def fn(chains):
    out = {{}}
    for name, (x, steps) in chains.items():
        for op, args, kwargs in steps:
            x = OPS[op].op(x, *args, **kwargs)
        out[name] = x
    return out


def inputs():
    # every op's samples made once, in order, after the engine's seeding: the same values every run
    made = {{key: list(OPS[key].sample_inputs("cpu", torch.{dtype}, requires_grad=False)) for key in sorted(OPS)}}
    chains = {{}}
    for i, chain in enumerate(CHAINS):
        if SAMPLES is not None and i not in SAMPLES:
            continue
        first = made[chain[0][:2]][chain[0][2]]
        steps = [(chain[0][:2], list(first.args), dict(first.kwargs))]
        steps += [((n, v), list(made[(n, v)][s].args), dict(made[(n, v)][s].kwargs)) for n, v, s in chain[1:]]
        chains[f"sample[{{i}}]"] = (first.input, steps)
    return (chains,)
'''


@dataclass(frozen=True)
class Entry:
    """One op_db sample in the catalog: what it takes and what it gives."""

    op: tuple[str, str]  # (name, variant_test_name)
    family: str  # one of FAMILIES
    sample: int
    shape_in: tuple[int, ...]
    dtype_in: str
    shape_out: tuple[int, ...]
    dtype_out: str


def parse_seeds(items: Sequence[str]) -> list[int]:
    """`("0-9", "40")` -> [0, ..., 9, 40]; the default seeds when none are given."""
    if not items:
        return list(DEFAULT_SEEDS)
    seeds: list[int] = []
    for item in items:
        m = re.fullmatch(r"(\d+)(?:-(\d+))?", item)
        if m is None or (m[2] is not None and int(m[2]) < int(m[1])):
            raise ZooError(f"chain: seeds are whole numbers or ranges like 0-99, not {item!r}")
        seeds.extend(range(int(m[1]), int(m[2] or m[1]) + 1))
    return list(dict.fromkeys(seeds))


def draw(catalog: Sequence[Entry], seed: int, dtype: str, count: int = CHAINS_PER_PROGRAM) -> list[list[Entry]]:
    """The chains of one seed: a pure function of the catalog, the seed and the dtype.

    Each chain starts at a random sample whose output is a non-empty tensor of the dtype, then draws among the
    samples of other ops that take exactly that shape and dtype: a family first, then an op of it, then one of
    its samples (so that the 120 unary pointwise ops, or an op of many samples, do not crowd out the rest),
    until it has its length or nothing fits.
    """
    rng = random.Random(f"{dtype}:{seed}")
    by_input: dict[tuple[tuple[int, ...], str], dict[str, dict[tuple[str, str], list[Entry]]]] = {}
    for e in catalog:
        by_input.setdefault((e.shape_in, e.dtype_in), {}).setdefault(e.family, {}).setdefault(e.op, []).append(e)
    starts = [e for e in catalog if e.dtype_out == e.dtype_in and 0 not in e.shape_out]
    chains: list[list[Entry]] = []
    tries = 0
    while len(chains) < count and starts and tries < 50 * count:
        tries += 1
        chain = [rng.choice(starts)]
        length = rng.choice(LENGTHS)
        while len(chain) < length:
            last = chain[-1]
            families = {
                family: {op: es for op, es in ops.items() if op != last.op and op[0] not in _FIRST_ONLY}
                for family, ops in by_input.get((last.shape_out, last.dtype_out), {}).items()
            }
            families = {family: ops for family, ops in families.items() if ops}
            if not families:
                break
            ops = families[rng.choice(sorted(families))]
            chain.append(rng.choice(ops[rng.choice(sorted(ops))]))
        if len(chain) >= 2:
            chains.append(chain)
    return chains


def catalog_path(dtype_name: str, torch_version: str) -> Path:
    from engine.paths import home

    return home() / "zoo" / "chain-catalog" / f"{dtype_name}-{torch_version}.json"


def catalog(dtype_name: str) -> list[Entry]:
    """Every usable op_db sample of this dtype (cached per torch version; made on first use, a few minutes)."""
    import torch

    path = catalog_path(dtype_name, torch.__version__)
    if path.is_file():
        data = json.loads(path.read_text())
        if data.get("version") == CATALOG_VERSION:
            return [_entry(e) for e in data["entries"]]
    entries = build_catalog(dtype_name)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(
        json.dumps(
            {
                "version": CATALOG_VERSION,
                "entries": [
                    [list(e.op), e.family, e.sample, list(e.shape_in), e.dtype_in, list(e.shape_out), e.dtype_out]
                    for e in entries
                ],
            }
        )
    )
    tmp.replace(path)  # whole or absent: a killed build is made again, never read half-written
    return entries


def _entry(row: list[Any]) -> Entry:
    op, family, sample, shape_in, dtype_in, shape_out, dtype_out = row
    return Entry(tuple(op), family, sample, tuple(shape_in), dtype_in, tuple(shape_out), dtype_out)  # type: ignore[arg-type]


def family_of(op: Any) -> str | None:
    """The op's family (FAMILIES), or None for an op chains leave out."""
    kind = type(op).__name__
    name = op.name
    if kind in ("UnaryUfuncInfo", "BinaryUfuncInfo") or name in ("clamp", "lerp", "addcmul", "addcdiv", "clamp_min"):
        return "pointwise"
    if kind == "ReductionOpInfo" or name in _REDUCTIONS or name.startswith("masked."):
        return "reduction"
    if _CONV_POOL.match(name):
        return "conv-pool"
    if name.startswith("nn.functional."):
        return "norm-activation"
    if name in _INDEX:
        return "index"
    if name in _LAYOUT:
        return "layout"
    return None


def _op_db() -> list[Any]:
    """PyTorch's OpInfo database (its module needs expecttest, a test dependency)."""
    try:
        import expecttest  # noqa: F401  (op_db's module imports it)
    except ImportError:
        raise missing("expecttest", "chain") from None
    from torch.testing._internal.common_methods_invocations import op_db

    return list(op_db)


def build_catalog(
    dtype_name: str, samples_per_op: int = SAMPLES_PER_OP, names: Collection[str] | None = None
) -> list[Entry]:
    """Run the first samples of every op (or of the ops named) eagerly and keep those that take a strided tensor
    and give one back, drawing no random numbers and touching no uninitialized memory on the way (seen by a
    dispatch mode)."""
    import torch
    from torch.utils._python_dispatch import TorchDispatchMode

    op_db = _op_db()
    dtype = getattr(torch, dtype_name)

    class Watch(TorchDispatchMode):
        unstable = False

        def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
            if torch.Tag.nondeterministic_seeded in func.tags or func.overloadpacket.__name__ in _UNINITIALIZED:
                self.unstable = True
            return func(*args, **(kwargs or {}))

    entries: list[Entry] = []
    torch.manual_seed(0)
    for op in op_db:
        family = family_of(op)
        if names is not None and op.name not in names:
            continue
        if family is None or dtype not in op.supported_dtypes("cpu") or _UNSTABLE.search(op.name):
            continue
        try:
            samples = list(op.sample_inputs("cpu", dtype, requires_grad=False))[:samples_per_op]
        except Exception:
            continue
        for i, s in enumerate(samples):
            x = s.input
            if not isinstance(x, torch.Tensor) or x.layout != torch.strided or not x.is_contiguous():
                continue
            watch = Watch()
            try:
                with torch.no_grad(), watch:
                    out = op.op(x.clone(), *s.args, **s.kwargs)
            except Exception:
                continue
            if watch.unstable or not isinstance(out, torch.Tensor) or out.layout != torch.strided:
                continue
            entries.append(
                Entry(
                    (op.name, op.variant_test_name),
                    family,
                    i,
                    tuple(x.shape),
                    str(x.dtype).removeprefix("torch."),
                    tuple(out.shape),
                    str(out.dtype).removeprefix("torch."),
                )
            )
    return entries


def programs(selection: Selection) -> Sequence[ZooProgram]:
    import torch

    if selection.flavour not in DTYPES:
        raise ZooError(f"chain: the flavour is a dtype ({', '.join(DTYPES)}), not {selection.flavour!r}")
    dtype_name = DTYPES[selection.flavour][0]
    seeds = parse_seeds(selection.items)
    entries = catalog(dtype_name)
    return [_program(selection, dtype_name, seed, draw(entries, seed, dtype_name), torch.__version__) for seed in seeds]


def _program(
    selection: Selection,
    dtype_name: str,
    seed: int,
    chains: list[list[Entry]],
    torch_version: str,
    sample: int | None = None,
) -> ZooProgram:
    listing = "\n".join(f"chain {i}: " + " -> ".join(key_of_entry(e) for e in chain) for i, chain in enumerate(chains))
    text = TEMPLATE.format(
        dtype=dtype_name,
        seed=seed,
        count=len(chains),
        torch=torch_version,
        pattern=f"chain:{selection.flavour}:{seed}",
        listing=listing,
        chains=_literal(chains),
        samples="None" if sample is None else f"[{sample}]",
    )
    info: Mapping[str, Any] = {
        "seed": seed,
        "dtype": dtype_name,
        "chains": [[key_of_entry(e) for e in chain] for chain in chains],
    } | ({} if sample is None else {"sample": sample})
    name = f"seed{seed}" if sample is None else f"seed{seed}--sample{sample}"
    parts = None if sample is not None else partial(_parts, selection, dtype_name, seed, chains, torch_version)
    return ZooProgram(name, text, harness_rule(), {"timeout_s": 600.0} if sample is None else {}, info, parts)


def _parts(
    selection: Selection, dtype_name: str, seed: int, chains: list[list[Entry]], torch_version: str
) -> Sequence[ZooProgram]:
    """One program per chain, for a program that ended in an error as a whole."""
    return [_program(selection, dtype_name, seed, chains, torch_version, sample=i) for i in range(len(chains))]


def key_of_entry(e: Entry) -> str:
    return (e.op[0] + (f".{e.op[1]}" if e.op[1] else "")) + f"[{e.sample}]"


def _literal(chains: list[list[Entry]]) -> str:
    rows = ",\n".join("    [" + ", ".join(repr((*e.op, e.sample)) for e in chain) + "]" for chain in chains)
    return "[\n" + rows + ",\n]"


SOURCE = Source(
    prefix="chain",
    summary="op_db ops chained 2-4 deep on compatible samples, 8 chains per seed: chain:[fp32|bf16|fp16][:SEEDS]",
    flavours=tuple(DTYPES)[2:] + tuple(DTYPES)[:2],  # fp32 first: the default
    programs=programs,
    needs="expecttest",
)
