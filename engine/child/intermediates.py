"""The child half of the first-diverging-intermediate step (see engine/localization/intermediates.py).

Runs in the check's own forked child after the check: recompiles the program with every tensor node of
Inductor's graph exposed as an extra output, runs the same ATen graph eagerly and in float64, and writes
intermediates.json for the caller side to read.
"""

from __future__ import annotations

import ast
import contextlib
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from engine import records
from engine.child.capture import capture_generated_code
from engine.child.errors import StageError
from engine.child.execution import Run, merge_outcomes, run_program, run_repro
from engine.child.graph_nodes import exposable, node_op, site
from engine.judge.verdicts import LeafKind, Verdict
from engine.localization.reports import INTERMEDIATES_FILE, IntermediatesReport, NodeDiff, NodeSite
from engine.options import CheckOptions
from engine.result import CheckResult, OutputCode, ScalarRounding
from engine.snippet import SnippetError, SnippetStyle

_MAX_LISTED = 20


@dataclass
class _Graph:
    """One graph Inductor compiled: its pristine copy, the nodes exposed, and the first call's values."""

    # torch.fx.GraphModule as Inductor's inner compile receives it: after its decompositions and pattern passes,
    # before lowering
    reference: Any
    exposed: list[str]  # node name of each returned value (original outputs, then the extras); "" if not a node
    ops: dict[str, str]
    n_outputs: int
    order: dict[str, int] = field(default_factory=dict)  # node name -> position in the graph
    origins: dict[str, NodeSite] = field(default_factory=dict)  # node name -> where it came from (provenance)
    inputs: list[Any] | None = None
    values: list[Any] | None = None


def localize_in_child(run: Run, result: CheckResult, run_dir: Path) -> None:
    out = run_dir / INTERMEDIATES_FILE
    targets = {leaf.name for leaf in result.leaves if leaf.verdict in (Verdict.DIVERGENT, Verdict.PRECISION_CAST)}
    if not targets:
        report = IntermediatesReport("not-divergent", f"nothing to localize: the check is {result.verdict.value}")
    else:
        try:
            gradients = all(leaf.kind is LeafKind.GRADIENT for leaf in result.leaves if leaf.name in targets)
            report = _localize(run, targets, gradients, result.scalar_roundings)
        except Exception as exc:  # localization is best effort: the check's own result stands
            import traceback

            report = IntermediatesReport(
                "failed", f"{type(exc).__name__}: {exc}", notes=(traceback.format_exc()[-2000:],)
            )
    records.save(report, out)


@dataclass(frozen=True)
class _Instrumented:
    """The instrumented run: its compared calls, and the code Inductor generated for it."""

    outcomes: list[Any]
    code: tuple[OutputCode, ...]


@dataclass(frozen=True)
class _Compared:
    """Every graph's exposed nodes judged: the diverging ones in graph order, how many were compared, notes."""

    diffs: list[NodeDiff]
    count: int
    notes: tuple[str, ...]


def _localize(
    run: Run, targets: set[str], only_gradients: bool, roundings: tuple[ScalarRounding, ...] = ()
) -> IntermediatesReport:
    graphs: list[_Graph] = []
    backward: list[int] = []  # one entry per backward graph, compiled as it is: this step cannot instrument those
    ran = _run_instrumented(run, graphs, backward)
    if isinstance(ran, IntermediatesReport):
        return ran
    leaves = merge_outcomes(ran.outcomes)[0]
    roundings = tuple(dict.fromkeys((*roundings, *(r for o in ran.outcomes for r in o.roundings))))
    reproduced = any(leaf.name in targets and leaf.verdict is Verdict.DIVERGENT for leaf in leaves)
    if not graphs:
        return IntermediatesReport(
            "not-applicable",
            "Inductor compiled no graph (the program ran without a compiled region)",
            reproduced=reproduced,
        )
    compared = _compare_graphs(graphs, run.options, roundings)
    graph_code = "\n\n".join(g.reference.code.strip() for g in graphs)
    if not compared.diffs:
        return _none_diverges(compared, reproduced, graph_code, gradients_only_in=backward if only_gradients else [])
    return _found(compared, reproduced, graph_code, ran.code, graphs)


