"""Per-element comparison of an eager tensor, a compiled tensor and an fp64 reference.

Runs inside the worker (it needs torch), in torch on the device where the outputs are, chunk by chunk:
a chunk's temporaries stay small (in cache on a CPU, a bounded slice of memory on a GPU), so a 1e8-element
output costs its operands plus a few chunks, not a dozen float64 copies of itself. Only figures come back
to the host: counts, maxima, sums for the RMS and the worst element. Elements whose bits agree cannot
contribute to any difference figure, so those figures are computed on the differing elements alone;
the error against fp64 covers every element.

Everything it returns is plain numbers, so the verdict rules in `engine.judge.oracle` stay free of torch.
Invariants (tested against the whole-tensor version this replaced, tests/reference_metrics.py): the
counts, maxima, ULP figures and the worst element are exactly the same; the RMS figures against fp64 sum
in another order, so they agree to a relative 1e-12.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

import torch

from engine.judge.elements import DTYPES as ELEMENT_DTYPES
from engine.judge.elements import ElementCounts, Tally, TieBand, unravel

if TYPE_CHECKING:  # the figures need no numpy (minimizer/repro.py embeds this module in scripts that import only torch)
    import numpy as np

# torch.testing.assert_close's defaults, used only when no fp64 reference could be computed.
_DEFAULT_TOLERANCES = {
    torch.float16: (1e-3, 1e-5),
    torch.bfloat16: (1.6e-2, 1e-5),
    torch.float32: (1.3e-6, 1e-5),
    torch.float64: (1e-7, 1e-7),
}
_INT_VIEW = {
    torch.float16: torch.int16,
    torch.bfloat16: torch.int16,
    torch.float32: torch.int32,
    torch.float64: torch.int64,
}
LOW_PRECISION = (torch.float16, torch.bfloat16)
# elements per chunk: a CPU chunk's float64 temporaries (1 MB each) stay in cache; a GPU's amortise kernel
# launches and still bound the temporaries of a chunk whose every element differs (~1 GB)
CHUNK_ELEMENTS_CPU = 1 << 17
CHUNK_ELEMENTS_DEVICE = 1 << 22
T = TypeVar("T")


@dataclass(frozen=True)
class ValueMetrics:
    """What differs between two tensors of the same shape and dtype, and how far each is from fp64."""

    numel: int
    exact_dtype: bool  # integers and bools: any difference is wrong
    low_precision: bool
    mismatches: int  # elements whose bit patterns differ
    max_abs: float
    max_rel: float
    max_ulp: float
    nan_mismatches: int
    inf_mismatches: int
    signed_zero_mismatches: int
    within_default_tolerance: bool
    eps: float  # machine epsilon of the dtype (0 for exact dtypes)
    ref_rms: float | None  # magnitude of the reference, for a one-ULP noise floor
    ref_max: float | None
    eager_ref_rms: float | None
    compiled_ref_rms: float | None
    eager_ref_max: float | None
    compiled_ref_max: float | None
    worst_index: tuple[int, ...] | None
    eager_value: str | None
    compiled_value: str | None
    ref_value: str | None
    elements: ElementCounts | None = None  # bf16/fp16 leaves with a reference: where each side is exactly right
    # where integers, NaN/inf positions or signs of zero differ and a reference exists: the elements where only
    # compiled (only eager) agrees with it; None without a reference for them
    compiled_right: int | None = None
    eager_right: int | None = None
    magnitude: float | None = None  # largest finite |eager| over the value, where there is no reference
    # elements where a NaN, an infinity or a zero's sign differs, each once (NaN on one side and inf on the other is
    # one element, counted by both nan_mismatches and inf_mismatches)
    special_elements: int = 0


def ordered_bits(t: torch.Tensor) -> torch.Tensor:
    """Map floats to int64 so that adjacent representable values differ by one; -0.0 and +0.0 both map to 0."""
    bits = t.contiguous().view(_INT_VIEW[t.dtype]).to(torch.int64)
    width = t.element_size() * 8
    magnitude = bits & ((1 << (width - 1)) - 1)
    return torch.where(bits < 0, -magnitude, magnitude)


def ulp_distance(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """Number of representable values between a and b, as float64; 0 where both are NaN, inf where one is."""
    oa, ob = ordered_bits(a), ordered_bits(b)
    same_sign = (oa >= 0) == (ob >= 0)
    # int64 subtraction cannot overflow for equal signs; opposite signs add magnitudes in float64
    dist = torch.where(
        same_sign, (oa - ob).abs().to(torch.float64), oa.abs().to(torch.float64) + ob.abs().to(torch.float64)
    )
    nan_a, nan_b = torch.isnan(a), torch.isnan(b)
    dist = torch.where(nan_a & nan_b, torch.zeros_like(dist), dist)
    return torch.where(nan_a ^ nan_b, torch.full_like(dist, float("inf")), dist)


def bitwise_equal(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """Elementwise: are the bit patterns identical (NaN payloads and signed zeros included)."""
    if a.dtype.is_floating_point:
        view = _INT_VIEW.get(a.dtype)
        if view is None:  # float8 and friends: compare as bytes per element
            return (
                a.contiguous().view(torch.uint8).reshape(*a.shape, -1)
                == b.contiguous().view(torch.uint8).reshape(*b.shape, -1)
            ).all(-1)
        return a.contiguous().view(view) == b.contiguous().view(view)
    return a == b


def as_real(t: torch.Tensor) -> torch.Tensor:
    """Complex tensors are compared as (real, imag) pairs; fp8 as fp32 (exact)."""
    if t.is_complex():
        return torch.view_as_real(t.resolve_conj())
    if t.dtype.is_floating_point and t.dtype not in _INT_VIEW:
        return t.to(torch.float32)
    return t


@dataclass(frozen=True)
class Operands:
    """Eager, compiled and fp64 reference as they are compared: real views, contiguous, on eager's device."""

    eager: torch.Tensor
    compiled: torch.Tensor
    ref: torch.Tensor | None  # float64 (an exact dtype's own for integers), same shape, or None
    twin: torch.Tensor | None = None  # the reference computed in float32 (engine/child/opmath.py), same shape, or None

    @property
    def exact(self) -> bool:
        return not self.eager.dtype.is_floating_point

    @property
    def step(self) -> int:
        """Elements per chunk on this device."""
        return CHUNK_ELEMENTS_CPU if self.eager.device.type == "cpu" else CHUNK_ELEMENTS_DEVICE


