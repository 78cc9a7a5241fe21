"""Element-level evidence for a low-precision leaf: where eager is exactly right and compiled is not.

A bf16/fp16 output has few digits: a compiled kernel that keeps a Python scalar in fp32 where eager rounds
it, or flushes small values, is off by one or a few of the output's own steps in a subset of elements, far
below any noise floor scaled by the leaf's largest magnitude. Error size alone cannot tell that from
reassociation (near-zero outputs after cancellation are off by 10^5 of their own steps on both sides in
honest deep programs). What tells them apart is *asymmetry*, counted only where one side is exactly right:

- k1: elements where eager equals the reference rounded once to the output dtype (the correctly rounded
  value) and compiled does not; k2: the reverse. Honest compiled code skips roundings, so it is the more
  often exact side (k1 <= k2 on every benign leaf measured); a fault is one-sided (k1 >> k2).
- distance: over all differing elements, is compiled further from the reference than eager more often than
  chance allows? It also sees faults where eager itself is not exactly right.
- direction: over the k1 elements, is compiled mostly above (or mostly farther from zero than) eager?
  Reassociation is balanced; a scalar kept in fp32 moves every element the same way.
- region: is one row (all dimensions but the last, collapsed) or one column (an index of the last
  dimension) much richer in k1 than the leaf as a whole?

Elements where eager itself is inexact are outside k1 by construction, so catastrophic cancellation needs
no special case. Everything is counted on the elements whose bits differ, chunk by chunk as
engine.judge.metrics passes over them: one rounding of the reference per differing element, a few
comparisons and, for the regions, two index_add per chunk. The thresholds and the measurements behind them
are in engine/judge/oracle.py; this module counts, tests and words.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

# (significand bits with the implicit one, minimum normal exponent) of the dtypes the rule judges
_FORMATS = {torch.bfloat16: (8, -126), torch.float16: (11, -14)}
DTYPES = tuple(_FORMATS)

# A region needs at least this many k1 elements, and the leaf as a whole at least this many, before a test
# may fire: fewer cannot be told from luck at the probabilities below (see oracle.py).
N_MIN = 8
SIGN_LOG10P = -5.0  # exactness and distance: log10 P(Bin(n, 1/2) >= k), one-sided
DIRECTION_Z, DIRECTION_SHARE = 10.0, 0.5  # direction: |2 up - k1| / sqrt(k1) and |2 up - k1| / k1
REGION_LOG10P = -6.0  # a row's or column's k1 share, binomial tail times the number of rows (columns)
# The effect a test needs besides its probability: the side a fault favours at least twice as often as the
# other (k1 : k2, worse : better; a region's k1 : k2 odds against the leaf's). The probabilities assume
# independent elements, but a row of logits shares one hidden state: in GPT-2, Llama, T5 and Whisper at
# their real vocabularies (bf16, 32,128-51,865 elements a row) a row's odds stray 1.13-1.26 from the
# leaf's, and Llama's whole logits 1.04 (1.3M k1+k2), far past every threshold above; a fault is one-sided.
ONE_SIDED = 2.0
_REGION_SCREEN = 4  # regions whose exact tail is computed (the highest z-scores); the rest cannot win


def spacing(r: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """The step of `dtype` at |r| (float64 in and out): 2^(e - p) for r = m 2^e, m in [0.5, 1); subnormals' below."""
    bits, emin = _FORMATS[dtype]
    _, exponent = torch.frexp(r)
    exponent = torch.clamp(
        exponent.to(torch.int64), min=emin + 1
    )  # frexp's exponent is one above IEEE's; 0 gets the floor
    return torch.ldexp(torch.ones_like(r), exponent - bits)


