"""Judging inside the program, in the check itself: every buffer compiled code materialises, against the same
graph run eagerly and as its faithful float64 reference.

A user returns a final output: a pooled prediction, a loss, logits. A one-step fault early in the model (a time
bucket off by one) is mixed through later layers and sits inside the output's noise allowance there, while at its
own op it is plain. So the check also judges the intermediates, at little cost and without compiling anything again:

- the check's own compile emits Inductor's intermediate hooks (engine/child/inductor_hooks.py): after every kernel,
  the buffers it stores, by the FX node they compute. Only wrapper lines are added, so the compiled outputs stay
  bit-identical and fusion is what the user gets (exposing every node as an output, as Localize does, changes it);
- the graph Inductor's inner compile receives is copied at its entry, before the post-grad passes (also on a cache
  hit; AOTAutograd's own cache is bypassed for that, since a hit there skips the inner compile), and the first
  compiled call's inputs are kept (references; only inputs the graph writes are copied);
- after the check's comparison, that graph runs eagerly and in float64 with eager's scalar roundings and random
  draws (engine/child/faithful_graph.py), keeping only the hooked nodes' values, and each node is judged by the
  oracle as a leaf is (engine/judge/oracle.py).

Not judged, and counted: nodes downstream of a random draw (compiled draws from its own generator unless
`fallback_random`), nodes a post-grad pass created (not in the copied graph), buffers whose shape or dtype is not
their node's (the partial sums of a split reduction). Skipped, and said: another backend, `--strict`, Triton on
CPU, `inside=False`, and past `inside_max_mb` of stored buffers (the later ones are not kept).
"""

from __future__ import annotations

import contextlib
import dataclasses
import re
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch

from engine.child import inductor_hooks
from engine.child.faithful import uninitialized_op
from engine.child.faithful_graph import written_inputs
from engine.child.graph_nodes import exposable, node_op, site
from engine.judge import elements, family
from engine.judge.headline import where_inside
from engine.judge.verdicts import Verdict
from engine.nodes import InsideReport, NodeDiff, NodeEvidence, WorstElement
from engine.options import CheckOptions
from engine.result import OutputCode, ScalarRounding

_LISTED = 20


@dataclass
class _Graph:
    """One forward graph of the check's compile: its pristine copy, and its first call's inputs and stored buffers."""

    index: int
    reference: Any  # torch.fx.GraphModule as Inductor's inner compile received it
    dynamo_graph: int  # id of the Dynamo graph it came from (marks the nodes of its `from_node` chains)
    written: frozenset[int]  # positions of the inputs the graph writes in place
    inputs: list[Any] | None = None
    versions: list[int] = field(default_factory=list)  # each input tensor's version counter when it was kept
    values: dict[str, torch.Tensor] = field(default_factory=dict)  # node name -> the buffer compiled stored for it
    dropped: int = 0  # buffers reported past the byte budget
    rng: Any = None  # the generators' states when the call began: with fallback_random compiled drew from them
    config: dict[str, Any] = field(default_factory=dict)  # the Inductor options it was compiled with (mode, options=)
    emulated: bool = False  # compiled with emulate_precision_casts: its kernels round where eager rounds


