"""The check's faithful reference, node by node: the ATen graph Inductor compiles, run eagerly with the program's
semantics and in float64 with eager's roundings and draws (engine/child/faithful.py says why the plain fp64
reference is not eager's program).

The graph is not the program: decompositions pin dtypes (a bf16 layer_norm becomes casts to fp32 and back, so a
plain float64 run of a bf16 graph fails at the next matmul: "mat1 and mat2 must have the same dtype") and
rewrite the user's ops (`t // 0.1` becomes `div.Tensor_mode(t, 0.1, "floor")`), while eager decides per op
whether it rounds a scalar (for remainder, yes; for div, no). So:

- a Python scalar is rounded wherever the program's eager rounded it, matched by the op the user called
  (the node's `original_aten`) and the value, in the eager run of the graph and in the float64 one alike;
- in float64, a floating cast a decomposition introduced is skipped, a user's cast to bf16/fp16 rounds (and
  the value goes on in float64), and factories make float64;
- a node that draws random numbers takes the eager run's draws, in float64.

Known gap: `x.to(y.dtype)` with a bf16 `y` is baked into the graph as a cast to bf16 and rounds here, while the
check's own reference (the program on float64 inputs) does not round there.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from typing import Any

import torch
import torch.fx

from engine.child.faithful import exact_float64
from engine.judge.witness import ScalarRounding

_LOW = (torch.bfloat16, torch.float16)
_FLOATING = (torch.bfloat16, torch.float16, torch.float32, torch.float64)
_USER_CASTS = ("aten._to_copy", "aten.to.", "aten.type_as", "aten._autocast_to")
_CONVERT = torch.ops.prims.convert_element_type.default
_TO_COPY = torch.ops.aten._to_copy.default


class _Graph(torch.fx.Interpreter):
    """Runs a graph recording every node's value; `fp64` runs it as the faithful float64 reference."""

    def __init__(
        self,
        gm: Any,
        roundings: dict[tuple[str, float], float],
        fp64: bool,
        draws: dict[str, Any] | None = None,
        keep: Collection[str] | None = None,
        given: Mapping[str, Any] | None = None,
    ) -> None:
        super().__init__(gm)
        self.roundings, self.fp64, self.draws, self.keep = roundings, fp64, draws or {}, keep
        self.given = given or {}
        self.values: dict[str, Any] = {}
        self.rounded: list[str] = []
        self.drew: set[str] = set()  # random-tagged nodes that advanced a generator (attention with p=0 does not)
        self._node: Any = None

    def run_node(self, n: Any) -> Any:
        self._node = n
        value = super().run_node(n)
        if self.keep is None or n.name in self.keep:
            self.values[n.name] = value
        given = self.given.get(n.name)
        if given is not None and isinstance(value, torch.Tensor):
            return _like(given, value)  # what comes after starts from the given value, not from this run's
        return value

    def call_function(self, target: Any, args: Any, kwargs: Any) -> Any:
        n = self._node
        original = str(n.meta.get("original_aten", target))
        args = tuple(self._round(a, original) for a in args)
        kwargs = {k: self._round(v, original) for k, v in kwargs.items()}
        if self.fp64:
            # inputs arrive in their own dtype and are cast as an op uses them (a float64 copy of every weight at
            # once would be 4x a bf16 model); everything computed here is float64 already
            args, kwargs = _to_fp64((args, kwargs))
            if torch.Tag.nondeterministic_seeded in getattr(target, "tags", ()) and n.name in self.draws:
                return _to_fp64(self.draws[n.name])
            if target in (_CONVERT, _TO_COPY):
                cast = _widened_cast(target, args, kwargs, original)
                if cast is not None:
                    return cast
            if isinstance(kwargs.get("dtype"), torch.dtype) and kwargs["dtype"] in _FLOATING:
                kwargs = {**kwargs, "dtype": torch.float64}
        if torch.Tag.nondeterministic_seeded in getattr(target, "tags", ()):
            before = torch.default_generator.get_state()
            value = target(*args, **kwargs)
            if not torch.equal(before, torch.default_generator.get_state()) or n.name in self.draws:
                self.drew.add(n.name)
            return value
        return target(*args, **kwargs)

    def _round(self, value: Any, original: str) -> Any:
        if isinstance(value, float) and (original, value) in self.roundings:
            self.rounded.append(f"{value:g} -> {self.roundings[original, value]!r} in {original}")
            return self.roundings[original, value]
        return value


