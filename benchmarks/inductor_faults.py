"""One-step faults written into Inductor, where compile bugs live, for the compiled run only.

benchmarks/oracle_corpus.py's one-ULP families each compute one op wrongly (a Python scalar not rounded, a
rounding skipped or added, an off-by-one bucket or index, small values wrong). Written into the program, a
fault is in the graph Inductor receives, so any reference run of that graph has it too. Here the program is the
clean variant (the op as eager computes it), and the fault is a post-grad pass (Inductor's
`post_grad_custom_post_pass`): it rewrites the graph after Inductor received it, so only compiled code has it.
A rewritten node keeps its name and its `meta['val']`; new nodes get theirs by running the op on fake values.

`FAULTS` maps a family program's name (without its dtype, as benchmarks/oracle_split.family_group gives it) to
the rewrite; `install(name)` sets the pass for everything compiled afterwards in this process (a check's worker
forks per check, so it ends with the check). Each rewrite raises when it finds nothing to rewrite: a fault that
silently does nothing would count as a miss of the oracle.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
import torch.fx
from torch._inductor.custom_graph_pass import CustomGraphPass

aten = torch.ops.aten
prims = torch.ops.prims

Rewrite = Callable[[torch.fx.Graph], int]  # changes the graph; returns how many places it changed


class FaultNotApplied(RuntimeError):
    pass


def _fake_value(target: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """What a new node computes, on the fake values of its inputs (the meta Inductor's lowering reads)."""
    from torch._guards import detect_fake_mode

    def val(a: Any) -> Any:
        return a.meta.get("val") if isinstance(a, torch.fx.Node) else a

    fake_args = torch.utils._pytree.tree_map(val, (args, kwargs))
    mode = detect_fake_mode(torch.utils._pytree.tree_leaves(fake_args))
    if mode is None:
        return None
    with mode:
        return target(*fake_args[0], **fake_args[1])


def emit(graph: torch.fx.Graph, before: torch.fx.Node, target: Any, *args: Any, **kwargs: Any) -> torch.fx.Node:
    """A new node computing target(*args, **kwargs), placed before `before`, with its meta['val']."""
    with graph.inserting_before(before):
        node = graph.call_function(target, args, kwargs)
    node.meta["val"] = _fake_value(target, args, kwargs)
    return node


def _calls(graph: torch.fx.Graph, *targets: Any) -> list[torch.fx.Node]:
    return [n for n in graph.nodes if n.op == "call_function" and n.target in targets]


def _arg(node: torch.fx.Node, i: int) -> Any:
    return node.args[i] if len(node.args) > i else None


# ---- rewrites ------------------------------------------------------------------------------------------------


def swap_scalar(old: float, new: float) -> Rewrite:
    """Every float argument equal to `old` (or -old) becomes `new` (-new): a scalar eager rounds, kept unrounded."""

    def rewrite(graph: torch.fx.Graph) -> int:
        changed = 0
        for node in graph.nodes:
            if node.op != "call_function":
                continue
            args = list(node.args)
            for i, a in enumerate(args):
                if isinstance(a, float) and a in (old, -old):
                    args[i] = math.copysign(new, a)
                    changed += 1
            node.args = tuple(args)
        return changed

    return rewrite


def round_after(pick: Callable[[torch.fx.Node], bool], dtype: torch.dtype) -> Rewrite:
    """An added rounding: each float32 node `pick` selects is rounded to `dtype`'s significand (nearest-even, by
    integer arithmetic, which no kernel elides), and its users read the rounded value."""
    drop = 16 if dtype is torch.bfloat16 else 13

    def rewrite(graph: torch.fx.Graph) -> int:
        picked = [n for n in graph.nodes if n.op == "call_function" and pick(n)]
        for node in picked:
            after = node.next
            users = list(node.users)
            bits = emit(graph, after, aten.view.dtype, node, torch.int32)
            lsb = emit(graph, after, aten.bitwise_and.Scalar, emit(graph, after, aten.__rshift__.Scalar, bits, drop), 1)
            up = emit(
                graph, after, aten.add.Tensor, emit(graph, after, aten.add.Tensor, bits, (1 << (drop - 1)) - 1), lsb
            )
            rounded = emit(
                graph,
                after,
                aten.view.dtype,
                emit(graph, after, aten.bitwise_and.Scalar, up, ~((1 << drop) - 1)),
                torch.float32,
            )
            for user in users:
                user.replace_input_with(node, rounded)
        return len(picked)

    return rewrite


def skip_rounding(graph: torch.fx.Graph) -> int:
    """A skipped rounding: a float32 value rounded by integer arithmetic (view as int32 ... view as float32) is read
    unrounded by its users."""
    changed = 0
    for node in _calls(graph, aten.view.dtype):
        if node.args[1] != torch.float32:
            continue
        source = _source_of_rounding(node)
        if source is not None:
            node.replace_all_uses_with(source)
            changed += 1
    return changed


def _source_of_rounding(node: torch.fx.Node) -> torch.fx.Node | None:
    """The float32 value whose int32 view the chain behind `node` starts from, if it is one."""
    frontier, seen = [node.args[0]], set()
    while frontier:
        n = frontier.pop()
        if not isinstance(n, torch.fx.Node) or n in seen:
            continue
        seen.add(n)
        if n.op == "call_function" and n.target is aten.view.dtype and n.args[1] == torch.int32:
            return n.args[0]
        if n.op == "call_function":
            frontier.extend(a for a in n.args if isinstance(a, torch.fx.Node))
    return None


def set_argument(pick: Callable[[torch.fx.Node], bool], index: int | str, value: Any) -> Rewrite:
    """An argument (by position, or a keyword) of each node `pick` selects set to `value`: an off-by-one edge."""

    def rewrite(graph: torch.fx.Graph) -> int:
        picked = [n for n in graph.nodes if n.op == "call_function" and pick(n)]
        for node in picked:
            if isinstance(index, str):
                node.kwargs = {**node.kwargs, index: value}
            else:
                args = list(node.args)
                args[index] = value
                node.args = tuple(args)
        return len(picked)

    return rewrite


def floor_of_quotient(graph: torch.fx.Graph) -> int:
    """`t // 0.1` as floor(t / 0.1) (pytorch's floor-division bug class): the bucket read from the rounded quotient
    where ATen's exact algorithm (fmod first) gives one less at some edges."""
    changed = 0
    for fmod in _calls(graph, aten.fmod.Scalar):
        t, divisor = fmod.args[0], fmod.args[1]
        converts = [
            n
            for n in graph.nodes
            if n.op == "call_function"
            and n.target is prims.convert_element_type.default
            and n.args[1] == torch.int64
            and _reaches(fmod, n)
        ]
        for convert in converts[:1]:
            quotient = emit(graph, convert, aten.div.Tensor, t, divisor)
            convert.replace_input_with(convert.args[0], emit(graph, convert, aten.floor.default, quotient))
            changed += 1
    return changed


def _reaches(source: torch.fx.Node, target: torch.fx.Node) -> bool:
    frontier, seen = [target], set()
    while frontier:
        n = frontier.pop()
        if n is source:
            return True
        if n in seen:
            continue
        seen.add(n)
        frontier.extend(a for a in n.all_input_nodes)
    return False


def sigmoid_by_complement(graph: torch.fx.Graph) -> int:
    """A sigmoid gate for negative x as 1 - sigmoid(-x): `where(x < 0, sigmoid(x), sigmoid(x))`'s first branch."""
    changed = 0
    for where in _calls(graph, aten.where.self):
        cond, small = where.args[0], where.args[1]
        if not (isinstance(small, torch.fx.Node) and small.target is aten.sigmoid.default):
            continue
        if not (isinstance(cond, torch.fx.Node) and cond.target is aten.lt.Scalar):
            continue
        x = small.args[0]
        flipped = emit(graph, where, aten.sigmoid.default, emit(graph, where, aten.neg.default, x))
        where.replace_input_with(
            small, emit(graph, where, aten.add.Tensor, emit(graph, where, aten.neg.default, flipped), 1)
        )
        changed += 1
    return changed


def log_one_plus_exp(graph: torch.fx.Graph) -> int:
    """softplus(h) as log(1 + exp(h)): the decomposition's log1p(exp(h)) read as log of a rounded 1 + exp(h)."""
    changed = 0
    for log1p in _calls(graph, aten.log1p.default):
        inner = log1p.args[0]
        if isinstance(inner, torch.fx.Node) and inner.target is aten.exp.default:
            one_plus = emit(graph, log1p, aten.add.Tensor, inner, 1)
            log1p.target, log1p.args = aten.log.default, (one_plus,)
            changed += 1
    return changed


def flush_small_probabilities(graph: torch.fx.Graph) -> int:
    """Attention probabilities below fp16's normal range flushed to zero: after the softmax's cast to fp16."""
    changed = 0
    for convert in _calls(graph, prims.convert_element_type.default):
        if convert.args[1] != torch.float16:
            continue
        div = convert.args[0]
        if not (isinstance(div, torch.fx.Node) and div.target is aten.div.Tensor):
            continue
        if not (isinstance(div.args[0], torch.fx.Node) and div.args[0].target is aten.exp.default):
            continue
        users = list(convert.users)
        after = convert.next
        small = emit(graph, after, aten.lt.Scalar, emit(graph, after, aten.abs.default, convert), 2.0**-14)
        zero = emit(graph, after, aten.mul.Tensor, convert, 0)
        flushed = emit(graph, after, aten.where.self, small, zero, convert)
        for user in users:
            user.replace_input_with(convert, flushed)
        changed += 1
    return changed


def _is_rsqrt(n: torch.fx.Node) -> bool:
    return n.target is aten.rsqrt.default


def _is_softmax_exp(n: torch.fx.Node) -> bool:
    x = _arg(n, 0)
    return (
        n.target is aten.exp.default
        and isinstance(x, torch.fx.Node)
        and x.target is aten.sub.Tensor
        and isinstance(_arg(x, 1), torch.fx.Node)
        and x.args[1].target is aten.amax.default
    )


def _is_centring_mean(n: torch.fx.Node) -> bool:
    x = _arg(n, 0)
    return (
        n.target is aten.mean.dim
        and not (isinstance(x, torch.fx.Node) and x.target is aten.pow.Tensor_Scalar)
        and any(u.target is aten.sub.Tensor for u in n.users)
    )


def _is_bucketize(n: torch.fx.Node) -> bool:
    return n.target is aten.bucketize.Tensor


def _is_table_clamp(n: torch.fx.Node) -> bool:
    x = _arg(n, 0)
    return (
        n.target is aten.clamp_max.default
        and _arg(n, 1) == 15
        and isinstance(x, torch.fx.Node)
        and x.target is aten.clamp_min.default
        and isinstance(_arg(x, 0), torch.fx.Node)
        and x.args[0].target is aten.floor.default
    )


def _rounded(value: float, dtype: torch.dtype) -> float:
    return float(torch.tensor(value, dtype=dtype))


def _for(dtype: torch.dtype) -> dict[str, Rewrite]:
    """The rewrite of each family program of one dtype (the scalar families swap eager's rounded scalar back)."""
    s = {torch.bfloat16: "bf16", torch.float16: "fp16"}[dtype]
    scalar = lambda v: swap_scalar(_rounded(v, dtype), v)  # noqa: E731
    return {
        f"image (img - 0.45) / 0.226 -> conv net ({s})": scalar(0.45),
        f"image img ** 2.2 -> conv net ({s})": scalar(2.2),
        f"event encoder, phase remainder(t, 0.7) ({s})": scalar(0.7),
        f"event encoder, phase fmod(t, 0.7) ({s})": scalar(0.7),
        f"block -> softplus(h) + 0.3 ({s})": scalar(0.3),
        f"block -> hinge relu(0.7 - h) ({s})": scalar(0.7),
        f"block, layer-scaled residual add(x, h, alpha=0.3) ({s})": scalar(0.3),
        f"llama block, RMS scale rounded to {s} (added)": round_after(_is_rsqrt, dtype),
        f"llama block, softmax exp rounded to {s} (added)": round_after(_is_softmax_exp, dtype),
        f"llama block, centred norm's mean rounded to {s} (added)": round_after(_is_centring_mean, dtype),
        f"fp32 MLP, activations fake-quantised to {s}, rounding skipped": skip_rounding,
        f"fp32 MLP, weights fake-quantised to {s}, rounding skipped": skip_rounding,
        f"time buckets, edge ties off by one ({s})": set_argument(_is_bucketize, "right", False),
        f"time buckets, t // 0.1 as floor(t / 0.1) ({s} encoder, fp32 times)": floor_of_quotient,
        f"lookup-table activation, last segment index off by one ({s})": set_argument(_is_table_clamp, 1, 14),
        f"sigmoid gate as 1 - sigmoid(-x) ({s})": sigmoid_by_complement,
        f"variance head softplus as log(1 + exp(h)) ({s})": log_one_plus_exp,
        f"noisy input, dropout, x - 0.45 ({s}, fallback_random)": scalar(0.45),
        f"llama block, attention dropout, RMS scale rounded ({s}, fallback_random)": round_after(_is_rsqrt, dtype),
        f"dropout, softplus as log(1 + exp(h)) ({s}, fallback_random)": log_one_plus_exp,
    }


def _fresh(dtype: torch.dtype) -> dict[str, Rewrite]:
    """The rewrites of benchmarks/oracle_fresh.py's programs (issue #31's second evaluation)."""
    s = {torch.bfloat16: "bf16", torch.float16: "fp16"}[dtype]
    scalar = lambda v: swap_scalar(_rounded(v, dtype), v)  # noqa: E731
    return {
        f"MLP, centred activation gelu(h) - 0.1 ({s})": scalar(0.1),
        f"MLP, shifted softplus(h) - log 2 ({s})": scalar(math.log(2.0)),
        f"MLP, log features log(|h| + 0.7) ({s})": scalar(0.7),
        f"MLP, power features |h| ** 1.7 ({s})": scalar(1.7),
        f"conv features minus 0.35 -> pooled classifier ({s})": scalar(0.35),
        f"periodic time feature remainder(t, 0.3) -> MLP ({s})": scalar(0.3),
        f"binned features, edge ties off by one ({s})": set_argument(_is_bucketize, "right", False),
        f"GLU gate, sigmoid as 1 - sigmoid(-g) ({s})": sigmoid_by_complement,
        f"fp32 conv net, weights fake-quantised to {s}, rounding skipped": skip_rounding,
    }


_RESHAPES = (
    aten.unsqueeze.default,
    aten.expand.default,
    aten.view.default,
    aten.reshape.default,
    aten.clone.default,
    aten.cat.default,
)


def _is_rotary_angle(n: torch.fx.Node) -> bool:
    """The rotary angles `positions * inv_freq`: a float32 product that cos reads through reshapes only (the
    decompositions turn `cat([angles, angles])` into unsqueeze/expand/view)."""
    if n.target is not aten.mul.Tensor:
        return False
    frontier = list(n.users)
    while frontier:
        u = frontier.pop()
        if u.target is aten.cos.default:
            return True
        if u.target in _RESHAPES:
            frontier.extend(u.users)
    return False


def _is_last_bucket_clamp(n: torch.fx.Node) -> bool:
    """T5's relative position buckets clamped to the last of 32 (the clamp oracle_eval3.RelativeBuckets writes)."""
    return n.target is aten.clamp_max.default and _arg(n, 1) == 31


def _eval3(dtype: torch.dtype) -> dict[str, Rewrite]:
    """The rewrites of benchmarks/oracle_eval3.py's programs (issue #31's third evaluation)."""
    s = {torch.bfloat16: "bf16", torch.float16: "fp16"}[dtype]
    scalar = lambda v: swap_scalar(_rounded(v, dtype), v)  # noqa: E731
    return {
        f"sigmoid attention, bias -log(n) -> pooled classifier ({s})": scalar(math.log(64.0)),
        f"causal attention, ALiBi-like distance ** 0.6 penalty ({s})": scalar(0.6),
        f"audio front end mel ** 0.3 -> conv stem, BatchNorm, pool ({s})": scalar(0.3),
        f"sensor encoder, phase remainder(t, 0.6) -> pooled head ({s})": scalar(0.6),
        f"gated MLP, hard-concrete gate sigmoid(g) * 1.2 - 0.1 ({s})": scalar(0.1),
        f"rotary attention, angles rounded to {s} (added)": round_after(_is_rotary_angle, dtype),
        f"fp32 encoder, KV cache fake-quantised to {s}, rounding skipped": skip_rounding,
        f"T5 relative position buckets, last bucket off by one ({s})": set_argument(_is_last_bucket_clamp, 1, 30),
        f"sensor encoder, bucket t // 0.3 as floor(t / 0.3) ({s} encoder, fp32 times)": floor_of_quotient,
        f"Gaussian NLL head, variance softplus as log(1 + exp(h)) ({s})": log_one_plus_exp,
    }


FAULTS: dict[str, Rewrite] = {
    **_for(torch.bfloat16),
    **_for(torch.float16),
    **_fresh(torch.bfloat16),
    **_fresh(torch.float16),
    **_eval3(torch.bfloat16),
    **_eval3(torch.float16),
    "cosine attention (logit scale 10), probabilities below fp16's normal range flushed to zero (fp16)": (
        flush_small_probabilities
    ),
    "attention probabilities below fp16's normal range flushed to zero (fp16)": flush_small_probabilities,
    "attention dropout, probabilities flushed to zero (fp16, fallback_random)": flush_small_probabilities,
}


_SOURCE = Path(__file__).read_text()


class RewritePass(CustomGraphPass):
    """Inductor's post-grad custom pass: one rewrite on every graph it compiles (its name keys the cache)."""

    def __init__(self, name: str, rewrite: Rewrite) -> None:
        self.name = name
        self.rewrite = rewrite
        self.applied = 0

    def __call__(self, graph: torch.fx.Graph) -> None:
        changed = self.rewrite(graph)
        self.applied += changed
        if changed:
            graph.lint()

    def uuid(self) -> Any:
        # this file's text too: an edited rewrite must not reuse code Inductor's cache compiled with the old one
        return hashlib.sha256(f"inductor fault: {self.name}\n{_SOURCE}".encode()).hexdigest()


class FaultPass(RewritePass):
    """The fault of one family program (FAULTS)."""

    def __init__(self, name: str) -> None:
        super().__init__(name, FAULTS[name])


def install(name: str) -> FaultPass:
    """Write the named fault into every graph Inductor compiles from now on in this process."""
    import torch._inductor.config as inductor_config

    fault = FaultPass(name)
    inductor_config.post_grad_custom_post_pass = fault
    return fault