class Capture:
    """Records the check's compiled graphs while active (their compile and their first call)."""

    def __init__(self, program: str, max_bytes: int) -> None:
        self.program = program
        self.max_bytes = max_bytes
        self.graphs: list[_Graph] = []
        self.stored = 0
        self.problem: str | None = None
        self._current: _Graph | None = None

    @contextlib.contextmanager
    def active(self) -> Iterator[None]:
        import torch._functorch.config as functorch_config
        import torch._inductor.compile_fx as compile_fx_module
        import torch._inductor.config as inductor_config
        import torch.compiler.config as compiler_config

        self.problem = inductor_hooks.install()
        real = compile_fx_module.compile_fx
        capture = self

        def compile_fx(model: Any, example_inputs: Any, inner_compile: Any = None, *args: Any, **kwargs: Any) -> Any:
            inner = inner_compile or compile_fx_module.compile_fx_inner
            if not getattr(inner, "_inside", False):  # compile_fx calls itself: wrap once
                patches = kwargs.get("config_patches") or (args[0] if args else None) or {}
                inner = capture._inner(inner, id(getattr(model, "graph", model)), dict(patches))
            return real(model, example_inputs, inner, *args, **kwargs)

        compile_fx_module.compile_fx = compile_fx  # type: ignore[assignment]
        try:
            with (
                inductor_config.patch(generate_intermediate_hooks=True),
                compiler_config.patch(cache_key_tag=inductor_hooks.cache_tag()),
                functorch_config.patch(enable_autograd_cache=False),
                inductor_hooks.hooked(self._report),
            ):
                yield
        finally:
            compile_fx_module.compile_fx = real  # type: ignore[assignment]

    def _inner(self, real_inner: Callable[..., Any], dynamo_graph: int, patches: dict[str, Any]) -> Callable[..., Any]:
        import torch._inductor.config as inductor_config

        def inner(gm: Any, example_inputs: Any, *args: Any, **kwargs: Any) -> Any:
            if kwargs.get("is_backward"):  # gradients are leaves of their own; their graph is not judged here
                return real_inner(gm, example_inputs, *args, **kwargs)
            try:
                graph = _Graph(
                    len(self.graphs),
                    _copy(gm),
                    dynamo_graph,
                    frozenset(written_inputs(gm)),
                    config=patches,
                    # read here: compile_fx has applied the program's own options (config_patches) by now
                    emulated=bool(inductor_config.emulate_precision_casts),
                )
            except Exception as exc:  # never at the compile's expense: this graph is then not judged
                self.problem = f"a graph could not be copied ({type(exc).__name__}: {str(exc)[:120]})"
                return real_inner(gm, example_inputs, *args, **kwargs)
            self.graphs.append(graph)
            compiled = real_inner(gm, example_inputs, *args, **kwargs)
            call = getattr(compiled, "current_callable", None)
            if call is None:
                return compiled

            def recording(inputs: list[Any]) -> Any:
                if graph.inputs is not None or self._current is not None:
                    return call(inputs)
                graph.inputs = [
                    x.detach().clone() if i in graph.written and isinstance(x, torch.Tensor) else x
                    for i, x in enumerate(inputs)
                ]
                graph.versions = [x._version if isinstance(x, torch.Tensor) else 0 for x in graph.inputs]
                graph.rng = _generator_states()
                self._current = graph
                try:
                    return call(inputs)
                finally:
                    self._current = None

            compiled.current_callable = recording
            return compiled

        inner._inside = True  # type: ignore[attr-defined]
        return inner

    def _report(self, name: str, value: Any) -> None:
        graph = self._current
        if graph is None or not isinstance(value, torch.Tensor):
            return
        if name not in graph.values:
            size = value.numel() * value.element_size()
            if self.stored + size > self.max_bytes:
                graph.dropped += 1
                return
            self.stored += size
        graph.values[name] = value.detach().clone()  # a concatenation reports once per piece: the last is whole


def _copy(gm: Any) -> Any:
    """The graph as it is now, apart from what the post-grad passes will do to it: its nodes copied (their meta
    shallowly: fake values are read, never written), its attributes shared."""
    import torch.fx

    graph = torch.fx.Graph()
    graph.output(graph.graph_copy(gm.graph, {}, return_output_node=False))
    return torch.fx.GraphModule(gm, graph)


@dataclass
class Judged:
    """The stored buffers judged, before the place is narrowed and the report written (engine/child/execution.py
    re-judges them under emulate_precision_casts in between)."""

    capture: Capture
    diffs: list[NodeDiff]  # every diverging node, in graph order
    graphs: int
    hooked: int
    judged: int
    seconds: float
    notes: list[str]
    explained: list[NodeDiff] = field(default_factory=list)  # diverging only where compiled keeps bf16/fp16 in fp32
    items: list[family.Item] = field(default_factory=list)  # every judged buffer with element tests, for the budget
    evidence: list[NodeEvidence] = field(default_factory=list)  # the same, with where the decision put them
    fallbacks: dict[str, Verdict] = field(default_factory=dict)  # item -> its verdict if its element tests fall
    differing: dict[str, int] = field(default_factory=dict)  # item -> elements that differ from eager's own value


