"""Element-level evidence for a low-precision value: where one side is exactly right and the other is not.

A bf16/fp16 output has few digits: a compiled kernel that keeps a Python scalar in fp32 where eager rounds it,
or flushes small values, is off by one or a few of the output's own steps in a subset of elements, far below
any noise floor scaled by the value's largest magnitude. What tells such a fault from reassociation is
*asymmetry*, counted element by element against the reference r rounded once to the dtype (R):

- k1: eager == R != compiled; k2: the reverse (exactness);
- worse / better: compiled further from r than eager by more than the tie band, or nearer (distance);
- over the k1 elements, compiled mostly above eager, below it, farther from zero or nearer it (direction);
- one index of the last dimension much richer in k1 than the rest (column).

A **tie** counts for neither side: an element whose reference lies within the computation's own fp32 error of a
rounding midpoint of the dtype, where either side's fp32 value may round either way; and where the float32 twin
measured that error to be steps wide, an element where both sides lie within it of the reference plus half a step.
The width comes from the arithmetic: `TieBand` holds the float32 twin of the reference (engine/child/opmath.py: the
same program with every op computed in float32), and a value's band is TIE_FACTOR times the largest |twin - r| over
the values of its binade, plus TIE_FLOOR_ULPS fp32 ULPs of r. Without a twin the band is the floor alone.

Every test is a **sign-flip test over blocks**: under the null that eager and compiled are exchangeable, swapping
the two sides inside a block (a row, or a tile of a short leaf) flips the sign of that block's count, so
dependent elements flip together. The tail of the sum over blocks is bounded exactly by Hoeffding's inequality,
P(sum e_b x_b >= t) <= exp(-t^2 / (2 sum x_b^2)), with no assumption on the elements inside a block: no binomial
tails over dependent elements. Each test also needs its **effect** against the other side's count (the favoured
side at least ONE_SIDED times the other), so a probability alone, however small, never decides. Which tests
survive a check's false-alarm budget is decided for the whole check at once (engine/judge/family.py).

Everything is counted on the elements whose bits differ, chunk by chunk as engine.judge.metrics passes over
them. docs/oracle.md says why each choice, and benchmarks/oracle_calibration.py measures it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from engine.judge.evidence import Test

# (significand bits with the implicit one, minimum normal exponent) of the dtypes the rule judges
_FORMATS = {torch.bfloat16: (8, -126), torch.float16: (11, -14)}
DTYPES = tuple(_FORMATS)

N_MIN = 8  # a test needs at least this many elements on its side: fewer are not an effect worth a verdict
ONE_SIDED = 2.0  # the effect: the favoured side at least twice the other (a region's odds twice the leaf's)
DIRECTION_SHARE = 0.5  # direction: the lean |2 up - k1| at least half of k1
# blocks: rows when a value has at least MIN_BLOCKS of them, else single elements; never more than MAX_BLOCKS rows'
# worth (consecutive rows share a block beyond that)
MIN_BLOCKS, MAX_BLOCKS = 64, 1 << 16
# the tie band: another float32 implementation of the same ops (Sleef's vectorised functions, a decomposition
# Inductor writes) is taken to err up to TIE_FACTOR times as much as ATen's float32 kernels do on values of the
# same binade, and never less than TIE_FLOOR_ULPS fp32 ULPs of the value (fp32 libm functions are accurate to
# 1-3.5 ULPs)
TIE_FACTOR = 2.0
TIE_FLOOR_ULPS = 4.0
FP32_ULP = 2.0**-23  # relative spacing of float32 at 1
_EXPONENTS = (-1100, 1100)  # frexp exponents of float64 values the band's table spans

TESTS = ("exactness", "distance", "direction", "column")


def spacing(r: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """The step of `dtype` at |r| (float64 in and out): 2^(e - p) for r = m 2^e, m in [0.5, 1); subnormals' below."""
    bits, emin = _FORMATS[dtype]
    _, exponent = torch.frexp(r)
    exponent = torch.clamp(exponent.to(torch.int64), min=emin + 1)  # frexp's exponent is one above IEEE's
    return torch.ldexp(torch.ones_like(r), exponent - bits)


