"""A semantics-faithful fp64 reference: the program in float64, but with eager's roundings and random draws.

The plain fp64 reference models accuracy, not what eager computes. Two things eager does are part of the
program's meaning, not rounding error, and the plain reference skips both:
- **Python scalars rounded to a low-precision tensor's dtype.** `torch.fmod(x_bf16, 0.3)` divides by
  0.30078125 in eager (the scalar becomes a bf16 operand); the fp64 reference divides by 0.3, and Inductor,
  which keeps 0.3 in fp32, then looks *closer* to fp64 than eager, however far it jumps at the discontinuities.
- **Random draws.** A random op draws other numbers in float64 than in float32 (`rand_like` on CPU, every
  draw on CUDA), so a reference that draws its own is a different program.

How: an eager re-run (same seed, same state) under `EagerTrace`, a dispatch mode that watches every ATen
op. For each Python scalar meeting a bf16/fp16 operand it *asks eager* whether it rounds: it runs the op
again with the scalar pre-rounded to that dtype and with the dtype's next value; eager rounds (and it
matters) when the first gives eager's bits and the second does not. A pointwise op of one tensor is asked
on every finite value of the dtype; any other op on its own operands, where the next value must change
enough elements that not rounding would have shown EXPECTED_FLIPS differences. No table of ops: the
answer differs by op (on CPU, torch 2.13, eager rounds the scalar for add/sub/fmod/remainder/pow/clamp/
comparisons but not for mul/div/lerp/leaky_relu) and by device. A random op (tagged
`nondeterministic_seeded`) that advanced a generator keeps its output; one that did not (attention with
dropout_p=0 carries the tag too) is left alone. The fp64 run then goes under `FaithfulMode`, which rounds
the same scalars of the same ops (matched by op, argument and value, in call order) and returns eager's
draws, cast to float64, from the same random ops (matched by op and shape, in order; native_dropout's mask
is replayed and its scaling recomputed in float64).

Costs one eager re-run (no compile), a few extra calls of each low-precision op with a scalar, and one
fp64 re-run only when the trace found something to change.
"""

from __future__ import annotations

import contextlib
import functools
import math
from collections import defaultdict, deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import torch
from torch.overrides import TorchFunctionMode
from torch.utils._python_dispatch import TorchDispatchMode

from engine.judge.metrics import LOW_PRECISION, bitwise_equal
from engine.judge.witness import ScalarRounding as Rounding

_SCALAR_TYPES = {"Tensor", "number", "Optional[number]", "float", "Optional[float]"}
EXPECTED_FLIPS = 8  # differences that not rounding would have to show on an op's own operands (P(none) ~ e^-8)
Key = tuple[str, str, float]  # (op, argument name, the scalar as eager received it)

_SEQUENCES = {torch.arange, torch.linspace, torch.logspace}
_CASTS = {torch.ops.aten._to_copy.default, torch.ops.prims.convert_element_type.default}
# ATen ops whose output is memory as the allocator left it (engine/child/uninitialized.py judges what a program
# leaves unwritten); the trace notes them so that a call without one needs no poisoned re-runs
UNINITIALIZED_OPS = frozenset(
    {"empty", "empty_like", "empty_strided", "empty_permuted", "new_empty", "new_empty_strided"}
)


def uninitialized_op(op: Any) -> str | None:
    """The ATen name of an op (an OpOverload or an FX node's target) that returns uninitialized memory, else None."""
    packet = getattr(op, "overloadpacket", None)
    return str(packet) if packet is not None and packet.__name__ in UNINITIALIZED_OPS else None


class ExactSequences(TorchFunctionMode):
    """While active, `arange`, `linspace` and `logspace` asked for a floating dtype below float64 compute in float64.

    These factories make the values of a formula (start + i * step), and the dtype a program names is the
    precision it wants them in, not a computation to model: eager's bf16 arange gives 4096 for element 4,113
    of arange(10000), compiled the correctly rounded 4128. A reference that keeps the program's bf16 runs
    eager's own kernel, agrees with eager by construction and called every such difference compiled's fault.
    Everything else keeps the dtype it asks for (engine/child/fp64.py). It lives here, with the faithful
    reference, because minimizer/repro.py embeds this module: a repro's reference is the check's.
    """

    def __torch_function__(
        self, func: Any, types: Any, args: tuple[Any, ...] = (), kwargs: dict[str, Any] | None = None
    ) -> Any:
        kwargs = kwargs or {}
        dtype = kwargs.get("dtype")
        if func in _SEQUENCES and isinstance(dtype, torch.dtype) and dtype.is_floating_point and dtype.itemsize < 8:
            kwargs = {**kwargs, "dtype": torch.float64}
        return func(*args, **kwargs)


