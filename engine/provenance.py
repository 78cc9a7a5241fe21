"""Which line of the program became which kernel: Inductor's own provenance tracking, read and joined.

With `torch._inductor.config.trace.provenance_tracking_level = 1`, Inductor records, per compiled graph,
three things and emits them as structured-trace artifacts, also on an FX-graph-cache hit (they are
stored in the cache entry):

- `inductor_provenance_tracking_node_mappings`: kernel -> post-grad FX nodes (`cppCodeToPost`, also for
  Triton kernels), and post-grad -> pre-grad (Dynamo graph) nodes (`postToPre`);
- `inductor_provenance_tracking_kernel_stack_traces`: kernel -> the Python stack traces of its nodes;
- `inductor_post_grad_graph`: the graph Inductor lowered, printed with each node's innermost frame.

Kernels are keyed `name:handle`, and the wrapper marks each call with `# [Provenance debug handles]
name:handle`, which is how a kernel's lines in the output code are found. Nothing here matches names by
similarity: every link is one torch recorded. Where torch records none (a kernel with no stack trace, a
backward graph's kernel -> node map, which torch 2.13 leaves empty), the answer is "unknown".

A cached graph carries the stack traces of the compile that filled the cache, so a program whose lines
moved would get stale lines; the worker therefore keys Inductor's cache on the program's text as well
(engine/child/capture.py), and `build` still checks every recorded line against the program's text.

Pure (no torch): built in the worker child, read by the app and the command line.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

TRACKED = "tracked"
UNKNOWN = "unknown"

NODE_MAPPINGS = "inductor_provenance_tracking_node_mappings"
STACK_TRACES = "inductor_provenance_tracking_kernel_stack_traces"
POST_GRAD_GRAPH = "inductor_post_grad_graph"

_FRAME = re.compile(r'^\s*File "(?P<file>[^"]+)", line (?P<line>\d+), in (?P<function>.+)$')
_HANDLE = re.compile(r"#\s*\[Provenance debug handles\]\s*(?P<key>\S+)\s*$")
_LOCATION = re.compile(r"^\s*# File: (?P<file>.+?):(?P<line>\d+) in (?P<function>.+?), code: (?P<code>.*)$")
_NO_TRACE = re.compile(r"^\s*# No stacktrace found")
_NODE = re.compile(
    r'^\s+(?P<name>\w+)(?:: "[^"]*")? = (?:(?P<target>torch\.ops\.[\w.]+|[\w.]+)\(|(?P<item>\w+)\[\d+\])'
)
_RETURN = re.compile(r"^\s+return \((?P<names>.*)\)\s*$|^\s+return (?P<one>\w+)\s*$")


@dataclass(frozen=True)
class Frame:
    """One frame of a stack trace torch recorded for a node."""

    file: str
    line: int
    function: str
    code: str


@dataclass(frozen=True)
class SourceLine:
    """A line of the program, with its text as torch recorded it."""

    line: int  # 1-based
    code: str


@dataclass(frozen=True)
class KernelOrigin:
    """One kernel of the output code and what it came from."""

    name: str  # as the wrapper calls it: cpp_fused_add_mul_0, triton_poi_fused_add_0, extern_kernels.addmm
    handle: int  # Inductor's provenance debug handle
    nodes: tuple[str, ...] = ()  # post-grad FX nodes it computes (torch's map); () when torch does not say
    source_nodes: tuple[str, ...] = ()  # the Dynamo graph's nodes those came from
    lines: tuple[SourceLine, ...] = ()  # per stack trace, its innermost frame inside the program; sorted
    elsewhere: tuple[str, ...] = ()  # "file:line" of stack traces with no frame in the program
    wrapper_spans: tuple[
        tuple[int, int], ...
    ] = ()  # first and last 1-based lines in the output code: its definition, its call(s)
    extern: bool = False  # a library call (extern_kernels.mm, aten fallbacks), not generated code

    @property
    def line_numbers(self) -> tuple[int, ...]:
        return tuple(s.line for s in self.lines)


@dataclass(frozen=True)
class NodeOrigin:
    """One node of the post-grad graph (the graph Inductor lowered)."""

    name: str
    op: str  # e.g. aten.mul.Tensor
    line: int | None = None  # the program line of its innermost frame; None when torch names no program line


@dataclass(frozen=True)
class Provenance:
    """Per output module: its kernels and nodes, linked to the program's lines."""

    status: str  # TRACKED or UNKNOWN
    reason: str = ""  # why UNKNOWN, or what is partly unknown
    program: str = ""  # the file whose lines are numbered here
    kernels: tuple[KernelOrigin, ...] = ()
    nodes: tuple[NodeOrigin, ...] = ()
    outputs: tuple[str, ...] = ()  # the post-grad graph's returned values, in order ("" where not a node)
    output_types: tuple[str, ...] = ()  # their printed dtype and shape, e.g. "f32[4, 16]"

    def kernel(self, name: str) -> KernelOrigin | None:
        return next((k for k in self.kernels if k.name == name), None)

    def kernels_of_line(self, line: int) -> tuple[KernelOrigin, ...]:
        return tuple(k for k in self.kernels if line in k.line_numbers)

    def kernels_of_node(self, node: str) -> tuple[KernelOrigin, ...]:
        return tuple(k for k in self.kernels if node in k.nodes)

    def node(self, name: str) -> NodeOrigin | None:
        return next((n for n in self.nodes if n.name == name), None)

    def writers_of_output(self, index: int) -> tuple[KernelOrigin, ...]:
        """The kernels that compute the graph's index-th returned value (torch's kernel -> node map)."""
        if not 0 <= index < len(self.outputs) or not self.outputs[index]:
            return ()
        return self.kernels_of_node(self.outputs[index])