def round_once(r: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """r rounded to nearest-even in `dtype`, kept in float64: one rounding (`.to(bfloat16)` rounds twice, via fp32,
    and misrounds about 2 in 10^5 bf16 values and 12 in 10^5 fp16 ones)."""
    q = spacing(r, dtype)
    return torch.round(r / q) * q


@dataclass(frozen=True)
class Region:
    """The row or column richest in k1 elements, against the leaf's own k1 share."""

    axis: str  # "row" or "column"
    index: tuple[int, ...]  # a row: its index over all dimensions but the last; a column: (index of the last one,)
    size: int  # elements in it
    k1: int
    k2: int
    regions: int  # how many rows (columns) the leaf has: the Bonferroni factor
    log10p: float  # log10 of the binomial tail times `regions`


@dataclass(frozen=True)
class Worst:
    """The k1 element where compiled is furthest from the reference, in the element's own steps."""

    index: tuple[int, ...]
    eager: float
    compiled: float
    reference: float
    steps: float


@dataclass(frozen=True)
class ElementCounts:
    """What the rule reads of one low-precision leaf (all plain numbers)."""

    dtype: str  # "bfloat16" or "float16"
    numel: int
    k1: int  # eager exact, compiled not
    k2: int  # compiled exact, eager not
    worse: int  # elements where compiled is further from the reference than eager (k1 among them)
    better: int  # nearer (k2 among them)
    k1_up: int  # of k1: compiled above eager
    k1_away: int  # of k1: compiled farther from zero than eager
    k1_min_steps: float  # compiled's error over the k1 elements, in steps of the dtype at the reference
    k1_max_steps: float
    worst: Worst | None
    regions: tuple[Region, ...] = ()

    @property
    def sign_log10p(self) -> float:
        """log10 P(X >= k1), X ~ Bin(k1 + k2, 1/2): eager exact where compiled is not, beyond chance."""
        return log10_binomial_tail(self.k1, self.k1 + self.k2, 0.5)

    @property
    def worse_log10p(self) -> float:
        """log10 P(X >= worse), X ~ Bin(worse + better, 1/2): compiled further from the reference than eager, beyond chance."""
        return log10_binomial_tail(self.worse, self.worse + self.better, 0.5)

    def lean(self) -> tuple[str, int, float, float]:
        """The stronger one-way lean of compiled against eager over the k1 elements: (words, count, z, share)."""
        if not self.k1:
            return "", 0, 0.0, 0.0
        up, away = abs(2 * self.k1_up - self.k1), abs(2 * self.k1_away - self.k1)
        if up >= away:
            words, count = ("above", self.k1_up) if 2 * self.k1_up >= self.k1 else ("below", self.k1 - self.k1_up)
            excess = up
        else:
            words, count = (
                ("farther from zero than", self.k1_away)
                if 2 * self.k1_away >= self.k1
                else ("nearer zero than", self.k1 - self.k1_away)
            )
            excess = away
        return words, count, excess / math.sqrt(self.k1), excess / self.k1


@dataclass(frozen=True)
class Finding:
    """Which tests fired on a leaf, and the sentence that says which elements and how many."""

    tests: tuple[str, ...]  # among "exactness", "distance", "direction", "row", "column"
    sentence: str


def find(counts: ElementCounts) -> Finding | None:
    """The element rule: a leaf is divergent when any of its tests fires (thresholds above, measurements in oracle.py)."""
    tests = []
    if counts.k1 >= N_MIN and counts.sign_log10p <= SIGN_LOG10P and counts.k1 >= ONE_SIDED * counts.k2:
        tests.append("exactness")
    if counts.worse >= N_MIN and counts.worse_log10p <= SIGN_LOG10P and counts.worse >= ONE_SIDED * counts.better:
        tests.append("distance")
    _, _, z, share = counts.lean()
    if counts.k1 >= N_MIN and z >= DIRECTION_Z and share >= DIRECTION_SHARE:
        tests.append("direction")
    flagged_regions = [
        r
        for r in counts.regions
        if r.k1 >= N_MIN and r.log10p <= REGION_LOG10P and r.k1 * counts.k2 >= ONE_SIDED * r.k2 * counts.k1
    ]
    tests.extend(r.axis for r in flagged_regions)
    if not tests:
        return None
    return Finding(
        tuple(tests), describe(counts, min(flagged_regions, key=lambda r: r.log10p) if flagged_regions else None)
    )


def describe(counts: ElementCounts, region: Region | None = None) -> str:
    """Which elements and how many, in words: for the verdict's sentence."""
    k1, k2 = counts.k1, counts.k2
    parts = []
    if k1:
        size = (
            f"{_g(counts.k1_min_steps)} to {_g(counts.k1_max_steps)}"
            if counts.k1_min_steps != counts.k1_max_steps
            else _g(counts.k1_max_steps)
        )
        words, count, _, _ = counts.lean()
        other = (
            "in no element is compiled exactly right where eager is wrong"
            if k2 == 0
            else f"{'only ' if k2 < k1 else ''}{k2:,} the other way round (compiled exact, eager not)"
        )
        parts.append(
            f"compiled is off in {k1:,} of {counts.numel:,} elements where eager is exactly right (eager equals the reference "
            f"rounded to {counts.dtype}); {'all' if count == k1 else f'{count:,} of'} {k1:,} are {words} eager's, by {size} "
            f"{counts.dtype} steps of the element's own size; {other}"
        )
    if region is not None:
        where = (
            f"row {list(region.index)}" if region.axis == "row" else f"column {region.index[0]} of the last dimension"
        )
        parts.append(
            f"concentrated in {where} ({region.size:,} elements): {region.k1:,} where eager is exact and compiled is not, "
            f"{region.k2:,} the other way round"
        )
    if counts.worse > counts.better:
        parts.append(
            f"over all {counts.worse + counts.better:,} differing elements of {counts.numel:,}, compiled is further from the "
            f"reference than eager in {counts.worse:,} and nearer in {counts.better:,}"
        )
    text = "; ".join(parts)
    w = counts.worst
    if w is not None:
        text += f". Worst at {list(w.index)}: eager {w.eager:.8g}, compiled {w.compiled:.8g}, reference {w.reference:.8g} ({_g(w.steps)} steps)"
    return text


def _g(x: float) -> str:
    return f"{x:.3g}"


class Tally:
    """Counts of one leaf, chunk by chunk (engine.judge.metrics.measure passes the differing elements in order)."""

    def __init__(self, shape: tuple[int, ...], dtype: torch.dtype, device: torch.device) -> None:
        self.shape = shape
        self.dtype = dtype
        numel = math.prod(shape)
        self.numel = numel
        self.last = shape[-1] if shape else 1
        rows = numel // self.last if self.last else 0
        # a region needs N_MIN elements to fire at all: rows shorter, or columns of fewer rows, are not counted
        self.row_counts = (
            torch.zeros((2, rows), dtype=torch.int32, device=device)
            if len(shape) >= 2 and self.last >= N_MIN and rows >= 2
            else None
        )
        self.col_counts = (
            torch.zeros((2, self.last), dtype=torch.int32, device=device)
            if len(shape) >= 2 and rows >= N_MIN and self.last >= 2
            else None
        )
        self.k1 = self.k2 = self.up = self.away = self.worse = self.better = 0
        self.min_steps = math.inf
        self.worst: tuple[int, float, float, float, float] | None = None

    def chunk(self, positions: torch.Tensor, e: torch.Tensor, c: torch.Tensor, r: torch.Tensor) -> None:
        """The differing elements of one chunk: flat positions, eager and compiled (float64) and the reference."""
        usable = torch.isfinite(r) & torch.isfinite(e) & torch.isfinite(c)
        q = spacing(r, self.dtype)
        exact = torch.round(r / q) * q
        e_exact, c_exact = e == exact, c == exact
        k1 = e_exact & ~c_exact & usable
        k2 = c_exact & ~e_exact & usable
        error_c, error_e = torch.where(usable, (c - r).abs(), 0.0), torch.where(usable, (e - r).abs(), 0.0)
        steps = torch.where(k1, error_c / q, torch.zeros_like(r))
        up = k1 & (c > e)
        away = k1 & (c.abs() > e.abs())
        i = torch.argmax(steps)
        low = torch.where(k1, steps, torch.full_like(steps, math.inf)).min()
        sums = (
            k1.sum(),
            k2.sum(),
            up.sum(),
            away.sum(),
            steps[i],
            low,
            i,
            (error_c > error_e).sum(),
            (error_c < error_e).sum(),
        )
        figures = torch.stack([x.to(torch.float64) for x in sums]).tolist()  # one transfer
        n1 = int(figures[0])
        self.k1 += n1
        self.k2 += int(figures[1])
        self.up += int(figures[2])
        self.away += int(figures[3])
        self.worse += int(figures[7])
        self.better += int(figures[8])
        if n1:
            self.min_steps = min(self.min_steps, figures[5])
            if self.worst is None or figures[4] > self.worst[4]:
                j = int(figures[6])
                self.worst = (int(positions[j]), float(e[j]), float(c[j]), float(r[j]), figures[4])
        for counts, key in (
            (self.row_counts, positions // max(self.last, 1)),
            (self.col_counts, positions % max(self.last, 1)),
        ):
            if counts is not None and (n1 or figures[1]):
                counts[0].index_add_(0, key[k1], torch.ones((), dtype=torch.int32, device=key.device).expand(n1))
                counts[1].index_add_(
                    0, key[k2], torch.ones((), dtype=torch.int32, device=key.device).expand(int(figures[1]))
                )

    def finish(self) -> ElementCounts:
        worst = None
        if self.worst is not None:
            position, e, c, r, steps = self.worst
            worst = Worst(unravel(position, self.shape), e, c, r, steps)
        regions = []
        if self.k1 and self.k2:  # with k2 == 0 every region has the leaf's share: nothing to concentrate
            share = self.k1 / (self.k1 + self.k2)
            for axis, counts in (("row", self.row_counts), ("column", self.col_counts)):
                if counts is not None:
                    region = _richest(axis, counts, share, self.shape)
                    if region is not None:
                        regions.append(region)
        return ElementCounts(
            str(self.dtype).removeprefix("torch."),
            self.numel,
            self.k1,
            self.k2,
            self.worse,
            self.better,
            self.up,
            self.away,
            0.0 if self.min_steps == math.inf else self.min_steps,
            0.0 if self.worst is None else self.worst[4],
            worst,
            tuple(regions),
        )


def _richest(axis: str, counts: torch.Tensor, share: float, shape: tuple[int, ...]) -> Region | None:
    """The region with the smallest binomial tail of its k1 count against the leaf's share (screened by z-score)."""
    k1, k2 = counts[0].to(torch.float64), counts[1].to(torch.float64)
    n = k1 + k2
    z = (k1 - share * n) / torch.sqrt(n * share * (1 - share)).clamp_min(1e-12)
    z = torch.where(k1 >= N_MIN, z, torch.full_like(z, -math.inf))
    top = torch.topk(z, min(_REGION_SCREEN, z.numel()))
    best: Region | None = None
    regions = counts.shape[1]
    for score, i in zip(top.values.tolist(), top.indices.tolist()):
        if score == -math.inf:
            break
        a, b = int(counts[0, i]), int(counts[1, i])
        log10p = log10_binomial_tail(a, a + b, share) + math.log10(regions)
        if best is None or log10p < best.log10p:
            index = unravel(i, shape[:-1]) if axis == "row" else (i,)
            size = math.prod(shape[:-1]) if axis == "column" else shape[-1]
            best = Region(axis, index, size, a, b, regions, log10p)
    return best


def unravel(flat: int, shape: tuple[int, ...]) -> tuple[int, ...]:
    """A flat index as an index into `shape` (C order)."""
    index = []
    for n in reversed(shape):
        index.append(flat % n)
        flat //= n
    return tuple(reversed(index))


def log10_binomial_tail(k: int, n: int, p: float) -> float:
    """log10 P(X >= k) for X ~ Binomial(n, p), exactly (the regularized incomplete beta I_p(k, n - k + 1)), also far below 1e-300."""
    if k <= 0:
        return 0.0
    if k > n or p <= 0.0:
        return -math.inf
    if p >= 1.0:
        return 0.0
    return _log10_betainc(float(k), float(n - k + 1), p)


def _log10_betainc(a: float, b: float, x: float) -> float:
    """log10 of the regularized incomplete beta function I_x(a, b), by its continued fraction (Lentz)."""
    log_front = a * math.log(x) + b * math.log1p(-x) - (math.lgamma(a) + math.lgamma(b) - math.lgamma(a + b))
    if x < (a + 1.0) / (a + b + 2.0):
        return (log_front - math.log(a) + math.log(_betacf(a, b, x))) / math.log(10)
    # the other tail is the small one: I_x(a, b) = 1 - I_{1-x}(b, a)
    other = math.exp(log_front - math.log(b)) * _betacf(b, a, 1.0 - x)
    return math.log10(max(1.0 - other, 1e-300))


def _betacf(a: float, b: float, x: float) -> float:
    tiny = 1e-300
    qab, qap, qam = a + b, a + 1.0, a - 1.0
    c, d = 1.0, 1.0 - qab * x / qap
    d = 1.0 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 100_000):
        m2 = 2 * m
        aa = m * (b - m) * x / ((qam + m2) * (a + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > tiny else tiny)
        c = 1.0 + aa / c
        c = c if abs(c) > tiny else tiny
        h *= d * c
        aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > tiny else tiny)
        c = 1.0 + aa / c
        c = c if abs(c) > tiny else tiny
        delta = d * c
        h *= delta
        if abs(delta - 1.0) < 1e-12:
            break
    return h