def operands(
    eager: torch.Tensor, compiled: torch.Tensor, ref: torch.Tensor | None, twin: torch.Tensor | None = None
) -> Operands:
    """Prepare two tensors of equal shape and dtype (and a reference, dropped unless it has their shape; an exact
    dtype's reference only where it is exact too, to say which side agrees with it; the float32 twin only beside
    a floating reference)."""
    eager = as_real(eager.detach()).contiguous()
    compiled = as_real(compiled.detach()).to(eager.device).contiguous()
    if ref is not None and ref.shape == eager.shape and eager.dtype.is_floating_point:
        ref = as_real(ref.detach()).to(device=eager.device, dtype=torch.float64).contiguous()
    elif ref is not None and ref.shape == eager.shape and not ref.dtype.is_floating_point and not ref.is_complex():
        ref = ref.detach().to(device=eager.device, dtype=eager.dtype).contiguous()
    else:
        ref = None
    if twin is not None and ref is not None and eager.dtype.is_floating_point and twin.shape == eager.shape:
        twin = as_real(twin.detach()).to(device=eager.device, dtype=torch.float64).contiguous()
    else:
        twin = None
    return Operands(eager, compiled, ref, twin)


def differing(eager: torch.Tensor, compiled: torch.Tensor) -> torch.Tensor:
    """Flat positions (int64, ascending) where two flat chunks' bits differ."""
    if eager.dtype.is_floating_point:
        view = _INT_VIEW[eager.dtype]
        return torch.nonzero(eager.view(view) != compiled.view(view)).reshape(-1)
    return torch.nonzero(eager != compiled).reshape(-1)


def scan(ops: Operands, chunk: Callable[[int, int], T], start: int = 0, stop: int | None = None) -> Iterator[T]:
    """chunk(start, stop) over consecutive flat ranges of the operands, in order.

    On a CPU with one intra-op thread: torch's own parallelism synchronises its threads at every op, and on
    a busy machine each barrier can wait a scheduler slice (milliseconds) for a descheduled peer, which
    hundreds of small ops turn into seconds; Python threads over the chunks lost more to the GIL than
    they won (on 2 cores, 16M elements: 0.5 s on one thread, 0.8 s on two).
    """
    stop = ops.eager.numel() if stop is None else stop
    previous = torch.get_num_threads()
    cpu = ops.eager.device.type == "cpu"
    if cpu:
        torch.set_num_threads(1)
    try:
        for a in range(start, stop, ops.step):
            yield chunk(a, min(a + ops.step, stop))
    finally:
        if cpu:
            torch.set_num_threads(previous)


