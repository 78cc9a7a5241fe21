"""Which op sits on which program line, as torch recorded it for the check's own compile.

Localize's steps name ops in different vocabularies: the first diverging node an ATen op with its line, the
bisector a lowered FX node's *name* (`div`, `scatter_add`) or a decomposed OpOverload, a mutated input only a
leaf name (`input args[0]`). This index puts them on the program's lines from two records the check already
keeps, so no step has to run again:

- the graph Inductor lowered (`Provenance.nodes`: node name, ATen op, program line), per compiled graph;
- Dynamo's graph as printed (`GeneratedCode.fx_graphs`): its `# File: path:LINE in fn, code: TEXT` comments and
  the statements under each, which show the torch-level calls and every in-place write to a graph input
  (`l_x_.add_(...)`, `l_x_[...] = ...`).

A recorded line is trusted only where its text is the program's own line (a cached graph could carry the lines of
an older program). Pure: no torch.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from engine.provenance import KernelOrigin, NodeOrigin
from engine.result import GeneratedCode

_COMMENT = re.compile(r"^\s*# File: (?P<file>.+?):(?P<line>\d+) in (?P<function>[^,]+), code: (?P<code>.*)$")
_STATEMENT = re.compile(r"^\s+(?P<lhs>[^#][^=]*?)(?::\s*\"[^\"]*\")?\s=\s(?P<rhs>.+)$")
_METHOD = re.compile(r"\b(?P<receiver>[A-Za-z_]\w*)(?:\[[^\]]*\])*\.(?P<name>[A-Za-z_]\w*)\(")
_FUNCTION = re.compile(
    r"\b(?:torch\.(?:nn\.functional\.|_C\._nn\.|_C\._VariableFunctions\.)?|F\.|operator\.)(?P<name>\w+)\("
)
_MODULES = {"torch", "F", "operator", "nn", "functional", "_C", "_nn", "_VariableFunctions", "math"}
_BINARY = {
    "//": "floordiv", "%": "mod", "/": "truediv", "**": "pow", "@": "matmul", "+": "add", "-": "sub", "*": "mul",
}  # fmt: skip
# every node the lowering graph holds that is plumbing, not an op a user wrote: never the answer when another is
_PLUMBING = {
    "getitem", "view", "reshape", "permute", "expand", "clone", "convert_element_type", "unsqueeze", "squeeze",
    "slice", "select", "alias", "t", "transpose", "iota", "full", "empty", "empty_strided", "contiguous",
}  # fmt: skip


@dataclass(frozen=True)
class Site:
    """An op on a program line: what Localize points the user at."""

    op: str  # as recorded: "aten.div.Tensor_mode", "prims.rev.default", or a torch-level call "index_put_"
    line: int | None = None
    code: str = ""  # the line's text, from the program

    @property
    def name(self) -> str:
        """The op's short name: aten.div.Tensor_mode -> div, index_put_ -> index_put_."""
        return short_name(self.op)

    def same_place(self, other: Site | None) -> bool:
        if other is None:
            return False
        if self.line is not None and other.line is not None:
            return self.line == other.line
        return base_name(self.op) == base_name(other.op)

    def describe(self) -> str:
        """'`bucket = t // STEP` (line 18, aten.div.Tensor_mode)', or the op alone where no line is known."""
        if self.line is None:
            return f"`{self.op}` (no program line recorded)"
        code = self.code.strip()
        return f"`{code}` (line {self.line}, {self.op})" if code else f"line {self.line} ({self.op})"


def short_name(op: str) -> str:
    parts = op.split(".")
    if len(parts) >= 3 and parts[0] in ("aten", "prims", "quantized", "inductor_prims"):
        return parts[1]
    return parts[-1] if parts[0] in ("aten", "prims") and len(parts) == 2 else op


def base_name(op: str) -> str:
    """The op without an in-place underscore or overload: index_put_ and aten.index_put.default are one op."""
    name = short_name(op).strip("_")
    return name[:-1] if name.endswith("_") else name


@dataclass(frozen=True)
class Statement:
    """One statement of Dynamo's graph, under the program line it came from."""

    line: int
    code: str  # the program line's text
    calls: tuple[str, ...]  # torch-level calls and operators it makes, in order ("index_put_", "floordiv", "setitem")
    writes: tuple[str, ...]  # graph inputs it writes in place (their placeholder names without l_/_: "x")


