"""Localize's one answer: the ladder, the bisector, the first diverging node and the mutated inputs' writers, made
into one conclusion that names the op, its line and what to do next.

Each step answers its own question, and they can seem to disagree when they do not:

- the **ladder** names the compiler layer: the first backend that diverges (eager, aot_eager, decompositions,
  Inductor), and whether `emulate_precision_casts` or `fallback_random` removes it;
- the **bisector** names the part of that layer whose *switching on* makes the output diverge: for lowerings, the
  first lowering application (in graph order) that, with all before it, makes the *output* diverge. A fault whose
  effect on the output stays inside the noise allowance is not the one it names;
- the **first diverging node** names where, in graph order, compile first computes a different *value*;
- a **mutated input** that diverges names its writers: the program's in-place statements on that input.

So the node and the bisector can name two ops that are both wrong (the first changes a value, the second is the one
the output's verdict needs), or one op seen twice. This module says which, puts every op on its program line
(engine/localization/sites.py), and ends in what to do: minimize, the setting that works around it, where to file it.

Pure: no torch, no runs. It reads the records the steps wrote and the check's own provenance.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import Enum
from typing import TYPE_CHECKING, Any

from engine.judge.verdicts import LeafKind, Verdict
from engine.localization.sites import ProgramSites, Site, base_name

if TYPE_CHECKING:
    from engine.localization.localize import Localization
    from engine.result import CheckResult, LeafResult

# the ladder's rungs, in order, and the layer each one adds
RUNGS = ("eager", "aot_eager", "aot_eager_decomp_partition", "inductor")
_WORST = re.compile(r"worst at (\[[^\]]*\]): eager ([^,]+), compiled ([^)]+)\)")
# the Inductor settings the bisector flips as a whole, and the value that removes a divergence
_CONFIGS = {
    "inductor_layout_optimization": ("layout_optimization", "False"),
    "inductor_comprehensive_padding": ("comprehensive_padding", "False"),
    "inductor_fallback_random": ("fallback_random", "True"),
    "inductor_emulate_precision_casts": ("emulate_precision_casts", "True"),
    "aot_eager_decomp_partition_cse": ("cse", "False"),
}


class Stage(str, Enum):
    """Where in the compiler the divergence is born."""

    DYNAMO = "dynamo"
    AOT = "aot-autograd"
    DECOMPOSITION = "decomposition"
    GRAPH_PASS = "graph-pass"
    CONFIG = "config"
    LOWERING = "lowering"
    PRECISION = "precision-cast"
    RNG = "rng"
    UNKNOWN = "unknown"

    @property
    def words(self) -> str:
        return {
            Stage.DYNAMO: "Dynamo's capture (graph breaks, guards, side effects)",
            Stage.AOT: "AOTAutograd (functionalization: how in-place writes and views become values)",
            Stage.DECOMPOSITION: "a decomposition (an op rewritten into simpler ones before Inductor)",
            Stage.GRAPH_PASS: "one of Inductor's graph passes (pattern rewrites before lowering)",
            Stage.CONFIG: "an Inductor setting",
            Stage.LOWERING: "Inductor's lowering and code generation",
            Stage.PRECISION: (
                "a low-precision round trip Inductor skips (eager rounds to bf16/fp16, compiled keeps fp32)"
            ),
            Stage.RNG: "random numbers (compiled draws from Inductor's own generator)",
            Stage.UNKNOWN: "no stage the steps could agree on",
        }[self]


@dataclass(frozen=True)
class Finding:
    """One step's answer, in the conclusion's words, and whether it agrees with the conclusion's op."""

    step: str  # "ladder", "bisector", "first diverging node", "mutated input"
    says: str
    site: Site | None = None
    agrees: bool | None = None  # None: the step names no op (or did not run)


@dataclass(frozen=True)
class Conclusion:
    stage: Stage
    site: Site | None  # the op and line to look at first
    also: tuple[Site, ...]  # other ops the steps name: a second fault, the other writers of an input
    sentence: str  # one paragraph, figures after words
    next_step: str
    findings: tuple[Finding, ...]
    workaround: str | None = None  # an option that removes the divergence, as `name=value`

    @property
    def op(self) -> str | None:
        return self.site.op if self.site else None

    @property
    def line(self) -> int | None:
        return self.site.line if self.site else None


