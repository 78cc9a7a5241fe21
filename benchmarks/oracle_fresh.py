"""Fresh programs for issue #31's second evaluation ("evaluation-2"), written before the rule change they score.

The first evaluation part (benchmarks/oracle_split.py) was reported once; a rule changed after it cannot be scored
on it again. These programs are new: one-step fault programs of the issue's families in hosts none of the earlier
programs use (a shifted softplus head, conv features shifted by a Python float, log and power features, a periodic
time feature, binned features with ties, a GLU gate, a fake-quantised conv net), and ordinary programs of ops and
blocks the ordinary corpus lacks. Every one is split by a hash of its group (`fresh_part`, salted apart from the
first split): half go to the evaluation-2 part, frozen in tests/test_oracle_split.py and run once after the change;
the other half join the calibration part, where a rule may be developed.

The faults are written into Inductor as the first corpus's are (benchmarks/inductor_faults.py, `FRESH_FAULTS`):
the program is the clean variant, eager computes it as written.
"""

from __future__ import annotations

import hashlib
import math

import oracle_corpus as oc
import torch
import torch.nn as nn
import torch.nn.functional as F
from oracle_corpus import Case, Variant, scalar_op
from ordinary_programs import _DT, Ordinary, _snippet

FRESH_SALT = "divergence-explorer oracle split 2, issue 31, 2026-12-07"
EVALUATION_2 = "evaluation-2"
LOG2 = math.log(2.0)


def fresh_part(group: str) -> str:
    """evaluation-2 or calibration, by the first byte of sha256(FRESH_SALT + group)."""
    return EVALUATION_2 if hashlib.sha256((FRESH_SALT + group).encode()).digest()[0] < 128 else "calibration"


class MLPHead(Variant):
    """An MLP whose hidden activation is shifted by a Python float: `gelu(h) - 0.1` ("centred"), SchNet's shifted
    softplus `softplus(h) - log 2` ("ssp"), `log(|h| + 0.7)` ("log") or `|h| ** 1.7` ("pow"); a linear head after."""

    def __init__(self, kind: str, width: int = 128) -> None:
        super().__init__()
        self.kind = kind
        self.a, self.b = nn.Linear(width, 4 * width), nn.Linear(4 * width, width)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        h = self.a(x)
        if self.kind == "centred":
            y = scalar_op(self.variant, lambda a, b: a - b, F.gelu(h), 0.1, self.low)
        elif self.kind == "ssp":
            y = scalar_op(self.variant, lambda a, b: a - b, F.softplus(h), LOG2, self.low)
        elif self.kind == "log":
            y = torch.log(scalar_op(self.variant, lambda a, b: a + b, h.abs(), 0.7, self.low))
        else:
            y = scalar_op(self.variant, torch.pow, h.abs(), 1.7, self.low)
        return self.b(y), y