def judge(
    capture: Capture,
    options: CheckOptions,
    roundings: Sequence[ScalarRounding],
    output_code: Sequence[OutputCode],
    undefined: bool = False,
) -> Judged:
    """Judge every stored buffer of every graph that ran; `undefined`: the check met uninitialized memory."""
    start = time.monotonic()
    notes: list[str] = []
    if capture.problem:
        notes.append(f"only the kernels Inductor hooks itself report their buffers: {capture.problem}")
    forward = [o for o in output_code if not o.label.endswith("backward")]
    ran = [g for g in capture.graphs if g.inputs is not None]
    out = Judged(capture, [], len(ran), 0, 0, 0.0, notes)
    for graph in ran:
        out.hooked += len(graph.values)
        if graph.dropped:
            notes.append(
                f"graph {graph.index}: {graph.dropped} buffer(s) past the {options.inside_max_mb} MiB of stored "
                "buffers (inside_max_mb) were not kept, nor judged"
            )
        if any(
            isinstance(x, torch.Tensor) and x._version != v
            for x, v in zip(graph.inputs or [], graph.versions, strict=True)
        ):
            notes.append(f"graph {graph.index}: an input was written after the call; its nodes are not judged")
            continue
        code = forward[graph.index].source if graph.index < len(forward) else ""
        _judge_graph(graph, options, roundings, code, capture.program, undefined, notes, out)
    out.seconds = time.monotonic() - start
    return out


def settle(judged: Judged, decision: family.Decision) -> None:
    """The check-level decision applied: a buffer called divergent by element tests alone stays so only where a test
    survives its share of the check's false-alarm budget (engine/judge/family.py)."""
    judged.evidence = [
        NodeEvidence(*_item_key(item.name), item.tests, decision.margin(item.name)) for item in judged.items
    ]
    kept = []
    for diff in judged.diffs:
        name = item_name(diff.graph, diff.node)
        fallback = judged.fallbacks.get(name)
        if fallback is None or fallback is Verdict.DIVERGENT or decision.fired(name):
            kept.append(diff)
    judged.diffs = kept


def explain_by_precision(judged: Judged, under_emulation: Judged) -> None:
    """Set aside the nodes whose difference vanishes when compiled again with emulate_precision_casts and that have,
    on their own path, a bf16/fp16 value compiled computes inside a kernel without storing it (so without the
    rounding eager performs): compiled kept it in fp32, which is documented, not a bug (precision-cast)."""
    still = {(d.graph, d.node) for d in under_emulation.diffs}
    kept, explained = [], []
    for diff in judged.diffs:
        graph = next(g for g in judged.capture.graphs if g.index == diff.graph)
        unrounded = _unrounded_ancestors(graph, diff.node)
        if (
            (diff.graph, diff.node) not in still
            and unrounded
            and _vanishes(judged, under_emulation, diff, len(unrounded))
        ):
            judged.notes.append(_counts_note(judged, under_emulation, diff))
            explained.append(
                dataclasses.replace(
                    diff,
                    verdict=Verdict.PRECISION_CAST,
                    explanation=f"{diff.explanation}; bit-identical or benign with emulate_precision_casts=True: "
                    f"compiled keeps {', '.join(unrounded[:3])} in fp32 inside its kernel where eager rounds",
                )
            )
        else:
            kept.append(diff)
    judged.diffs, judged.explained = kept, explained
    judged.seconds += under_emulation.seconds


def _counts_note(judged: Judged, under_emulation: Judged, diff: NodeDiff) -> str:
    name = item_name(diff.graph, diff.node)
    before, after = judged.differing.get(name, 0), under_emulation.differing.get(name)
    with_flag = "not stored with it" if after is None else f"{after:,} with it"
    return f"{diff.node}: {before:,} element(s) differ from eager's own value without the flag, {with_flag}"


def _vanishes(judged: Judged, under_emulation: Judged, diff: NodeDiff, unrounded: int) -> bool:
    """Whether emulate_precision_casts takes the node's difference from eager's own value away. With the flag compiled
    rounds where eager rounds, so its buffer is eager's op for op, except where two float32 results of one op (Sleef's
    and ATen's, or a reduction's two orders) straddle a rounding midpoint of the dtype: at each of the `unrounded`
    roundings on the path, an element within TIE_FACTOR x TIE_FLOOR_ULPS float32 ULPs of a midpoint, a share
    2^(p - 24) of that width of the elements (p: the dtype's significand bits). Past that bound (and past N_MIN, the
    fewest elements a test of the element rule reads as an effect) the difference did not vanish: a scalar kept
    unrounded stays under the flag, where a judgement against eager's op-by-op values, whose own roundings are
    steps wide, is too weak to call it divergent. A node the re-check did not store keeps the old reading."""
    name = item_name(diff.graph, diff.node)
    after = under_emulation.differing.get(name)
    if after is None:
        return True
    bits = {"bfloat16": 8, "float16": 11}.get(_dtype_of(judged, diff), 24)
    share = max(unrounded, 1) * elements.TIE_FACTOR * elements.TIE_FLOOR_ULPS * 2.0 ** (bits - 24)
    return after <= max(elements.N_MIN, share * diff.numel)