def conclude(loc: Localization, check: CheckResult | None = None, program: str = "") -> Conclusion:
    """One conclusion from whatever steps ran. `check` is the check whose records place ops on lines (its
    provenance and Dynamo graph; the ladder's Inductor rung or the run itself), `program` its text."""
    sites = ProgramSites.build(program, check.code if check is not None else None)
    divergent = [
        leaf for leaf in (check.leaves if check else ()) if leaf.verdict in (Verdict.DIVERGENT, Verdict.PRECISION_CAST)
    ]
    node, node_detail = _node(loc, sites, check)
    bisected, via = _bisected(loc, sites)
    mutated = [leaf for leaf in divergent if leaf.kind is LeafKind.MUTATED_INPUT]
    writers = _writers(mutated, sites)
    stage, workaround = _stage(loc)

    # the op to look at first: where a value first changes, else what the bisector names, else what writes the input
    also: list[Site] = []
    reconcile = ""
    if node is not None and bisected is not None and not node.same_place(bisected):
        first, second, reconcile = _two_faults(node, bisected, sites)
        site, also = first, [second]
    elif node is not None or bisected is not None:
        site = node if node is not None else bisected
    elif writers:
        site, also = writers[-1], list(writers[:-1])
    elif stage in (Stage.AOT, Stage.DECOMPOSITION, Stage.DYNAMO) and sites.in_place():
        # these layers' job is to turn in-place writes and views into values: the program's own writes are the suspects
        writes = sites.in_place()
        site, also = writes[-1], list(writes[:-1])
    else:
        site = None
    if via is not None and site is bisected:
        also.append(via.named)  # the view or library call the bisector literally names
    if site is not None and stage is Stage.UNKNOWN:
        stage = Stage.LOWERING if bisected is not None else stage
    findings = _findings(loc, site, node, bisected, mutated, writers, sites)
    pass_name = loc.bisect.debug_info if loc.bisect is not None and stage is Stage.GRAPH_PASS else None
    sentence = _sentence(
        stage,
        site,
        node,
        node_detail,
        bisected,
        mutated,
        writers,
        reconcile,
        sites,
        divergent,
        workaround,
        pass_name,
        via=via,
    )
    return Conclusion(
        stage,
        site,
        tuple(dict.fromkeys(also)),
        sentence,
        _next_step(stage, site, workaround, mutated, sites),
        findings,
        workaround,
    )


# -- what each step says, on the program's lines -------------------------------------------------------------


def _inside_origin(check: CheckResult | None) -> Any:
    """The check's own first diverging node (oracle-inside's `CheckResult.inside.origin`), where the check judged
    intermediates itself: a NodeDiff, or None (older runs, checks that skipped that stage)."""
    inside = getattr(check, "inside", None)
    return getattr(inside, "origin", None) or getattr(inside, "first", None)


def _node(loc: Localization, sites: ProgramSites, check: CheckResult | None = None) -> tuple[Site | None, str]:
    """Localize's first diverging node, else the one the check found inside itself."""
    i = loc.intermediates
    if i is not None and i.status == "found" and i.first is not None:
        first = i.first
    else:
        first = _inside_origin(check)
        if first is None or getattr(first, "site", None) is None:
            return None, ""
    line = first.site.line
    site = sites.site(first.op, line) if line is not None else Site(first.op)
    m = _WORST.search(first.explanation)
    detail = f"at {m.group(1)} eager gives {m.group(2)}, compiled {m.group(3)}" if m else ""
    share = f"{first.mismatches} of {first.numel} values differ"
    return site, f"{share}; {detail}" if detail else share


@dataclass(frozen=True)
class _Via:
    """What the bisector literally names, where the op to look at is another: a view (the op reading or writing
    through it), or a library call (the op computing its input). `node`: the lowered node's name, if one."""

    named: Site
    node: str | None
    extern: bool