class DivisorSignedZeros(TorchFunctionMode):
    """While active, a zero that `remainder` (`%`, `__rmod__`, in place or not) gives takes the divisor's sign.

    `torch.remainder` is documented to give a result with the divisor's sign, as Python's `%` and NumPy do; eager's
    kernels give a zero result the dividend's sign instead (pytorch#193755, open: the sign fix-up after `fmod` is
    skipped for zeros). The float64 reference runs eager's kernel, so where the divisor is positive and the dividend
    negative (`remainder(-6., 2.)`) it sided with eager's -0.0 and called compiled's +0.0, Python's answer, a
    compile bug. Nonzero results already carry the divisor's sign and are left alone. Gradients pass through as
    remainder's do (one to the dividend). docs/oracle.md#the-sign-of-a-zero says why the reference follows the
    documentation and not eager's kernel.
    """

    def __torch_function__(
        self, func: Any, types: Any, args: tuple[Any, ...] = (), kwargs: dict[str, Any] | None = None
    ) -> Any:
        kwargs = kwargs or {}
        out = func(*args, **kwargs)
        divisor = _remainder_divisor(func, args, kwargs)
        if divisor is None or not isinstance(out, torch.Tensor) or not out.is_floating_point():
            return out
        schema = getattr(func, "_schema", None)
        name = getattr(getattr(func, "overloadpacket", func), "__name__", "")
        in_place = name.endswith("_") or name == "__imod__" or "out" in kwargs or bool(schema and schema.is_mutable)
        return _divisor_signed(out, divisor, in_place)