@dataclass
class Differences:
    """The elements of one chunk whose bits differ, with what every figure of them needs, computed once."""

    positions: torch.Tensor  # flat indices into the whole tensor, ascending
    eager: torch.Tensor  # their values, in the compared dtype
    compiled: torch.Tensor
    ref: torch.Tensor | None  # float64
    ulp: torch.Tensor  # float64 ULP distance (exact dtypes: the absolute difference)
    finite: bool  # every eager and compiled value here is finite (the usual case: no NaN/inf handling)
    eager64: torch.Tensor  # the values in float64
    compiled64: torch.Tensor
    abs_err: torch.Tensor  # float64 |eager - compiled| where both are finite, else 0 (exact dtypes: = ulp)
    rel_err: torch.Tensor | None = None  # abs_err / max(|eager|, tiny); None for exact dtypes


class ChunkObserver(Protocol):
    """Sees the differing elements of every chunk as the metrics pass over them (the heatmap summaries)."""

    def differing(self, d: Differences) -> Any:
        """What the observer makes of one chunk (kept apart from its state, so chunks could run anywhere)."""

    def combine(self, partial: Any) -> None:
        """Once per chunk with differing elements, in chunk order."""


@dataclass
class _Figures:
    """One chunk's figures, or the running total; combined in chunk order."""

    mismatches: int = 0
    nan: int = 0
    inf: int = 0
    signed_zero: int = 0
    special: int = 0  # elements among those three, each once
    max_abs: float = 0.0
    max_rel: float = 0.0
    max_ulp: float = 0.0
    within: bool = True
    worst: int | None = None
    worst_badness: float = -math.inf
    compiled_right: int = 0  # exact or special mismatches where only compiled agrees with the reference
    eager_right: int = 0
    count: int = 0  # elements usable against the reference
    sums: tuple[float, float, float] = (0.0, 0.0, 0.0)  # sums of squares: reference, eager's error, compiled's error
    maxima: tuple[float, float, float] = (0.0, 0.0, 0.0)  # largest magnitudes of the same
    magnitude: float = 0.0  # largest finite |eager|, measured only where there is no reference
    observed: Any = None

    def add(self, o: _Figures) -> None:
        self.mismatches += o.mismatches
        self.nan += o.nan
        self.inf += o.inf
        self.signed_zero += o.signed_zero
        self.special += o.special
        self.max_abs, self.max_rel, self.max_ulp = (
            max(self.max_abs, o.max_abs),
            max(self.max_rel, o.max_rel),
            max(self.max_ulp, o.max_ulp),
        )
        self.within = self.within and o.within
        self.compiled_right += o.compiled_right
        self.eager_right += o.eager_right
        if o.worst_badness > self.worst_badness:  # strictly: an earlier chunk keeps a tie, as one argmax would
            self.worst, self.worst_badness = o.worst, o.worst_badness
        self.count += o.count
        self.sums = (self.sums[0] + o.sums[0], self.sums[1] + o.sums[1], self.sums[2] + o.sums[2])
        self.maxima = (
            max(self.maxima[0], o.maxima[0]),
            max(self.maxima[1], o.maxima[1]),
            max(self.maxima[2], o.maxima[2]),
        )
        self.magnitude = max(self.magnitude, o.magnitude)


def measure(ops: Operands, observer: ChunkObserver | None = None) -> ValueMetrics:
    """Every figure of ValueMetrics, chunk by chunk on the operands' device."""
    eager, compiled = ops.eager.reshape(-1), ops.compiled.reshape(-1)
    ref = None if ops.ref is None else ops.ref.reshape(-1)
    tally = (
        Tally(tuple(ops.eager.shape), ops.eager.dtype, ops.eager.device, tie_band(ops))
        if ref is not None and ops.eager.dtype in ELEMENT_DTYPES
        else None
    )

    def chunk(start: int, stop: int) -> _Figures:
        e, c = eager[start:stop], compiled[start:stop]
        r = None if ref is None else ref[start:stop]
        where = differing(e, c)
        figures = _Figures()
        if where.numel():
            d = differences(where + start, e[where], c[where], None if r is None else r[where])
            (_exact_figures if ops.exact else _float_figures)(figures, d)
            if tally is not None:
                assert d.ref is not None
                tally.chunk(d.positions, d.eager64, d.compiled64, d.ref)
            if observer is not None:
                figures.observed = observer.differing(d)
        if r is not None and not ops.exact:
            _reference_chunk(figures, e, c, r)
        elif not ops.exact and e.numel():  # no reference: how large the values are bounds what rounding can do
            finite = torch.where(torch.isfinite(e), e.abs(), torch.zeros((), dtype=e.dtype, device=e.device))
            figures.magnitude = float(finite.max())
        return figures

    totals = _Figures()
    for figures in scan(ops, chunk):
        totals.add(figures)
        if observer is not None and figures.observed is not None:
            observer.combine(figures.observed)
    return _metrics(ops, totals, None if tally is None else tally.finish())


