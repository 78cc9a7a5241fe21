"""Source <-> kernel view: the program beside Inductor's output code, each kernel in its own colour.

Compiler Explorer's idea for torch.compile: a program line that reached a kernel takes that kernel's
colour, in the program (left) and in the output code (right: the kernel's definition and its call).
A line that fused into several kernels shows one chip per kernel in its gutter and stripes of their
colours; a kernel fed by several lines colours each of them. Click a program line: its kernels (and
the FX nodes of that line) are highlighted and scrolled to; click a kernel's line, or its legend
entry: its program lines are. The first diverging intermediate, when the run is localized, is marked
in red on its line, its kernel and its node.

Everything comes from the run's stored provenance (engine/provenance.py): Inductor's own kernel <->
FX node <-> stack trace records. It is one self-contained HTML document (no CDN: the app may be
offline) in `st.iframe`, which shares the page's origin; clicks are handled in the browser, so they never rerun
the page.
"""

from __future__ import annotations

import functools
import html
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import streamlit as st

from app.store import RunRecord
from engine import CheckResult, LeafKind, LeafResult, Localization, OutputCode
from engine.localization.reports import IntermediatesReport, NodeDiff, NodeSite
from engine.provenance import TRACKED, KernelOrigin, definition_span

# light, distinguishable backgrounds (ColorBrewer's Paired and Set3 tones), in legend order
PALETTE = (
    "#a6cee3",
    "#fdbf6f",
    "#b2df8a",
    "#fb9a99",
    "#cab2d6",
    "#ffff99",
    "#8dd3c7",
    "#fccde5",
    "#bebada",
    "#d9d9d9",
    "#ccebc5",
    "#ffed6f",
)
HEIGHT = 720
_KEYWORDS = re.compile(
    r"\b(def|return|import|from|as|class|for|in|if|else|elif|while|with|del|None|True|False|lambda|"
    r"void|const|auto|float|double|int|int64_t|bool|extern|include|pragma|static|inline|template|tl|triton)\b"
)
_DTYPE_ABBREV = {
    "f32": "float32",
    "f64": "float64",
    "f16": "float16",
    "bf16": "bfloat16",
    "i64": "int64",
    "i32": "int32",
    "i16": "int16",
    "i8": "int8",
    "u8": "uint8",
    "b8": "bool",
}


@dataclass(frozen=True)
class Writer:
    """The kernel that computes one output leaf, per torch's kernel -> node map."""

    module: str
    kernel: str
    lines: tuple[int, ...]

    @property
    def key(self) -> str:
        return kernel_key(self.module, self.kernel)


def kernel_key(module: str, kernel: str) -> str:
    return f"{module}/{kernel}"


def writers(result: CheckResult) -> dict[str, Writer]:
    """Leaf name -> the kernel that wrote it, where torch's records say so unambiguously.

    The graph's returned values line up with the output leaves only in the plain case: one forward
    graph (no graph break), outputs that are all tensors, no mutated inputs (those are returned first).
    Each pairing is also checked against the returned value's recorded dtype and shape; a leaf where
    any of this fails gets no writer ("unknown"), never a guess.
    """
    forward = [o for o in result.code.output_code if not o.label.endswith("backward")]
    if len(forward) != 1 or forward[0].provenance is None or forward[0].provenance.status != TRACKED:
        return {}
    if any(leaf.kind is LeafKind.MUTATED_INPUT for leaf in result.leaves):
        return {}
    outputs = [leaf for leaf in result.leaves if leaf.kind is LeafKind.OUTPUT]
    if any(leaf.shape is None for leaf in outputs):
        return {}
    prov = forward[0].provenance
    found: dict[str, Writer] = {}
    for index, leaf in enumerate(outputs):
        if index >= len(prov.output_types) or not _same_type(prov.output_types[index], leaf):
            continue
        kernels = prov.writers_of_output(index)
        if len(kernels) == 1:
            found[leaf.name] = Writer(forward[0].label, kernels[0].name, kernels[0].line_numbers)
    return found


def _same_type(printed: str, leaf: LeafResult) -> bool:
    m = re.match(r"^(\w+)\[([^\]]*)\]$", printed.strip())
    if not m or leaf.shape is None:
        return False
    dims = tuple(int(d) for d in m.group(2).split(",") if d.strip().isdigit())
    return _DTYPE_ABBREV.get(m.group(1)) == (leaf.dtype or "").replace("torch.", "") and dims == tuple(leaf.shape)


@dataclass(frozen=True)
class Divergence:
    """The first diverging intermediate, placed on the picture."""

    node: str
    op: str
    module: str | None
    kernel: str | None
    line: int | None
    text: str