def _dtype_of(judged: Judged, diff: NodeDiff) -> str:
    graph = next(g for g in judged.capture.graphs if g.index == diff.graph)
    value = graph.values.get(diff.node)
    return str(value.dtype).removeprefix("torch.") if isinstance(value, torch.Tensor) else ""


def may_be_precision(judged: Judged) -> bool:
    """Whether some diverging node has a bf16/fp16 value on its path that a kernel computes without storing it."""
    return any(
        _unrounded_ancestors(next(g for g in judged.capture.graphs if g.index == d.graph), d.node) for d in judged.diffs
    )


def _unrounded_ancestors(graph: _Graph, name: str) -> list[str]:
    """The bf16/fp16 nodes on `name`'s path (itself included) that a kernel computes without storing them."""
    nodes = {n.name: n for n in graph.reference.graph.nodes}
    found: list[str] = []
    seen: set[str] = set()
    stack = [nodes[name]] if name in nodes else []
    while stack:
        node = stack.pop()
        if node.name in seen:
            continue
        seen.add(node.name)
        value = node.meta.get("val")
        if (
            node.op == "call_function"
            and node.name not in graph.values
            and isinstance(value, torch.Tensor)
            and value.dtype in (torch.bfloat16, torch.float16)
        ):
            found.append(f"`{node.name}` ({str(value.dtype).removeprefix('torch.')})")
        stack.extend(node.all_input_nodes)
    return found


def finish(
    judged: Judged, options: CheckOptions, roundings: Sequence[ScalarRounding], narrow: bool = True
) -> InsideReport:
    """The report: the first diverging node, narrowed inside its kernel where that kernel computed more (`narrow`)."""
    start = time.monotonic()
    capture, diffs, notes = judged.capture, judged.diffs, judged.notes
    if not judged.graphs:
        return InsideReport(
            "not-applicable",
            "no graph compiled by Inductor ran" if not capture.graphs else "no compiled graph was called",
            judged.seconds,
            len(capture.graphs),
            notes=tuple(notes),
        )
    first = diffs[0] if diffs else None
    narrowed = None
    if first is not None and narrow:
        graph = next(g for g in capture.graphs if g.index == first.graph)
        try:
            narrowed = _narrow(graph, first, options, roundings, capture.program, notes)
        except Exception as exc:  # best effort: the stored buffer stands as the place
            notes.append(
                f"the values inside {first.kernel or 'its kernel'} could not be exposed: "
                f"{type(exc).__name__}: {str(exc)[:200]}"
            )
    seconds = judged.seconds + time.monotonic() - start
    cost = f"{judged.judged} of {judged.hooked} stored buffers judged in {seconds:.1f} s"
    if judged.explained:
        notes.append(
            f"{len(judged.explained)} stored buffer(s) differ only because compiled keeps bf16/fp16 values in fp32 "
            f"(precision-cast: they vanish under emulate_precision_casts), first {judged.explained[0].node}"
        )
    if first is None:
        explanation = f"no stored intermediate diverges ({cost})"
    else:
        explanation = f"{where_inside(narrowed or first)} ({cost}; {len(diffs)} diverge)"
    return InsideReport(
        "judged",
        explanation,
        seconds,
        judged.graphs,
        judged.hooked,
        judged.judged,
        first,
        narrowed,
        tuple(diffs[:_LISTED]),
        tuple(notes),
        tuple(judged.evidence),
    )