def unknown(reason: str) -> Provenance:
    return Provenance(UNKNOWN, reason)


@dataclass
class Artifacts:
    """What the trace delivered for one compiled graph (raw), before it is joined with the output code."""

    post_grad_graph: str | None = None
    node_mappings: Mapping[str, Any] | None = None
    stack_traces: Mapping[str, list[str]] | None = None
    extra: dict[str, Any] = field(default_factory=dict)


def parse_frames(stack_trace: str) -> list[Frame]:
    """The frames of one recorded stack trace (outermost first), each with its code line."""
    frames: list[Frame] = []
    lines = stack_trace.splitlines()
    for i, text in enumerate(lines):
        m = _FRAME.match(text)
        if m:
            code = lines[i + 1].strip() if i + 1 < len(lines) and not _FRAME.match(lines[i + 1]) else ""
            frames.append(Frame(m["file"], int(m["line"]), m["function"].strip(), code))
    return frames


def handles(wrapper: str) -> dict[str, tuple[int, list[int]]]:
    """`name:handle` -> (handle, [the 1-based wrapper line it marks]) from the wrapper's provenance comments."""
    found: dict[str, tuple[int, list[int]]] = {}
    lines = wrapper.splitlines()
    for number, text in enumerate(lines, 1):
        m = _HANDLE.search(text)
        if not m:
            continue
        key = m["key"]
        name, _, handle = key.rpartition(":")
        if not name or not handle.isdigit():
            continue
        # the call follows the mark: the first line naming the kernel before the next mark (a Triton launch
        # fetches its stream first), else the next line that is not a comment
        after = []
        for n in range(number + 1, min(len(lines), number + 8) + 1):
            if _HANDLE.search(lines[n - 1]):
                break
            after.append(n)
        call = next((n for n in after if f"{name}(" in lines[n - 1] or f"{name}.run(" in lines[n - 1]), None)
        if call is None:
            call = next((n for n in after if not lines[n - 1].lstrip().startswith("#")), None)
        entry = found.setdefault(key, (int(handle), []))
        if call is not None:
            entry[1].append(call)
    return found