def _run_instrumented(run: Run, graphs: list[_Graph], backward: list[int]) -> _Instrumented | IntermediatesReport:
    """The program run once more with every graph Inductor compiles instrumented (`graphs` fills as it
    compiles); a report instead where it cannot be."""
    import torch
    import torch._dynamo
    import torch._functorch.config as functorch_config
    import torch._inductor.config as inductor_config

    seed, settings = run.options.seed, run.settings()
    real_compile = torch.compile
    torch._dynamo.reset()
    backend = _instrumenting_backend(graphs, run.filename, backward)
    torch.compile = _instrumenting_compile(real_compile, backend)  # type: ignore[assignment]
    try:
        # caches off: a cache hit would skip the instrumentation, and an instrumented artifact must never
        # be served to another check
        # without --backward only the forward's values matter: under no_grad AOTAutograd compiles an inference
        # graph, whose outputs can be extended (a training graph's forward returns saved tensors it relies on)
        grad = contextlib.nullcontext() if run.options.backward else torch.no_grad()
        with (
            inductor_config.patch(fx_graph_cache=False),
            functorch_config.patch(enable_autograd_cache=False),
            capture_generated_code(None) as captured,
            grad,
        ):
            try:
                if run.style is SnippetStyle.REPRO:
                    outcomes = run_repro(run, seed, settings)
                else:
                    outcomes = run_program(run, [seed], settings)[0][1]
            finally:
                code = captured.result()
    except _NotApplicable as exc:
        return IntermediatesReport("not-applicable", str(exc))
    except (StageError, SnippetError) as exc:
        message = exc.message if isinstance(exc, StageError) else str(exc)
        if "_NotApplicable" in message or "only Inductor's graph" in message:
            return IntermediatesReport("not-applicable", message.split(": ", 1)[-1][:500])
        return IntermediatesReport("failed", f"the instrumented run failed: {message[:500]}")
    finally:
        torch.compile = real_compile  # type: ignore[assignment]
        torch._dynamo.reset()
    return _Instrumented(outcomes, code.output_code)


def _instrumenting_compile(real_compile: Any, backend: Any) -> Any:
    """torch.compile as the program calls it, with Inductor's backend replaced by the instrumenting one."""

    def compile_instrumented(model: Any = None, **kwargs: Any) -> Any:
        if model is None:
            return lambda m: compile_instrumented(m, **kwargs)
        chosen = kwargs.get("backend", "inductor")
        if chosen != "inductor":
            raise _NotApplicable(
                f"the program is compiled with backend {chosen!r}; only Inductor's graph can be instrumented"
            )
        kwargs = {k: v for k, v in kwargs.items() if k not in ("mode", "backend")}
        return real_compile(model, backend=backend, **kwargs)

    return compile_instrumented


def _compare_graphs(graphs: list[_Graph], options: CheckOptions, roundings: tuple[ScalarRounding, ...]) -> _Compared:
    diffs: list[NodeDiff] = []
    compared = 0
    notes: list[str] = []
    for index, graph in enumerate(graphs):
        if graph.inputs is None or graph.values is None:
            notes.append(f"graph {index} was compiled but never run")
            continue
        found, count = _compare_graph(index, graph, options, notes, roundings)
        diffs.extend(found)
        compared += count
    return _Compared(diffs, compared, tuple(notes))