def _narrow(
    graph: _Graph,
    first: NodeDiff,
    options: CheckOptions,
    roundings: Sequence[ScalarRounding],
    program: str,
    notes: list[str],
) -> NodeDiff | None:
    """The first diverging value inside the kernel that stored `first`, where that kernel computed more than it
    (engine/child/kernel_narrowing.py); None when `first` is the kernel's only node or nothing inside diverges."""
    from engine.child import faithful_graph, kernel_narrowing

    inside, outside = kernel_narrowing.cone(graph.reference, first.node, graph.values)
    # a view computes nothing: a cone of views around one op (an extern matmul reading reshaped buffers) is that op
    candidates = [
        n for n in inside if exposable(n) and n.name != first.node and not getattr(n.target, "is_view", False)
    ]
    if not candidates:
        return None
    keep = {n.name for n in [*inside, *outside]}
    nodes = {n.name: n for n in graph.reference.graph.nodes}
    given = _given(graph, nodes, set(graph.values))
    # the cone computed locally, from what compiled stored before it, as the check judged the buffer
    eager, ref, rounded = faithful_graph.run(graph.reference, graph.inputs or [], roundings, keep=keep, given=given)
    twin = _twin(graph, roundings, {n.name for n in inside}, given, ref, notes, eager)
    sub = kernel_narrowing.subgraph(inside, outside, exposable)
    compiled = kernel_narrowing.compiled_values(
        sub, [given.get(n.name, eager.get(n.name)) for n in outside], graph.config
    )
    exposed = [n for n in inside if exposable(n)]
    values = {n.name: c for n, c in zip(exposed, compiled, strict=True)}
    what = "; ".join(dict.fromkeys(rounded)) if rounded else None
    for node in exposed:
        found, _ = _judge_node(
            node,
            eager.get(node.name),
            values.get(node.name),
            ref.get(node.name),
            what,
            options,
            graph,
            program,
            twin.get(node.name),
        )
        if found is not None:
            return dataclasses.replace(found, kernel=first.kernel, materialised=node.name in graph.values)
    notes.append(
        f"{first.node}'s kernel, compiled again with its {len(exposed)} values exposed, diverges in none of them"
    )
    return None


def _judge_graph(
    graph: _Graph,
    options: CheckOptions,
    roundings: Sequence[ScalarRounding],
    code: str,
    program: str,
    undefined: bool,
    notes: list[str],
    out: Judged,
) -> None:

    nodes = {n.name: n for n in graph.reference.graph.nodes}
    unknown = [name for name in graph.values if name not in nodes]
    if unknown:
        notes.append(
            f"graph {graph.index}: {len(unknown)} buffer(s) of nodes a post-grad pass made ({', '.join(unknown[:3])}) "
            "have no value in the graph before those passes: not judged"
        )
    keep = {name for name in graph.values if name in nodes}
    if not keep:
        return
    drew: set[str] = set()
    given = _given(graph, nodes, keep)
    terms = {name: t.name for name in keep if (t := _summed_terms(nodes[name])) is not None}
    runs = keep | set(terms.values())
    eager, ref, rounded = _run_graph(graph, roundings, runs, drew, given, notes)
    # compiled draws its own random numbers unless fallback_random: what depends on a draw is the rng re-check's
    random = drew if options.inductor_config.get("fallback_random") is not True else set()
    shadowed = _downstream(graph.reference, random, undefined)
    skipped = [name for name in keep if name in shadowed]
    if skipped:
        notes.append(
            f"graph {graph.index}: {len(skipped)} buffer(s) downstream of a random draw"
            f"{' or of uninitialized memory' if undefined else ''} are not judged (compiled draws its own numbers)"
        )
        keep -= shadowed
    twin = _twin(graph, roundings, keep, given, ref, notes, eager)
    what = "; ".join(dict.fromkeys(rounded)) if rounded else None
    kernels = _kernels_of(code)
    order = {n.name: i for i, n in enumerate(graph.reference.graph.nodes)}
    for name in sorted(keep, key=order.__getitem__):
        e, c = eager.get(name), graph.values[name]
        if isinstance(e, torch.Tensor) and e.dtype == c.dtype and e.numel() == c.numel():
            scale = _terms_scale(nodes[name], eager.get(terms.get(name, "")), e)
            judged = _judge_node(nodes[name], e, c, ref.get(name), what, options, graph, program, twin.get(name), scale)
            _record(out, item_name(graph.index, name), judged, kernels.get(name), _differing(e, c))


def _record(out: Judged, name: str, judged: tuple[NodeDiff | None, Any], kernel: str | None, differing: int) -> None:
    """One stored buffer's judgement into the check's record of them."""
    found, judgement = judged
    out.judged += 1
    out.differing[name] = differing
    if judgement is not None and judgement.tests:
        out.items.append(family.Item(name, family.Stage.INSIDE, judgement.tests))
    if found is not None:
        out.diffs.append(dataclasses.replace(found, kernel=kernel))
        if judgement is not None and judgement.fallback is not None:
            out.fallbacks[name] = judgement.fallback.verdict


def _differing(e: torch.Tensor, c: torch.Tensor) -> int:
    """How many elements of compiled's buffer differ from eager's own value, bit for bit (NaN payloads aside)."""
    c = c.reshape(e.shape)
    same = (e == c) & (torch.signbit(e) == torch.signbit(c)) if e.is_floating_point() else e == c
    if e.is_floating_point():
        same |= torch.isnan(e) & torch.isnan(c)
    return int((~same).sum())