def _bisected(loc: Localization, sites: ProgramSites) -> tuple[Site | None, _Via | None]:
    """The op the bisector's finding points at, and what it literally names where that is another op.

    A view's lowering computes no value: what it changes is where its user reads or writes, so the user's op on that
    line is the one to look at. A library call (extern kernel) computes eager's values on the layout it is given, so
    its lowering can only change that layout: the values that differ are computed before it, by the op writing its
    input (pytorch#185509: convolution_backward's lowering asks for channels-last, and max_pool2d's backward,
    fused before it, computes wrong in that layout)."""
    named = _bisector_op(loc, sites)
    b = loc.bisect
    if named is None or b is None:
        return named, None
    node = b.debug_info if b.subsystem == "lowerings" else b.narrowed_op
    used = sites.through_view(named)
    if used != named:
        return used, _Via(named, node, extern=False)
    lowered = b.subsystem == "lowerings" or b.narrowed_op is not None
    fed = sites.feeding(named) if lowered and sites.extern(named) else None
    if fed is not None:
        return fed, _Via(named, node, extern=True)
    return named, None


def _bisector_op(loc: Localization, sites: ProgramSites) -> Site | None:
    b = loc.bisect
    if b is None or b.status != "found":
        return None
    if b.subsystem == "lowerings" and b.debug_info:
        return sites.node(b.debug_info, b.bisect_number) or Site(b.debug_info)
    if b.narrowed_op:
        return sites.node(b.narrowed_op, b.narrowed_number) or Site(b.narrowed_op)
    if b.subsystem == "decomposition" and b.debug_info:
        m = re.search(r"op='([\w.]+)'", b.debug_info)
        op = m.group(1) if m else b.debug_info
        found = sites.op_sites(op)
        return found[0] if found else Site(op)
    if b.subsystem and b.subsystem.endswith("passes"):
        # a graph pass at fault: what it changed is the op to look at; its name says which kind of pass it is
        name = b.debug_info or ""
        made = (
            sites.in_place_nodes()
            if "reinplace" in name
            else sites.folded()
            if "constant_fold" in name
            else sites.made_by_pattern()
        )
        return made[0] if made else None
    return None


def _writers(mutated: list[LeafResult], sites: ProgramSites) -> tuple[Site, ...]:
    out: list[Site] = []
    for leaf in mutated:
        name = sites.parameter(leaf.name)
        if name is not None:
            out.extend(sites.writers(name))
    return tuple(dict.fromkeys(out))


def _position(site: Site, sites: ProgramSites) -> int | None:
    """Where an op on a line sits in the lowered graphs' order (the order the bisector counts in)."""
    position = 0
    for graph in sites.nodes:
        for n in graph:
            if n.op == "getitem":
                continue
            if n.line == site.line and base_name(n.op) == base_name(site.op):
                return position
            position += 1
    return None


def _two_faults(node: Site, bisected: Site, sites: ProgramSites) -> tuple[Site, Site, str]:
    """The node and the bisector name different ops: (the one to look at first, the other, why both)."""
    n, b = _position(node, sites), _position(bisected, sites)
    if n is not None and b is not None and b < n:
        # the bisector's lowering comes first and the first changed value later: its effect shows downstream
        return (
            bisected,
            node,
            (
                "The bisector's op comes earlier in the graph than the first node whose value differs,"
                f" {node.describe()}: its lowering is the cause, and the difference shows only there"
            ),
        )
    return (
        node,
        bisected,
        (
            f"Both are faults: {node.describe()} is the first value compile changes, and the bisector names"
            f" {bisected.describe()}, later in the graph, because the output is called divergent only once that"
            " lowering is applied too (the first one's effect on the output stays inside the noise allowance)"
        ),
    )


