"""The evidence a mechanism verdict needs, and the sentences that name it.

A difference that vanishes when the check is compiled again under a flag is not yet explained: each flag
changes code generation beyond its purpose (under `emulate_precision_casts`, bf16 `x // 0.1` differs from
eager in 3,475 of 65,536 elements instead of 579 at the default, torch 2.13 CPU). So a mechanism is named
only with evidence of it in the program itself:

- `rng` needs a random draw: an op torch tags `nondeterministic_seeded` that advanced a generator in eager's
  run (engine/child/faithful.py records them). RANDOM_OPS is that tag's list, by op name, for readers that see
  calls but not ops (the minimizer reads the captured Dynamo graph); a test holds it equal to torch's tags.
- `precision-cast` needs a bf16/fp16 value that eager rounds and Inductor may keep in fp32: a low-precision
  node of the captured Dynamo graph consumed by an elementwise or reduction op, which Inductor fuses into the
  same kernel (pointwise fusion, the CSE of a cast pair: torch/_inductor/lowering.py make_pointwise,
  codegen/cpp.py to_dtype). `round_trips` names those nodes with their program lines. Where a library call
  hides them (`F.feature_alpha_dropout` is one node of the Dynamo graph, six bf16 ATen ops in eager), the
  faithful trace's view of eager's ATen ops is the evidence: a pointwise op's bf16/fp16 result that another
  pointwise or reduction op uses (`aten_round_trip_evidence`).

Without evidence the leaf keeps its verdict and the sentence says "vanishes under X (which changes code
generation)". Pure (text in, text out; no torch): the minimizer imports this too.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Sequence
from dataclasses import dataclass

# ATen ops tagged torch.Tag.nondeterministic_seeded (torch 2.13; tests/test_mechanisms.py compares with torch's tags)
RANDOM_OPS = frozenset(
    {
        "_cudnn_attention_backward",
        "_cudnn_attention_forward",
        "_cudnn_init_dropout_state",
        "_cudnn_rnn",
        "_efficient_attention_forward",
        "_fill_mem_eff_dropout_mask_",
        "_flash_attention_forward",
        "_flash_attention_forward_no_dropout_inplace",
        "_fused_dropout",
        "_fused_sdp_choice",
        "_lstm_mps",
        "_nested_tensor_softmax_with_shape",
        "_sample_dirichlet",
        "_scaled_dot_product_attention_math",
        "_scaled_dot_product_attention_math_for_mps",
        "_scaled_dot_product_cudnn_attention",
        "_scaled_dot_product_cudnn_attention_backward",
        "_scaled_dot_product_efficient_attention",
        "_scaled_dot_product_efficient_attention_backward",
        "_scaled_dot_product_flash_attention",
        "_scaled_dot_product_flash_attention_for_cpu",
        "_scaled_dot_product_fused_attention_overrideable",
        "_standard_gamma",
        "_triton_scaled_dot_attention",
        "alpha_dropout",
        "alpha_dropout_",
        "bernoulli",
        "bernoulli_",
        "binomial",
        "cauchy",
        "cauchy_",
        "dropout",
        "dropout_",
        "exponential",
        "exponential_",
        "feature_alpha_dropout",
        "feature_alpha_dropout_",
        "feature_dropout",
        "feature_dropout_",
        "geometric",
        "geometric_",
        "gru",
        "log_normal",
        "log_normal_",
        "lstm",
        "miopen_rnn",
        "multinomial",
        "native_dropout",
        "normal",
        "normal_",
        "normal_functional",
        "poisson",
        "rand",
        "rand_like",
        "randint",
        "randint_like",
        "randn",
        "randn_like",
        "random",
        "random_",
        "randperm",
        "rnn_relu",
        "rnn_tanh",
        "rrelu",
        "rrelu_",
        "rrelu_with_noise",
        "rrelu_with_noise_",
        "rrelu_with_noise_functional",
        "scaled_dot_product_attention",
        "uniform",
        "uniform_",
    }
)

# Torch-level calls (as a Dynamo graph prints them: functions, methods, torch._C._nn) that Inductor computes
# inside a fused kernel from their operands' loads: elementwise ops, casts, and the reductions a pointwise
# producer fuses into. A low-precision operand of one of these need not be rounded (tests hold each name to an
# ATen op tagged pointwise or a reduction).
FUSED_CALLS = frozenset(
    {
        "abs",
        "acos",
        "acosh",
        "add",
        "addcdiv",
        "addcmul",
        "amax",
        "amin",
        "asin",
        "asinh",
        "atan",
        "atan2",
        "atanh",
        "bfloat16",
        "ceil",
        "clamp",
        "clamp_max",
        "clamp_min",
        "cos",
        "cosh",
        "div",
        "double",
        "elu",
        "erf",
        "erfc",
        "erfinv",
        "exp",
        "exp2",
        "expm1",
        "float",
        "floor",
        "floor_divide",
        "fmod",
        "gelu",
        "half",
        "hardsigmoid",
        "hardswish",
        "hardtanh",
        "leaky_relu",
        "lerp",
        "log",
        "log10",
        "log1p",
        "log2",
        "log_softmax",
        "logsumexp",
        "maximum",
        "mean",
        "minimum",
        "mish",
        "mul",
        "neg",
        "pow",
        "reciprocal",
        "relu",
        "remainder",
        "round",
        "rsqrt",
        "sigmoid",
        "sign",
        "silu",
        "sin",
        "sinh",
        "softmax",
        "softplus",
        "sqrt",
        "square",
        "sub",
        "sum",
        "tan",
        "tanh",
        "to",
        "trunc",
        "type_as",
        "var",
        "where",
    }
)
_LOW = {"bf16": "bfloat16", "f16": "float16"}
_NODE = re.compile(
    r'^\s+(?P<name>\w+): "(?P<dtype>\w+)\[[^"]*" = (?P<expr>[^;]*)'
)  # then `;  x = y = None` (freed names)
_FRAME = re.compile(r"^\s+# File: (?P<where>.+?:\d+) in [^,]+, code: (?P<code>.*)$")


@dataclass(frozen=True)
class RoundTrip:
    """A bf16/fp16 value of the program that eager rounds and a fused kernel may keep in fp32."""

    node: str  # the Dynamo graph's node, e.g. "add"
    dtype: str  # "bfloat16" or "float16"
    consumer: str  # the node that uses it inside the same kernel
    where: str  # "file:line" of the program line that computes it ("" when torch recorded none)
    code: str  # that line's text

    def describe(self) -> str:
        at = f" at {self.where} (`{self.code.strip()}`)" if self.where else ""
        return f"`{self.node}` ({self.dtype}{at}) is rounded by eager before `{self.consumer}` uses it"


def round_trips(fx_graphs: Sequence[str]) -> tuple[RoundTrip, ...]:
    """The low-precision nodes of the captured Dynamo graphs that an elementwise or reduction op consumes."""
    found: list[RoundTrip] = []
    for graph in fx_graphs:
        low: dict[str, tuple[str, str, str]] = {}  # node -> (dtype, where, code)
        where = code = ""
        for line in graph.splitlines():
            frame = _FRAME.match(line)
            if frame:
                where, code = frame["where"], frame["code"]
                continue
            node = _NODE.match(line)
            if not node:
                continue
            consumer = _consumed(node["expr"], low)
            if consumer is not None:
                dtype, w, c = low.pop(consumer)  # one round trip per producer is enough to name it
                found.append(RoundTrip(consumer, dtype, node["name"], w, c))
            if node["dtype"] in _LOW:
                low[node["name"]] = (_LOW[node["dtype"]], where, code)
    return tuple(found)


def _consumed(expr: str, low: dict[str, tuple[str, str, str]]) -> str | None:
    """The low-precision node this expression computes from inside a fused kernel, if any."""
    try:
        tree = ast.parse(expr, mode="eval").body
    except SyntaxError:
        return None
    if isinstance(tree, ast.Call):
        func = tree.func
        name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
        if name not in FUSED_CALLS:
            return None
        operands = [*tree.args, *(k.value for k in tree.keywords)]
        if isinstance(func, ast.Attribute) and not (
            isinstance(func.value, ast.Name) and func.value.id in ("torch", "F")
        ):
            operands.append(func.value)  # a method: its object is an operand
    elif isinstance(tree, (ast.BinOp, ast.UnaryOp, ast.Compare)):
        operands = [tree]
    else:
        return None
    for operand in operands:
        for n in ast.walk(operand):
            if isinstance(n, ast.Name) and n.id in low:
                return n.id
    return None


def precision_cast_evidence(trips: Sequence[RoundTrip]) -> str:
    """The clause that names the evidence (at most two nodes, and how many more)."""
    shown = "; ".join(t.describe() for t in trips[:2])
    more = f" (and {len(trips) - 2} more such value(s))" if len(trips) > 2 else ""
    return f"{shown}{more}, and a fused kernel keeps it in fp32"


def aten_round_trip_evidence(pairs: Sequence[tuple[str, str]]) -> str:
    """The clause that names eager's roundings between ATen ops, where the program's own graph shows none."""
    shown = "; ".join(f"{dtype} between {pair}" for pair, dtype in pairs[:2])
    more = f" (and {len(pairs) - 2} more)" if len(pairs) > 2 else ""
    return f"inside a library call eager rounds to {shown}{more}, and a fused kernel keeps it in fp32"


def random_evidence(ops: Sequence[str]) -> str:
    """The clause that names the draws: the ops that advanced a generator in eager's run."""
    return f"eager drew random numbers in {', '.join(ops[:4])}{' and more' if len(ops) > 4 else ''}"


def unexplained(flags: str, missing: str) -> str:
    """The clause for a difference that vanishes under a flag without evidence of its mechanism."""
    return f"vanishes under {flags} (which changes code generation), but {missing}, so no mechanism is named"