def _run_graph(
    graph: _Graph,
    roundings: Sequence[ScalarRounding],
    keep: set[str],
    drew: set[str],
    given: dict[str, torch.Tensor],
    notes: list[str],
) -> tuple[dict[str, Any], dict[str, Any], list[str]]:
    """The graph run eagerly and in float64 from its first call's inputs (faithful_graph.run), `keep`'s values kept."""
    from engine.child import faithful_graph

    try:
        with _drawing_as(graph.rng):
            return faithful_graph.run(graph.reference, graph.inputs or [], roundings, keep=keep, drew=drew, given=given)
    except Exception as exc:  # no float64 kernel for some op: the nodes are judged against eager's graph alone
        notes.append(f"graph {graph.index}: no float64 run of the graph ({type(exc).__name__}: {str(exc)[:120]})")
        with _drawing_as(graph.rng):
            return faithful_graph.run(
                graph.reference, graph.inputs or [], roundings, keep=keep, fp64=False, drew=drew, given=given
            )


def _generator_states() -> list[torch.Tensor]:
    states = [torch.random.get_rng_state()]
    if torch.cuda.is_available() and torch.cuda.is_initialized():
        states.extend(torch.cuda.get_rng_state_all())
    return states


@contextlib.contextmanager
def _drawing_as(states: list[torch.Tensor] | None) -> Iterator[None]:
    """The generators as they were when the compiled call began (under fallback_random compiled drew from them, in
    the graph's order), and as they are now again after."""
    if not states:
        yield
        return
    now = _generator_states()
    torch.random.set_rng_state(states[0])
    if len(states) > 1:
        torch.cuda.set_rng_state_all(states[1:])
    try:
        yield
    finally:
        torch.random.set_rng_state(now[0])
        if len(now) > 1:
            torch.cuda.set_rng_state_all(now[1:])


def item_name(graph: int, node: str) -> str:
    """A stored buffer's name in the check's false-alarm budget (engine/judge/family.py)."""
    return f"graph {graph} node {node}"


def _item_key(name: str) -> tuple[int, str]:
    _, graph, _, node = name.split(" ", 3)
    return int(graph), node


def _twin(
    graph: _Graph,
    roundings: Sequence[ScalarRounding],
    keep: set[str],
    given: dict[str, torch.Tensor],
    ref: dict[str, Any],
    notes: list[str],
    eager: dict[str, Any],
) -> dict[str, Any]:
    """The float64 run once more with every op in float32 (engine/child/opmath.py): what a fused kernel computes
    before its one rounding at the store, and how far float32 arithmetic may stray from the exact value at each
    element, the width of a tie (engine/judge/elements.py). Only for bf16/fp16 values with a reference."""
    from engine.child import faithful_graph
    from engine.child.opmath import Float32Arithmetic

    low = {
        n
        for n in keep
        if isinstance(eager.get(n), torch.Tensor) and eager[n].dtype in (torch.bfloat16, torch.float16) and n in ref
    }
    if not low:
        return {}
    # a graph that draws: the float64 run takes the eager run's draws (as the reference did), not float32 draws of
    # its own, which are other numbers; so the eager run goes first, drawing as compiled drew
    draws = any(torch.Tag.nondeterministic_seeded in getattr(n.target, "tags", ()) for n in graph.reference.graph.nodes)
    try:
        with _drawing_as(graph.rng if draws else None), Float32Arithmetic():
            _, twin, _ = faithful_graph.run(
                graph.reference, graph.inputs or [], roundings, keep=low, given=given, eager=draws
            )
    except Exception as exc:  # ties then get a floor of a few float32 ULPs (engine/judge/elements.py)
        notes.append(f"graph {graph.index}: no float32 twin of the graph ({type(exc).__name__}: {str(exc)[:120]})")
        return {}
    return twin