def _remainder_divisor(func: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """The divisor of a call of remainder in any of its spellings (a tensor or a number), else None."""
    packet = getattr(func, "overloadpacket", None)  # an ATen op called as such: torch.ops.aten.remainder.Tensor
    name = packet.__name__ if packet is not None else getattr(func, "__name__", "")
    if name == "__rmod__":  # `number % tensor`: the tensor is the divisor
        return args[0] if args else None
    if name in _REMAINDERS:
        return args[1] if len(args) > 1 else kwargs.get("other")
    return None


_REMAINDERS = frozenset({"remainder", "remainder_", "__mod__", "__imod__"})


class _SignedZeros(torch.autograd.Function):
    """`out` with its zeros replaced by `signed`'s, the gradient passed through unchanged (as remainder's own)."""

    @staticmethod
    def forward(ctx: Any, out: torch.Tensor, signed: torch.Tensor) -> torch.Tensor:
        return torch.where(out == 0, signed, out)

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[torch.Tensor, None]:
        return grad, None


def _divisor_signed(out: torch.Tensor, divisor: Any, in_place: bool) -> torch.Tensor:
    """remainder's result `out` with every zero given the divisor's sign (in place where the call wrote in place)."""
    if isinstance(divisor, torch.Tensor):
        signed = torch.zeros_like(out).copysign(divisor.detach().to(device=out.device, dtype=out.dtype))
    elif isinstance(divisor, (int, float)) and not isinstance(divisor, bool):
        signed = torch.full_like(out, math.copysign(0.0, divisor))
    else:
        return out
    if in_place:  # written in place or into `out=`: the tensor the program holds gets the sign
        if not out.requires_grad:
            with torch.no_grad():
                out.copy_(torch.where(out == 0, signed, out))
        return out
    if out.requires_grad:
        return _SignedZeros.apply(out, signed)
    return torch.where(out == 0, signed, out)


@contextlib.contextmanager
def exact_float64() -> Iterator[None]:
    """The float64 reference's corrections of eager's kernels where they give other than what the op specifies:
    float sequences computed in float64 (ExactSequences) and remainder's zeros with the divisor's sign
    (DivisorSignedZeros). Every float64 answer runs under it: the check's reference, its float32 twin, the inside
    stage's graph in float64 and a repro's reference."""
    with ExactSequences(), DivisorSignedZeros():
        yield


@dataclass
class Trace:
    """What an eager run did that the plain fp64 reference does not model."""

    roundings: list[Rounding] = field(default_factory=list)  # one per call that rounded (in call order)
    decisions: dict[Key, deque[float | None]] = field(default_factory=lambda: defaultdict(deque))
    draws: dict[str, deque[Any]] = field(default_factory=lambda: defaultdict(deque))  # None: the call drew nothing
    draw_count: int = 0
    random_ops: dict[str, int] = field(default_factory=dict)
    uninitialized: dict[str, int] = field(default_factory=dict)  # uninitialized-memory ops that ran, with their counts
    # "producer -> consumer": a bf16/fp16 result of one pointwise ATen op that eager rounds before another pointwise
    # or reduction op uses it; inside a library call (a composite op) the Dynamo graph cannot show it
    # (precision-cast's evidence)
    round_trips: dict[str, str] = field(default_factory=dict)  # pair -> the dtype
    # per output leaf (trace_eager's `leaves`), the round trips and draws among its own ancestors: a mechanism is
    # named for a leaf only with evidence on that leaf's path, not somewhere in the program
    leaf_round_trips: dict[str, tuple[str, ...]] = field(default_factory=dict)
    leaf_draws: dict[str, tuple[str, ...]] = field(default_factory=dict)

    @property
    def changes_reference(self) -> bool:
        return bool(self.roundings or self.draw_count)

    def describe(self) -> str:
        """One clause naming what the faithful reference does differently, for the verdict's sentence."""
        parts = []
        if self.roundings:
            seen: dict[tuple[str, float, float, str], int] = {}
            for r in self.roundings:
                key = (r.op, r.value, r.rounded, r.dtype)
                seen[key] = seen.get(key, 0) + 1
            shown = [
                f"{v:g} -> {rd!r} ({dt}) in {op}" + (f" x{n}" if n > 1 else "")
                for (op, v, rd, dt), n in list(seen.items())[:3]
            ]
            more = f" and {len(seen) - 3} more" if len(seen) > 3 else ""
            parts.append("Python scalars rounded as eager rounds them: " + "; ".join(shown) + more)
        if self.draw_count:
            ops = ", ".join(f"{op}" + (f" x{n}" if n > 1 else "") for op, n in self.random_ops.items())
            parts.append(f"eager's random draws replayed ({ops})")
        return "; ".join(parts)


def _scalar_arguments(func: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> list[tuple[str, int | str, float]]:
    """(argument name, where it is, value) of every Python number passed where the schema takes a number."""
    found = []
    for i, arg in enumerate(func._schema.arguments):
        if i < len(args) and not arg.kwarg_only:
            where: int | str = i
            value = args[i]
        elif arg.name in kwargs:
            where, value = arg.name, kwargs[arg.name]
        else:
            continue
        if isinstance(value, (int, float)) and not isinstance(value, bool) and str(arg.type) in _SCALAR_TYPES:
            found.append((arg.name, where, value))
    return found


def _operand_dtype(args: tuple[Any, ...], kwargs: dict[str, Any], out: Any) -> torch.dtype | None:
    """The floating dtype the op computes in: its floating tensor operands promoted, else its output's."""
    tensors = [a for a in (*args, *kwargs.values()) if isinstance(a, torch.Tensor) and a.is_floating_point()]
    dtype = None
    for t in tensors:
        dtype = t.dtype if dtype is None else torch.promote_types(dtype, t.dtype)
    if dtype is None:
        outs = [o for o in _tensors(out) if o.is_floating_point()]
        dtype = outs[0].dtype if outs else None
    return dtype


def _tensors(out: Any) -> list[torch.Tensor]:
    if isinstance(out, torch.Tensor):
        return [out]
    if isinstance(out, (tuple, list)):
        return [t for o in out for t in _tensors(o)]
    return []


def _differing(a: Any, b: Any) -> int:
    """How many elements differ in their bits (every element, when the outputs do not even line up)."""
    ta, tb = _tensors(a), _tensors(b)
    if len(ta) != len(tb) or any(x.shape != y.shape or x.dtype != y.dtype for x, y in zip(ta, tb, strict=True)):
        return max(1, sum(t.numel() for t in ta))
    return sum(int((~bitwise_equal(x, y)).sum()) for x, y in zip(ta, tb, strict=True))


def _cloned(args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[tuple[Any, ...], dict[str, Any]]:
    def clone(v: Any) -> Any:
        return v.clone() if isinstance(v, torch.Tensor) else v

    return tuple(clone(v) for v in args), {n: clone(v) for n, v in kwargs.items()}


def _replaced(
    args: tuple[Any, ...], kwargs: dict[str, Any], where: int | str, value: float
) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """The call's arguments with one scalar replaced (the same tensor objects: an in-place op still writes to them)."""
    a, k = list(args), dict(kwargs)
    if isinstance(where, int):
        a[where] = value
    else:
        k[where] = value
    return tuple(a), k


def _call(func: Any, args: tuple[Any, ...], kwargs: dict[str, Any], where: int | str, value: float) -> Any:
    """The op once more, with one scalar replaced (on copies of its operands when it writes to them)."""
    a, k = _replaced(*(_cloned(args, kwargs) if func._schema.is_mutable else (args, kwargs)), where, value)
    return func(*a, **k)


def _next_value(rounded: float, dtype: torch.dtype, away_from: float) -> float:
    """The neighbour of `rounded` in `dtype`, on the side away from the original value (or up)."""
    r = torch.tensor(rounded, dtype=dtype)
    target = torch.tensor(float("-inf") if away_from > rounded else float("inf"), dtype=dtype)
    return float(torch.nextafter(r, target))


def _generator_states(kwargs: dict[str, Any]) -> list[torch.Tensor]:
    """The states a random op can advance: the default generators and an explicit `generator=`."""
    states = [torch.default_generator.get_state()]
    if torch.cuda.is_available() and torch.cuda.is_initialized():
        states.extend(torch.cuda.get_rng_state_all())
    gen = kwargs.get("generator")
    if isinstance(gen, torch.Generator):
        states.append(gen.get_state())
    return states


class EagerTrace(TorchDispatchMode):
    """Watches an eager run: which Python scalars eager rounds to a low-precision dtype, and its random draws."""

    def __init__(self) -> None:
        super().__init__()
        self.trace = Trace()
        self._cache: dict[tuple[str, str, torch.dtype, float], bool] = {}
        self._rounded: Any = torch.utils.weak.WeakIdKeyDictionary()  # low-precision pointwise result -> its op
        # tensor -> the round trips ("producer -> consumer") and draws (op) among the ops that computed it
        self.ancestry: Any = torch.utils.weak.WeakIdKeyDictionary()

    def __torch_dispatch__(
        self, func: Any, types: Any, args: tuple[Any, ...] = (), kwargs: dict[str, Any] | None = None
    ) -> Any:
        kwargs = kwargs or {}
        inherited = self._inherited(args, kwargs)
        if torch.Tag.nondeterministic_seeded in func.tags:
            out = self._draw(func, args, kwargs)
            self._descend(out, inherited | {f"draw:{func}"})
            return out
        if (name := uninitialized_op(func)) is not None:
            self.trace.uninitialized[name] = self.trace.uninitialized.get(name, 0) + 1
        scalars = _scalar_arguments(func, args, kwargs)
        # an in-place op overwrites its operand: the probes need it as it was
        before = _cloned(args, kwargs) if scalars and func._schema.is_mutable else (args, kwargs)
        out = func(*args, **kwargs)
        if scalars:
            self._decide(func, before[0], before[1], out, scalars)
        trips = self._note_round_trips(func, args, kwargs, out)
        self._descend(out, inherited | {f"trip:{t}" for t in trips})
        return out

    def _inherited(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> frozenset[str]:
        found: frozenset[str] = frozenset()
        for t in _tensors([*args, *kwargs.values()]):
            found = found | self.ancestry.get(t, frozenset())
        return found

    def _descend(self, out: Any, evidence: frozenset[str]) -> None:
        if evidence:
            for t in _tensors(out):  # an in-place op returns its operand: written, it inherits too
                self.ancestry[t] = self.ancestry.get(t, frozenset()) | evidence

    def _note_round_trips(self, func: Any, args: tuple[Any, ...], kwargs: dict[str, Any], out: Any) -> list[str]:
        """Pairs of fusible ops between which eager rounds a bf16/fp16 value (what a fused kernel keeps in fp32)."""
        tags = func.tags
        cast = func in _CASTS  # an explicit .bfloat16(): a fused kernel keeps the cast pair's value in fp32 too
        if torch.Tag.pointwise not in tags and torch.Tag.reduction not in tags and not cast:
            return []
        found = []
        for t in _tensors([*args, *kwargs.values()]):
            producer = self._rounded.get(t)
            if producer is not None:
                pair = f"{producer} -> {func}"
                self.trace.round_trips.setdefault(pair, str(t.dtype).removeprefix("torch."))
                found.append(pair)
        if torch.Tag.pointwise in tags or cast:
            for t in _tensors(out):
                if t.dtype in LOW_PRECISION:
                    self._rounded[t] = str(func)
        return found

    def _draw(self, func: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        """Keep a random op's output, if it drew at all (attention with dropout_p=0 carries the tag too)."""
        before = _generator_states(kwargs)
        out = func(*args, **kwargs)
        after = _generator_states(kwargs)
        drew = len(before) != len(after) or any(not torch.equal(a, b) for a, b in zip(before, after, strict=True))
        name = str(func)
        self.trace.draws[name].append([t.detach().clone() for t in _tensors(out)] if drew else None)
        if drew:
            self.trace.draw_count += 1
            self.trace.random_ops[name] = self.trace.random_ops.get(name, 0) + 1
        return out

    def _decide(
        self,
        func: Any,
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
        out: Any,
        scalars: list[tuple[str, int | str, float]],
    ) -> None:
        dtype = _operand_dtype(args, kwargs, out)
        for name, where, value in scalars:
            key = (str(func), name, float(value))
            rounded = None
            if dtype in LOW_PRECISION:
                r = float(torch.tensor(value, dtype=dtype))
                if r != value and self._rounds(func, args, kwargs, out, where, value, r, dtype):
                    rounded = r
                    self.trace.roundings.append(
                        Rounding(str(func), name, float(value), r, str(dtype).removeprefix("torch."))
                    )
            self.trace.decisions[key].append(rounded)

    def _rounds(
        self,
        func: Any,
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
        out: Any,
        where: int | str,
        value: float,
        r: float,
        dtype: torch.dtype,
    ) -> bool:
        """Does eager round `value` to `r` here, in a way that shows? Asked of eager itself.

        A pointwise op of one tensor is asked on every finite value of the dtype: eager rounds when the
        pre-rounded scalar gives eager's bits everywhere while the dtype's next value does not. Any other op
        is asked on its own operands, where a scalar can matter in too few elements to tell by luck alone
        (layer_norm's eps moves one bf16 output in 10^5): there the next value must change at least
        EXPECTED_FLIPS / (|value - r| / |next - r|) elements, so that not rounding would have shown
        EXPECTED_FLIPS differences; otherwise nothing is rounded.
        """
        cache_key = (str(func), str(where), dtype, float(value))
        if cache_key in self._cache:
            return self._cache[cache_key]
        neighbour = _next_value(r, dtype, value)
        fraction = abs(value - r) / abs(neighbour - r)
        with torch.utils._python_dispatch._disable_current_modes():
            rounds = None
            probe = _probe_call(func, args, kwargs, dtype)
            if probe is not None:
                try:
                    p_args, p_kwargs = probe
                    p_out = _call(func, p_args, p_kwargs, where, value)
                    moved_r, moved_n = _moves(func, p_args, p_kwargs, p_out, where, r, neighbour)
                    rounds = moved_r == 0 and moved_n > 0
                except Exception:  # values outside what this op takes: its own operands decide
                    rounds = None
            if rounds is None:
                moved_r, moved_n = _moves(func, args, kwargs, out, where, r, neighbour)
                rounds = moved_r == 0 and moved_n * fraction >= EXPECTED_FLIPS
        self._cache[cache_key] = rounds
        return rounds


def _moves(
    func: Any, args: tuple[Any, ...], kwargs: dict[str, Any], out: Any, where: int | str, r: float, neighbour: float
) -> tuple[int, int]:
    """(elements that differ from `out` with the scalar pre-rounded, elements the next value then changes)."""
    with_r = _call(func, args, kwargs, where, r)
    with_n = _call(func, args, kwargs, where, neighbour)
    return _differing(with_r, out), _differing(with_n, with_r)


def _probe_call(
    func: Any, args: tuple[Any, ...], kwargs: dict[str, Any], dtype: torch.dtype
) -> tuple[tuple[Any, ...], dict[str, Any]] | None:
    """The call with its one tensor operand replaced by every finite value of `dtype` (a pointwise op of one tensor)."""
    if torch.Tag.pointwise not in func.tags:
        return None
    positions = [i for i, a in enumerate(args) if isinstance(a, torch.Tensor)]
    if len(positions) != 1 or any(isinstance(v, torch.Tensor) for v in kwargs.values()):
        return None
    t = args[positions[0]]
    if t.dtype != dtype:
        return None
    a = list(args)
    a[positions[0]] = _every_value(dtype, t.device)
    return tuple(a), dict(kwargs)


@functools.lru_cache(maxsize=8)
def _every_value(dtype: torch.dtype, device: torch.device) -> torch.Tensor:
    """Every finite value of a 16-bit float dtype, once per dtype and device (an op may not write to it)."""
    every = torch.arange(-(2**15), 2**15, dtype=torch.int32).to(torch.int16).view(dtype)
    return every[torch.isfinite(every)].to(device)


class FaithfulMode(TorchDispatchMode):
    """Runs the fp64 program with the roundings and random draws an `EagerTrace` saw."""

    def __init__(self, trace: Trace) -> None:
        super().__init__()
        self.decisions = {k: deque(v) for k, v in trace.decisions.items()}
        self.draws = {k: deque(v) for k, v in trace.draws.items()}
        self.unmatched: list[str] = []

    def __torch_dispatch__(
        self, func: Any, types: Any, args: tuple[Any, ...] = (), kwargs: dict[str, Any] | None = None
    ) -> Any:
        kwargs = kwargs or {}
        if torch.Tag.nondeterministic_seeded in func.tags:
            return self._replay(func, args, kwargs)
        for name, where, value in _scalar_arguments(func, args, kwargs):
            queue = self.decisions.get((str(func), name, float(value)))
            if queue:
                rounded = queue.popleft()
                if rounded is not None:
                    args, kwargs = _replaced(args, kwargs, where, rounded)
        return func(*args, **kwargs)

    def _replay(self, func: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        out = func(*args, **kwargs)
        queue = self.draws.get(str(func))
        if not queue:
            self.unmatched.append(str(func))
            return out
        recorded = queue.popleft()
        if recorded is None:  # eager's call drew nothing (e.g. attention with dropout_p=0)
            return out
        mine = _tensors(out)
        if [t.shape for t in recorded] != [t.shape for t in mine]:
            self.unmatched.append(str(func))
            return out
        with torch.no_grad():
            for t, r in zip(mine, recorded, strict=True):
                t.copy_(r.to(device=t.device))
        if func is torch.ops.aten.native_dropout.default and isinstance(out, tuple):
            p = float(args[1]) if len(args) > 1 else float(kwargs.get("p", 0.5))
            mask = out[1]
            scale = 0.0 if p >= 1 else 1.0 / (1.0 - p)
            return (args[0] * mask.to(args[0].dtype) * scale, mask)
        return out


def trace_eager(run: Callable[[], Any], leaves: Callable[[Any], list[tuple[str, torch.Tensor]]] | None = None) -> Trace:
    """Run `run` (an eager re-run of the call, state and seed already restored) under an EagerTrace; `leaves` names
    the tensors of its output, whose ancestry (round trips and draws on their own path) the trace then records."""
    mode = EagerTrace()
    with mode:
        out = run()
    if leaves is not None:
        for name, t in leaves(out):
            evidence = mode.ancestry.get(t, frozenset())
            mode.trace.leaf_round_trips[name] = tuple(sorted(e[5:] for e in evidence if e.startswith("trip:")))
            mode.trace.leaf_draws[name] = tuple(sorted(e[5:] for e in evidence if e.startswith("draw:")))
    return mode.trace