class ScaledConv(Variant):
    """A conv net whose features are shifted by a Python float (a fixed threshold) before the residual and pooling.
    (Not `* 0.35`: eager's bf16 mul keeps its scalar in float32, so there is no rounding to skip.)"""

    def __init__(self) -> None:
        super().__init__()
        self.stem, self.conv = nn.Conv2d(3, 32, 3, padding=1), nn.Conv2d(32, 32, 3, padding=1)
        self.head = nn.Linear(32, 10)

    def forward(self, img: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        x = F.relu(self.stem(img))
        y = scalar_op(self.variant, lambda a, b: a - b, self.conv(x), 0.35, self.low)
        return self.head(F.relu(x + y).mean((2, 3))), y


class PeriodicFeature(Variant):
    """A periodic time feature `remainder(t, 0.3)` into sin/cos, an MLP over events, mean-pooled per sequence."""

    def __init__(self, width: int = 64) -> None:
        super().__init__()
        self.a, self.b = nn.Linear(6, width), nn.Linear(width, width)

    def forward(self, feats: torch.Tensor, t: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        phase = scalar_op(self.variant, torch.remainder, t, 0.3, self.low)
        angle = phase * (2 * math.pi / 0.3)
        x = torch.cat([feats, angle.sin()[..., None], angle.cos()[..., None]], -1)
        return self.b(F.gelu(self.a(x))).mean(1), phase


class BinnedFeatures(Variant):
    """Values binned by `bucketize` against edges every 0.25 (values on a 1/8 grid, so some sit on an edge), looked
    up in an embedding, then an MLP; the fault (in Inductor) puts a value on an edge in the bin below."""

    def __init__(self, width: int = 64) -> None:
        super().__init__()
        self.register_buffer("edges", torch.arange(1, 20) / 4)
        self.embed = nn.Embedding(24, width)
        self.mlp = nn.Sequential(nn.Linear(width, 2 * width), nn.GELU(), nn.Linear(2 * width, width))

    def forward(self, v: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        bins = torch.bucketize(v.float(), self.edges.float(), right=True)
        return self.mlp(self.embed(bins)).mean(1), bins


class GluGate(Variant):
    """A GLU MLP with a sharp sigmoid gate, written `where(g < 0, sigmoid(g), sigmoid(g))` as a numerically careful
    user might; the fault (in Inductor) computes the negative branch as 1 - sigmoid(-g)."""

    def __init__(self, width: int = 128) -> None:
        super().__init__()
        self.gate, self.up, self.down = nn.Linear(width, 256), nn.Linear(width, 256), nn.Linear(256, width)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        g = self.gate(x).float() * 12
        small = torch.sigmoid(g)
        s = torch.where(g < 0, small, torch.sigmoid(g)).to(x.dtype)
        return self.down(s * self.up(x)), s


class QuantConv(Variant):
    """An fp32 conv net that simulates low-precision weights: the conv weight rounded to bf16/fp16 on purpose (by
    integer arithmetic, which no kernel elides); the fault (in Inductor) skips that rounding."""

    def __init__(self, dtype: torch.dtype) -> None:
        super().__init__()
        self.dtype = dtype
        self.stem, self.conv = nn.Conv2d(3, 32, 3, padding=1), nn.Conv2d(32, 32, 3, padding=1)
        self.head = nn.Linear(32, 10)

    def forward(self, img: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        w = oc.round_in_fp32(self.conv.weight, self.dtype)
        x = F.relu(self.stem(img))
        y = F.conv2d(x, w, self.conv.bias, padding=1)
        return self.head(F.relu(x + y).mean((2, 3))), y


def fresh_cases() -> list[tuple[Case, Case]]:
    """(fault, clean twin) per fresh program, in bf16 and fp16; the final output is out[0] in every one."""
    pairs = []
    for dt in oc.LOW:
        s = oc._short(dt)
        rows = lambda dt=dt: (torch.randn(16, 64, 128).to(dt),)  # noqa: E731
        image = lambda dt=dt: (torch.rand(4, 3, 48, 48).to(dt),)  # noqa: E731
        events = lambda dt=dt: (torch.randn(4, 96, 4).to(dt), (torch.rand(4, 96) * 1.0).sort(-1).values.to(dt))  # noqa: E731
        grid = lambda dt=dt: ((torch.randint(0, 40, (8, 256)) / 8.0).to(dt),)  # noqa: E731
        pairs += [
            oc._pair(f"MLP, centred activation gelu(h) - 0.1 ({s})", "scalar", lambda: MLPHead("centred"), dt, rows),
            oc._pair(f"MLP, shifted softplus(h) - log 2 ({s})", "scalar", lambda: MLPHead("ssp"), dt, rows),
            oc._pair(f"MLP, log features log(|h| + 0.7) ({s})", "scalar", lambda: MLPHead("log"), dt, rows),
            oc._pair(f"MLP, power features |h| ** 1.7 ({s})", "scalar", lambda: MLPHead("pow"), dt, rows),
            oc._pair(f"conv features minus 0.35 -> pooled classifier ({s})", "scalar", ScaledConv, dt, image),
            oc._pair(f"periodic time feature remainder(t, 0.3) -> MLP ({s})", "scalar", PeriodicFeature, dt, events),
            oc._pair(f"binned features, edge ties off by one ({s})", "index", BinnedFeatures, dt, grid),
            oc._pair(f"GLU gate, sigmoid as 1 - sigmoid(-g) ({s})", "small", GluGate, dt, rows),
            oc._pair(
                f"fp32 conv net, weights fake-quantised to {s}, rounding skipped",
                "rounding",
                lambda dt=dt: QuantConv(dt),
                None,
                lambda: (torch.rand(4, 3, 48, 48),),
            ),
        ]
    return pairs


# ---- ordinary programs -------------------------------------------------------------------------------------------

FRESH_POINTWISE = {
    "sigmoid": "torch.sigmoid(x)",
    "mish": "F.mish(x)",
    "hardswish": "F.hardswish(x)",
    "selu": "F.selu(x)",
    "sin": "torch.sin(x)",
    "logsigmoid": "F.logsigmoid(x)",
    "sqrt": "torch.sqrt(x.abs())",
    "softsign": "F.softsign(x)",
}
_BLOCKS = {
    "instance norm": (
        "norm = nn.InstanceNorm2d(64, affine=True).to({dt})\n\n\ndef fn(x):\n    return norm(x)\n",
        "torch.randn(16, 64, 32, 32) * 2 + 1",
    ),
    "depthwise conv block": (
        "torch.manual_seed(0)\ndw = nn.Conv2d(64, 64, 3, padding=1, groups=64).to({dt})\n"
        "pw = nn.Conv2d(64, 128, 1).to({dt})\nbn = nn.BatchNorm2d(128).eval().to({dt})\n\n\n"
        "def fn(x):\n    return F.relu6(bn(pw(F.relu6(dw(x)))))\n",
        "torch.randn(8, 64, 56, 56)",
    ),
    "multihead attention module": (
        "torch.manual_seed(0)\nmha = nn.MultiheadAttention(256, 8, batch_first=True).eval().to({dt})\n\n\n"
        "def fn(x):\n    return mha(x, x, x, need_weights=False)[0]\n",
        "torch.randn(8, 256, 256)",
    ),
    "logsumexp": ("def fn(x):\n    return torch.logsumexp(x.float(), -1).to(x.dtype)\n", "torch.randn(4096, 1024) * 3"),
    "conv1d temporal block": (
        "torch.manual_seed(0)\nconv = nn.Conv1d(128, 128, 5, padding=2).to({dt})\n"
        "norm = nn.LayerNorm(128).to({dt})\n\n\n"
        "def fn(x):\n    return x + F.gelu(norm(conv(x).transpose(1, 2)).transpose(1, 2))\n",
        "torch.randn(16, 128, 512)",
    ),
    "batched matmul": ("def fn(a):\n    return torch.bmm(a, a.transpose(1, 2)) / 16\n", "torch.randn(64, 128, 256)"),
    "cross entropy": (
        "def fn(logits, target):\n    return F.cross_entropy(logits, target, reduction='none')\n",
        "torch.randn(8192, 512) * 2",
    ),
    "residual MLP block": (
        "torch.manual_seed(0)\nnorm = nn.LayerNorm(512).to({dt})\nfc1 = nn.Linear(512, 2048).to({dt})\n"
        "fc2 = nn.Linear(2048, 512).to({dt})\n\n\ndef fn(x):\n    return x + fc2(F.silu(fc1(norm(x))))\n",
        "torch.randn(4, 512, 512)",
    ),
}


def _fresh_pointwise(op: str, expr: str, dtype: str, std: int, shape: tuple[int, ...]) -> Ordinary:
    size = "x".join(map(str, shape))
    make = f"(torch.randn{shape} * {std}).to({_DT[dtype]})"
    body = f"def fn(x):\n    return {expr}\n\n\ndef inputs():\n    return ({make},)\n"
    return _snippet(f"{op} ({dtype}, std {std}, {size})", f"pointwise {op}", body)


def _fresh_block(group: str, dtype: str) -> Ordinary:
    body, make = _BLOCKS[group]
    dt = _DT[dtype]
    args = f"({make}).to({dt})"
    if group == "cross entropy":
        args += ", torch.randint(0, 512, (8192,))"
    else:
        args += ","
    return _snippet(f"{group} ({dtype})", group, body.format(dt=dt) + f"\n\ndef inputs():\n    return ({args})\n")


def fresh_ordinary() -> list[Ordinary]:
    """The fresh ordinary programs: 8 pointwise ops at std 2 (bf16) and std 3 (fp16), 8 blocks in bf16 and fp16."""
    out = []
    for op, expr in FRESH_POINTWISE.items():
        out.append(_fresh_pointwise(op, expr, "bf16", 2, (2048, 2048)))
        out.append(_fresh_pointwise(op, expr, "fp16", 3, (4096, 512)))
    for group in _BLOCKS:
        out += [_fresh_block(group, dtype) for dtype in ("bf16", "fp16")]
    return out