def place_divergence(
    modules: Sequence[OutputCode], report: IntermediatesReport | None, program: str | None = None
) -> Divergence | None:
    """Where the localization's first diverging node sits in this check's own provenance.

    Localization compiles an instrumented copy of the program (every intermediate an output) in a compile of
    its own, whose modules are labelled and whose nodes may be named differently (`1_inference` beside the
    check's `0_inference`). So the node is placed by what torch records of its origin, never by label: the
    check's module of the same forward graph, and in it (a) the node of the same name and op (on the same
    program line, where both are known), else (b) the kernel made from the same Dynamo-graph nodes, else (c) a
    node of the same op on the same program line. `program` (the program's text) verifies the line torch
    recorded for the instrumented node. Nothing found: the node is named, with no kernel, and the text says so.
    """
    if report is None or report.status != "found" or report.first is None:
        return None
    first = report.first
    line = _verified_line(first.site, program)
    forward = [m for m in modules if not m.label.endswith("backward")]
    same_graph = forward[first.graph : first.graph + 1]
    for module in same_graph + [m for m in forward if m not in same_graph]:
        placed = _place_in(module, first, line)
        if placed is not None:
            kernel, at = placed
            return Divergence(first.node, first.op, module.label, kernel, at, _figures(report))
    return Divergence(
        first.node,
        first.op,
        None,
        None,
        line,
        _figures(report) + " (the node is not in this check's own graph, and no kernel of it has the same origin)",
    )


def _verified_line(site: NodeSite, program: str | None) -> int | None:
    """The program line torch recorded for the instrumented node, where the program's text still reads the same."""
    if site.line is None or program is None:
        return None
    lines = program.splitlines()
    return site.line if 0 < site.line <= len(lines) and lines[site.line - 1].strip() == site.code.strip() else None


def _same_op(recorded: str, localized: str) -> bool:
    """The check's printed op against the localization's: a `getitem` of a multi-output op is `op[i]` there."""
    return recorded == localized or (recorded == "getitem" and localized.endswith("]"))


def _place_in(module: OutputCode, first: NodeDiff, line: int | None) -> tuple[str | None, int | None] | None:
    """(kernel, program line) of the node in one module of the check, or None where the module has no such node."""
    prov = module.provenance
    if prov is None or prov.status != TRACKED:
        return None
    node = prov.node(first.node)
    if node is not None and _same_op(node.op, first.op) and (node.line is None or line is None or node.line == line):
        kernels = prov.kernels_of_node(node.name)
        return (kernels[0].name if kernels else None), node.line if node.line is not None else line
    origin = set(first.site.source_nodes)
    made_from = [k for k in prov.kernels if origin & set(k.source_nodes)]
    if made_from:
        ops = {n.name: n.op for n in prov.nodes}
        made_from.sort(key=lambda k: not any(_same_op(ops.get(n, ""), first.op) for n in k.nodes))
        kernel = made_from[0]
        return kernel.name, (
            line if line is not None else (kernel.line_numbers[0] if len(kernel.line_numbers) == 1 else None)
        )
    if line is not None:
        same = [n for n in prov.nodes if n.line == line and _same_op(n.op, first.op)]
        if same:
            kernels = prov.kernels_of_node(same[0].name)
            return (kernels[0].name if kernels else None), line
    return None


def _figures(report: IntermediatesReport) -> str:
    f = report.first
    assert f is not None
    return f"{f.mismatches} of {f.numel} elements differ, max {f.max_ulp:.3g} ULP: {f.explanation}"


def _highlight(text: str, language: str = "python") -> str:
    """HTML for one code line: escaped, comments and keywords lightly marked (colours carry the kernels).

    `language` decides what a comment is: Python's `//` is floor division, C++'s `#include` a directive.
    """
    text = text.replace("\x00", "").replace("\x01", "")  # the markers below
    comment = ""
    hash_at = _comment_start(text, language)
    if hash_at is not None:
        text, comment = text[:hash_at], text[hash_at:]
    body = _KEYWORDS.sub(lambda m: f"\x00{m.group(0)}\x01", text)
    body = html.escape(body).replace("\x00", '<b class="kw">').replace("\x01", "</b>")
    return body + (f'<i class="cm">{html.escape(comment)}</i>' if comment else "")


def _comment_start(text: str, language: str = "python") -> int | None:
    """Where a comment starts outside string quotes, or None: `#` in Python; `//` (and a `#` that is no
    preprocessor directive) in C++."""
    quote: str | None = None
    for i, ch in enumerate(text):
        if quote:
            if ch == quote and text[i - 1] != "\\":
                quote = None
        elif ch in "'\"":
            quote = ch
        elif ch == "#" and (
            language == "python" or not text[i + 1 : i + 8].startswith(("include", "pragma", "define"))
        ):
            return i
        elif ch == "/" and language == "cpp" and text[i + 1 : i + 2] == "/":
            return i
    return None