def definition_span(wrapper: str, name: str) -> tuple[int, int] | None:
    """First and last 1-based lines of `name = async_compile.<kind>(... source ...)` in the wrapper, if defined
    there."""
    lines = wrapper.splitlines()
    start = next((i for i, t in enumerate(lines) if t.startswith(f"{name} = async_compile.")), None)
    if start is None:
        return None
    quotes = 0
    for i in range(start, len(lines)):
        quotes += lines[i].count("'''")
        if quotes >= 2:
            return start + 1, i + 1
    return start + 1, start + 1


def parse_post_grad_graph(text: str, program: str) -> tuple[list[tuple[NodeOrigin, str]], list[str], list[str]]:
    """Nodes (with op, the program line of their innermost frame and its recorded text) and the returned values
    of a printed graph (torch prints each node's innermost frame as `# File: path:line in fn, code: text`)."""
    nodes: list[tuple[NodeOrigin, str]] = []
    types: dict[str, str] = {}
    outputs: list[str] = []
    where: int | None = None
    code = ""
    for text_line in text.splitlines():
        loc = _LOCATION.match(text_line)
        if loc:
            where, code = (int(loc["line"]), loc["code"]) if _same_file(loc["file"], program) else (None, "")
            continue
        if _NO_TRACE.match(text_line):
            where = None
            continue
        node = _NODE.match(text_line)
        if node:
            target = node["target"] or "getitem"
            op = target[len("torch.ops.") :] if target.startswith("torch.ops.") else target
            nodes.append((NodeOrigin(node["name"], op, where), code))
            typed = re.match(r'^\s+\w+: "(?P<type>[^"]*)"', text_line)
            if typed:
                types[node["name"]] = re.sub(r"\]\[.*$", "]", typed["type"]).replace("cpu", "").replace("cuda:0", "")
            continue
        ret = _RETURN.match(text_line)
        if ret and not outputs:
            names = ret["names"] if ret["names"] is not None else ret["one"]
            outputs = [n.strip() for n in names.split(",") if n.strip()]
    known = {n.name for n, _ in nodes}
    return nodes, [o if o in known else "" for o in outputs], [types.get(o, "") for o in outputs]


def _same_file(recorded: str, program: str) -> bool:
    return recorded == program or (not program.startswith("/") and recorded.endswith("/" + program))


def program_frame(frames: list[Frame], program: str) -> Frame | None:
    """The innermost frame inside the program: the line of the user's code closest to the op."""
    return next((f for f in reversed(frames) if _same_file(f.file, program)), None)


def build(
    wrapper: str,
    generated: Iterable[str],
    artifacts: Artifacts | None,
    program: str,
    source: str | None,
) -> Provenance:
    """Join one output module with the provenance torch recorded for it.

    `generated` names the kernels defined in the wrapper (the others it calls are library calls).
    `source` is the program's text: every line torch recorded is checked against it, so a stale record
    (a cached compile of another version of the program) is refused rather than shown.
    """
    marks = handles(wrapper)
    if artifacts is None or artifacts.stack_traces is None:
        if marks:
            return unknown("the wrapper marks its kernels, but no provenance record of this graph was captured")
        return unknown(
            "no provenance was recorded for this graph (provenance tracking was off, or this torch has none)"
        )
    mappings = artifacts.node_mappings or {}
    join = _Join(
        wrapper,
        program,
        marks,
        artifacts.stack_traces,
        mappings.get("cppCodeToPost", {}) or {},
        mappings.get("postToPre", {}) or {},
        set(generated),
        _LineCheck(source.splitlines() if source is not None else None),
    )
    kernels = [
        join.kernel(key) for key in dict.fromkeys([*marks, *artifacts.stack_traces, *join.to_nodes]) if _valid(key)
    ]
    parsed, outputs, output_types = parse_post_grad_graph(artifacts.post_grad_graph or "", program)
    nodes = [
        n if n.line is None or join.verified(Frame(program, n.line, "", code)) else NodeOrigin(n.name, n.op, None)
        for n, code in parsed
    ]
    if join.verified.stale:
        return _stale(join.verified.stale, program, kernels, nodes, outputs, output_types)
    notes = []
    if kernels and not join.to_nodes:
        notes.append("torch recorded no kernel -> FX node map for this graph (it does not for backward graphs)")
    no_line = [k.name for k in kernels if not k.lines]
    if no_line:
        notes.append(f"no program line for {', '.join(no_line)}")
    return Provenance(
        TRACKED, "; ".join(notes), program, tuple(kernels), tuple(nodes), tuple(outputs), tuple(output_types)
    )