def _none_diverges(
    compared: _Compared, reproduced: bool, graph_code: str, gradients_only_in: list[int]
) -> IntermediatesReport:
    """No exposed node diverges. `gradients_only_in`: the backward graphs, where only gradients diverge."""
    if gradients_only_in:
        # the divergence is in gradients, which only the backward graph computes, and that graph is compiled as it is:
        # no conclusion about where it starts, least of all "before Inductor"
        return IntermediatesReport(
            "backward-not-compared",
            f"the forward graph's {compared.count} intermediates all match the eager run of the same graph; the "
            f"divergent leaves are gradients, computed by the backward graph{'s' if len(gradients_only_in) > 1 else ''}"
            ", which this step does not instrument (a backward graph must return exactly one gradient per input). The "
            "ablation ladder tells which layer is at fault",
            compared_nodes=compared.count,
            reproduced=reproduced,
            graph_code=graph_code,
            notes=compared.notes,
        )
    where = "every intermediate matches the eager run of the same ATen graph"
    why = (
        # what this step can say: the graph it compared had been through Inductor's decompositions and pattern
        # passes already, so a fault in one of those rewrites is in both sides (the ladder tells the layer)
        ", yet the output still diverges: no single node's values are at fault. That graph had already been "
        "through Inductor's decompositions and pattern passes (an attention rewritten into SDPA, say), so the "
        "fault can be in one of those rewrites, earlier, or between compiled graphs (what one hands the next); "
        "the ablation ladder tells which layer"
        if reproduced
        else "; with every intermediate exposed the output no longer diverges (the extra outputs changed fusion)"
    )
    return IntermediatesReport(
        "none-diverges",
        where + why,
        compared_nodes=compared.count,
        reproduced=reproduced,
        graph_code=graph_code,
        notes=compared.notes,
    )


def _found(
    compared: _Compared, reproduced: bool, graph_code: str, output_code: tuple[OutputCode, ...], graphs: list[_Graph]
) -> IntermediatesReport:
    """The first diverging node, and the kernel that computes it."""
    diffs = compared.diffs
    first = diffs[0]
    label, kernel, source, line = _kernel_for(output_code, graphs, first)
    ops_after = f"; {len(diffs) - 1} later node(s) diverge too" if len(diffs) > 1 else ""
    explanation = (
        f"first diverging intermediate: {first.node} = {first.op}(...) in graph {first.graph}"
        f"{f', computed by kernel {kernel}' if kernel else ''}: {first.explanation}{ops_after}"
    )
    if not reproduced:
        explanation += " (caution: with every intermediate exposed, the final output no longer diverges)"
    return IntermediatesReport(
        "found",
        explanation,
        first,
        kernel,
        source,
        label,
        line,
        f"kernel-{kernel}" if kernel else None,
        tuple(f"{d.node} ({d.op})" for d in diffs[:_MAX_LISTED]),
        compared.count,
        reproduced,
        graph_code,
        notes=compared.notes,
    )


class _NotApplicable(BaseException):
    """Raised through the snippet's code (a BaseException, so `except Exception` there cannot swallow it)."""


def _instrumenting_backend(graphs: list[_Graph], program: str, backward: list[int]) -> Any:
    from torch._inductor.compile_fx import compile_fx, compile_fx_inner

    def inner(gm: Any, example_inputs: Any, dynamo_graph: int, **kwargs: Any) -> Any:
        if kwargs.get("is_backward"):
            # a backward graph must return exactly one gradient per input: extra outputs break AOTAutograd
            backward.append(len(graphs))
            return compile_fx_inner(gm, example_inputs, **kwargs)
        record = _expose_every_node(gm, program, dynamo_graph)
        graphs.append(record)
        compiled = compile_fx_inner(gm, example_inputs, **kwargs)
        _unlist_extra_strides(record)
        _record_first_call(compiled, record)
        return compiled

    def backend(gm: Any, example_inputs: Any, mode: Any = None, options: Any = None) -> Any:
        # the Dynamo graph's id marks its nodes in every lowered node's `from_node` chain, as Inductor's own
        # provenance (postToPre) reads them
        dynamo_graph = id(gm.graph)
        return compile_fx(
            gm,
            example_inputs,
            inner_compile=lambda g, i, **kw: inner(g, i, dynamo_graph, **kw),
            config_patches=dict(options or {}),
        )

    return backend