def _cpp_lines(module: OutputCode) -> set[int]:
    """The 1-based wrapper lines inside a C++ kernel's source string; the rest of the wrapper (and Triton
    kernels) is Python."""
    lines: set[int] = set()
    for kernel in module.kernels:
        if kernel.language != "cpp":
            continue
        span = definition_span(module.source, kernel.name)
        if span is not None:
            lines.update(range(span[0] + 1, span[1] + 1))  # the first line is the Python assignment
    return lines


def view_data(
    program: str,
    program_name: str,
    modules: Sequence[OutputCode],
    divergence: Divergence | None = None,
    focus: str | None = None,
    graph_breaks: Sequence[str] = (),
) -> dict[str, Any]:
    """Everything the browser side needs, as plain JSON (also what the tests inspect)."""
    kernels: list[dict[str, Any]] = []
    out_lines: list[dict[str, Any]] = []
    notes: list[str] = []
    for module in modules:
        note = _provenance_note(module)
        if note:
            notes.append(note)
        out_lines.append({"header": f"output module {module.label}"})
        owner = _module_kernels(module, kernels)
        cpp = _cpp_lines(module)
        first = len(out_lines)
        for number, text in enumerate(module.source.splitlines(), 1):
            out_lines.append(
                {"n": number, "html": _highlight(text, "cpp" if number in cpp else "python"), "k": owner.get(number)}
            )
        if first == len(out_lines):
            out_lines.append({"n": 0, "html": "(empty)", "k": None})
    nodes = [
        {"name": n.name, "op": n.op, "line": n.line, "module": m.label}
        for m in modules
        if m.provenance is not None and m.provenance.status == TRACKED
        for n in m.provenance.nodes
    ]
    return {
        "program": [_highlight(t, "python") for t in program.splitlines()],
        "program_text": program.splitlines(),
        "program_name": program_name,
        "out": out_lines,
        "kernels": kernels,
        "nodes": nodes,
        "notes": notes,
        "divergence": _divergence_data(divergence),
        "focus": focus,
        "breaks": [{"line": line, "reason": reason} for line, reason in breaks_on_lines(graph_breaks, program)],
    }


def _provenance_note(module: OutputCode) -> str:
    """What the view must say of a module whose provenance is unknown or partly unknown ("" where it is whole)."""
    prov = module.provenance
    if prov is None:
        return f"{module.label}: provenance unknown (the run was made without provenance tracking)"
    if prov.status != TRACKED:
        return f"{module.label}: provenance unknown: {prov.reason}"
    return f"{module.label}: {prov.reason}" if prov.reason else ""


def _module_kernels(module: OutputCode, kernels: list[dict[str, Any]]) -> dict[int, str]:
    """Append the module's kernels (each with the next colour) to `kernels`; return which kernel owns each line of
    the module's output code."""
    prov = module.provenance
    origins: Sequence[KernelOrigin] = prov.kernels if prov is not None else ()
    owner: dict[int, str] = {}
    for k in origins:
        key = kernel_key(module.label, k.name)
        lines = [s.line for s in k.lines] if prov is not None and prov.status == TRACKED else []
        kernels.append(
            {
                "key": key,
                "name": k.name,
                "module": module.label,
                "color": PALETTE[len(kernels) % len(PALETTE)],
                "lines": lines,
                "extern": k.extern,
                "nodes": list(k.nodes),
                "source_nodes": list(k.source_nodes),
                "ops": len(k.nodes),
            }
        )
        for a, b in k.wrapper_spans:
            for n in range(a, b + 1):
                owner.setdefault(n, key)
    return owner


def _divergence_data(divergence: Divergence | None) -> dict[str, Any] | None:
    if divergence is None:
        return None
    key = kernel_key(divergence.module, divergence.kernel) if divergence.module and divergence.kernel else None
    return {
        "node": divergence.node,
        "op": divergence.op,
        "kernel": key,
        "line": divergence.line,
        "text": divergence.text,
    }


_BREAK_AT = re.compile(r'File "(?P<file>[^"]+)", line (?P<line>\d+), in [^\n]*\n\s+(?P<code>[^\n]*)')


