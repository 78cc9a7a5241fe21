"""What a check's captured Dynamo graph says about *why* a program may diverge, read without running anything.

Every check captures the Dynamo graph of the compiled region (also on a cache hit), so these facts cost
no extra run: which calls draw random numbers (a divergence there is the random stream, not a kernel),
which ops ran in training mode (`dropout(..., True, ...)`, `batch_norm(..., True, ...)`: the model's
eval state), whether the region turned gradients off (its no-grad state), whether it computes in a low
precision (where `emulate_precision_casts` can explain a difference), and which torch ops it calls (for
an issue title that names ops, never a constructor or a dunder).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Sequence
from dataclasses import dataclass

from engine.judge.mechanisms import RANDOM_OPS

# Calls that draw from a random stream are the engine's list (ops torch tags nondeterministic_seeded, the tag the
# check's own rng evidence reads), matched by name against the calls of the printed graph; the ones whose draw
# depends on an argument are judged by it: the `training` flag below, and attention's dropout_p.
# ops whose `training` flag decides what they compute: (positional index of the flag, whether training draws random
# numbers)
TRAINING_FLAG = {
    "dropout": (2, True),
    "alpha_dropout": (2, True),
    "feature_alpha_dropout": (2, True),
    "dropout1d": (2, True),
    "dropout2d": (2, True),
    "dropout3d": (2, True),
    "rrelu": (3, True),
    "batch_norm": (5, False),
}
_OPERATORS = {
    ast.Add: "add",
    ast.Sub: "sub",
    ast.Mult: "mul",
    ast.Div: "div",
    ast.FloorDiv: "floor_divide",
    ast.Mod: "remainder",
    ast.Pow: "pow",
    ast.MatMult: "matmul",
    ast.BitAnd: "bitwise_and",
    ast.BitOr: "bitwise_or",
    ast.BitXor: "bitwise_xor",
    ast.LShift: "bitwise_left_shift",
    ast.RShift: "bitwise_right_shift",
}
# calls that move or reinterpret data rather than compute: left out of titles
_PLUMBING = frozenset(
    {
        "view",
        "reshape",
        "contiguous",
        "size",
        "dim",
        "expand",
        "squeeze",
        "unsqueeze",
        "flatten",
        "unflatten",
        "getitem",
        "clone",
        "detach",
        "to",
        "float",
        "long",
        "int",
        "half",
        "double",
        "bfloat16",
        "type_as",
        "chunk",
        "split",
        "unbind",
        "device",
        "arange",
        "zeros",
        "ones",
        "full",
        "empty",
        "tensor",
        "zeros_like",
        "ones_like",
        "empty_like",
        "full_like",
        "numel",
        "stride",
        "item",
        "tolist",
        "slice",
        "Ellipsis",
    }
)
_LOW_PRECISION = re.compile(r'"(?:bf16|f16)\[|torch\.(?:bfloat16|float16|half)\b')
_NO_GRAD = re.compile(r"set_grad_enabled\(False")


@dataclass(frozen=True)
class GraphFacts:
    random_ops: frozenset[str] = frozenset()  # calls that draw random numbers in the compiled region
    training_ops: frozenset[str] = frozenset()  # ops that ran in training mode: the eval state
    no_grad: bool = False  # the region turns gradients off itself
    low_precision: bool = False  # it computes in bf16 or fp16 somewhere
    ops: tuple[str, ...] = ()  # the torch ops it calls, in graph order, plumbing left out
    graphs: int = 0

    def state(self) -> str:
        """The eval/no-grad state in words."""
        mode = f"training mode ({', '.join(sorted(self.training_ops))})" if self.training_ops else "eval mode"
        rng = f", draws random numbers ({', '.join(sorted(self.random_ops))})" if self.random_ops else ", no random ops"
        return mode + (", no-grad" if self.no_grad else "") + rng


def forward_of(graph: str) -> ast.FunctionDef | None:
    """The `forward` of a printed GraphModule (as TORCH_LOGS prints it); None if it cannot be read."""
    start = graph.find("class GraphModule")
    if start < 0:
        return None
    lines = graph[start:].splitlines()
    kept = [lines[0]]
    for line in lines[1:]:  # the class, without the log lines that may follow it
        if line and not line.startswith((" ", "\t")):
            break
        kept.append(line)
    try:
        module = ast.parse("\n".join(kept) + "\n")
    except SyntaxError:
        return None
    return next((n for n in ast.walk(module) if isinstance(n, ast.FunctionDef) and n.name == "forward"), None)


def call_name(call: ast.Call) -> str:
    """`torch.nn.functional.dropout(...)` -> "dropout", `x.softmax(...)` -> "softmax", `torch._C._nn.linear` ->
    "linear"."""
    func = call.func
    if isinstance(func, ast.Attribute):
        return func.attr
    if isinstance(func, ast.Name):
        return func.id
    return ""


def _training(call: ast.Call, index: int) -> bool:
    flag = next((k.value for k in call.keywords if k.arg == "training"), None)
    if flag is None and len(call.args) > index:
        flag = call.args[index]
    return isinstance(flag, ast.Constant) and flag.value is True


def _attention_dropout(call: ast.Call) -> bool:
    """scaled_dot_product_attention draws only with a dropout probability (its fifth argument, dropout_p)."""
    p = next((k.value for k in call.keywords if k.arg == "dropout_p"), call.args[4] if len(call.args) > 4 else None)
    return p is not None and not (isinstance(p, ast.Constant) and not p.value)


def read_graphs(graphs: Sequence[str]) -> GraphFacts:
    """The facts above, over every graph of a check."""
    random_ops: set[str] = set()
    training_ops: set[str] = set()
    ops: list[str] = []
    for graph in graphs:
        forward = forward_of(graph)
        if forward is None:
            continue
        for node in (n for stmt in forward.body for n in ast.walk(stmt)):  # statement by statement: graph order
            if isinstance(node, ast.Call):
                name = call_name(node)
                if (
                    name in RANDOM_OPS
                    and name not in TRAINING_FLAG
                    and (name != "scaled_dot_product_attention" or _attention_dropout(node))
                ):
                    random_ops.add(name)
                if name in TRAINING_FLAG and _training(node, TRAINING_FLAG[name][0]):
                    training_ops.add(name)
                    if TRAINING_FLAG[name][1]:
                        random_ops.add(name)
                if name and name not in _PLUMBING and not name.startswith("_"):
                    ops.append(name)
            elif isinstance(node, ast.BinOp) and type(node.op) in _OPERATORS:
                ops.append(_OPERATORS[type(node.op)])
    text = "\n".join(graphs)
    return GraphFacts(
        frozenset(random_ops),
        frozenset(training_ops),
        bool(_NO_GRAD.search(text)),
        bool(_LOW_PRECISION.search(text)),
        tuple(dict.fromkeys(ops)),
        len(graphs),
    )