def _judge_node(
    node: Any,
    e: Any,
    c: Any,
    r: Any,
    what: str | None,
    options: CheckOptions,
    graph: _Graph,
    program: str,
    twin: Any = None,
    scale: float | None = None,
) -> tuple[NodeDiff | None, Any]:
    """One node judged as the check judges a leaf (its own full share of the budget: the check-level decision is
    applied after, `settle`): its record when the oracle calls it divergent, and the oracle's Judgement; `scale`: the
    magnitude its rounding works at, where larger than its own (a sum's terms, `_terms_scale`)."""
    from engine.judge import oracle
    from engine.judge.metrics import measure, operands
    from engine.judge.witness import FaithfulReference

    if not _comparable(e, c) or uninitialized_op(node.target) is not None:
        # an allocation's value is uninitialized memory on every side (eager, float64): nothing to judge it against.
        # Inductor may reuse its buffer for a later op's result (index_select's `out=`), which is then judged there.
        return None, None
    if e.shape != c.shape:
        c = c.reshape(e.shape)
    # an integer buffer (indices, buckets) keeps its float64 run's value: it says which side is right, as a leaf's does
    r = (
        r
        if isinstance(r, torch.Tensor) and r.shape == e.shape and (r.is_floating_point() or r.dtype == e.dtype)
        else None
    )
    twin = twin if isinstance(twin, torch.Tensor) and r is not None and twin.shape == e.shape else None
    if r is not None and _low_precision_iota(node) and within_one_step(c, r):
        return None, None  # a bf16/fp16 arange is promised to one step of its dtype only (docs/oracle.md#iota)
    own = e
    if twin is not None and e.dtype in (torch.bfloat16, torch.float16) and not graph.emulated:
        # a buffer judged locally asks whether the kernel computed it correctly from what compiled stored before it:
        # correctly is what its ops give in float32 (their opmath) rounded once at the store, which is what a fused
        # kernel computes, not eager's op-by-op bf16/fp16 roundings (that difference is precision-cast by definition).
        # Under emulate_precision_casts a kernel promises eager's roundings: eager's values are then what it owes.
        e = twin.to(e.dtype)
        # compiled stored what eager computes, op by op: compile changed nothing here. Bit for bit, NaN included:
        # torch.equal says a NaN differs from itself, and a node where both sides hold eager's NaNs (bf16
        # matrix_exp overflows to NaN) was then judged against the finite twin and called divergent.
        if _differing(own, c) == 0:
            return None, None
    metrics = measure(operands(e, c, r, twin))
    if metrics.mismatches == 0:
        return None, None
    metrics = _at_scale(metrics, scale)
    faithful = FaithfulReference(f"the graph in float64 with {what}") if what and r is not None else None
    j = oracle.judge_values(
        metrics, strict=False, factor=options.benign_factor, noise_ulps=options.noise_ulps, faithful=faithful
    )
    if j.verdict is not Verdict.DIVERGENT:
        return None, j
    return _node_diff(node, j, metrics, own, graph, program), j


def _node_diff(node: Any, j: Any, metrics: Any, own: torch.Tensor, graph: _Graph, program: str) -> NodeDiff:
    """A divergent node's record: where it is, the element rule's counts, and its worst element with eager's own
    value there, as the user's eager run gives it (the side judged may be the float32 twin's)."""
    worst = (
        WorstElement(
            metrics.worst_index, repr(own[metrics.worst_index].item()), metrics.compiled_value or "", metrics.ref_value
        )
        if metrics.worst_index is not None
        else None
    )
    return NodeDiff(
        graph.index,
        node.name,
        node_op(node),
        j.verdict,
        j.explanation,
        metrics.mismatches,
        metrics.numel,
        metrics.max_ulp,
        site(node, program, graph.dynamo_graph),
        worst,
        nearer=j.nearer.value if j.nearer is not None else None,
    )


# Sums and means: the rounding error of a sum is relative to its terms, not to the sum (|fl(s) - s| <= g_n sum |x_i|,
# Higham, Accuracy and Stability of Numerical Algorithms, 4.2): the mean of a layer norm's row, O(1) values that
# cancel to 5e-4, is off by 1.8e-8 in another summation order, 300 ULPs of the mean and 0.15 of its terms'. Its noise
# floor is scaled by the terms' magnitude (the mean of |x|, times the count summed for a sum); the variance is a mean
# of squares that do not cancel, and is judged at its own magnitude.
_MEANS = ("aten.mean", "aten.var_mean.correction[1]", "aten.nanmean")
_SUMS = ("aten.sum", "aten.nansum")


def _summed_terms(node: Any) -> Any:
    """The node whose values a mean/sum node adds up (None for any other node)."""
    op = node_op(node)
    if not op.startswith(_MEANS + _SUMS):
        return None
    root = node.args[0] if op.startswith("aten.var_mean") else node
    terms = root.args[0] if root.args else None
    return terms if isinstance(terms, torch.fx.Node) else None