def _stale(
    stale: list[str],
    program: str,
    kernels: list[KernelOrigin],
    nodes: list[NodeOrigin],
    outputs: list[str],
    output_types: list[str],
) -> Provenance:
    """Provenance whose recorded lines do not read as the program does: the kernels and nodes without lines."""
    return Provenance(
        UNKNOWN,
        "torch's recorded lines do not match this program ("
        + "; ".join(stale[:3])
        + "): the compile came from a cache entry of another version of the program",
        program,
        tuple(
            KernelOrigin(k.name, k.handle, k.nodes, k.source_nodes, (), k.elsewhere, k.wrapper_spans, k.extern)
            for k in kernels
        ),
        tuple(NodeOrigin(n.name, n.op, None) for n in nodes),
        tuple(outputs),
        tuple(output_types),
    )


def _valid(key: str) -> bool:
    """A kernel key torch records is `name:handle`."""
    name, _, handle = key.rpartition(":")
    return bool(name) and handle.isdigit()


@dataclass
class _LineCheck:
    """Checks a recorded frame's line against the program's text (None: no text to check against), and keeps
    what did not match."""

    program_lines: list[str] | None
    stale: list[str] = field(default_factory=list)

    def __call__(self, frame: Frame) -> bool:
        if self.program_lines is None:
            return True
        lines = self.program_lines
        actual = lines[frame.line - 1].strip() if 0 < frame.line <= len(lines) else None
        if actual != frame.code.strip():
            self.stale.append(f"line {frame.line} reads {actual!r}, torch recorded {frame.code.strip()!r}")
            return False
        return True


@dataclass
class _Join:
    """What `build` joins for one output module: the wrapper, torch's three records, and the program's lines."""

    wrapper: str
    program: str
    marks: dict[str, tuple[int, list[int]]]  # handles(wrapper)
    stack_traces: Mapping[str, list[str]]
    to_nodes: Mapping[str, list[str]]  # kernel -> post-grad nodes
    post_to_pre: Mapping[str, list[str]]  # post-grad node -> Dynamo graph nodes
    defined: set[str]  # kernels the wrapper defines (the rest are library calls)
    verified: _LineCheck

    def kernel(self, key: str) -> KernelOrigin:
        name, _, handle = key.rpartition(":")
        lines: dict[int, str] = {}
        elsewhere: list[str] = []
        for trace in self.stack_traces.get(key, []):
            frames = parse_frames(trace)
            inner = program_frame(frames, self.program)
            if inner is not None:
                if self.verified(inner):
                    lines.setdefault(inner.line, inner.code.strip())
            elif frames:
                elsewhere.append(f"{frames[-1].file}:{frames[-1].line}")
        nodes = tuple(dict.fromkeys(self.to_nodes.get(key, [])))
        pre = tuple(dict.fromkeys(p for n in nodes for p in self.post_to_pre.get(n, [])))
        defined_at = definition_span(self.wrapper, name)
        spans = ([defined_at] if defined_at else []) + [(n, n) for n in self.marks.get(key, (0, []))[1]]
        return KernelOrigin(
            name,
            int(handle),
            nodes,
            pre,
            tuple(SourceLine(n, c) for n, c in sorted(lines.items())),
            tuple(dict.fromkeys(elsewhere)),
            tuple(spans),
            extern=name not in self.defined,
        )
