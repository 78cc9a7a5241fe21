"""The graph path: rewrite a program's compiled region as the straight-line torch code of its Dynamo graph.

Dynamo's FX graph (as the engine captures it) is already user-level torch code: `torch.div(l_a_, l_b_)`,
`l_x_ // 0.1`, `torch.nn.functional.layer_norm(...)`. Emitting it as `def fn(...)` flattens module
classes, config objects, helpers and Python control flow in one step. A module's parameters and
buffers, which Dynamo lifts into graph inputs, become explicit inputs drawn as seeded small tensors of
their shape and dtype (`torch.randn(32, 16)`), so the fp64 reference still casts them; the user's own
inputs keep their values. The node passes (`minimizer.passes.nodes`, which also hold the pass that
proposes this rewrite) then cut the straight-line code down, node by node: the readable, torch-level
counterpart of PyTorch's ATen-level fx minifier.

The rewrite is proposed only when it can be wired: one graph, whose user inputs are all parameters of
the entry point (`def fn`, or a `forward` whose parameters name them), in an fn + inputs or KernelBench
program. The oracle decides whether it still diverges the same way.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Sequence
from dataclasses import dataclass, replace

from minimizer.mechanism import forward_of
from minimizer.syntax import binds, fresh, tidy_tree, unparse

_PLACEHOLDER = re.compile(r"^[LG]_(?P<name>.+?)_$")
_ANNOTATION = re.compile(r"^(?P<dtype>[a-z]+\d*)\[(?P<shape>[^\]]*)\]")
_LIFTED = re.compile(r"(^|_)(modules|parameters|buffers)_")
_POSITIVE = re.compile(r"buffers_running_var_?$")  # BatchNorm's and InstanceNorm's running variance
# Dynamo's dtype codes, as torch spells them
DTYPES = {
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
    "c64": "complex64",
    "c128": "complex128",
}


@dataclass(frozen=True)
class TensorType:
    dtype: str  # torch's name: "float32", "int64", ...
    shape: tuple[int, ...]
    positive: bool = False  # a value that must be positive to mean anything: a norm's running variance

    def maker(self, requires_grad: bool = False) -> ast.expr:
        """A seeded, small tensor of this type: the shape of a parameter, not its values."""
        shape = ", ".join(str(s) for s in self.shape) or "()"
        if self.dtype in ("float32", "float64", "float16", "bfloat16"):
            dtype = "" if self.dtype == "float32" else f", dtype=torch.{self.dtype}"
            # a negative running variance makes batch_norm's output NaN on both sides: no divergence left to see
            text = f"torch.{'rand' if self.positive else 'randn'}({shape}{dtype})"
        elif self.dtype == "bool":
            text = f"torch.ones({shape}, dtype=torch.bool)"
        elif self.dtype.startswith(("int", "uint")):
            bound = max(self.shape[-1] if self.shape else 2, 2)
            text = (
                f"torch.randint(0, {bound}, ({shape},), dtype=torch.{self.dtype})"
                if self.shape
                else f"torch.tensor(0, dtype=torch.{self.dtype})"
            )
        else:
            text = f"torch.randn({shape}, dtype=torch.{self.dtype})"
        if requires_grad and self.dtype.startswith(("float", "bfloat")):
            text += ".requires_grad_()"
        return ast.parse(text, mode="eval").body


def tensor_type(annotation: str) -> TensorType | None:
    """`"f32[64, 32][32, 1]cpu"` -> float32 (64, 32); None for symbolic shapes and what is not a tensor."""
    m = _ANNOTATION.match(annotation)
    if m is None or m.group("dtype") not in DTYPES:
        return None
    try:
        shape = tuple(int(s) for s in m.group("shape").split(",") if s.strip())
    except ValueError:
        return None  # s0, s1: a dynamic dimension
    return TensorType(DTYPES[m.group("dtype")], shape)


def node_types(graphs: Sequence[str]) -> dict[str, TensorType]:
    """The tensor type of every named node of a graph (as Dynamo annotates it), by node name."""
    types: dict[str, TensorType] = {}
    for graph in graphs:
        forward = forward_of(graph)
        for stmt in forward.body if forward is not None else ():
            if (
                isinstance(stmt, ast.AnnAssign)
                and isinstance(stmt.target, ast.Name)
                and isinstance(stmt.annotation, ast.Constant)
            ):
                found = tensor_type(str(stmt.annotation.value))
                if found is not None:
                    types[stmt.target.id] = found
    return types


@dataclass(frozen=True)
class GraphFunction:
    function: ast.FunctionDef  # the graph as `def fn(<user inputs>, <lifted parameters>)`
    user: tuple[str, ...]  # the user's inputs, in the graph's order
    lifted: tuple[tuple[str, TensorType], ...]  # parameters and buffers, now explicit inputs


def _short(plain: str) -> str:
    """`self_modules_blocks_modules_0_modules_norm_parameters_weight` -> `blocks_0_norm_weight`."""
    name = plain[len("self_") :] if plain.startswith("self_") else plain
    return re.sub(r"\W", "_", _LIFTED.sub(r"\1", name)).strip("_") or "param"


def graph_to_function(graph: str, name: str = "fn") -> GraphFunction | None:
    """The forward of a printed GraphModule as a plain function; None if it cannot be read or typed."""
    forward = forward_of(graph)
    if forward is None:
        return None
    renames: dict[str, str] = {}
    user: list[str] = []
    lifted: list[tuple[str, TensorType]] = []
    taken = {n.id for n in ast.walk(forward) if isinstance(n, ast.Name)} | {"torch", "fn", "inputs"}
    for arg in forward.args.args[1:]:
        m = _PLACEHOLDER.match(arg.arg)
        plain = m.group("name") if m else arg.arg
        if plain.startswith("self_") or arg.arg.startswith("G_"):
            annotation = arg.annotation.value if isinstance(arg.annotation, ast.Constant) else ""
            typed = tensor_type(str(annotation))
            if typed is None:
                return None  # a lifted input we cannot make (a symbolic size, a non-tensor)
            if _POSITIVE.search(plain):
                typed = replace(typed, positive=True)
            short = _short(plain)
            while short in taken:
                short += "_"
            taken.add(short)
            renames[arg.arg] = short
            lifted.append((short, typed))
        else:
            renames[arg.arg] = re.sub(r"\W", "_", plain)
            user.append(renames[arg.arg])
    body, no_grad = _without_grad_switches(_plain_body(forward, renames))
    module = ast.Module(body=body, type_ignores=[])
    for node in ast.walk(module):
        if isinstance(node, ast.Name) and node.id in renames:
            node.id = renames[node.id]
        if isinstance(node, ast.Subscript):
            node.slice = _as_slice_syntax(node.slice)
    _printable(module)
    args = [ast.arg(n) for n in user] + [ast.arg(n) for n, _ in lifted]
    function = ast.FunctionDef(
        name=name,
        args=ast.arguments(posonlyargs=[], args=args, kwonlyargs=[], kw_defaults=[], defaults=[]),
        body=body or [ast.Pass()],
        decorator_list=[ast.parse("torch.no_grad()", mode="eval").body] if no_grad else [],
        returns=None,
        lineno=1,
    )
    return GraphFunction(function, tuple(user), tuple(lifted))


def _grad_switch(stmt: ast.stmt) -> bool | None:
    """`torch._C._set_grad_enabled(False)` (as an assignment or a bare call) -> False; None for any other
    statement."""
    value = stmt.value if isinstance(stmt, (ast.Assign, ast.Expr)) else None
    if (
        isinstance(value, ast.Call)
        and isinstance(value.func, ast.Attribute)
        and value.func.attr == "_set_grad_enabled"
        and len(value.args) == 1
        and isinstance(value.args[0], ast.Constant)
    ):
        return bool(value.args[0].value)
    return None


def _without_grad_switches(body: list[ast.stmt]) -> tuple[list[ast.stmt], bool]:
    """The grad switches of a region as Python a reader knows: a body without them and True when gradients are off
    for all its work (`with torch.no_grad():` around the call, an inference wrapper: the function is then written
    `@torch.no_grad()`); each switch-off ... switch-on pair inside the body (a `@torch.no_grad()` helper the forward
    calls) as a `with torch.no_grad():` block around the statements between them.

    The switches are statements whose value nothing reads, so dead-code removal would drop them and the region would
    run with gradients on (refused: another no-grad state). Only these shapes are folded; any other body is returned
    as it is.
    """
    switches = [(i, _grad_switch(s)) for i, s in enumerate(body) if _grad_switch(s) is not None]
    if not switches:
        return body, False
    if [on for _, on in switches] in ([False], [False, True]) and switches[0][0] == 0:
        if len(switches) == 1 or all(isinstance(s, ast.Return) for s in body[switches[1][0] + 1 :]):
            return [s for i, s in enumerate(body) if i not in {k for k, _ in switches}], True
    ons = [on for _, on in switches]
    if len(ons) % 2 or ons != [False, True] * (len(ons) // 2):
        return body, False
    folded: list[ast.stmt] = []
    done = 0
    for (off, _), (on, _) in zip(switches[::2], switches[1::2], strict=True):
        folded += body[done:off]
        inner = body[off + 1 : on] or [ast.Pass()]
        folded.append(ast.With(items=[ast.withitem(ast.parse("torch.no_grad()", mode="eval").body)], body=inner))
        done = on + 1
    return folded + body[done:], False


def _plain_body(forward: ast.FunctionDef, renames: dict[str, str]) -> list[ast.stmt]:
    """The forward's statements as plain Python: Dynamo's reference freeing dropped, placeholder aliases folded into
    `renames` (updated in place), annotated assignments plain, a one-element returned tuple unwrapped."""
    body: list[ast.stmt] = []
    for stmt in forward.body:
        if isinstance(stmt, ast.Assign) and isinstance(stmt.value, ast.Constant) and stmt.value.value is None:
            continue  # `x = y = None`: Dynamo freeing references early
        if (
            isinstance(stmt, ast.Assign)
            and len(stmt.targets) == 1
            and isinstance(stmt.targets[0], ast.Name)
            and isinstance(stmt.value, ast.Name)
            and stmt.value.id in renames
        ):
            renames[stmt.targets[0].id] = renames[stmt.value.id]  # `l_x_ = L_x_`: an alias of the placeholder
            continue
        if isinstance(stmt, ast.AnnAssign) and stmt.value is not None:
            stmt = ast.Assign(targets=[stmt.target], value=stmt.value, lineno=stmt.lineno)
        body.append(stmt)
    if (
        body
        and isinstance(body[-1], ast.Return)
        and isinstance(body[-1].value, ast.Tuple)
        and len(body[-1].value.elts) == 1
    ):
        body[-1].value = body[-1].value.elts[0]  # Dynamo returns a tuple; a single output was not one
    return body


# functions Dynamo records by their C binding (`torch._C._nn.X`) whose public name is `torch.nn.functional.X`
_PUBLIC_NN = frozenset(
    {
        "linear",
        "gelu",
        "silu",
        "elu",
        "softplus",
        "leaky_relu",
        "hardtanh",
        "pad",
        "log_sigmoid",
        "hardsigmoid",
        "hardswish",
    }
)


def _printable(tree: ast.AST) -> None:
    """What the graph prints as reprs, back to code: `device(type='cpu')`, `inf`, `nan`."""

    class Fix(ast.NodeTransformer):
        def visit_Attribute(self, node: ast.Attribute) -> ast.AST:
            self.generic_visit(node)
            # `torch._C._nn.linear`, as Dynamo records it, is `torch.nn.functional.linear` to a reader
            if node.attr in _PUBLIC_NN and ast.unparse(node.value) == "torch._C._nn":
                return ast.parse(f"torch.nn.functional.{node.attr}", mode="eval").body
            return node

        def visit_Call(self, node: ast.Call) -> ast.AST:
            self.generic_visit(node)
            if isinstance(node.func, ast.Name) and node.func.id == "device":
                args = [k.value for k in node.keywords if k.arg == "type"] + [
                    k.value for k in node.keywords if k.arg == "index"
                ]
                return ast.Call(
                    ast.Attribute(ast.Name("torch", ast.Load()), "device", ast.Load()), args + node.args, []
                )
            return node

        def visit_Name(self, node: ast.Name) -> ast.AST:
            if node.id in ("inf", "nan"):
                return ast.Call(ast.Name("float", ast.Load()), [ast.Constant(node.id)], [])
            return node

    Fix().visit(tree)


def _as_slice_syntax(index: ast.expr) -> ast.expr:
    """`(slice(None, None, None), slice(1, 7, None))`, as Dynamo prints an index, back to `:, 1:7`."""
    if isinstance(index, ast.Tuple):
        return ast.Tuple([_as_slice_syntax(e) for e in index.elts], ast.Load())
    if (
        isinstance(index, ast.Call)
        and isinstance(index.func, ast.Name)
        and index.func.id == "slice"
        and not index.keywords
        and len(index.args) == 3
    ):
        lower, upper, step = (None if isinstance(a, ast.Constant) and a.value is None else a for a in index.args)
        return ast.Slice(lower, upper, step)
    return index


def entry_parameters(tree: ast.Module, user: Sequence[str]) -> list[str] | None:
    """The positional parameters of the compiled entry point that names every user input: `def fn`, or a forward."""
    functions = [s for s in tree.body if isinstance(s, ast.FunctionDef) and s.name == "fn"]
    functions += [
        f
        for c in ast.walk(tree)
        if isinstance(c, ast.ClassDef)
        for f in c.body
        if isinstance(f, ast.FunctionDef) and f.name == "forward"
    ]
    for function in functions:
        params = [a.arg for a in function.args.posonlyargs + function.args.args]
        if function.name == "forward":
            params = params[1:]
        if set(user) <= set(params):
            return params
    return None


def _inputs_source(tree: ast.Module) -> tuple[list[ast.stmt], ast.expr] | None:
    """The statements that make the inputs, and the expression of the argument tuple, from `inputs` or `get_inputs`."""
    for stmt in tree.body:
        if (
            isinstance(stmt, ast.Assign)
            and any(isinstance(t, ast.Name) and t.id == "inputs" for t in stmt.targets)
            and not isinstance(stmt.value, ast.Name)
        ):
            return [], stmt.value
    for name in ("inputs", "get_inputs"):
        function = next(
            (s for s in tree.body if isinstance(s, ast.FunctionDef) and s.name == name and not s.args.args), None
        )
        if (
            function is not None
            and function.body
            and isinstance(function.body[-1], ast.Return)
            and function.body[-1].value is not None
        ):
            return list(function.body[:-1]), function.body[-1].value
    return None


def rewrite_with_graph(source: str, graphs: Sequence[str], requires_grad: bool = False) -> str | None:
    """The program with its entry point replaced by the graph's straight-line code; None when not wireable.

    `requires_grad` makes the explicit parameters require gradients, as module parameters do (so that
    AOTAutograd traces the same training graph).
    """
    if len(graphs) != 1:
        return None
    graph = graph_to_function(graphs[0])
    if graph is None:
        return None
    tree = fresh(source)
    bound = {n for s in tree.body for n in binds(s)}
    if not ({"fn", "inputs"} <= bound or {"Model", "get_inputs"} <= bound):
        return None
    # where no `def fn` or forward names the inputs (`fn = torch.erf`: Dynamo calls them args_0, args_1, ...),
    # the graph's order is the call's
    params = entry_parameters(tree, graph.user) or list(graph.user)
    made = _inputs_source(tree)
    if made is None:
        return None
    statements, expression = made
    order = sorted(graph.user, key=params.index)
    graph.function.args.args = [ast.arg(n) for n in order] + [ast.arg(n) for n, _ in graph.lifted]
    lifted = [t.maker(requires_grad) for _, t in graph.lifted]
    if (
        isinstance(expression, (ast.Tuple, ast.List))
        and len(expression.elts) <= len(params)
        and not any(isinstance(e, ast.Starred) for e in expression.elts)
    ):
        if any(params.index(u) >= len(expression.elts) for u in order):
            return None
        chosen: list[ast.expr] = [expression.elts[params.index(u)] for u in order]
    else:  # the argument tuple is computed: take the user's inputs from it by position
        statements = statements + [ast.Assign([ast.Name("_args", ast.Store())], expression, lineno=1)]
        chosen = [
            ast.Subscript(ast.Name("_args", ast.Load()), ast.Constant(params.index(u)), ast.Load()) for u in order
        ]
    inputs = ast.FunctionDef(
        name="inputs",
        args=ast.arguments(posonlyargs=[], args=[], kwonlyargs=[], kw_defaults=[], defaults=[]),
        body=statements + [ast.Return(ast.Tuple(chosen + lifted, ast.Load()))],
        decorator_list=[],
        returns=None,
        lineno=1,
    )
    entry = {"fn", "inputs", "Model", "get_inputs", "get_init_inputs"}
    kept = [s for s in tree.body if not (binds(s) & entry)]
    position = next((i for i, s in enumerate(tree.body) if binds(s) & entry), len(tree.body))
    before = [s for s in tree.body[:position] if s in kept]
    tree.body = before + [graph.function, inputs] + [s for s in kept if s not in before]
    tidy_tree(tree)  # dead helpers first: a dead `def load(): model = ...` must not keep `model.eval()` alive
    _drop_old_construction(tree)
    tidy_tree(
        tree
    )  # the module classes, config objects and helpers the graph replaced are dead now, and so are their imports
    return unparse(tree)


def _drop_old_construction(tree: ast.Module) -> None:
    """`model = Encoder(cfg)` / `model.eval()` built the old entry point: calls on a name nothing else reads go."""
    bound = {n for s in tree.body if isinstance(s, ast.Assign) for n in binds(s)}
    calls = {
        id(s): s.value.func.value.id
        for s in tree.body
        if isinstance(s, ast.Expr)
        and isinstance(s.value, ast.Call)
        and isinstance(s.value.func, ast.Attribute)
        and isinstance(s.value.func.value, ast.Name)
        and s.value.func.value.id in bound
    }
    rest = ast.Module(body=[s for s in tree.body if id(s) not in calls], type_ignores=[])
    read = {n.id for n in ast.walk(rest) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
    tree.body = [s for s in tree.body if calls.get(id(s), "") in ("",) or calls[id(s)] in read]