def tie_band(ops: Operands) -> TieBand | None:
    """The float32 error of the computation (engine.judge.elements.TieBand) over every element of a value whose bits
    differ somewhere: a pass over the reference (and its twin), skipped where nothing differs."""
    if ops.ref is None:
        return None
    band = TieBand(ops.eager.device)
    eager, compiled = ops.eager.reshape(-1), ops.compiled.reshape(-1)
    ref = ops.ref.reshape(-1)
    twin = ops.twin.reshape(-1) if ops.twin is not None else None
    any_differ = False

    def chunk(start: int, stop: int) -> None:
        nonlocal any_differ
        band.add(ref[start:stop], None if twin is None else twin[start:stop])
        if not any_differ:
            e, c = eager[start:stop], compiled[start:stop]
            view = _INT_VIEW[e.dtype]
            any_differ = bool((e.view(view) != c.view(view)).any())

    for _ in scan(ops, chunk):
        pass
    return band if any_differ else None


def differences(positions: torch.Tensor, e: torch.Tensor, c: torch.Tensor, r: torch.Tensor | None) -> Differences:
    """The Differences of elements known to differ in their bits."""
    if not e.dtype.is_floating_point:
        diff = (e.to(torch.int64) - c.to(torch.int64)).abs().to(torch.float64)
        return Differences(positions, e, c, r, diff, True, e.to(torch.float64), c.to(torch.float64), diff)
    e64, c64 = e.to(torch.float64), c.to(torch.float64)
    # a NaN or inf anywhere makes the dot product non-finite (so does an overflow: that only costs the slow path)
    finite = math.isfinite(float(torch.dot(e64, c64)))
    if finite:
        ulp = _finite_ulp(e, c) if e.element_size() < 8 else ulp_distance(e, c)
        abs_err = (e64 - c64).abs()
    else:
        ulp = ulp_distance(e, c)
        zero = torch.zeros((), dtype=torch.float64, device=e.device)
        abs_err = torch.where(torch.isfinite(e64) & torch.isfinite(c64), (e64 - c64).abs(), zero)
    rel_err = abs_err / e64.abs().clamp_min(torch.finfo(torch.float64).tiny)
    return Differences(positions, e, c, r, ulp, finite, e64, c64, abs_err, rel_err)