def _widened_cast(target: Any, args: Any, kwargs: Any, original: str) -> Any:
    """A floating cast in the float64 run: a user's cast to bf16/fp16 rounds and goes on in float64; any other
    stays float64."""
    x = args[0]
    dtype = args[1] if target is _CONVERT else kwargs.get("dtype")
    if not isinstance(x, torch.Tensor) or not x.is_floating_point() or dtype not in _FLOATING:
        return None
    if dtype in _LOW and original.startswith(_USER_CASTS):
        return x.to(dtype).to(torch.float64)
    return x.to(torch.float64).clone() if target is _TO_COPY else x.to(torch.float64)


def _to_fp64(value: Any) -> Any:
    if isinstance(value, torch.Tensor) and value.is_floating_point():
        return value.to(torch.float64)
    if isinstance(value, (tuple, list)):
        return type(value)(_to_fp64(v) for v in value)
    if isinstance(value, dict):
        return {k: _to_fp64(v) for k, v in value.items()}
    return value


def run(
    gm: Any,
    inputs: Sequence[Any],
    roundings: Sequence[ScalarRounding],
    keep: Collection[str] | None = None,
    fp64: bool = True,
    drew: set[str] | None = None,
    given: Mapping[str, Any] | None = None,
    eager: bool = True,
) -> tuple[dict[str, Any], dict[str, Any], list[str]]:
    """(eager value of every node, its faithful float64 reference, the scalars rounded): the graph on `inputs`.

    `keep`: only these nodes' values are kept (the rest are freed once used, as torch.fx.Interpreter frees them);
    `fp64=False`: no float64 run (its dict is empty); `drew` receives the random nodes that drew in the eager run;
    `given`: node name -> a value that replaces the node's own once it is computed and kept, in both runs, so each
    such node is computed from the given values before it (what one kernel does with what the kernels before it
    stored); `eager=False`: the float64 run alone (its draws are its own: for a float32 twin of what no draw feeds).
    Inputs are not copied unless the graph writes them."""
    table = {(r.op, float(r.value)): float(r.rounded) for r in roundings}
    written = written_inputs(gm)
    values: dict[str, Any] = {}
    rounded: list[str] = []
    drawn: dict[str, Any] = {}
    with torch.no_grad():
        if eager:
            draws = {
                n.name for n in gm.graph.nodes if torch.Tag.nondeterministic_seeded in getattr(n.target, "tags", ())
            }
            run = _Graph(gm, table, fp64=False, keep=None if keep is None else {*keep, *draws}, given=given)
            run.run(*[x.clone() if i in written else x for i, x in enumerate(inputs)])
            drawn = {name: run.values[name] for name in draws if name in run.values}
            if drew is not None:
                drew.update(run.drew)
            values = run.values if keep is None else {name: v for name, v in run.values.items() if name in keep}
            rounded = run.rounded
        if not fp64:
            return values, {}, rounded
        reference = _Graph(gm, table, fp64=True, draws=drawn, keep=keep, given=given)
        with exact_float64():  # remainder's zeros with the divisor's sign, as in the check's own reference
            reference.run(*[_to_fp64(x.detach()).clone() if i in written else x for i, x in enumerate(inputs)])
    return values, reference.values, rounded or reference.rounded


def _like(given: torch.Tensor, value: torch.Tensor) -> torch.Tensor:
    """`given`'s values with `value`'s shape, strides and dtype (a stored buffer may be laid out otherwise)."""
    out = torch.empty_strided(value.shape, value.stride(), dtype=value.dtype, device=value.device)
    return out.copy_(given.reshape(value.shape))


def written_inputs(gm: Any) -> set[int]:
    """Positions of the inputs some node writes in place: those alone are copied before a run."""
    placeholders = {n: i for i, n in enumerate(n for n in gm.graph.nodes if n.op == "placeholder")}
    found: set[int] = set()
    for node in gm.graph.nodes:
        schema = getattr(node.target, "_schema", None)
        if node.op != "call_function" or schema is None or not schema.is_mutable:
            continue
        for argument, value in zip(schema.arguments, node.args, strict=False):
            if argument.alias_info is not None and argument.alias_info.is_write and value in placeholders:
                found.add(placeholders[value])
    return found