def _terms_scale(node: Any, terms: Any, value: Any) -> float | None:
    """The magnitude a mean/sum node's rounding works at: the mean |term| (times the terms per result for a sum)."""
    if not isinstance(terms, torch.Tensor) or not isinstance(value, torch.Tensor) or not terms.is_floating_point():
        return None
    finite = terms[torch.isfinite(terms)].abs()
    if finite.numel() == 0 or value.numel() == 0:
        return None
    mean = float(finite.double().mean())
    return mean * max(1, terms.numel() // value.numel()) if node_op(node).startswith(_SUMS) else mean


def _at_scale(metrics: Any, scale: float | None) -> Any:
    """The metrics with the reference's magnitude (the noise floor's unit, engine/judge/oracle.py) at least `scale`."""
    if scale is None or metrics.ref_rms is None or metrics.ref_max is None:
        return metrics
    return dataclasses.replace(metrics, ref_rms=max(metrics.ref_rms, scale), ref_max=max(metrics.ref_max, scale))


def _comparable(e: Any, c: Any) -> bool:
    return isinstance(e, torch.Tensor) and isinstance(c, torch.Tensor) and e.dtype == c.dtype and e.numel() == c.numel()


_IOTAS = ("prims.iota", "aten.iota", "aten.arange")


def _low_precision_iota(node: Any) -> bool:
    """Whether the node is a bf16/fp16 value computed from an iota (an arange) and constants alone."""
    value = node.meta.get("val")
    if not isinstance(value, torch.Tensor) or value.dtype not in (torch.bfloat16, torch.float16):
        return False
    seen: set[str] = set()
    stack, iota = [node], False
    while stack:
        current = stack.pop()
        if current.name in seen:
            continue
        seen.add(current.name)
        if current.op != "call_function":
            return False  # a placeholder or an attribute: the value depends on data, not on positions alone
        iota = iota or node_op(current).startswith(_IOTAS)
        stack.extend(current.all_input_nodes)
    return iota


def within_one_step(c: torch.Tensor, r: torch.Tensor) -> bool:
    """Every element of `c` within one step of its dtype of the exact value r (NaN where r is NaN)."""
    from engine.judge.elements import spacing

    exact = r.to(torch.float64)
    got = c.to(torch.float64).reshape(exact.shape)
    finite = torch.isfinite(exact)
    if not torch.equal(finite, torch.isfinite(got)):
        return False
    step = spacing(exact[finite], c.dtype)
    return bool(((got[finite] - exact[finite]).abs() <= step).all())


def _given(graph: _Graph, nodes: dict[str, Any], names: set[str]) -> dict[str, torch.Tensor]:
    """The stored buffers that stand for their node's value in the graph's runs: each kernel is then judged on what
    it computes from what compiled stored before it (noise from earlier kernels is in both sides' inputs alike)."""
    given = {}
    for name in names:
        value, meta = graph.values[name], nodes[name].meta.get("val")
        if isinstance(meta, torch.Tensor) and meta.dtype == value.dtype and meta.numel() == value.numel():
            given[name] = value
    return given


def _downstream(gm: Any, drew: set[str], undefined: bool) -> set[str]:
    """Nodes whose value depends on a random draw (the nodes `drew`) or on uninitialized memory."""
    sources = set()
    for node in gm.graph.nodes:
        if node.op != "call_function":
            continue
        if node.name in drew or (undefined and uninitialized_op(node.target) is not None):
            sources.add(node)
    found: set[str] = set()
    for node in gm.graph.nodes:
        if node in sources or any(a.name in found for a in node.all_input_nodes):
            found.add(node.name)
    return found


_HOOK = re.compile(r"^\s*run_intermediate_hooks\('(?P<node>[^']+)', (?P<buffer>\w+)\)")
_CALL = re.compile(r"^\s*(?:\w+ = )?(?P<kernel>[\w.]+)\(")


def _kernels_of(code: str) -> dict[str, str]:
    """Node name -> the kernel whose call precedes its hook in the output code (the kernel that stored it)."""
    found: dict[str, str] = {}
    last = None
    for line in code.splitlines():
        hook = _HOOK.match(line)
        if hook:
            if last is not None:
                found.setdefault(hook["node"], last)
            continue
        call = _CALL.match(line)
        if call and not call["kernel"].startswith(("empty_strided", "assert_", "reinterpret_tensor", "torch.")):
            last = call["kernel"]
    return found
