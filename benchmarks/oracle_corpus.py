"""Programs of realistic size for the oracle's self-test (benchmarks/oracle_mutation.py).

Two sets:
- BENIGN: correct programs whose real compiled output differs from eager only by reassociation and
  low-precision noise (a transformer block in fp32 and bf16, a conv net, softmax / layer norm / sums over
  about 10^6 elements, ill-conditioned arithmetic). Every oracle should accept them.
- FAULTS: programs with a known wrong "compiled" side, built from eager itself, of the kinds a plain
  fp64 three-way rule cannot see: compiled more accurate than eager (a Python scalar kept in fp32 where
  eager rounds it to bf16/fp16; an explicit rounding skipped), and faults behind a random draw whose fp64
  reference draws other numbers.

Only torch; imported by the benchmark, which runs them in its own process (they are ours, not user code).
"""

from __future__ import annotations

import copy
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.overrides import TorchFunctionMode


@dataclass(frozen=True)
class Program:
    name: str
    fn: Callable[..., Any]  # eager (an nn.Module or a function)
    inputs: Callable[[], tuple[Any, ...]]
    fault: str | None = None  # the fault kind, for FAULTS
    faulty: Callable[..., Any] | None = None  # the wrong "compiled" callable, for FAULTS


class Block(nn.Module):
    """A pre-norm transformer block: attention (SDPA) and a GELU MLP, dropout in eval mode."""

    def __init__(self, width: int = 256, heads: int = 4) -> None:
        super().__init__()
        self.heads = heads
        self.norm1, self.norm2 = nn.LayerNorm(width), nn.LayerNorm(width)
        self.qkv, self.proj = nn.Linear(width, 3 * width), nn.Linear(width, width)
        self.mlp = nn.Sequential(nn.Linear(width, 4 * width), nn.GELU(), nn.Linear(4 * width, width), nn.Dropout(0.1))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, n, d = x.shape
        q, k, v = self.qkv(self.norm1(x)).reshape(b, n, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4)
        att = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(att.transpose(1, 2).reshape(b, n, d))
        return x + self.mlp(self.norm2(x))