def breaks_on_lines(graph_breaks: Sequence[str], program: str) -> list[tuple[int, str]]:
    """Where Dynamo broke the graph, as (program line, reason in one line): the innermost frame of its user-code
    traceback whose text is the program's own line, and the first line of its reason ("Unsupported Tensor.item()
    call with capture_scalar_outputs=False")."""
    lines = program.splitlines()
    found: list[tuple[int, str]] = []
    for text in graph_breaks:
        frames = [
            int(m["line"])
            for m in _BREAK_AT.finditer(text)
            if 0 < int(m["line"]) <= len(lines) and lines[int(m["line"]) - 1].strip() == m["code"].strip()
        ]
        if not frames:
            continue
        after = text.split("Graph Break Reason:", 1)[-1].splitlines()
        reasons = [r.strip() for r in after[1:] if r.strip() and not r.startswith(" ")]
        reason = reasons[0] if reasons else after[0].strip()
        entry = (frames[-1], reason)
        if entry not in found:
            found.append(entry)
    return found


ASSETS = Path(__file__).with_name("assets")  # the view's HTML, CSS and script, as files a maintainer can read


@functools.cache
def _asset(name: str) -> str:
    return (ASSETS / name).read_text()


def document(data: dict[str, Any], height: int = HEIGHT) -> str:
    """The self-contained HTML page of the view. The program's pane is as wide as its longest line wants (up to 60% of
    the view): at 40% a 1024-px window showed ~20 characters of each line."""
    payload = json.dumps(data).replace("</", "<\\/")
    longest = max((len(line.rstrip()) for line in data.get("program_text") or [""]), default=0)
    return (
        _asset("code_view.html")
        .replace("__HEIGHT__", str(height - 8))
        .replace("__PROGRAM_CH__", str(min(max(longest, 40), 120) + 7))
        .replace("__DATA__", payload)
    )


COLOURS = (
    "Each kernel has a colour: a program line takes the colour of the kernel(s) it became (a striped line and several"
    " gutter chips: it fused into several kernels), and so do the kernel's definition and its call in the output code."
    " Uncoloured lines reached no kernel (or torch recorded none for them). A red bar and ⚠ mark the first diverging"
    " intermediate's line and kernel when the run is localized."
)


def render(record: RunRecord, result: CheckResult, tri: CheckResult | None, localization: Localization | None) -> None:
    """The side-by-side view at the top of the Generated code tab."""
    st.markdown("#### Program ↔ kernels")
    chosen, which = result, "this check"
    if tri is not None and tri.code.output_code:
        label = st.radio(
            "Output code of",
            ["This check", "Triton on CPU (interpreted)"],
            horizontal=True,
            key=f"cv_which:{record.id}",
            help="the Triton-on-CPU pass compiles the same program with Inductor's Triton backend",
        )
        if label != "This check":
            chosen, which = tri, "Triton on CPU"
    if not chosen.code.output_code:
        st.info(
            "No output code was captured, so there is nothing to map (the backend writes none, or the check stopped"
            " before compiling)."
        )
        return
    snippet = Path(record.run_dir) / "snippet.py"
    program = snippet.read_text() if snippet.exists() else ""
    divergence = place_divergence(
        chosen.code.output_code, localization.intermediates if localization and which == "this check" else None, program
    )
    if (
        divergence is None
        and localization is not None
        and localization.conclusion is not None
        and which == "this check"
    ):
        # no node diverged (gradients, a mutation): the line Localize's conclusion names is marked instead
        site = localization.conclusion.site
        if site is not None and site.line is not None:
            divergence = Divergence("", site.op, None, None, site.line, localization.conclusion.sentence)
    names = {o.provenance.program for o in chosen.code.output_code if o.provenance is not None and o.provenance.program}
    data = view_data(
        program,
        next(iter(names), "snippet.py"),
        chosen.code.output_code,
        divergence,
        graph_breaks=chosen.code.graph_breaks,
    )
    st.iframe(document(data), height=HEIGHT)
    st.caption(COLOURS)


def writer_link(writer: Writer, linked: bool) -> None:
    """'Written by kernel X (program lines a–b)' under a leaf, and a button that opens it in the Generated code tab."""
    lines = _line_range(writer.lines)
    text = f"Written by kernel `{writer.kernel}` (output module {writer.module}; program {lines})"
    if not linked:
        st.caption(text)
        return
    left, right = st.columns([3, 1], vertical_alignment="center")
    left.caption(text)
    with right:
        # the button switches the page to the Generated code tab (the page's own tab button, same origin) and tells
        # the source <-> kernel view there which kernel to select: no rerun of the page
        st.iframe(_asset("writer_link.html").replace("__KEY__", json.dumps(writer.key)), height=36)


def _line_range(lines: Sequence[int]) -> str:
    ordered = sorted(set(lines))
    if not ordered:
        return "lines unknown"
    if len(ordered) == 1:
        return f"line {ordered[0]}"
    if ordered == list(range(ordered[0], ordered[-1] + 1)):
        return f"lines {ordered[0]}–{ordered[-1]}"
    return "lines " + ", ".join(map(str, ordered))