def _stage(loc: Localization) -> tuple[Stage, str | None]:
    a, b = loc.ablation, loc.bisect
    first = a.first_diverging if a is not None else None
    if first is None and b is not None and b.status == "found":
        first = b.backend
    if first == "eager":
        return Stage.DYNAMO, None
    if first == "aot_eager":
        return Stage.AOT, None
    if first in ("aot_eager_decomp_partition", "aot_eager_decomp_partition_crossref"):
        if b is not None and b.subsystem in _CONFIGS:
            name, value = _CONFIGS[b.subsystem]
            return Stage.DECOMPOSITION, f"{name}={value}"
        return Stage.DECOMPOSITION, None
    if first != "inductor":
        return Stage.UNKNOWN, None
    if a is not None and a.first_diverging == "inductor":
        by = {r.setting: r for r in a.rows}
        emulate, fallback = by.get("inductor + emulate_precision_casts"), by.get("inductor + fallback_random")
        if emulate is not None and not emulate.diverges and emulate.verdict is not Verdict.ERROR:
            return Stage.PRECISION, "emulate_precision_casts=True"
        if fallback is not None and not fallback.diverges and fallback.verdict is not Verdict.ERROR:
            return Stage.RNG, "fallback_random=True"
    if b is None or b.status != "found" or b.backend != "inductor":
        return Stage.LOWERING, None
    if b.subsystem in _CONFIGS:
        name, value = _CONFIGS[b.subsystem]
        stage = {"fallback_random": Stage.RNG, "emulate_precision_casts": Stage.PRECISION}.get(name, Stage.CONFIG)
        return stage, f"{name}={value}"
    if b.subsystem and b.subsystem.endswith("passes"):
        return Stage.GRAPH_PASS, None
    return Stage.LOWERING, None


# -- the words ------------------------------------------------------------------------------------------------


def _findings(
    loc: Localization,
    site: Site | None,
    node: Site | None,
    bisected: Site | None,
    mutated: list[LeafResult],
    writers: tuple[Site, ...],
    sites: ProgramSites,
) -> tuple[Finding, ...]:
    out: list[Finding] = []

    def agrees(s: Site | None) -> bool | None:
        return None if s is None or site is None else s.same_place(site)

    if loc.ablation is not None:
        rows = {r.setting: r for r in loc.ablation.rows}
        said = ", ".join(f"{r} {rows[r].verdict.value}" for r in RUNGS if r in rows)
        first = loc.ablation.first_diverging
        out.append(
            Finding("ladder", f"{said}: " + (f"{first} is the first to diverge" if first else "no rung diverges"))
        )
    b = loc.bisect
    if b is not None:
        says = b.explanation if b.status == "found" else f"{b.status}: {b.explanation}"
        out.append(Finding("bisector", says, bisected, agrees(bisected)))
    i = loc.intermediates
    if i is not None:
        if node is not None and i.first is not None:
            out.append(Finding("first diverging node", f"{i.first.node} = {node.describe()}", node, agrees(node)))
        else:
            out.append(Finding("first diverging node", f"{i.status}: {i.explanation}"))
    if node is not None and (i is None or i.first is None):  # the check judged its intermediates itself
        out.append(Finding("the check's inside stage", f"first diverging node {node.describe()}", node, agrees(node)))
    for leaf in mutated:
        name = sites.parameter(leaf.name)
        mine = sites.writers(name) if name else ()
        words = ", ".join(s.describe() for s in mine) or "no in-place write recorded in the compiled region"
        out.append(
            Finding(
                "mutated input",
                f"{leaf.name}{f' (`{name}`)' if name else ''} is written by {words}",
                mine[-1] if mine else None,
                agrees(mine[-1]) if mine else None,
            )
        )
    return tuple(out)


def _later_input_writes(site: Site, sites: ProgramSites) -> list[tuple[str, Site]]:
    """In-place writes to the program's inputs on lines after the site's: the hazard an input mutation scheduled
    around a read of the same input is (issue pytorch#198101's shape)."""
    if site.line is None:
        return []
    return [(p, w) for p in sites.parameters for w in sites.writers(p) if w.line is not None and w.line > site.line]