def _expose_every_node(gm: Any, program: str, dynamo_graph: int) -> _Graph:
    """Make every exposable tensor node of the graph an extra output (after the original ones), in place; the
    record keeps a pristine copy of the graph as it came."""
    import copy

    import torch

    reference = copy.deepcopy(gm)
    output = next(n for n in gm.graph.nodes if n.op == "output")
    raw = output.args[0]
    original = list(raw) if isinstance(raw, (tuple, list)) else [raw]
    already = {n for n in original if isinstance(n, torch.fx.Node)}
    exposed = [n for n in gm.graph.nodes if n.op == "call_function" and n not in already and exposable(n)]
    output.args = (tuple(original + exposed),)
    gm.recompile()
    returned = [
        n if isinstance(n, torch.fx.Node) and n.op == "call_function" and exposable(n) else None for n in original
    ] + exposed
    return _Graph(
        reference,
        [n.name if n is not None else "" for n in returned],
        {n.name: node_op(n) for n in returned if n is not None},
        len(original),
        {n.name: i for i, n in enumerate(gm.graph.nodes)},
        {n.name: site(n, program, dynamo_graph) for n in returned if n is not None},
    )


def _unlist_extra_strides(record: _Graph) -> None:
    """Inductor reports every output's stride to AOTAutograd, which restrides the backward graph's saved
    tensors from that list by position, counted from its end when tensors without version-counter checks or
    symints are saved (max_pool2d's indices): the extras must not be in it."""
    from torch._guards import TracingContext

    context = TracingContext.try_get()
    strides = getattr(context, "output_strides", None)
    if strides is not None and len(strides) == len(record.exposed):
        del strides[record.n_outputs :]


def _record_first_call(compiled: Any, record: _Graph) -> None:
    """The compiled graph keeps its first call's inputs and values in `record`, and returns only the original
    outputs to its caller."""
    import torch

    call = getattr(compiled, "current_callable", None)
    if call is None:
        raise RuntimeError(f"cannot instrument {type(compiled).__name__}: it has no current_callable")

    def recording(inputs: list[Any]) -> Any:
        if record.inputs is None:  # the boxed call clears its list: copy first
            record.inputs = [x.detach().clone() if isinstance(x, torch.Tensor) else x for x in inputs]
        outs = call(inputs)
        if record.values is None:
            record.values = [o.detach().clone() if isinstance(o, torch.Tensor) else o for o in outs]
        return type(outs)(outs[: record.n_outputs]) if isinstance(outs, tuple) else list(outs[: record.n_outputs])

    compiled.current_callable = recording


def _in_graph_order(graph: _Graph) -> list[tuple[str, Any]]:
    """(node name, compiled value) of each exposed node, in the graph's order (none before the first call)."""
    pairs = zip(graph.exposed, graph.values or [], strict=False)
    return sorted(pairs, key=lambda pair: graph.order.get(pair[0], -1))


def _compare_graph(
    index: int, graph: _Graph, options: CheckOptions, notes: list[str], roundings: tuple[ScalarRounding, ...] = ()
) -> tuple[list[NodeDiff], int]:
    """Each exposed node judged as the check judges a leaf: against the faithful float64 reference of the graph
    (engine/child/faithful_graph.py: the program's scalar roundings and eager's draws), with the element rule."""
    import torch

    from engine.child import faithful_graph
    from engine.judge import oracle
    from engine.judge.metrics import value_metrics
    from engine.judge.witness import FaithfulReference

    try:
        eager, ref, rounded = faithful_graph.run(graph.reference, graph.inputs or [], roundings)
    except Exception as exc:  # an op with no float64 kernel: tolerances judge then
        eager, ref, rounded = _interpret(graph.reference, graph.inputs or []), {}, []
        notes.append(
            f"graph {index}: no float64 reference ({type(exc).__name__}: {str(exc)[:120]}); nodes judged by tolerances"
        )
    what = "; ".join(dict.fromkeys(rounded)) if rounded else None
    diffs: list[NodeDiff] = []
    compared = 0
    for name, compiled in _in_graph_order(graph):
        e = eager.get(name) if name else None
        if not isinstance(e, torch.Tensor) or not isinstance(compiled, torch.Tensor):
            continue
        op = graph.ops.get(name, "?")
        compared += 1
        site = graph.origins.get(name, NodeSite())
        if e.shape != compiled.shape or e.dtype != compiled.dtype:
            diffs.append(
                NodeDiff(
                    index,
                    name,
                    op,
                    Verdict.DIVERGENT,
                    f"shape/dtype {list(e.shape)} {e.dtype} vs compiled {list(compiled.shape)} {compiled.dtype}",
                    numel=e.numel(),
                    site=site,
                )
            )
            continue
        r = ref.get(name)
        r = r if isinstance(r, torch.Tensor) and r.shape == e.shape and r.is_floating_point() else None
        metrics = value_metrics(e, compiled, r)
        faithful = FaithfulReference(f"the graph in float64 with {what}") if what and r is not None else None
        j = oracle.judge_values(
            metrics,
            strict=options.strict,
            factor=options.benign_factor,
            noise_ulps=options.noise_ulps,
            faithful=faithful,
        )
        if j.verdict is Verdict.DIVERGENT:
            diffs.append(
                NodeDiff(
                    index, name, op, j.verdict, j.explanation, metrics.mismatches, metrics.numel, metrics.max_ulp, site
                )
            )
    return diffs, compared