class ConvNet(nn.Module):
    """Stem, two residual conv blocks with batch norm (eval), global pooling and a classifier."""

    def __init__(self) -> None:
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU())
        self.blocks = nn.ModuleList(
            nn.Sequential(
                nn.Conv2d(32, 32, 3, padding=1),
                nn.BatchNorm2d(32),
                nn.ReLU(),
                nn.Conv2d(32, 32, 3, padding=1),
                nn.BatchNorm2d(32),
            )
            for _ in range(2)
        )
        self.head = nn.Linear(32, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.stem(x)
        for block in self.blocks:
            x = F.relu(x + block(x))
        return self.head(x.mean((2, 3)))


def _seeded(build: Callable[[], nn.Module], dtype: torch.dtype = torch.float32) -> nn.Module:
    torch.manual_seed(0)
    return build().eval().to(dtype)


def _softmax(x: torch.Tensor) -> torch.Tensor:
    return torch.softmax(x * 3.0, dim=-1)


def _layernorm(x: torch.Tensor, w: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return F.layer_norm(x, (x.shape[-1],), w, b)


def _sums(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    return x.sum(), x.reshape(1024, 1024).sum(-1)


def _ill_conditioned(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    # (x - 1)^7 expanded, evaluated next to its root: the result is all cancellation; and a mean-centred
    # sum, whose exact value is 0, so every digit of it is rounding (both are ill-conditioned, not wrong)
    p = x**7 - 7 * x**6 + 21 * x**5 - 35 * x**4 + 35 * x**3 - 21 * x**2 + 7 * x - 1
    centred = (x - x.mean(-1, keepdim=True)).sum(-1)
    return p, centred


def _benign() -> list[Program]:
    block = _seeded(Block)
    block_bf16 = _seeded(Block, torch.bfloat16)
    conv = _seeded(ConvNet)
    return [
        Program("transformer block (fp32, 4x128x256)", block, lambda: (torch.randn(4, 128, 256),)),
        Program("transformer block (bf16, 4x128x256)", block_bf16, lambda: (torch.randn(4, 128, 256).bfloat16(),)),
        Program("conv net (fp32, 8x3x64x64)", conv, lambda: (torch.randn(8, 3, 64, 64),)),
        Program("softmax (1024x1024)", _softmax, lambda: (torch.randn(1024, 1024),)),
        Program(
            "layer norm (1024x1024)",
            _layernorm,
            lambda: (torch.randn(1024, 1024) * 4 + 1, torch.rand(1024) + 0.5, torch.randn(1024)),
        ),
        Program("sums (2^20 elements)", _sums, lambda: (torch.randn(1 << 20) + 0.5,)),
        Program(
            "ill-conditioned (x-1)^7, centred sums", _ill_conditioned, lambda: (1 + (torch.rand(64, 512) - 0.5) * 1e-2,)
        ),
    ]


# ---- faults: compiled more accurate than eager ---------------------------------------------------------

_SCALAR_OPS = {torch.remainder, torch.fmod, torch.Tensor.remainder, torch.Tensor.fmod, torch.Tensor.__mod__}


class ScalarKeptInFp32(TorchFunctionMode):
    """Inductor's bug class (pytorch#186875) as a fault: fmod/remainder of a bf16/fp16 tensor by a Python
    float computed in fp32 with the scalar unrounded, then rounded once; eager rounds the scalar first."""

    def __torch_function__(
        self, func: Any, types: Any, args: tuple[Any, ...] = (), kwargs: dict[str, Any] | None = None
    ) -> Any:
        kwargs = kwargs or {}
        if func in _SCALAR_OPS and len(args) == 2 and isinstance(args[1], float) and isinstance(args[0], torch.Tensor):
            x = args[0]
            if x.dtype in (torch.bfloat16, torch.float16):
                return func(x.float(), args[1]).to(x.dtype)
        return func(*args, **kwargs)


def _under(mode_type: type[TorchFunctionMode], fn: Callable[..., Any]) -> Callable[..., Any]:
    def faulty(*args: Any) -> Any:
        with mode_type():
            return fn(*args)

    return faulty


def _remainder_bf16(x: torch.Tensor) -> torch.Tensor:
    return torch.remainder(x, 0.7) * 2 + x


def _fmod_fp16(x: torch.Tensor) -> torch.Tensor:
    return torch.fmod(x, 0.3)


def _quantize(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return (a * 3.3).bfloat16().float() + b  # simulated bf16 quantization, asked for explicitly


def _quantize_skipped(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return a * 3.3 + b


# ---- faults behind a random draw -------------------------------------------------------------------------


class NoisyMLP(nn.Module):
    """Gaussian noise augmentation on the input, then an MLP: randn_like draws other numbers in float64."""

    def __init__(self) -> None:
        super().__init__()
        self.net = nn.Sequential(nn.Linear(128, 256), nn.GELU(), nn.Linear(256, 128))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x + 0.1 * torch.randn_like(x))


def _jittered(x: torch.Tensor) -> torch.Tensor:
    return x * 2 + torch.rand_like(x)


def _one_percent_off(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Eager's own output (the same draws) with every 64th element 1% off: a value fault, not a new draw."""

    def faulty(*args: Any) -> Any:
        out = fn(*args).detach().clone()
        flat = out.view(-1)
        flat[::64] *= 1.01
        return out

    return faulty


def _faults() -> list[Program]:
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    namespace: dict[str, Any] = {}
    exec(
        compile(
            (root / "sample_cases" / "forecaster_remainder_bf16.py").read_text(), "forecaster_remainder_bf16.py", "exec"
        ),
        namespace,
    )
    forecaster, forecaster_inputs = namespace["fn"], namespace["inputs"]
    noisy = _seeded(NoisyMLP)
    scalar = "scalar kept in fp32 (compiled more accurate)"
    return [
        Program(
            "remainder(x_bf16, 0.7)",
            _remainder_bf16,
            lambda: ((torch.randn(256) * 3).bfloat16(),),
            scalar,
            _under(ScalarKeptInFp32, _remainder_bf16),
        ),
        Program(
            "fmod(x_fp16, 0.3)",
            _fmod_fp16,
            lambda: ((torch.randn(256) * 3).half(),),
            scalar,
            _under(ScalarKeptInFp32, _fmod_fp16),
        ),
        Program(
            "bf16 forecaster (remainder by 0.7)",
            forecaster,
            forecaster_inputs,
            scalar,
            _under(ScalarKeptInFp32, forecaster),
        ),
        Program(
            "explicit bf16 quantization",
            _quantize,
            lambda: (torch.randn(64, 64), torch.randn(64, 64)),
            "explicit rounding skipped (compiled more accurate)",
            _quantize_skipped,
        ),
        Program(
            "x * 2 + rand_like(x)",
            _jittered,
            lambda: (torch.randn(64, 64),),
            "1% off behind a random reference",
            _one_percent_off(_jittered),
        ),
        Program(
            "noisy MLP (randn_like)",
            noisy,
            lambda: (torch.randn(32, 128),),
            "1% off behind a random reference",
            _one_percent_off(noisy),
        ),
    ]


def benign_programs() -> list[Program]:
    return _benign()


def fault_programs() -> list[Program]:
    return _faults()


# ---- one-ULP fault families (issue #24), each at the op where it happens, in a realistic program ----------
#
# Every program below is an nn.Module with a `variant`: "eager" is the program as written (what eager runs),
# "clean" computes the same op as a correct compiler would (compiled, it is a benign case: any alarm is false),
# "fault" computes it wrongly in one of the ways. The fault variant is compiled by the real
# torch.compile, so every other op carries Inductor's real noise around the fault. Each program returns the
# value of the op where the fault happens beside its final output (`own`): the fault is judged where it happens
# and, separately, only where it ends up (`final`).

LOW = (torch.bfloat16, torch.float16)


def round_in_fp32(x: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """fp32 `x` rounded to `dtype`'s significand (nearest-even) by integer arithmetic, still fp32: a rounding
    Inductor cannot elide (it removes an explicit `.to(bf16).float()` pair inside a kernel). A float64 `x` (the
    program's float64 reference) is rounded the same way, in float64."""
    drop = 16 if dtype is torch.bfloat16 else 13
    if x.dtype == torch.float64:
        _, exponent = torch.frexp(x)
        step = torch.ldexp(torch.ones_like(x), exponent.to(torch.int64) - (24 - drop))
        return torch.round(x / step) * step
    bits = x.view(torch.int32)
    bits = (bits + ((1 << (drop - 1)) - 1) + ((bits >> drop) & 1)) & ~((1 << drop) - 1)
    return bits.view(torch.float32)


def scalar_op(
    variant: str,
    op: Callable[[torch.Tensor, float], torch.Tensor],
    x: torch.Tensor,
    value: float,
    low: torch.dtype | None = None,
) -> torch.Tensor:
    """`op(x, value)` for a bf16/fp16 x: eager rounds `value` to x's dtype; "fault" keeps it in fp32 (what Inductor
    does for add/sub/pow/remainder/fmod on torch 2.13); "clean" rounds it first, as eager does. `low`: the program's
    dtype, for its float64 reference (where x is float64 and the clean variant computes in float64)."""
    if variant == "eager":
        return op(x, value)
    scalar = value if variant == "fault" else ROUNDED[value, low or x.dtype]
    return op(x.to(torch.promote_types(x.dtype, torch.float32)), scalar).to(x.dtype)


# each Python scalar of the programs below as eager rounds it (a table: torch.tensor() in forward would break the graph)
# (0.1, 0.35, 1.7 and log 2: benchmarks/oracle_fresh.py's programs)
ROUNDED = {
    (v, dt): float(torch.tensor(v, dtype=dt))
    for v in (0.45, 2.2, 0.7, 0.3, 0.1, 0.35, 1.7, math.log(2.0))
    for dt in LOW
}


class Variant(nn.Module):
    variant = "eager"
    low: torch.dtype | None = None  # the program's bf16/fp16 dtype (set by _pair), which its float64 run forgets


class ImageNormalizer(Variant):
    """A conv net on an image normalised with Python floats, `(img - 0.45) / 0.226`, or linearised, `img ** 2.2`."""

    def __init__(self, op: str) -> None:
        super().__init__()
        self.op, self.net = op, ConvNet()

    def forward(self, img: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        if self.op == "sub":
            x = scalar_op(self.variant, lambda a, b: a - b, img, 0.45, self.low) / 0.226
        else:
            x = scalar_op(self.variant, torch.pow, img, 2.2, self.low)
        return self.net(x), x


class PhaseEncoder(Variant):
    """An event encoder: a phase feature `t mod 0.7` (remainder or fmod), value features, attention and an MLP."""

    def __init__(self, op: str, width: int = 64) -> None:
        super().__init__()
        self.op = op
        self.value, self.phase = nn.Linear(4, width), nn.Linear(2, width)
        self.block = Block(width, 4)

    def forward(self, feats: torch.Tensor, t: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        phase = scalar_op(self.variant, torch.remainder if self.op == "remainder" else torch.fmod, t, 0.7, self.low)
        angle = phase * (2 * 3.141592653589793 / 0.7)
        x = self.value(feats) + self.phase(torch.stack([angle.sin(), angle.cos()], -1))
        return self.block(x), phase


class ShiftedHead(Variant):
    """A transformer block whose output goes through a shifted activation: `softplus(h) + 0.3` (add), or a
    hinge `relu(0.7 - h)` (rsub), or a layer-scaled residual `add(x, h, alpha=0.3)`."""

    def __init__(self, op: str, width: int = 128) -> None:
        super().__init__()
        self.op, self.block = op, Block(width, 4)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        h = self.block(x)
        if self.op == "add":
            y = scalar_op(self.variant, lambda a, b: a + b, F.softplus(h), 0.3, self.low)
        elif self.op == "rsub":
            y = torch.relu(scalar_op(self.variant, lambda a, b: b - a, h, 0.7, self.low))
        else:  # add with alpha: eager rounds alpha to the dtype
            if self.variant == "eager":
                y = torch.add(x, h, alpha=0.3)
            else:
                alpha = 0.3 if self.variant == "fault" else ROUNDED[0.3, self.low or x.dtype]
                wide = torch.promote_types(x.dtype, torch.float32)
                y = (x.to(wide) + alpha * h.to(wide)).to(x.dtype)
        return h, y


class LlamaBlock(Variant):
    """RMSNorm (fp32 inside, cast back as HF does), attention with an explicit softmax, SwiGLU; bf16 or fp16.
    `rounding` names the fp32 intermediate the fault variant rounds to the dtype (an added rounding)."""

    def __init__(
        self, rounding: str, width: int = 128, heads: int = 4, hidden: int = 344, dropout: float = 0.0
    ) -> None:
        super().__init__()
        self.rounding, self.heads, self.dropout = rounding, heads, dropout
        self.w1, self.w2 = nn.Parameter(torch.ones(width)), nn.Parameter(torch.ones(width))
        self.qkv, self.o = nn.Linear(width, 3 * width, bias=False), nn.Linear(width, width, bias=False)
        self.gate, self.up, self.down = (
            nn.Linear(width, hidden, bias=False),
            nn.Linear(width, hidden, bias=False),
            nn.Linear(hidden, width, bias=False),
        )

    def _round(self, what: str, x: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
        return round_in_fp32(x, dtype) if self.variant == "fault" and self.rounding == what else x

    def rms(self, x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
        h = x.float()
        if self.rounding == "mean":  # a centred RMSNorm (LayerNorm without bias): the mean is the fault's place
            h = h - self._round("mean", h.mean(-1, keepdim=True), x.dtype)
        s = self._round("scale", torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + 1e-6), x.dtype)
        return w * (h * s).to(x.dtype)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        b, n, d = x.shape
        normed = self.rms(x, self.w1)
        q, k, v = self.qkv(normed).reshape(b, n, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4)
        att = (q @ k.transpose(-1, -2)) * (d // self.heads) ** -0.5
        att = att.float() + torch.triu(torch.full((n, n), float("-inf")), 1)
        ex = self._round("exp", (att - att.amax(-1, keepdim=True)).exp(), x.dtype)
        p = (ex / ex.sum(-1, keepdim=True)).to(x.dtype)
        if self.dropout:
            p = F.dropout(p, self.dropout, training=True)
        x = x + self.o((p @ v).transpose(1, 2).reshape(b, n, d))
        h = self.rms(x, self.w2)
        out = x + self.down(F.silu(self.gate(h)) * self.up(h))
        return out, (p if self.rounding == "exp" else normed)


class FakeQuantMLP(Variant):
    """An fp32 MLP that simulates low-precision inference: activations (or weights) rounded to bf16/fp16 on purpose
    with `.to(dtype).to(x.dtype)`; the fault variant skips the rounding it asked for."""

    def __init__(self, what: str, dtype: torch.dtype) -> None:
        super().__init__()
        self.what, self.dtype = what, dtype
        self.a, self.b = nn.Linear(128, 512), nn.Linear(512, 128)

    def _q(self, x: torch.Tensor) -> torch.Tensor:
        if self.variant == "eager":
            return x.to(self.dtype).to(
                x.dtype
            )  # as written (Inductor elides this pair inside a kernel: precision-cast)
        return x if self.variant == "fault" else round_in_fp32(x, self.dtype)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        if self.what == "weights":
            h = F.gelu(F.linear(x, self._q(self.a.weight), self.a.bias))
        else:
            h = self._q(F.gelu(self.a(x)))
        return self.b(h), h


class BucketEncoder(Variant):
    """Time buckets looked up in an embedding. "tie": `bucketize` against edges every 0.1, times on a 1/64 grid so that
    some sit on an edge, and the fault puts a time on an edge in the bucket below (`right=False`). "floordiv":
    `t // 0.1` on fp32 times every 0.05, and the fault computes floor(t / 0.1) from the rounded quotient (what
    Inductor does, pytorch's floor-division bug class) where eager's exact algorithm gives one less at some edges."""

    def __init__(self, fault: str, width: int = 64) -> None:
        super().__init__()
        self.fault = fault
        self.register_buffer("edges", torch.arange(1, 13) / 10)
        self.embed, self.value = nn.Embedding(16, width), nn.Linear(4, width)
        self.block = Block(width, 4)

    def forward(self, feats: torch.Tensor, t: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        if self.fault == "tie":
            bucket = torch.bucketize(t.float(), self.edges.float(), right=self.variant != "fault")
        elif self.variant == "eager":
            bucket = torch.div(t, 0.1, rounding_mode="floor").long()
        elif self.variant == "clean":  # ATen's algorithm, written out: fmod first, then the exact quotient
            mod = torch.fmod(t, 0.1)
            div = (t - mod) / 0.1
            div = torch.where((mod != 0) & (mod < 0), div - 1, div)
            floor = div.floor()
            bucket = torch.where(div - floor > 0.5, floor + 1, floor).long()
        else:
            bucket = (t / 0.1).floor().long()
        return self.block(self.value(feats) + self.embed(bucket.clamp(0, 15))), bucket


class TableActivation(Variant):
    """A learned piecewise-linear activation (a lookup table of 17 knots on [-4, 4]) inside an MLP; the fault clamps
    the segment index one short, so inputs in the last segment are extrapolated from the one before."""

    def __init__(self, width: int = 128) -> None:
        super().__init__()
        self.a, self.b = nn.Linear(width, width), nn.Linear(width, width)
        self.table = nn.Parameter(torch.randn(17) * 0.5 + torch.linspace(-4, 4, 17).clamp(min=0))

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        u = (
            (self.a(x).float() * 3).clamp(-4, 4) + 4
        ) * 2  # knot coordinates in [0, 16]; a few percent in the last segment
        top = 14 if self.variant == "fault" else 15
        i = u.floor().clamp(0, top)
        frac = u - i
        table = self.table.float()
        act = (table[i.long()] * (1 - frac) + table[i.long() + 1] * frac).to(x.dtype)
        return self.b(act), act


class SmallValues(Variant):
    """Ops whose small outputs a careless kernel gets wrong: attention probabilities flushed to zero below fp16's
    normal range ("ftz"), a sigmoid gate as 1 - sigmoid(-x) for negative x ("sigmoid"), a variance head
    softplus(h) as log(1 + exp(h)) ("softplus")."""

    def __init__(self, fault: str, width: int = 128, dropout: float = 0.0) -> None:
        super().__init__()
        self.fault, self.dropout = fault, dropout
        self.qk, self.v = nn.Linear(width, 2 * width), nn.Linear(width, width)
        self.head = nn.Linear(width, width)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        if self.fault == "ftz":
            q, k = self.qk(x).chunk(2, -1)
            logits = (q @ k.transpose(-1, -2)) * 0.5
            p = torch.softmax(logits.float(), -1).to(x.dtype)
            if self.variant == "fault":
                p = torch.where(p.abs() < 2.0**-14, torch.zeros_like(p), p)
            if self.dropout:
                p = F.dropout(p, self.dropout, training=True)
            return p @ self.v(x), p
        h = self.head(x).float() * 16  # sharp logits: a few percent of them below -17, where the outputs are small
        if self.fault == "sigmoid":
            small = 1 - torch.sigmoid(-h) if self.variant == "fault" else torch.sigmoid(h)
            y = torch.where(h < 0, small, torch.sigmoid(h)).to(x.dtype)
        else:
            y = (torch.log(1 + torch.exp(h)) if self.variant == "fault" else F.softplus(h)).to(x.dtype)
        if self.dropout:
            y = F.dropout(y, self.dropout, training=True)
        return self.v(y), y


class NoisyNormalizer(Variant):
    """Training-time augmentation: Gaussian noise and dropout on a feature vector, then `x - 0.45` with a Python float,
    then an MLP; compiled with fallback_random=True, so both sides draw the same numbers and only the scalar differs."""

    def __init__(self, width: int = 128) -> None:
        super().__init__()
        self.net = nn.Sequential(nn.Linear(width, 256), nn.GELU(), nn.Linear(256, width))

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        x = F.dropout(x + 0.1 * torch.randn_like(x), 0.1, training=True)
        x = scalar_op(self.variant, lambda a, b: a - b, x, 0.45, self.low)
        return self.net(x), x


@dataclass(frozen=True)
class Case:
    """One program of the one-ULP families: eager, and what is compiled beside it (the clean or the fault variant)."""

    name: str
    family: str  # "scalar", "rounding", "index", "small", "random"; "benign" for a clean variant or a benign model
    fn: nn.Module
    compiled: nn.Module  # compiled with torch.compile(..., options=options)
    inputs: Callable[[], tuple[Any, ...]]
    own: str = "out[1]"  # the leaf the fault's op writes ("" for a model with no fault)
    options: dict[str, Any] | None = None


FAMILIES = {
    "scalar": "one Python scalar not rounded",
    "rounding": "one intermediate rounding skipped or added",
    "index": "an off-by-one bucket or index in a subset of elements",
    "small": "a wrong value only in small-magnitude elements",
    "random": "the same under a random draw",
}


def _pair(
    name: str,
    family: str,
    build: Callable[[], Variant],
    dtype: torch.dtype | None,
    inputs: Callable[[], tuple[Any, ...]],
    options: dict[str, Any] | None = None,
    own: str = "out[1]",
) -> tuple[Case, Case]:
    """The fault case and its clean twin: the same weights, eager the program as written."""
    torch.manual_seed(0)
    eager = build().eval()
    if dtype is not None:
        eager = eager.to(dtype)
        for m in eager.modules():
            if isinstance(m, Variant):
                m.low = dtype
    variants = {}
    for variant in ("clean", "fault"):
        v = copy.deepcopy(eager)
        for m in v.modules():
            if isinstance(m, Variant):
                m.variant = variant
        variants[variant] = v
    return (
        Case(name, family, eager, variants["fault"], inputs, own, options),
        Case(f"{name}, clean", "benign", eager, variants["clean"], inputs, own, options),
    )


def _short(dtype: torch.dtype) -> str:
    return {torch.bfloat16: "bf16", torch.float16: "fp16", torch.float32: "fp32"}[dtype]


def _grid_times(n: int = 4 * 96) -> torch.Tensor:
    return (torch.randint(0, 80, (4, n // 4)) / 64.0).sort(-1).values


def one_ulp_cases() -> list[tuple[Case, Case]]:
    """(fault, clean twin) per program of the five families, in bf16 and fp16 where the fault exists in both."""
    pairs = []
    for dt in LOW:
        s = _short(dt)

        def image(dt=dt):
            return (torch.rand(4, 3, 48, 48).to(dt),)

        def tokens(dt=dt):
            return (torch.randn(4, 64, 128).to(dt),)

        def events(dt=dt):
            return (torch.randn(4, 96, 4).to(dt), (torch.rand(4, 96) * 1.3).sort(-1).values.to(dt))

        def grid_events(dt=dt):
            return (torch.randn(4, 96, 4).to(dt), _grid_times().to(dt))

        def rows(dt=dt):
            return (torch.randn(256, 128).to(dt),)

        pairs += [
            _pair(f"image (img - 0.45) / 0.226 -> conv net ({s})", "scalar", lambda: ImageNormalizer("sub"), dt, image),
            _pair(f"image img ** 2.2 -> conv net ({s})", "scalar", lambda: ImageNormalizer("pow"), dt, image),
            _pair(
                f"event encoder, phase remainder(t, 0.7) ({s})", "scalar", lambda: PhaseEncoder("remainder"), dt, events
            ),
            _pair(f"event encoder, phase fmod(t, 0.7) ({s})", "scalar", lambda: PhaseEncoder("fmod"), dt, events),
            _pair(f"block -> softplus(h) + 0.3 ({s})", "scalar", lambda: ShiftedHead("add"), dt, tokens),
            _pair(f"block -> hinge relu(0.7 - h) ({s})", "scalar", lambda: ShiftedHead("rsub"), dt, tokens),
            _pair(
                f"block, layer-scaled residual add(x, h, alpha=0.3) ({s})",
                "scalar",
                lambda: ShiftedHead("alpha"),
                dt,
                tokens,
            ),
            _pair(
                f"llama block, RMS scale rounded to {s} (added)", "rounding", lambda: LlamaBlock("scale"), dt, tokens
            ),
            _pair(
                f"llama block, softmax exp rounded to {s} (added)", "rounding", lambda: LlamaBlock("exp"), dt, tokens
            ),
            _pair(
                f"llama block, centred norm's mean rounded to {s} (added)",
                "rounding",
                lambda: LlamaBlock("mean"),
                dt,
                tokens,
            ),
            _pair(
                f"fp32 MLP, activations fake-quantised to {s}, rounding skipped",
                "rounding",
                lambda dt=dt: FakeQuantMLP("activations", dt),
                None,
                lambda: (torch.randn(64, 128),),
            ),
            _pair(
                f"fp32 MLP, weights fake-quantised to {s}, rounding skipped",
                "rounding",
                lambda dt=dt: FakeQuantMLP("weights", dt),
                None,
                lambda: (torch.randn(64, 128),),
            ),
            _pair(f"time buckets, edge ties off by one ({s})", "index", lambda: BucketEncoder("tie"), dt, grid_events),
            _pair(
                f"time buckets, t // 0.1 as floor(t / 0.1) ({s} encoder, fp32 times)",
                "index",
                lambda: BucketEncoder("floordiv"),
                dt,
                lambda dt=dt: (torch.randn(4, 96, 4).to(dt), torch.randint(0, 26, (4, 96)) * 0.05),
            ),
            _pair(f"lookup-table activation, last segment index off by one ({s})", "index", TableActivation, dt, rows),
            _pair(f"sigmoid gate as 1 - sigmoid(-x) ({s})", "small", lambda: SmallValues("sigmoid"), dt, rows),
            _pair(
                f"variance head softplus as log(1 + exp(h)) ({s})", "small", lambda: SmallValues("softplus"), dt, rows
            ),
            _pair(
                f"noisy input, dropout, x - 0.45 ({s}, fallback_random)",
                "random",
                NoisyNormalizer,
                dt,
                rows,
                {"fallback_random": True},
            ),
            _pair(
                f"llama block, attention dropout, RMS scale rounded ({s}, fallback_random)",
                "random",
                lambda: LlamaBlock("scale", dropout=0.1),
                dt,
                tokens,
                {"fallback_random": True},
            ),
            _pair(
                f"dropout, softplus as log(1 + exp(h)) ({s}, fallback_random)",
                "random",
                lambda: SmallValues("softplus", dropout=0.1),
                dt,
                rows,
                {"fallback_random": True},
            ),
        ]

    def tokens16():
        return (torch.randn(4, 64, 128).half(),)

    pairs += [
        _pair(
            "attention probabilities below fp16's normal range flushed to zero (fp16)",
            "small",
            lambda: SmallValues("ftz"),
            torch.float16,
            tokens16,
        ),
        _pair(
            "attention dropout, probabilities flushed to zero (fp16, fallback_random)",
            "random",
            lambda: SmallValues("ftz", dropout=0.1),
            torch.float16,
            tokens16,
            {"fallback_random": True},
        ),
    ]
    return pairs


class Outputs(nn.Module):
    """A transformers model returning plain tensors (`return_dict=False`, no cache for a causal LM): its first
    output."""

    def __init__(self, model: nn.Module, **kwargs: Any) -> None:
        super().__init__()
        self.model, self.kwargs = model, kwargs

    def forward(self, *args: Any) -> torch.Tensor:
        return self.model(*args, return_dict=False, **self.kwargs)[0]


def zoo_models() -> list[Case]:
    """Small-config transformers models with random weights (2 layers, width 256), bf16 and fp16: GPT-2, Llama,
    BERT, ViT. Empty when transformers is not installed."""
    try:
        import transformers as T
    except ImportError:
        return []

    def ids():
        return (torch.randint(0, 1000, (2, 128)),)

    configs = {
        "GPT-2": (
            lambda: T.GPT2LMHeadModel(T.GPT2Config(n_layer=2, n_embd=256, n_head=4, vocab_size=1000, n_positions=256)),
            ids,
            True,
        ),
        "Llama": (
            lambda: T.LlamaForCausalLM(
                T.LlamaConfig(
                    hidden_size=256,
                    intermediate_size=688,
                    num_hidden_layers=2,
                    num_attention_heads=4,
                    num_key_value_heads=2,
                    vocab_size=1000,
                    max_position_embeddings=256,
                )
            ),
            ids,
            True,
        ),
        "BERT": (
            lambda: T.BertModel(
                T.BertConfig(
                    hidden_size=256, num_hidden_layers=2, num_attention_heads=4, intermediate_size=1024, vocab_size=1000
                )
            ),
            ids,
            False,
        ),
        "ViT": (
            lambda: T.ViTModel(
                T.ViTConfig(
                    hidden_size=256,
                    num_hidden_layers=2,
                    num_attention_heads=4,
                    intermediate_size=1024,
                    image_size=64,
                    patch_size=8,
                )
            ),
            None,
            False,
        ),
    }
    cases = []
    for name, (build, inputs, causal) in configs.items():
        for dt in LOW:
            torch.manual_seed(0)
            model = Outputs(build().to(dt).eval(), **({"use_cache": False} if causal else {}))
            make = inputs if inputs is not None else (lambda dt=dt: (torch.randn(2, 3, 64, 64).to(dt),))
            cases.append(
                Case(f"transformers {name} ({_short(dt)}, 2 layers, width 256)", "benign", model, model, make, "")
            )

    # at their real vocabularies a row of logits has 32,000-50,257 elements that share one hidden state: what
    # made the element rule's tests fire on honest GPT-2, Llama, T5 and Whisper checks before ONE_SIDED
    def vocab(n):
        return lambda: (torch.randint(0, n, (1, 128)),)

    real = {
        "GPT-2": (
            lambda: T.GPT2LMHeadModel(T.GPT2Config(n_layer=2, n_embd=256, n_head=4, n_positions=256)),
            vocab(50257),
        ),
        "Llama": (
            lambda: T.LlamaForCausalLM(
                T.LlamaConfig(
                    hidden_size=256,
                    intermediate_size=688,
                    num_hidden_layers=2,
                    num_attention_heads=4,
                    num_key_value_heads=2,
                    vocab_size=32000,
                    max_position_embeddings=256,
                )
            ),
            vocab(32000),
        ),
    }
    for name, (build, inputs) in real.items():
        torch.manual_seed(0)
        model = Outputs(build().to(torch.bfloat16).eval(), use_cache=False)
        cases.append(
            Case(
                f"transformers {name} (bf16, 2 layers, width 256, its real vocabulary)",
                "benign",
                model,
                model,
                inputs,
                "",
            )
        )
    return cases


def realistic_benign_cases() -> list[Case]:
    """Benign programs of realistic size in bf16/fp16 beyond the fp32 set: blocks, a conv net, reductions, a Llama
    block."""
    out = []
    for dt in LOW:
        s = _short(dt)
        for name, build, inputs in (
            (f"transformer block ({s}, 4x128x256)", Block, lambda dt=dt: (torch.randn(4, 128, 256).to(dt),)),
            (f"conv net ({s}, 8x3x64x64)", ConvNet, lambda dt=dt: (torch.randn(8, 3, 64, 64).to(dt),)),
        ):
            module = _seeded(build, dt)
            out.append(Case(name, "benign", module, module, inputs, ""))

        def reductions(x):
            return (x.sum(-1), x.mean(-1), x.var(-1), torch.softmax(x, -1), F.layer_norm(x, (x.shape[-1],)))

        out.append(
            Case(
                f"sum, mean, var, softmax, layer_norm ({s}, 256x4096)",
                "benign",
                reductions,
                reductions,
                lambda dt=dt: ((torch.randn(256, 4096) + 0.3).to(dt),),
                "",
            )
        )
    return out