def _where(stage: Stage, workaround: str | None) -> str:
    """The layer in the ladder's and the bisector's words."""
    setting = workaround.split("=")[0] if workaround else ""
    return {
        Stage.DYNAMO: "Dynamo's capture already changes it (backend eager diverges)",
        Stage.AOT: (
            "it appears with AOTAutograd (backend aot_eager diverges, eager does not): "
            "the layer that turns in-place writes and views into values"
        ),
        Stage.DECOMPOSITION: (
            "it appears with the decompositions (aot_eager_decomp_partition diverges, aot_eager does not)"
        ),
        Stage.LOWERING: (
            "it appears only in Inductor's generated code (the earlier backends of the ladder agree with eager)"
        ),
        Stage.CONFIG: f"it appears only with Inductor's `{setting}` on: `{workaround}` removes it",
        Stage.GRAPH_PASS: "it appears when Inductor's graph passes rewrite the graph",
        Stage.PRECISION: f"it is {Stage.PRECISION.words}",
        Stage.RNG: f"it is {Stage.RNG.words}",
        Stage.UNKNOWN: "",
    }[stage]


def _sentence(
    stage: Stage,
    site: Site | None,
    node: Site | None,
    node_detail: str,
    bisected: Site | None,
    mutated: list[LeafResult],
    writers: tuple[Site, ...],
    reconcile: str,
    sites: ProgramSites,
    divergent: list[LeafResult],
    workaround: str | None = None,
    pass_name: str | None = None,
    *,
    via: _Via | None = None,
) -> str:
    if site is None:
        return _unplaced(stage)
    lead = _lead(stage, site, node, node_detail, bisected, mutated, writers, sites, pass_name, via=via)
    own = {sites.parameter(leaf.name) for leaf in mutated} if writers and site in writers else set()
    later = [(p, w) for p, w in _later_input_writes(site, sites) if p not in own]
    if later:
        lead += (
            f"; after it, {', '.join(f'{w.describe()} writes the input `{p}`' for p, w in later)} in place: compiled "
            "code may compute a value before that write and read its input after it"
        )
    grads = [leaf for leaf in divergent if leaf.kind is LeafKind.GRADIENT]
    if grads and len(grads) == len(divergent) and site is bisected:
        lead += "; only gradients differ, so the fault is in the backward graph"
    parts = [lead, _where(stage, workaround)]
    if reconcile:
        parts.append(reconcile)
    return ". ".join(p[0].upper() + p[1:] for p in parts if p) + "."


def _unplaced(stage: Stage) -> str:
    """The sentence where no step placed the divergence on a program line."""
    where = {
        Stage.PRECISION: (
            "Compile keeps a value in fp32 that eager rounds to bf16/fp16 "
            "(emulate_precision_casts removes the difference), and no step could place it on a line"
        ),
        Stage.RNG: (
            "Compiled draws its random numbers from Inductor's generator (fallback_random removes the difference)"
        ),
    }.get(stage, f"The steps place the divergence in {stage.words}, but none names an op on a program line")
    return where + "."


def _lead(
    stage: Stage,
    site: Site,
    node: Site | None,
    node_detail: str,
    bisected: Site | None,
    mutated: list[LeafResult],
    writers: tuple[Site, ...],
    sites: ProgramSites,
    pass_name: str | None,
    *,
    via: _Via | None = None,
) -> str:
    """What the sentence opens with: by which step's evidence the site is where compile changes the answer."""
    if site is node and node is not None:
        return f"Compile first changes {site.describe()}" + (f": {node_detail}" if node_detail else "")
    if writers and site in writers:
        leaf = mutated[0]
        name = sites.parameter(leaf.name)
        lead = (
            f"Compile writes the input `{name or leaf.name}` ({leaf.name}) differently from eager; its last in-place "
            f"write is {site.describe()}"
        )
        others = [w for w in writers if w != site]
        return lead + (f", after {', '.join(w.describe() for w in others)}" if others else "")
    if site is bisected and stage is Stage.GRAPH_PASS:
        did = (
            "made it an in-place op"
            if "reinplace" in (pass_name or "")
            else "folded its constant operand"
            if "constant_fold" in (pass_name or "")
            else "rewrote it"
        )
        pass_words = f"Inductor's graph pass {pass_name or '?'}"
        return f"The bisector traces the divergence to {pass_words} at {site.describe()}: it {did}"
    if site is bisected:
        return _bisector_lead(site, sites, via)
    return (
        f"The divergence is born in {stage.words}; the program's in-place write {site.describe()} "
        "is what that layer handles"
    )