@dataclass(frozen=True)
class ProgramSites:
    """The program's lines and the ops recorded on them."""

    lines: tuple[str, ...]  # the program's text, line by line
    nodes: tuple[tuple[NodeOrigin, ...], ...] = ()  # per compiled graph (the check's order), its lowered nodes
    kernels: tuple[tuple[KernelOrigin, ...], ...] = ()  # per compiled graph, its kernels with their nodes and lines
    statements: tuple[Statement, ...] = ()
    parameters: tuple[str, ...] = ()  # the entry point's positional parameters (`fn(dst, src)`, `forward(self, x)`)

    @classmethod
    def build(cls, program: str, code: GeneratedCode | None) -> ProgramSites:
        lines = tuple(program.splitlines())
        graphs: list[tuple[NodeOrigin, ...]] = []
        kernels: list[tuple[KernelOrigin, ...]] = []
        statements: list[Statement] = []
        if code is not None:
            for out in code.output_code:
                if out.provenance is not None:
                    graphs.append(tuple(out.provenance.nodes))
                    kernels.append(tuple(out.provenance.kernels))
            for text in code.fx_graphs:
                statements.extend(_statements(text, lines))
        return cls(lines, tuple(graphs), tuple(kernels), tuple(statements), entry_parameters(program))

    def fused_with(self, site: Site, node: str | None = None) -> tuple[str, tuple[Site, ...]] | None:
        """The generated kernel that computes an op, and the other program lines fused into it: (kernel, sites). By
        torch's kernel -> node map where it has one (forward graphs), else (backward graphs, which it does not map) a
        kernel named after the op whose lines hold the op's line."""
        if site.line is None:
            return None
        for graph in self.kernels:
            for k in graph:
                if k.extern or site.line not in k.line_numbers:
                    continue
                if (node is not None and node in k.nodes) or (not k.nodes and site.name in k.name):
                    others = tuple(
                        self.site(_kernel_op(k.name, s.line, self), s.line) for s in k.lines if s.line != site.line
                    )
                    return k.name, others
        return None

    def text(self, line: int | None) -> str:
        return self.lines[line - 1].strip() if line is not None and 0 < line <= len(self.lines) else ""

    def site(self, op: str, line: int | None) -> Site:
        return Site(op, line if self.text(line) else None, self.text(line))

    def node(self, name: str, number: int | None = None) -> Site | None:
        """The lowered node called `name` (the bisector's debug info for a lowering), on its line. Several graphs may
        each have one of that name: the bisector counts lowerings across graphs in compile order, so the one whose
        position in that count is `number` wins, else the first."""
        found: list[tuple[int, NodeOrigin]] = []
        position = 0
        for graph in self.nodes:
            for n in graph:
                if n.op == "getitem":
                    continue
                if n.name == name:
                    found.append((position, n))
                position += 1
        if not found:
            return None
        exact = [n for p, n in found if p == number]
        n = (exact or [found[0][1]])[0]
        return self.site(n.op, n.line if n.line is not None else self._line_of_made(n))

    def _line_of_made(self, node: NodeOrigin) -> int | None:
        """A node a graph pass made has no stack trace: it takes the line of the node of the same op it was made
        from, the nearest one before it in its graph (`slice_tensor` after `slice_1` on line 10), else the line of
        the first node after it that uses its result (an attention rewritten into SDPA: the `getitem` of its
        output keeps the user's line)."""
        for graph in self.nodes:
            if node in graph:
                at = graph.index(node)
                same = [n for n in graph[:at] if n.line is not None and base_name(n.op) == base_name(node.op)]
                if same:
                    return same[-1].line
                after = [n for n in graph[at + 1 :] if n.line is not None]
                return after[0].line if after else None
        return None

    def made_by_pattern(self) -> tuple[Site, ...]:
        """Lowered nodes a pattern rewrite puts in place of the user's ops: fused attention (SDPA) and `_fused` ops."""
        out = [
            self.site(n.op, n.line if n.line is not None else self._line_of_made(n))
            for graph in self.nodes
            for n in graph
            if "scaled_dot_product" in n.op or short_name(n.op).startswith("_fused")
        ]
        return tuple(dict.fromkeys(out))

    def folded(self) -> tuple[Site, ...]:
        """The user's ops that take a constant-valued tensor made on the same line (`x + torch.zeros_like(x)`):
        what a constant-folding pass rewrites."""
        makers = {"zeros_like", "ones_like", "full_like", "zeros", "ones", "full", "empty_like"}
        out = [
            self.site(next(c for c in s.calls if c not in makers), s.line)
            for s in self.statements
            if makers & set(s.calls) and any(c not in makers for c in s.calls)
        ]
        return tuple(dict.fromkeys(out))

    def in_place_nodes(self) -> tuple[Site, ...]:
        """The in-place ops of the lowered graphs (a reinplacing pass made them), write-backs to inputs left out."""
        out = [
            self.site(n.op, n.line if n.line is not None else self._line_of_made(n))
            for graph in self.nodes
            for n in graph
            if short_name(n.op).endswith("_") and base_name(n.op) != "copy"
        ]
        return tuple(dict.fromkeys(out))

    def op_sites(self, op: str) -> tuple[Site, ...]:
        """Every line on which an op of this base name was lowered or called (a decomposed op is gone from the lowered
        graph; Dynamo's graph still calls it by its torch name)."""
        want = base_name(op)
        found: dict[int, Site] = {}
        for graph in self.nodes:
            for n in graph:
                if n.line is not None and base_name(n.op) == want and n.line not in found:
                    found[n.line] = self.site(n.op, n.line)
        for s in self.statements:
            if any(base_name(c) == want for c in s.calls) and s.line not in found:
                found[s.line] = self.site(next(c for c in s.calls if base_name(c) == want), s.line)
        return tuple(found[k] for k in sorted(found))

    def writers(self, parameter: str) -> tuple[Site, ...]:
        """The statements that write a graph input in place, in program order, each with the writing op."""
        out: list[Site] = []
        for s in self.statements:
            if parameter in s.writes:
                op = next((c for c in reversed(s.calls) if c == "setitem" or c.endswith("_")), "setitem")
                out.append(self.site(op, s.line))
        return tuple(dict.fromkeys(out))

    def in_place(self) -> tuple[Site, ...]:
        """Every in-place write the program makes in the compiled region (to inputs or to its own tensors)."""
        out = [
            self.site(c, s.line)
            for s in self.statements
            for c in s.calls
            if c == "setitem" or (c.endswith("_") and not c.startswith("_"))
        ]
        return tuple(dict.fromkeys(out))

    def through_view(self, site: Site) -> Site:
        """A view (a slice, a select, a reshape) computes no value: its lowering only decides where the op using it
        reads or writes. For a view on a program line, the op the user wrote there: the line's in-place write
        (`ids[:, 1:3] = 0` is a setitem through a slice), else its first call that is not a view; the view itself
        where the line records none."""
        if base_name(site.op) not in _PLUMBING or site.line is None:
            return site
        calls = [c for s in self.statements if s.line == site.line for c in s.calls]
        writes = [c for c in calls if c == "setitem" or (c.endswith("_") and not c.startswith("_"))]
        real = [c for c in calls if base_name(c) not in _PLUMBING]
        chosen = writes[-1:] or real[:1]
        return self.site(chosen[0], site.line) if chosen else site

    def extern(self, site: Site) -> bool:
        """Whether Inductor runs the op as a library call (extern_kernels.convolution, an ATen fallback): eager's own
        kernel, so it computes eager's values on whatever layout it is given."""
        return any(k.extern and site.name in k.name for graph in self.kernels for k in graph)

    def feeding(self, site: Site) -> Site | None:
        """The op computed last before `site` in its lowered graph on another program line, views left out: what
        writes the input of an op that reads it (a library call's operand). On that line, the user's own call."""
        for graph in self.nodes:
            at = next(
                (i for i, n in enumerate(graph) if n.line == site.line and base_name(n.op) == base_name(site.op)), None
            )
            if at is None:
                continue
            for n in reversed(graph[:at]):
                if n.line is not None and n.line != site.line and base_name(n.op) not in _PLUMBING:
                    calls = [c for s in self.statements if s.line == n.line for c in s.calls]
                    real = [c for c in calls if base_name(c) not in _PLUMBING]
                    return self.site(real[0] if real else n.op, n.line)
        return None

    def parameter(self, leaf: str) -> str | None:
        """`input args[1]` -> the entry point's second parameter's name (`src`); `input kwargs['x']` -> `x`."""
        m = re.match(r"^input args\[(\d+)\]", leaf)
        if m:
            i = int(m.group(1))
            return self.parameters[i] if i < len(self.parameters) else None
        m = re.match(r"^input kwargs\[['\"](\w+)['\"]\]", leaf)
        return m.group(1) if m else None

    def user_ops(self, sites: Iterable[Site]) -> tuple[Site, ...]:
        """The sites that are ops a user wrote: plumbing (views, casts, getitem) only when nothing else is left."""
        sites = tuple(sites)
        real = tuple(s for s in sites if base_name(s.op) not in _PLUMBING)
        return real or sites


