"""Programs for issue #31's third evaluation ("evaluation-3"), written and frozen before the rule changes it scores.

Evaluation-2 (benchmarks/oracle_fresh.py) was reported once; rules changed after it (per-element NaN/inf counts,
fused buffers a consumer realised, in-place shared buffers skipped) and more are coming (the float64 remainder's
zero sign, bf16 fractional_max_pool2d). They are scored here, on programs nobody tuned on. Evaluation-2's caveat
was its hosts: small MLP and conv nets, nothing after the fault but a linear head. These hosts are more like
users' work, and every one returns what a user returns (pooled logits, a per-token loss):
- a config-object transformer block whose faulty op feeds attention, then a residual, LayerNorm or a hand-written
  RMSNorm, a GELU/SwiGLU MLP with eval-mode dropout, mean pooling and a classifier;
- a time-bucketing sensor encoder (`t // step` buckets, a `remainder(t, period)` phase) with a pooled head;
- a gated MLP with a hard-concrete gate `sigmoid(g) * 1.2 - 0.1` (L0 regularisation) and eval-mode dropout;
- an audio front end (power-law compression `mel ** 0.3`) into a conv stem with BatchNorm (eval) and global pool;
- position terms: rotary embeddings (angles in float32), an ALiBi-like `distance ** 0.6` penalty, T5 relative
  position buckets; sigmoid attention with the bias `-log(n)`; cosine attention with a logit scale of 10;
- an fp32 attention block whose keys and values are fake-quantised to bf16/fp16 (a low-precision KV cache).

The faults are the issue's four one-step families, written into Inductor for the compiled run only
(benchmarks/inductor_faults.py, `_eval3`): the program is the clean variant, eager computes it as written. The
ordinary programs are ops and blocks no earlier corpus has (new pointwise ops at std 1-4, softmax along dim 0,
LayerNorm without affine, GroupNorm + SiLU, causal attention written with masked_fill, baddbmm, a causal dilated
conv1d, conv_transpose2d, a config-object post-norm block).

Every program is split by a hash of its group (`eval3_part`, salted apart from both earlier splits): half go to
evaluation-3, frozen in tests/test_oracle_split.py and scored once on the final rule; the rest join the
calibration part, where a rule may be developed.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Callable
from dataclasses import dataclass

import oracle_corpus as oc
import torch
import torch.nn as nn
import torch.nn.functional as F
from oracle_corpus import Case, Variant
from oracle_fresh import _fresh_pointwise  # the same pointwise program shape as evaluation-2's
from ordinary_programs import _DT, Ordinary, _snippet

# The salt is the first "..., #k" (k = 0, 1, ...) for which every fault family has a group in both parts and the
# evaluation part holds 35-65% of the fault programs and of the ordinary groups: a rule about the split's shape,
# fixed before any program was checked (it reads group names only, never a result). k = 17.
EVAL3_SALT = "divergence-explorer oracle split 3, issue 31, 2026-12-07 #17"
EVALUATION_3 = "evaluation-3"


def eval3_part(group: str, salt: str = EVAL3_SALT) -> str:
    """evaluation-3 or calibration, by the first byte of sha256(salt + group)."""
    return EVALUATION_3 if hashlib.sha256((salt + group).encode()).digest()[0] < 128 else "calibration"


# each Python scalar of the programs below as eager rounds it (a table: torch.tensor() in forward breaks the graph)
_SCALARS = (0.6, 0.3, 0.1, math.log(64.0), 1.5)
ROUNDED = {(v, dt): float(torch.tensor(v, dtype=dt)) for v in _SCALARS for dt in oc.LOW}


def scalar_op(variant: str, op: Callable[..., torch.Tensor], x: torch.Tensor, value: float, low: torch.dtype | None):
    """`op(x, value)` in float32 for a bf16/fp16 x: "clean" with the scalar as eager rounds it to x's dtype, "fault"
    with it unrounded (the fault Inductor's pass writes back); "eager" the op as a user writes it."""
    if variant == "eager":
        return op(x, value)
    scalar = value if variant == "fault" else ROUNDED[value, low or x.dtype]
    return op(x.to(torch.promote_types(x.dtype, torch.float32)), scalar).to(x.dtype)


@dataclass(frozen=True)
class BlockConfig:
    """What a user's config object holds for the blocks below."""

    width: int = 128
    heads: int = 4
    mlp_ratio: int = 4
    dropout: float = 0.1  # the programs run in eval mode: identity
    eps: float = 1e-5
    classes: int = 10


class RMSNorm(nn.Module):
    """Written by hand, as in Llama: float32 inside, cast back before the weight."""

    def __init__(self, dim: int, eps: float = 1e-6) -> None:
        super().__init__()
        self.eps, self.weight = eps, nn.Parameter(torch.ones(dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = x.float()
        return self.weight * (h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + self.eps)).to(x.dtype)


class Encoder(Variant):
    """A post-norm transformer encoder layer from a config object, with a hook for the attention scores (where the
    position term or the faulty op goes), mean pooling and a classifier. Returns (logits, the hook's value)."""

    def __init__(self, cfg: BlockConfig, norm: str = "layer") -> None:
        super().__init__()
        d = cfg.width
        self.cfg = cfg
        self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.norm1 = nn.LayerNorm(d, eps=cfg.eps) if norm == "layer" else RMSNorm(d)
        self.norm2 = nn.LayerNorm(d, eps=cfg.eps) if norm == "layer" else RMSNorm(d)
        self.mlp = nn.Sequential(
            nn.Linear(d, cfg.mlp_ratio * d), nn.GELU(), nn.Dropout(cfg.dropout), nn.Linear(cfg.mlp_ratio * d, d)
        )
        self.drop = nn.Dropout(cfg.dropout)
        self.head = nn.Linear(d, cfg.classes)

    def heads(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        b, n, d = x.shape
        h = self.cfg.heads
        q, k, v = self.qkv(x).reshape(b, n, 3, h, d // h).permute(2, 0, 3, 1, 4)
        return q, k, v

    def attend(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Softmax attention with float32 probabilities; subclasses add their position term to the scores."""
        scores = (q @ k.transpose(-1, -2)) * q.shape[-1] ** -0.5
        p = torch.softmax(scores.float(), -1).to(q.dtype)
        return p @ v, scores

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        b, n, d = x.shape
        a, own = self.attend(*self.heads(x))
        x = self.norm1(x + self.drop(self.proj(a.transpose(1, 2).reshape(b, n, d))))
        x = self.norm2(x + self.mlp(x))
        return self.head(x.mean(1)), own


class SigmoidAttention(Encoder):
    """Sigmoid attention (Ramapuram et al. 2024): `sigmoid(q k^T / sqrt(d) - log n)`, the bias a Python float."""

    def attend(self, q, k, v):
        scores = (q @ k.transpose(-1, -2)) * q.shape[-1] ** -0.5
        shifted = scalar_op(self.variant, lambda a, b: a - b, scores, math.log(64.0), self.low)
        return torch.sigmoid(shifted) @ v, shifted


class AlibiPower(Encoder):
    """Causal attention with an ALiBi-like penalty `-slope_h * distance ** 0.6` (a sublinear distance term)."""

    def __init__(self, cfg: BlockConfig, n: int = 64) -> None:
        super().__init__(cfg)
        i = torch.arange(n)
        self.register_buffer("distance", (i[:, None] - i[None, :]).clamp(min=0).float())
        self.register_buffer("slopes", 2.0 ** (-8.0 * torch.arange(1, cfg.heads + 1) / cfg.heads))
        self.register_buffer("mask", torch.triu(torch.full((n, n), float("-inf")), 1))

    def attend(self, q, k, v):
        penalty = scalar_op(self.variant, torch.pow, self.distance, 0.6, self.low)
        scores = (q @ k.transpose(-1, -2)) * q.shape[-1] ** -0.5 - self.slopes[:, None, None] * penalty
        p = torch.softmax(scores.float() + self.mask, -1).to(q.dtype)
        return p @ v, penalty


class RotaryAttention(Encoder):
    """Rotary position embeddings with the angles and the rotation in float32 (as HF's Llama does), RMSNorms."""

    def __init__(self, cfg: BlockConfig) -> None:
        super().__init__(cfg, norm="rms")
        hd = cfg.width // cfg.heads
        self.register_buffer("inv_freq", 1.0 / (10000 ** (torch.arange(0, hd, 2).float() / hd)))

    def attend(self, q, k, v):
        n = q.shape[-2]
        angles = torch.arange(n, device=q.device, dtype=torch.float32)[:, None] * self.inv_freq.float()[None, :]
        emb = torch.cat([angles, angles], -1)
        cos, sin = emb.cos(), emb.sin()

        def rotate(x: torch.Tensor) -> torch.Tensor:
            x1, x2 = x.float().chunk(2, -1)
            return (x.float() * cos + torch.cat([-x2, x1], -1) * sin).to(x.dtype)

        out, _ = super().attend(rotate(q), rotate(k), v)
        return out, cos.to(q.dtype)


class RelativeBuckets(Encoder):
    """T5-style relative position buckets (exact below 16, log-spaced up to 64, clamped to the last of 32) looked up
    in a per-head bias table; bidirectional attention over 96 tokens."""

    def __init__(self, cfg: BlockConfig, buckets: int = 32, exact: int = 16, far: int = 64) -> None:
        super().__init__(cfg)
        self.buckets, self.exact, self.far = buckets, exact, far
        self.bias = nn.Embedding(buckets, cfg.heads)

    def bucket(self, n: int, device: torch.device) -> torch.Tensor:
        i = torch.arange(n, device=device)
        rel = (i[None, :] - i[:, None]).abs()
        large = self.exact + (
            torch.log(rel.float() / self.exact) / math.log(self.far / self.exact) * (self.buckets - self.exact)
        ).to(torch.int64)
        large = large.clamp_max(self.buckets - 1)
        return torch.where(rel < self.exact, rel, large)

    def attend(self, q, k, v):
        bucket = self.bucket(q.shape[-2], q.device)
        scores = (q @ k.transpose(-1, -2)) * q.shape[-1] ** -0.5 + self.bias(bucket).permute(2, 0, 1)
        p = torch.softmax(scores.float(), -1).to(q.dtype)
        return p @ v, bucket


class CosineAttention(Encoder):
    """Cosine attention (Swin v2): unit queries and keys, logit scale 10, float32 softmax cast to fp16."""

    def attend(self, q, k, v):
        scores = (F.normalize(q.float(), dim=-1) @ F.normalize(k.float(), dim=-1).transpose(-1, -2)) * 10.0
        p = torch.softmax(scores, -1).to(q.dtype)
        return p @ v, p


class KVQuantAttention(Encoder):
    """An fp32 encoder simulating a low-precision KV cache: keys and values rounded to bf16/fp16 on purpose (by
    integer arithmetic, which no kernel elides); the fault (in Inductor) skips that rounding."""

    def __init__(self, cfg: BlockConfig, dtype: torch.dtype) -> None:
        super().__init__(cfg)
        self.cache = dtype

    def attend(self, q, k, v):
        k, v = oc.round_in_fp32(k, self.cache), oc.round_in_fp32(v, self.cache)
        out, _ = super().attend(q, k, v)
        return out, k


class SensorEncoder(Variant):
    """A sensor encoder: events with float32 timestamps, a time bucket `t // step` (ATen's floor division, written
    out: fmod first) looked up in an embedding, a phase `remainder(t, period)` into sin/cos, value features, one
    encoder layer and a pooled prediction head. The fault is in the bucket ("floordiv": floor(t / step), pytorch's
    floor-division bug class) or in the phase ("phase": the period unrounded)."""

    def __init__(self, cfg: BlockConfig, fault: str, step: float, period: float) -> None:
        super().__init__()
        self.fault, self.step, self.period = fault, step, period
        self.value, self.phase = nn.Linear(4, cfg.width), nn.Linear(2, cfg.width)
        self.embed = nn.Embedding(32, cfg.width)
        self.encoder = Encoder(cfg)

    def buckets(self, t: torch.Tensor) -> torch.Tensor:
        mod = torch.fmod(t, self.step)
        div = (t - mod) / self.step
        div = torch.where((mod != 0) & (mod < 0), div - 1, div)
        floor = div.floor()
        return torch.where(div - floor > 0.5, floor + 1, floor).long()

    def forward(self, feats: torch.Tensor, t: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        low = feats.dtype
        phase = scalar_op(self.variant, torch.remainder, t.to(low), self.period, self.low)
        angle = phase * (2 * math.pi / self.period)
        bucket = self.buckets(t)
        x = (
            self.value(feats)
            + self.embed(bucket.clamp(0, 31))
            + self.phase(torch.stack([angle.sin(), angle.cos()], -1))
        )
        logits, _ = self.encoder(x)
        return logits, (bucket if self.fault == "floordiv" else phase)


class HardConcreteMLP(Variant):
    """A gated MLP block with a hard-concrete gate (L0 regularisation, eval mode): `clamp(sigmoid(g) * 1.2 - 0.1,
    0, 1)`, eval-mode dropout, a residual and a hand-written RMSNorm, mean pooling and a classifier."""

    def __init__(self, cfg: BlockConfig) -> None:
        super().__init__()
        d, hidden = cfg.width, cfg.mlp_ratio * cfg.width
        self.gate, self.up, self.down = nn.Linear(d, hidden), nn.Linear(d, hidden), nn.Linear(hidden, d)
        self.drop, self.norm, self.head = nn.Dropout(cfg.dropout), RMSNorm(d), nn.Linear(d, cfg.classes)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        s = torch.sigmoid(self.gate(x)) * 1.2
        s = scalar_op(self.variant, lambda a, b: a - b, s, 0.1, self.low).clamp(0, 1)
        x = self.norm(x + self.down(self.drop(s * F.silu(self.up(x)))))
        return self.head(x.mean(1)), s


class AudioFrontEnd(Variant):
    """An audio classifier: power-law compression `mel.clamp(min=1e-5) ** 0.3`, a conv stem with BatchNorm (eval,
    running statistics of a trained net) and SiLU, a second conv block, global average pooling and a classifier."""

    def __init__(self) -> None:
        super().__init__()
        self.stem, self.conv = nn.Conv2d(1, 32, 3, stride=2, padding=1), nn.Conv2d(32, 64, 3, padding=1)
        self.bn1, self.bn2 = nn.BatchNorm2d(32), nn.BatchNorm2d(64)
        for bn in (self.bn1, self.bn2):
            bn.running_mean.uniform_(-0.5, 0.5)
            bn.running_var.uniform_(0.5, 2.0)
        self.head = nn.Linear(64, 10)

    def forward(self, mel: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        x = scalar_op(self.variant, torch.pow, mel.clamp(min=1e-5), 0.3, self.low)
        h = F.silu(self.bn1(self.stem(x)))
        h = F.silu(self.bn2(self.conv(h)))
        return self.head(h.mean((2, 3))), x


class GaussianHead(Variant):
    """A heteroscedastic regression head on an encoder's tokens: mean and variance `softplus(h)` (sharp: a few
    percent of the variances are tiny), the per-token Gaussian negative log-likelihood (float32) as the output."""

    def __init__(self, cfg: BlockConfig) -> None:
        super().__init__()
        self.encoder = Encoder(cfg)
        self.mu, self.logvar = nn.Linear(cfg.width, 8), nn.Linear(cfg.width, 8)

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        b, n, d = x.shape
        q, k, v = self.encoder.heads(x)
        a, _ = self.encoder.attend(q, k, v)
        h = self.encoder.norm1(x + self.encoder.proj(a.transpose(1, 2).reshape(b, n, d)))
        var = F.softplus(self.logvar(h).float() * 12).clamp_min(1e-8)
        nll = 0.5 * (torch.log(var) + (y.float() - self.mu(h).float()) ** 2 / var)
        return nll.mean(-1), var.to(x.dtype)  # the loss in float32, as autocast leaves it (fp16 would overflow)


def eval3_cases() -> list[tuple[Case, Case]]:
    """(fault, clean twin) per program, in bf16 and fp16 where the family allows; the final output is out[0]."""
    cfg = BlockConfig()
    pairs = []
    for dt in oc.LOW:
        s = oc._short(dt)
        tokens = lambda dt=dt, n=64: (torch.randn(4, n, 128).to(dt),)  # noqa: E731
        long_tokens = lambda dt=dt: (torch.randn(4, 96, 128).to(dt),)  # noqa: E731
        mel = lambda dt=dt: ((torch.rand(4, 1, 64, 96) ** 2 * 4).to(dt),)  # noqa: E731
        phase_events = lambda dt=dt: (torch.randn(4, 96, 4).to(dt), (torch.rand(4, 96) * 3).sort(-1).values)  # noqa: E731
        grid_events = lambda dt=dt: (torch.randn(4, 96, 4).to(dt), torch.randint(0, 40, (4, 96)) * 0.15)  # noqa: E731
        targets = lambda dt=dt: (torch.randn(4, 64, 128).to(dt), torch.randn(4, 64, 8).to(dt))  # noqa: E731
        pairs += [
            oc._pair(
                f"sigmoid attention, bias -log(n) -> pooled classifier ({s})",
                "scalar",
                lambda: SigmoidAttention(cfg),
                dt,
                tokens,
            ),
            oc._pair(
                f"causal attention, ALiBi-like distance ** 0.6 penalty ({s})",
                "scalar",
                lambda: AlibiPower(cfg),
                dt,
                tokens,
            ),
            oc._pair(
                f"audio front end mel ** 0.3 -> conv stem, BatchNorm, pool ({s})", "scalar", AudioFrontEnd, dt, mel
            ),
            oc._pair(
                f"sensor encoder, phase remainder(t, 0.6) -> pooled head ({s})",
                "scalar",
                lambda: SensorEncoder(cfg, "phase", 0.5, 0.6),
                dt,
                phase_events,
            ),
            oc._pair(
                f"gated MLP, hard-concrete gate sigmoid(g) * 1.2 - 0.1 ({s})",
                "scalar",
                lambda: HardConcreteMLP(cfg),
                dt,
                tokens,
            ),
            oc._pair(
                f"rotary attention, angles rounded to {s} (added)", "rounding", lambda: RotaryAttention(cfg), dt, tokens
            ),
            oc._pair(
                f"fp32 encoder, KV cache fake-quantised to {s}, rounding skipped",
                "rounding",
                lambda dt=dt: KVQuantAttention(cfg, dt),
                None,
                lambda: (torch.randn(4, 64, 128),),
            ),
            oc._pair(
                f"T5 relative position buckets, last bucket off by one ({s})",
                "index",
                lambda: RelativeBuckets(cfg),
                dt,
                long_tokens,
            ),
            oc._pair(
                f"sensor encoder, bucket t // 0.3 as floor(t / 0.3) ({s} encoder, fp32 times)",
                "index",
                lambda: SensorEncoder(cfg, "floordiv", 0.3, 1.5),
                dt,
                grid_events,
            ),
            oc._pair(
                f"Gaussian NLL head, variance softplus as log(1 + exp(h)) ({s})",
                "small",
                lambda: GaussianHead(cfg),
                dt,
                targets,
            ),
        ]
    pairs.append(
        oc._pair(
            "cosine attention (logit scale 10), probabilities below fp16's normal range flushed to zero (fp16)",
            "small",
            lambda: CosineAttention(cfg),
            torch.float16,
            lambda: (torch.randn(4, 128, 128).half(),),
        )
    )
    return pairs


# ---- ordinary programs -------------------------------------------------------------------------------------------

# op -> expression of x; each at two (dtype, std, shape) points, 1-4M elements
EVAL3_POINTWISE = {
    "expm1": ("torch.expm1(x)", (("bf16", 1, (1024, 1024)), ("fp16", 2, (2048, 2048)))),
    "celu": ("F.celu(x, alpha=0.5)", (("bf16", 3, (4096, 512)), ("fp16", 4, (2, 1024, 1024)))),
    "quick gelu": ("x * torch.sigmoid(1.702 * x)", (("bf16", 4, (2, 1024, 1024)), ("fp16", 1, (1024, 1024)))),
    "erfc": ("torch.erfc(x)", (("bf16", 2, (2048, 2048)), ("fp16", 3, (4096, 512)))),
}

_BLOCK = """
@dataclass(frozen=True)
class Config:
    width: int = 256
    heads: int = 4
    hidden: int = 688
    dropout: float = 0.1


class RMSNorm(nn.Module):
    def __init__(self, dim, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        h = x.float()
        return self.weight * (h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + self.eps)).to(x.dtype)


class Block(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.cfg = cfg
        self.qkv, self.o = nn.Linear(cfg.width, 3 * cfg.width, bias=False), nn.Linear(cfg.width, cfg.width, bias=False)
        self.gate = nn.Linear(cfg.width, cfg.hidden, bias=False)
        self.up = nn.Linear(cfg.width, cfg.hidden, bias=False)
        self.down = nn.Linear(cfg.hidden, cfg.width, bias=False)
        self.norm1, self.norm2 = RMSNorm(cfg.width), RMSNorm(cfg.width)
        self.drop = nn.Dropout(cfg.dropout)

    def forward(self, x):
        b, n, d = x.shape
        h = self.cfg.heads
        q, k, v = self.qkv(x).reshape(b, n, 3, h, d // h).permute(2, 0, 3, 1, 4)
        scores = (q @ k.transpose(-1, -2)) / math.sqrt(d // h)
        causal = torch.ones(n, n, dtype=torch.bool, device=x.device).triu(1)
        p = torch.softmax(scores.masked_fill(causal, float("-inf")).float(), -1).to(x.dtype)
        x = self.norm1(x + self.drop(self.o((p @ v).transpose(1, 2).reshape(b, n, d))))
        return self.norm2(x + self.drop(self.down(F.silu(self.gate(x)) * self.up(x))))


torch.manual_seed(0)
model = Block(Config()).eval().to({dt})


def fn(x):
    return model(x)
"""

# group -> (body with {dt}, the input expression(s) before the cast)
EVAL3_BLOCKS = {
    "softmax along dim 0": ("def fn(x):\n    return torch.softmax(x, dim=0)\n", "torch.randn(1024, 2048) * 3"),
    "log_softmax along dim 0": ("def fn(x):\n    return F.log_softmax(x, dim=0)\n", "torch.randn(2048, 1024) * 2"),
    "layer norm without affine": (
        "def fn(x):\n    return F.layer_norm(x, (768,))\n",
        "torch.randn(8, 512, 768) * 3 - 1",
    ),
    "group norm + SiLU": (
        "torch.manual_seed(0)\nnorm = nn.GroupNorm(32, 128).to({dt})\n\n\ndef fn(x):\n    return F.silu(norm(x))\n",
        "torch.randn(4, 128, 64, 64) * 2 + 0.5",
    ),
    "causal attention with masked_fill": (
        "def fn(q, k, v):\n    n = q.shape[-2]\n    scores = (q @ k.transpose(-2, -1)) * q.shape[-1] ** -0.5\n"
        "    mask = torch.ones(n, n, dtype=torch.bool).triu(1)\n"
        "    return torch.softmax(scores.masked_fill(mask, float('-inf')), dim=-1) @ v\n",
        "QKV torch.randn(4, 8, 256, 64)",
    ),
    "baddbmm": (
        "torch.manual_seed(0)\nbias = torch.randn(32, 256, 256).to({dt})\n\n\n"
        "def fn(a, b):\n    return torch.baddbmm(bias, a, b, beta=0.5, alpha=0.125)\n",
        "AB torch.randn(32, 256, 128)",
    ),
    "causal dilated conv1d": (
        "torch.manual_seed(0)\nconv = nn.Conv1d(64, 64, 3, dilation=4).to({dt})\n\n\n"
        "def fn(x):\n    return F.gelu(conv(F.pad(x, (8, 0))))\n",
        "torch.randn(16, 64, 2048)",
    ),
    "conv_transpose2d upsampler": (
        "torch.manual_seed(0)\nup = nn.ConvTranspose2d(64, 32, 4, stride=2, padding=1).to({dt})\n\n\n"
        "def fn(x):\n    return F.relu(up(x))\n",
        "torch.randn(8, 64, 32, 32)",
    ),
    "post-norm block, config object, causal, SwiGLU": (_BLOCK, "torch.randn(4, 128, 256)"),
}


def _eval3_block(group: str, dtype: str) -> Ordinary:
    body, make = EVAL3_BLOCKS[group]
    dt = _DT[dtype]
    header = "import math\nfrom dataclasses import dataclass\n\n" if body is _BLOCK else ""
    if make.startswith("QKV "):
        args = f"tuple(({make[4:]}).to({dt}) for _ in range(3))"
    elif make.startswith("AB "):
        shape = make[3:]
        args = f"({shape}.to({dt}), {shape}.transpose(1, 2).contiguous().to({dt}))"
    else:
        args = f"(({make}).to({dt}),)"
    source = header + body.replace("{dt}", dt) + f"\n\ndef inputs():\n    return {args}\n"
    return _snippet(f"{group} ({dtype})", group, source)


def eval3_ordinary() -> list[Ordinary]:
    """The ordinary programs: 4 new pointwise ops at two (dtype, std) points each, 9 blocks in bf16 and fp16."""
    out = []
    for op, (expr, points) in EVAL3_POINTWISE.items():
        out += [_fresh_pointwise(op, expr, dtype, std, shape) for dtype, std, shape in points]
    for group in EVAL3_BLOCKS:
        out += [_eval3_block(group, dtype) for dtype in ("bf16", "fp16")]
    return out