def _finite_ulp(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """ulp_distance for finite floats of at most 32 bits: ordered in their own width, differenced in int64."""
    view = _INT_VIEW[a.dtype]
    low = torch.iinfo(view).min

    def ordered(t: torch.Tensor) -> torch.Tensor:
        bits = t.view(view)
        return torch.where(bits < 0, low - bits, bits).to(torch.int64)  # -0.0 and +0.0 at 0, as ordered_bits

    return (ordered(a) - ordered(b)).abs().to(torch.float64)


def _exact_figures(f: _Figures, d: Differences) -> None:
    """Integers and bools: the absolute difference is both the error and the "ULP" distance."""
    i = int(torch.argmax(d.ulp))
    f.mismatches = d.positions.numel()
    f.max_abs = f.max_ulp = f.worst_badness = float(d.ulp[i])
    f.worst = int(d.positions[i])
    if d.ref is not None:
        f.compiled_right, f.eager_right = _sides(d.compiled == d.ref, d.eager == d.ref)


def _sides(compiled_agrees: torch.Tensor, eager_agrees: torch.Tensor) -> tuple[int, int]:
    """How many elements only compiled agrees with the reference at, and only eager."""
    figures = torch.stack([(compiled_agrees & ~eager_agrees).sum(), (eager_agrees & ~compiled_agrees).sum()])
    c, e = figures.tolist()
    return int(c), int(e)


def _special_class(t: torch.Tensor) -> torch.Tensor:
    """0 NaN, 1 +inf, 2 -inf, 3 +0, 4 -0, 5 any other finite value: what a special-value difference compares."""
    sign = torch.signbit(t)
    finite = torch.where(t == 0, 3 + sign.to(torch.int64), torch.full_like(t, 5, dtype=torch.int64))
    cls = torch.where(torch.isinf(t), 1 + sign.to(torch.int64), finite)
    return torch.where(torch.isnan(t), torch.zeros_like(cls), cls)


def _float_figures(f: _Figures, d: Differences) -> None:
    """The differing elements of one chunk: every figure that identical bits leave at zero."""
    e, c, ulp, e64, c64 = d.eager, d.compiled, d.ulp, d.eager64, d.compiled64
    assert d.rel_err is not None
    rtol, atol = _DEFAULT_TOLERANCES.get(e.dtype, (1.3e-6, 1e-5))
    if d.finite:  # no NaN or inf: two zeros whose bits differ differ in sign
        nan_mismatch = inf_mismatch = None
        signed_zero = (e64 == 0) & (c64 == 0)
        badness = torch.where(signed_zero, torch.full_like(ulp, 0.5), ulp)
        # torch.isclose(c64, e64), which is this for finite values
        outside = (d.abs_err > atol + rtol * e64.abs()).any()
        counts = [torch.zeros((), device=e.device), torch.zeros((), device=e.device), signed_zero.sum()]
        counts.append(counts[2])
    else:
        nan_e, nan_c = torch.isnan(e), torch.isnan(c)
        inf_e, inf_c = torch.isinf(e), torch.isinf(c)
        sign_differs = torch.signbit(e) != torch.signbit(c)
        nan_mismatch = nan_e ^ nan_c
        inf_mismatch = (inf_e ^ inf_c) | (inf_e & inf_c & sign_differs)
        signed_zero = (e == 0) & (c == 0) & sign_differs
        badness = torch.where(nan_mismatch | inf_mismatch, torch.full_like(ulp, float("inf")), ulp)
        badness = torch.where(
            signed_zero, torch.full_like(ulp, 0.5), badness
        )  # a sign-only difference still locates the worst element
        outside = ~torch.isclose(c64, e64, rtol=rtol, atol=atol, equal_nan=True).all()
        counts = [nan_mismatch.sum(), inf_mismatch.sum(), signed_zero.sum()]
        counts.append((nan_mismatch | inf_mismatch | signed_zero).sum())
    rel_err = torch.where(d.abs_err == 0, torch.zeros_like(d.rel_err), d.rel_err) if not d.finite else d.rel_err
    if d.ref is not None:  # which side agrees with the reference where a NaN, an infinity or a zero's sign differs
        special = signed_zero if nan_mismatch is None else (nan_mismatch | inf_mismatch | signed_zero)
        if bool(special.any()):
            r_cls = _special_class(d.ref[special])
            f.compiled_right, f.eager_right = _sides(
                _special_class(c64[special]) == r_cls, _special_class(e64[special]) == r_cls
            )
    i = torch.argmax(badness)
    figures = torch.stack(
        [
            *(x.to(torch.float64) for x in counts),
            d.abs_err.max(),
            rel_err.max(),
            ulp.max(),
            badness[i],
            i.to(torch.float64),
            outside.to(torch.float64),
        ]
    ).tolist()  # one transfer from the device
    f.mismatches = d.positions.numel()
    f.nan, f.inf, f.signed_zero, f.special = (int(x) for x in figures[:4])
    f.max_abs, f.max_rel, f.max_ulp, f.worst_badness = figures[4], figures[5], figures[6], figures[7]
    f.worst = int(d.positions[int(figures[8])])
    f.within = not figures[9]


def _reference_chunk(f: _Figures, e: torch.Tensor, c: torch.Tensor, r: torch.Tensor) -> None:
    """Both sides' error against fp64 over one chunk, from sums of squares and extremes.

    A non-finite eager, compiled or reference value makes one of the three sums non-finite; only such a
    chunk pays for masking them out (the figures count the usable elements only).
    """
    err_e, err_c = e.to(torch.float64) - r, c.to(torch.float64) - r
    figures = _squares_and_extremes(r, err_e, err_c)
    n = e.numel()
    if not all(math.isfinite(x) for x in figures[:3]):
        usable = torch.isfinite(e) & torch.isfinite(c) & torch.isfinite(r)
        n = int(usable.sum())
        if n == 0:
            return
        zero = torch.zeros((), dtype=torch.float64, device=e.device)
        figures = _squares_and_extremes(
            torch.where(usable, r, zero), torch.where(usable, err_e, zero), torch.where(usable, err_c, zero)
        )
    f.count = n
    f.sums = (figures[0], figures[1], figures[2])
    f.maxima = (figures[3], figures[4], figures[5])


def _squares_and_extremes(*xs: torch.Tensor) -> list[float]:
    """The sum of squares of each, then the largest magnitude of each (one transfer from the device).

    amax and amin, not aminmax or abs().max(): on a CPU those take several times as long."""
    sums = [torch.dot(x, x) for x in xs]
    extremes = [torch.maximum(torch.amax(x), -torch.amin(x)) for x in xs]
    return torch.stack(sums + extremes).tolist()


def _metrics(ops: Operands, t: _Figures, counts: ElementCounts | None = None) -> ValueMetrics:
    eager = ops.eager
    ref_stats: dict[str, float | None] = dict.fromkeys(
        ("ref_rms", "ref_max", "eager_ref_rms", "compiled_ref_rms", "eager_ref_max", "compiled_ref_max")
    )
    if t.count:
        (ref_sq, eager_sq, compiled_sq), (ref_max, eager_max, compiled_max) = t.sums, t.maxima
        ref_stats = {
            "ref_rms": math.sqrt(ref_sq / t.count),
            "ref_max": ref_max,
            "eager_ref_rms": math.sqrt(eager_sq / t.count),
            "compiled_ref_rms": math.sqrt(compiled_sq / t.count),
            "eager_ref_max": eager_max,
            "compiled_ref_max": compiled_max,
        }
    worst = t.worst if t.mismatches else None

    def value_at(x: torch.Tensor | None) -> str | None:
        return None if x is None or worst is None else repr(x.reshape(-1)[worst].item())

    return ValueMetrics(
        numel=eager.numel(),
        exact_dtype=ops.exact,
        low_precision=eager.dtype in LOW_PRECISION,
        mismatches=t.mismatches,
        max_abs=t.max_abs,
        max_rel=t.max_rel,
        max_ulp=t.max_ulp,
        nan_mismatches=t.nan,
        inf_mismatches=t.inf,
        signed_zero_mismatches=t.signed_zero,
        within_default_tolerance=t.within if not ops.exact else t.mismatches == 0,
        eps=0.0 if ops.exact else float(torch.finfo(eager.dtype).eps),
        worst_index=_unravel(worst, tuple(eager.shape)),
        eager_value=value_at(eager),
        compiled_value=value_at(ops.compiled),
        ref_value=value_at(ops.ref),
        elements=counts,
        compiled_right=t.compiled_right if ops.ref is not None else None,
        eager_right=t.eager_right if ops.ref is not None else None,
        magnitude=t.magnitude if ops.ref is None and not ops.exact else None,
        special_elements=t.special,
        **ref_stats,
    )


def value_metrics(eager: torch.Tensor, compiled: torch.Tensor, ref: torch.Tensor | None) -> ValueMetrics:
    """Compare two tensors of equal shape and dtype element by element; `ref` is the fp64 reference or None."""
    return measure(operands(eager, compiled, ref))


def compare_values(
    eager: torch.Tensor, compiled: torch.Tensor, ref: torch.Tensor | None
) -> tuple[ValueMetrics, dict[str, np.ndarray]]:
    """value_metrics plus every element on the host (eager, compiled, ulp and ref): for small tensors."""
    ops = operands(eager, compiled, ref)
    metrics = measure(ops)
    e, c = ops.eager.cpu(), ops.compiled.cpu()
    ulp = (e.to(torch.int64) - c.to(torch.int64)).abs().to(torch.float64) if ops.exact else ulp_distance(e, c)
    arrays = {"eager": host_array(e), "compiled": host_array(c), "ulp": ulp.numpy()}
    if ops.ref is not None:
        arrays["ref"] = ops.ref.cpu().numpy()
    return metrics, arrays


def host_array(t: torch.Tensor) -> np.ndarray:
    """A tensor as numpy on the host; numpy has no bfloat16, and float32 holds every bfloat16 value exactly."""
    t = t.detach().cpu()
    return (t.to(torch.float32) if t.dtype == torch.bfloat16 else t).numpy()


def _unravel(flat: int | None, shape: tuple[int, ...]) -> tuple[int, ...] | None:
    if flat is None:
        return None
    return unravel(flat, shape)