def _kernel_op(kernel: str, line: int, sites: ProgramSites) -> str:
    """What a fused kernel computes on one of its lines: the user's call there (Dynamo's graph), else the line."""
    calls = [c for s in sites.statements if s.line == line for c in s.calls]
    named = [c for c in calls if c in kernel]
    return (named or calls or [f"line {line}"])[0]


def _statements(graph: str, program: Sequence[str]) -> list[Statement]:
    out: list[Statement] = []
    line: int | None = None
    code = ""
    calls: list[str] = []
    writes: list[str] = []

    def flush() -> None:
        if line is not None and (calls or writes):
            out.append(Statement(line, code, tuple(calls), tuple(dict.fromkeys(writes))))

    for text in graph.splitlines():
        m = _COMMENT.match(text)
        if m:
            flush()
            number = int(m["line"])
            ok = 0 < number <= len(program) and program[number - 1].strip() == m["code"].strip()
            line, code, calls, writes = (number if ok else None), m["code"].strip(), [], []
            continue
        if line is None or not text.startswith("        ") or text.strip().startswith(("return", "#")):
            continue
        for part in text.strip().split(";  "):
            _read_statement(part.strip(), calls, writes)
    flush()
    return out


_AUGMENTED = re.compile(r"^(?P<target>[A-Za-z_]\w*)(?:\[[^\]]*\])? (?P<op>[-+*/@]|//)= ")
_IN_PLACE = {"+": "add_", "-": "sub_", "*": "mul_", "/": "div_", "//": "floor_divide_", "@": "matmul_"}