def round_once(r: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """r rounded to nearest-even in `dtype`, kept in float64: one rounding (`.to(bfloat16)` rounds twice, via fp32,
    and misrounds about 2 in 10^5 bf16 values and 12 in 10^5 fp16 ones)."""
    q = spacing(r, dtype)
    return torch.round(r / q) * q


def fp32_ulp(r: torch.Tensor) -> torch.Tensor:
    """The float32 step at |r| (float64 in and out), as spacing() for float32."""
    _, exponent = torch.frexp(r)
    exponent = torch.clamp(exponent.to(torch.int64), min=-125)
    return torch.ldexp(torch.ones_like(r), exponent - 24)


def binade(r: torch.Tensor) -> torch.Tensor:
    """The index of |r|'s binade in TieBand's table (int64)."""
    _, exponent = torch.frexp(r)
    return exponent.to(torch.int64).clamp(*_EXPONENTS) - _EXPONENTS[0]


class TieBand:
    """The float32 error of the computation at an element, from two things measured over every element of the value
    (not only the differing ones), chunk by chunk:

    - with a float32 twin: the largest |twin - r| over the value's elements of the same binade of r, times TIE_FACTOR
      (ATen's float32 kernels' own error there, cancellations and ill-conditioned places included);
    - always: TIE_FLOOR_ULPS float32 ULPs of the larger of |r| and the value's RMS magnitude. A float32 formula
      errs by ULPs of its intermediates, and a small value is often the difference of larger ones (`exp(x) - 1`
      near 0 is O(1) inside and 4e-4 out): the value's own magnitude is the scale its computation works at.
    """

    def __init__(self, device: torch.device) -> None:
        self.errors = torch.zeros(_EXPONENTS[1] - _EXPONENTS[0] + 1, dtype=torch.float64, device=device)
        self.squares = 0.0
        self.count = 0
        self.twin = False

    def add(self, r: torch.Tensor, twin: torch.Tensor | None) -> None:
        finite = torch.isfinite(r)
        values = torch.where(finite, r, torch.zeros_like(r))
        self.squares += float(torch.dot(values, values))
        self.count += int(finite.sum())
        if twin is not None:
            self.twin = True
            error = (twin.to(torch.float64) - r).abs()
            usable = torch.isfinite(error)
            self.errors.scatter_reduce_(0, binade(r)[usable], error[usable], "amax")

    @property
    def rms(self) -> float:
        return math.sqrt(self.squares / self.count) if self.count else 0.0

    def width(self, r: torch.Tensor) -> torch.Tensor:
        scale = torch.clamp(r.abs(), min=self.rms)
        return torch.maximum(self.measured(r), TIE_FLOOR_ULPS * fp32_ulp(scale))

    def measured(self, r: torch.Tensor) -> torch.Tensor:
        """The part of the band the float32 twin measured (zero without a twin)."""
        return TIE_FACTOR * self.errors[binade(r)]


def floor_width(r: torch.Tensor) -> torch.Tensor:
    """The tie band of a value judged without a band: the floor at the element's own magnitude."""
    return TIE_FLOOR_ULPS * fp32_ulp(r)


def block_length(shape: tuple[int, ...]) -> int:
    """Elements per block (consecutive in C order): a row (or several) when there are at least MIN_BLOCKS rows;
    else each element is its own block, and the effect each test needs is what stands between a row of dependent
    elements (a single row of logits) and a false alarm."""
    numel = math.prod(shape)
    last = shape[-1] if shape else 1
    rows = numel // last if last else 0
    if rows >= MIN_BLOCKS:
        return last * math.ceil(rows / MAX_BLOCKS)
    return 1


def has_columns(shape: tuple[int, ...]) -> bool:
    """Whether the column test applies: blocks are rows, and there is more than one column."""
    last = shape[-1] if shape else 1
    numel = math.prod(shape)
    return len(shape) >= 2 and last >= 2 and numel // last >= MIN_BLOCKS


@dataclass(frozen=True)
class Worst:
    """The k1 element where compiled is furthest from the reference, in the element's own steps."""

    index: tuple[int, ...]
    eager: float
    compiled: float
    reference: float
    steps: float


@dataclass(frozen=True)
class Column:
    """The column richest in k1 (an index of the last dimension), against the leaf's own share."""

    index: int
    size: int  # elements in it
    k1: int
    k2: int


@dataclass(frozen=True)
class ElementCounts:
    """What the rule reads of one low-precision value (plain numbers and its tests)."""

    dtype: str  # "bfloat16" or "float16"
    numel: int
    k1: int  # eager exact, compiled not (ties left out)
    k2: int  # compiled exact, eager not
    worse: int  # compiled further from the reference than eager, by more than the tie band
    better: int
    k1_up: int  # of k1: compiled above eager
    k1_away: int  # of k1: compiled farther from zero than eager
    k1_min_steps: float  # compiled's error over the k1 elements, in steps of the dtype at the reference
    k1_max_steps: float
    worst: Worst | None
    ties: int = 0  # differing elements within the tie band (one side exact): counted for neither
    blocks: int = 0
    twin: bool = False  # whether the tie band came from a float32 twin of the reference
    column: Column | None = None
    tests: tuple[Test, ...] = ()

    def test(self, name: str) -> Test | None:
        return next((t for t in self.tests if t.name == name), None)

    def lean(self) -> Lean:
        """The stronger one-way lean of compiled against eager over the k1 elements."""
        if not self.k1:
            return Lean("", 0, 0.0)
        up, away = abs(2 * self.k1_up - self.k1), abs(2 * self.k1_away - self.k1)
        if up >= away:
            words, count = ("above", self.k1_up) if 2 * self.k1_up >= self.k1 else ("below", self.k1 - self.k1_up)
            return Lean(words, count, up / self.k1)
        if 2 * self.k1_away >= self.k1:
            return Lean("farther from zero than", self.k1_away, away / self.k1)
        return Lean("nearer zero than", self.k1 - self.k1_away, away / self.k1)


@dataclass(frozen=True)
class Lean:
    """Which way compiled leans against eager over the k1 elements: `words` ("above", "nearer zero than", ...) for
    `count` of them; `share` is the lean |2 count - k1| / k1 (0: none, 1: all one way)."""

    words: str
    count: int
    share: float


def sign_flip_log10p(x: torch.Tensor) -> float:
    """log10 of Hoeffding's bound on the sign-flip tail of sum(x): P(sum e_b x_b >= sum x_b) for independent fair
    signs e_b, <= exp(-(sum x)^2 / (2 sum x^2)); 0 when the sum is not positive."""
    x = x.to(torch.float64)
    return hoeffding_log10p(float(x.sum()), float((x * x).sum()))


def hoeffding_log10p(total: float, square: float) -> float:
    """sign_flip_log10p from the sum of the block counts and the sum of their squares."""
    if total <= 0 or square <= 0:
        return 0.0
    return -(total * total) / (2 * square) / math.log(10)


@dataclass(frozen=True)
class Finding:
    """Which tests fired on a value, and the sentence that says which elements and how many."""

    tests: tuple[str, ...]
    sentence: str


def describe(counts: ElementCounts, column: bool = False) -> str:
    """Which elements and how many, in words: for the verdict's sentence."""
    k1, k2 = counts.k1, counts.k2
    parts = []
    if k1:
        size = (
            f"{_g(counts.k1_min_steps)} to {_g(counts.k1_max_steps)}"
            if counts.k1_min_steps != counts.k1_max_steps
            else _g(counts.k1_max_steps)
        )
        lean = counts.lean()
        words, count = lean.words, lean.count
        other = (
            "in no element is compiled exactly right where eager is wrong"
            if k2 == 0
            else f"{'only ' if k2 < k1 else ''}{k2:,} the other way round (compiled exact, eager not)"
        )
        parts.append(
            f"compiled is off in {k1:,} of {counts.numel:,} elements where eager is exactly right (eager equals the "
            f"reference rounded to {counts.dtype}); {'all' if count == k1 else f'{count:,} of'} {k1:,} are {words} "
            f"eager's, by {size} {counts.dtype} steps of the element's own size; {other}"
        )
    if column and counts.column is not None:
        c = counts.column
        parts.append(
            f"concentrated in column {c.index} of the last dimension ({c.size:,} elements): {c.k1:,} where eager is "
            f"exact and compiled is not, {c.k2:,} the other way round"
        )
    if counts.worse > counts.better:
        parts.append(
            f"over the differing elements of {counts.numel:,}, compiled is further from the reference than eager in "
            f"{counts.worse:,} and nearer in {counts.better:,}"
        )
    if counts.ties:
        parts.append(
            f"{counts.ties:,} near-ties (the reference within the computation's float32 error of a rounding "
            "midpoint) count for neither side"
        )
    text = "; ".join(parts)
    w = counts.worst
    if w is not None:
        text += (
            f". Worst at {list(w.index)}: eager {w.eager:.8g}, compiled {w.compiled:.8g}, "
            f"reference {w.reference:.8g} ({_g(w.steps)} steps)"
        )
    return text


def _g(x: float) -> str:
    return f"{x:.3g}"


@dataclass(frozen=True)
class _Sides:
    """One chunk's elements classified (boolean masks, but `steps`): k1/k2 as in ElementCounts, worse/better by
    distance, up/away the direction of the side that is off (1: compiled, where eager is exact; 2: the reverse),
    compiled's error in steps over the k1 elements, and the near-ties where one side is exact."""

    k1: torch.Tensor
    k2: torch.Tensor
    worse: torch.Tensor
    better: torch.Tensor
    up1: torch.Tensor
    up2: torch.Tensor
    away1: torch.Tensor
    away2: torch.Tensor
    steps: torch.Tensor
    ties: torch.Tensor


@dataclass(frozen=True)
class _ChunkCounts:
    """One chunk's counts, fetched from the device in one transfer (floats; the counts are whole)."""

    k1: float
    k2: float
    up: float
    away: float
    max_steps: float  # compiled's largest error in steps over the k1 elements (0 without any)
    min_steps: float  # its smallest (inf without any)
    argmax: float  # the chunk-local index of the largest
    worse: float
    better: float
    ties: float


@dataclass(frozen=True)
class _WorstSoFar:
    """The k1 element with compiled's largest error so far, at its flat position."""

    position: int
    eager: float
    compiled: float
    reference: float
    steps: float


class Tally:
    """Counts of one value, chunk by chunk (engine.judge.metrics.measure passes the differing elements in order),
    per block for the sign-flip tests and per column for the column test."""

    def __init__(
        self, shape: tuple[int, ...], dtype: torch.dtype, device: torch.device, band: TieBand | None = None
    ) -> None:
        self.shape = shape
        self.dtype = dtype
        self.band = band
        self.numel = math.prod(shape)
        self.last = shape[-1] if shape else 1
        self.block = block_length(shape)
        self.blocks = max(1, math.ceil(self.numel / self.block))
        # per block (rows): k1, k2, worse, better, the direction's two signed leans (up, away), as k1's minus k2's;
        # with single elements as blocks only the sums and sums of squares of the four statistics are needed
        self.per_block = torch.zeros((6, self.blocks), dtype=torch.int64, device=device) if self.block > 1 else None
        self.moments = torch.zeros((4, 2), dtype=torch.float64, device=device)
        self.columns = torch.zeros((2, self.last), dtype=torch.int64, device=device) if has_columns(shape) else None
        self.k1 = self.k2 = self.up = self.away = self.worse = self.better = self.ties = 0
        self.min_steps = math.inf
        self.worst: _WorstSoFar | None = None

    def chunk(self, positions: torch.Tensor, e: torch.Tensor, c: torch.Tensor, r: torch.Tensor) -> None:
        """The differing elements of one chunk: flat positions, eager and compiled (float64) and the reference."""
        sides = self._sides(e, c, r)
        self._add_blocks(positions, sides)
        self._add_counts(positions, e, c, r, sides)

    def _sides(self, e: torch.Tensor, c: torch.Tensor, r: torch.Tensor) -> _Sides:
        """Each element classified: which side is exactly right (ties left out), which is nearer r, which way
        compiled leans, and compiled's error in steps where eager is exact."""
        usable = torch.isfinite(r) & torch.isfinite(e) & torch.isfinite(c)
        q = spacing(r, self.dtype)
        exact = torch.round(r / q) * q
        width = self.band.width(r) if self.band is not None else floor_width(r)
        error_c, error_e = torch.where(usable, (c - r).abs(), 0.0), torch.where(usable, (e - r).abs(), 0.0)
        # r within the band of a rounding midpoint, and neither side further than the neighbour beyond it: a value two
        # steps off did not land there by rounding a nearly right float32 value
        adjacent = ((e - exact).abs() <= q) & ((c - exact).abs() <= q)
        tie_exact = ((q / 2 - (r - exact).abs()) <= width) & adjacent
        if self.band is not None and self.band.twin:
            # where the float32 twin measured the computation erring by steps (a cancellation: 1 + erf(x / sqrt 2) in
            # gelu's tail), a side within that error of r plus half a step may be a float32 value that errs no more
            # than the computation does, rounded once: the floor's guessed scale is not enough to reach that far
            reach = self.band.measured(r) + q / 2
            tie_exact |= (error_e <= reach) & (error_c <= reach)
        e_exact, c_exact = (e == exact) & usable, (c == exact) & usable
        k1 = e_exact & ~c_exact & ~tie_exact
        k2 = c_exact & ~e_exact & ~tie_exact
        gap = error_c - error_e
        return _Sides(
            k1=k1,
            k2=k2,
            worse=usable & (gap > 2 * width),
            better=usable & (gap < -2 * width),
            up1=k1 & (c > e),
            up2=k2 & (e > c),  # for k2 the roles swap: eager is the side off
            away1=k1 & (c.abs() > e.abs()),
            away2=k2 & (e.abs() > c.abs()),
            steps=torch.where(k1, error_c / q, torch.zeros_like(r)),
            ties=(e_exact ^ c_exact) & tie_exact,
        )

    def _add_blocks(self, positions: torch.Tensor, sides: _Sides) -> None:
        """Per block (or as moments, single elements being the blocks) and per column: the tests' statistics."""
        k1, k2 = sides.k1.to(torch.int64), sides.k2.to(torch.int64)
        up1, up2 = sides.up1.to(torch.int64), sides.up2.to(torch.int64)
        away1, away2 = sides.away1.to(torch.int64), sides.away2.to(torch.int64)
        rows = torch.stack(
            [
                k1,
                k2,
                sides.worse.to(torch.int64),
                sides.better.to(torch.int64),
                (2 * up1 - k1) - (2 * up2 - k2),
                (2 * away1 - k1) - (2 * away2 - k2),
            ]
        )
        if self.per_block is not None:
            self.per_block.index_add_(1, positions // self.block, rows)
        else:
            x = torch.stack([rows[0] - rows[1], rows[2] - rows[3], rows[4], rows[5]]).to(torch.float64)
            self.moments += torch.stack([x.sum(1), (x * x).sum(1)], 1)
        if self.columns is not None:
            self.columns.index_add_(1, positions % self.last, rows[:2])

    def _add_counts(
        self, positions: torch.Tensor, e: torch.Tensor, c: torch.Tensor, r: torch.Tensor, sides: _Sides
    ) -> None:
        """The value's running counts, and its worst k1 element so far."""
        i = torch.argmax(sides.steps)
        sums = {
            "k1": sides.k1.sum(),
            "k2": sides.k2.sum(),
            "up": sides.up1.sum(),
            "away": sides.away1.sum(),
            "max_steps": sides.steps[i],
            "min_steps": torch.where(sides.k1, sides.steps, torch.full_like(sides.steps, math.inf)).min(),
            "argmax": i,
            "worse": sides.worse.sum(),
            "better": sides.better.sum(),
            "ties": sides.ties.sum(),
        }
        values = torch.stack([x.to(torch.float64) for x in sums.values()]).tolist()  # one transfer
        got = _ChunkCounts(**dict(zip(sums, values, strict=True)))
        self.k1 += int(got.k1)
        self.k2 += int(got.k2)
        self.up += int(got.up)
        self.away += int(got.away)
        self.worse += int(got.worse)
        self.better += int(got.better)
        self.ties += int(got.ties)
        if int(got.k1):
            self.min_steps = min(self.min_steps, got.min_steps)
            if self.worst is None or got.max_steps > self.worst.steps:
                j = int(got.argmax)
                self.worst = _WorstSoFar(int(positions[j]), float(e[j]), float(c[j]), float(r[j]), got.max_steps)

    def finish(self) -> ElementCounts:
        worst = None
        if self.worst is not None:
            w = self.worst
            worst = Worst(unravel(w.position, self.shape), w.eager, w.compiled, w.reference, w.steps)
        column = self._column()
        counts = ElementCounts(
            dtype=str(self.dtype).removeprefix("torch."),
            numel=self.numel,
            k1=self.k1,
            k2=self.k2,
            worse=self.worse,
            better=self.better,
            k1_up=self.up,
            k1_away=self.away,
            k1_min_steps=0.0 if self.min_steps == math.inf else self.min_steps,
            k1_max_steps=0.0 if self.worst is None else self.worst.steps,
            worst=worst,
            ties=self.ties,
            blocks=self.blocks,
            twin=self.band is not None and self.band.twin,
            column=column,
        )
        return ElementCounts(**{**counts.__dict__, "tests": self._tests(counts)})

    def _moments(self) -> list[tuple[float, float]]:
        """(sum, sum of squares) over the blocks of: k1 - k2, worse - better, the up lean, the away lean."""
        if self.per_block is None:
            return [(float(t), float(v)) for t, v in self.moments.tolist()]
        b = self.per_block.to(torch.float64)
        stats = [b[0] - b[1], b[2] - b[3], b[4], b[5]]
        return [(float(x.sum()), float((x * x).sum())) for x in stats]

    def _tests(self, counts: ElementCounts) -> tuple[Test, ...]:
        k1, k2 = counts.k1, counts.k2
        one_sided = k1 >= N_MIN and k1 >= ONE_SIDED * k2
        share = counts.lean().share
        (exact_t, exact_v), (dist_t, dist_v), (up_t, up_v), (away_t, away_v) = self._moments()
        direction = min(
            hoeffding_log10p(up_t, up_v),
            hoeffding_log10p(-up_t, up_v),
            hoeffding_log10p(away_t, away_v),
            hoeffding_log10p(-away_t, away_v),
        )
        tests = [
            Test("exactness", hoeffding_log10p(exact_t, exact_v), 1, one_sided, _ratio(k1, k2)),
            Test(
                "distance",
                hoeffding_log10p(dist_t, dist_v),
                1,
                counts.worse >= N_MIN and counts.worse >= ONE_SIDED * counts.better,
                _ratio(counts.worse, counts.better),
            ),
            Test("direction", direction, 4, one_sided and share >= DIRECTION_SHARE, _ratio(k1, k2)),
        ]
        if self.columns is not None:
            tests.append(self._column_test(counts))
        return tuple(tests)

    def _column_z(self) -> tuple[torch.Tensor, torch.Tensor]:
        """Each column's sign-flip statistic over its rows (one element of it per row) and whether it has the effect."""
        assert self.columns is not None
        a, b = self.columns[0].to(torch.float64), self.columns[1].to(torch.float64)
        log10p = -((a - b).clamp_min(0) ** 2) / (2 * (a + b).clamp_min(1)) / math.log(10)
        k1, k2 = float(a.sum()), float(b.sum())
        # the column's odds against the leaf's: k1_j / k2_j >= ONE_SIDED * k1 / k2, written without dividing
        effect = (a >= N_MIN) & (a >= ONE_SIDED * b) & (a * k2 >= ONE_SIDED * b * k1)
        return log10p, effect

    def _column_test(self, counts: ElementCounts) -> Test:
        log10p, effect = self._column_z()
        n = int(log10p.numel())
        if not n:
            return Test("column", 0.0, 0, False)
        i = int(torch.argmin(torch.where(effect, log10p, log10p + 1e6)))  # the best column with the effect, if any
        a, b = float(self.columns[0, i]), float(self.columns[1, i])
        leaf = self.k1 / max(self.k2, 1)
        ratio = min(_ratio(a, b), _ratio(a, b) / leaf if leaf else math.inf)
        return Test("column", float(log10p[i]), n, bool(effect[i]), ratio)

    def _column(self) -> Column | None:
        if self.columns is None or not self.k1:
            return None
        log10p, effect = self._column_z()
        score = torch.where(effect, log10p, log10p + 1e6)  # a column with the effect first, then the smallest tail
        i = int(torch.argmin(score))
        return Column(i, self.numel // self.last, int(self.columns[0, i]), int(self.columns[1, i]))


def _ratio(favoured: float, other: float) -> float:
    """The favoured side over the other (infinite when the other is zero and the favoured is not)."""
    if other:
        return favoured / other
    return math.inf if favoured else 0.0


def unravel(flat: int, shape: tuple[int, ...]) -> tuple[int, ...]:
    """A flat index as an index into `shape` (C order)."""
    index = []
    for n in reversed(shape):
        index.append(flat % n)
        flat //= n
    return tuple(reversed(index))