def _interpret(gm: Any, inputs: list[Any]) -> dict[str, Any]:
    """Every node's value, by name, running the graph eagerly (on copies: some graphs mutate inputs)."""
    import torch
    import torch.fx

    values: dict[str, Any] = {}

    class Recorder(torch.fx.Interpreter):
        def run_node(self, n: Any) -> Any:
            value = super().run_node(n)
            values[n.name] = value
            return value

    with torch.no_grad():
        Recorder(gm).run(*[x.clone() if isinstance(x, torch.Tensor) else x for x in inputs])
    return values


_CALL = re.compile(r"^\s*(?:\w+\s*=\s*)?(?P<name>[\w.]+?)(?:\.run)?\((?P<args>.*)\)\s*$")
_SKIP_CALLS = (
    "empty_strided",
    "empty_strided_cpu",
    "empty_strided_cuda",
    "assert_size_stride",
    "reinterpret_tensor",
    "torch.",
    "del",
    "assert_alignment",
)


def _kernel_for(
    output_code: tuple[OutputCode, ...], graphs: list[_Graph], first: NodeDiff
) -> tuple[str | None, str | None, str | None, int | None]:
    """(output code label, kernel name, kernel source, wrapper line) of the kernel that stores the node."""
    forward = [o for o in output_code if not o.label.endswith("backward")]  # graphs holds the forward graphs only
    if first.graph >= len(forward):
        return None, None, None, None
    code = forward[first.graph]
    graph = graphs[first.graph]
    lines = code.source.splitlines()
    returned = _returned_buffers(lines)
    position = graph.exposed.index(first.node)
    if position >= len(returned) or returned[position] is None:
        return code.label, None, None, None
    names = _aliases(lines, returned[position])
    for number, line in enumerate(lines, 1):
        match = _CALL.match(line)
        if not match or match["name"].startswith(_SKIP_CALLS) or match["name"] in _SKIP_CALLS:
            continue
        used = set(re.findall(r"\b(buf\d+)\b", match["args"]))
        if used & names:
            kernel = match["name"]
            source = next((k.source for k in code.kernels if k.name == kernel), None)
            return code.label, kernel, source, number
    return code.label, None, None, None


def _returned_buffers(lines: list[str]) -> list[str | None]:
    """The buffer behind each returned value of the wrapper's call(): `buf3`, or None for inputs/constants."""
    for line in reversed(lines):
        stripped = line.strip()
        if stripped.startswith("return (") and ("buf" in stripped or "arg" in stripped):
            try:
                node = ast.parse(stripped[len("return ") :], mode="eval").body
            except SyntaxError:
                return []
            items = node.elts if isinstance(node, ast.Tuple) else [node]
            found: list[str | None] = []
            for item in items:
                names = [n.id for n in ast.walk(item) if isinstance(n, ast.Name) and n.id.startswith("buf")]
                found.append(names[0] if names else None)
            return found
    return []


def _aliases(lines: list[str], buffer: str) -> set[str]:
    """A buffer and the buffers it reuses (`buf2 = buf1; del buf1  # reuse`), transitively."""
    names = {buffer}
    changed = True
    while changed:
        changed = False
        for line in lines:
            m = re.match(r"^\s*(buf\d+) = (buf\d+); del \2\s*# reuse", line)
            if m and m.group(1) in names and m.group(2) not in names:
                names.add(m.group(2))
                changed = True
    return names