def _read_statement(part: str, calls: list[str], writes: list[str]) -> None:
    augmented = _AUGMENTED.match(part)
    if augmented:  # Dynamo prints `h += h` as it was written: an in-place op on `h`
        calls.append(_IN_PLACE[augmented["op"]])
        if augmented["target"].startswith("l_"):
            writes.append(_placeholder(augmented["target"]))
        return
    lhs, _, rhs = part.partition(" = ")
    if not rhs:
        return
    target = lhs.split(":")[0].strip()
    subscript = re.match(r"^(l_\w+_)\[", target)
    if subscript:  # `l_dst_[...] = value`: an in-place write through indexing
        calls.append("setitem")
        writes.append(_placeholder(subscript.group(1)))
        return
    if rhs.strip().endswith("= None") or re.fullmatch(r"[\w\s=]+", rhs.strip()):
        return  # `x = y = None` bookkeeping
    for m in _METHOD.finditer(rhs):
        if m["receiver"] in _MODULES:  # `torch.remainder(`: a function, read below
            continue
        name = m["name"]
        calls.append(name)
        if name.endswith("_") and not name.startswith("_") and m["receiver"].startswith("l_"):
            writes.append(_placeholder(m["receiver"]))
    for m in _FUNCTION.finditer(rhs):
        name = m["name"]
        calls.append(name)
        first = rhs[m.end() :].split(",")[0].strip()
        if name.endswith("_") and not name.startswith("_") and first.startswith("l_"):
            writes.append(_placeholder(first))
    for symbol, name in _BINARY.items():
        if f" {symbol} " in rhs:
            calls.append(name)


def _placeholder(name: str) -> str:
    """Dynamo's local name for a graph input (`l_x_`, `l_self_buffers_cache_`) -> the program's name (`x`)."""
    inner = name[2:-1] if name.startswith("l_") and name.endswith("_") else name
    return inner


def entry_parameters(program: str) -> tuple[str, ...]:
    """The positional parameters of the callable a check calls: a `fn` function, the `forward` of the class `fn` is
    made from (`fn = Model().eval()`), or KernelBench's `Model.forward`. Parsed, never run."""
    try:
        body = ast.parse(program).body
    except (SyntaxError, ValueError):
        return ()
    classes = {n.name: n for n in body if isinstance(n, ast.ClassDef)}

    def forward(cls: ast.ClassDef) -> tuple[str, ...]:
        for item in cls.body:
            if isinstance(item, ast.FunctionDef) and item.name == "forward":
                return tuple(a.arg for a in item.args.args[1:])
        return ()

    for node in body:
        if isinstance(node, ast.FunctionDef) and node.name == "fn":
            return tuple(a.arg for a in node.args.args)
    for node in body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "fn" for t in node.targets):
            for sub in ast.walk(node.value):
                if isinstance(sub, ast.Call) and isinstance(sub.func, ast.Name) and sub.func.id in classes:
                    return forward(classes[sub.func.id])
    if "Model" in classes:
        return forward(classes["Model"])
    return ()