def _bisector_lead(site: Site, sites: ProgramSites, via: _Via | None) -> str:
    """The sentence's opening where the bisector's lowering names the op: that op, or the op a view or a library call
    it names stands for, and the kernel that computes it with other lines."""
    if via is None:
        lead = f"The bisector traces the divergence to Inductor's lowering of {site.describe()}"
    elif via.extern:
        lead = (
            f"The bisector names Inductor's lowering of {via.named.describe()}, a library call that computes eager's "
            "values on whatever layout it is given, so its lowering changes only the layout of its input: the values"
            f" that differ are computed before it, by {site.describe()}"
        )
    else:
        writes = site.name == "setitem" or site.name.endswith("_")
        lead = (
            f"The bisector traces the divergence to Inductor's lowering of the view `{via.named.name}` through which"
            f" {site.describe()} {'writes' if writes else 'reads'}"
        )
    fused = sites.fused_with(site, via.node if via is not None and not via.extern else None)
    if fused is not None and fused[1]:
        lead += f", which kernel {fused[0]} computes together with {', '.join(s.describe() for s in fused[1])}"
        lead += _read_before_written(site, fused[1], sites)
    return lead


def _read_before_written(site: Site, fused: tuple[Site, ...], sites: ProgramSites) -> str:
    """Where the site writes an input in place and a line before it, in the same kernel, reads that input: the
    hazard of a read scheduled after the write (pytorch#198101's shape), said as such."""
    written = [p for p in sites.parameters if site in sites.writers(p)]
    for name in written:
        readers = [
            s for s in fused if s.line is not None and site.line is not None and s.line < site.line and
            re.search(rf"\b{re.escape(name)}\b", s.code)
        ]  # fmt: skip
        if readers:
            lines = ", ".join(f"line {s.line}" for s in readers)
            return (
                f"; {lines} read{'s' if len(readers) == 1 else ''} the input `{name}` that this line then overwrites"
                ", in the same kernel: compiled may read it after the write"
            )
    return ""


def _next_step(
    stage: Stage, site: Site | None, workaround: str | None, mutated: list[LeafResult], sites: ProgramSites
) -> str:
    line = f"line {site.line}" if site is not None and site.line is not None else "that line"
    op = f"`{site.name}`" if site is not None else "the op"
    minimize = f"Minimize: the repro keeps {op} on {line}, and its issue body is what you file"
    if stage is Stage.PRECISION:
        return (
            "Nothing to fix if fp32 accuracy is what you want (compiled is usually the more exact side); "
            "to get eager's bf16/fp16 roundings compiled, set `emulate_precision_casts=True`"
        )
    if stage is Stage.RNG:
        return (
            "Set `fallback_random=True` to make compiled draw eager's random numbers "
            "(different draws are intended, pytorch#118735)"
        )
    if stage is Stage.CONFIG and workaround:
        return (
            f"Re-check with `{workaround}` (More settings, or `--config {workaround}`): it removes the difference, "
            f"so it is your workaround. {minimize} against Inductor"
        )
    if stage is Stage.AOT:
        name = sites.parameter(mutated[0].name) if mutated else None
        fix = (
            f"return a new tensor instead of updating `{name}` in place"
            if name
            else "avoid the in-place write on that line"
        )
        return f"{minimize} against AOTAutograd's functionalization; until it is fixed, {fix} (or clone first)"
    if stage is Stage.DECOMPOSITION:
        return f"{minimize} against the decomposition of {op}" + (
            f"; `{workaround}` works around it" if workaround else ""
        )
    if stage is Stage.DYNAMO:
        return (
            f"Look at the graph breaks and guards in the Generated code tab, then {minimize[0].lower() + minimize[1:]}"
        )
    if stage is Stage.GRAPH_PASS:
        return f"{minimize} against the Inductor graph pass the bisector names"
    if site is None:
        return "Minimize: it shrinks the program while it keeps diverging, which places it where Localize could not"
    return (
        f"{minimize} against Inductor; until it is fixed, keep {line} out of the compiled region "
        "(`torch.compiler.disable` on a helper that holds it)"
    )
