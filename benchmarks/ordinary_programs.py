"""Ordinary programs at real scale, as a user writes them: the oracle must call every one `match` or `benign`.

Issue #31's list: pointwise transcendentals (gelu exact and tanh, erf, silu, softplus, elu, tanh, exp, log1p,
rsqrt) at input std 1 to 4 in bf16 and fp16 with 1-4M elements; norms (layer norm, a hand-written RMSNorm, group
norm, batch norm in eval mode); softmax and log_softmax; attention (SDPA and written out); matmul and linear; convs
(a module, and a weight held in a module-level tensor); an MLP and transformer blocks. None of them has a
compile bug that we know of: an alarm on one is false unless it is shown to be a bug on the compiled side.

Each program is the source of a `fn` + `inputs` snippet, checked as a user checks it (`divergence check`, or
engine.api.check_source). `group` names what the program is an instance of (the op, or the kind of block):
benchmarks/oracle_split.py assigns whole groups to the calibration or the evaluation part, so that no variant
of an evaluated program (another dtype, std or size) is ever tuned on.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Ordinary:
    name: str  # unique, e.g. "gelu (bf16, std 2, 2048x2048)"
    group: str  # what the split hashes: the op or the kind of block, e.g. "pointwise gelu"
    source: str  # a fn + inputs snippet


_HEADER = "import torch\nimport torch.nn as nn\nimport torch.nn.functional as F\n\n"
_DT = {"bf16": "torch.bfloat16", "fp16": "torch.float16", "fp32": "torch.float32"}

# op -> (the expression of `x`, the input's transform: what a user would feed it)
POINTWISE = {
    "gelu": ("F.gelu(x)", "{x}"),
    "gelu tanh": ("F.gelu(x, approximate='tanh')", "{x}"),
    "erf": ("torch.erf(x)", "{x}"),
    "silu": ("F.silu(x)", "{x}"),
    "softplus": ("F.softplus(x)", "{x}"),
    "elu": ("F.elu(x)", "{x}"),
    "tanh": ("torch.tanh(x)", "{x}"),
    "exp": ("torch.exp(x)", "{x}"),
    "log1p": ("torch.log1p(x.abs())", "{x}"),
    "rsqrt": ("torch.rsqrt(x.abs() + 1e-3)", "{x}"),
}
# std -> shape: 1-4M elements, a few shapes
_SHAPES = {1: (1024, 1024), 2: (2048, 2048), 3: (4096, 512), 4: (2, 1024, 1024)}


def _pointwise(op: str, expr: str, dtype: str, std: int) -> Ordinary:
    shape = _SHAPES[std]
    size = "x".join(map(str, shape))
    source = (
        f"{_HEADER}def fn(x):\n    return {expr}\n\n\n"
        f"def inputs():\n    return ((torch.randn{shape} * {std}).to({_DT[dtype]}),)\n"
    )
    return Ordinary(f"{op} ({dtype}, std {std}, {size})", f"pointwise {op}", source)


def _snippet(name: str, group: str, body: str) -> Ordinary:
    return Ordinary(name, group, _HEADER + body.strip() + "\n")


def _norms(dtype: str) -> list[Ordinary]:
    dt = _DT[dtype]
    return [
        _snippet(
            f"layer norm ({dtype}, 4096x1024)",
            "layer norm",
            f"""
norm = nn.LayerNorm(1024).to({dt})


def fn(x):
    return norm(x)


def inputs():
    return ((torch.randn(4096, 1024) * 2 + 0.5).to({dt}),)
""",
        ),
        _snippet(
            f"RMSNorm written out ({dtype}, 4x1024x1024)",
            "rmsnorm",
            f"""
class RMSNorm(nn.Module):
    def __init__(self, dim, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        variance = x.float().pow(2).mean(-1, keepdim=True)
        return self.weight * (x.float() * torch.rsqrt(variance + self.eps)).to(x.dtype)


norm = RMSNorm(1024).to({dt})


def fn(x):
    return norm(x)


def inputs():
    return (torch.randn(4, 1024, 1024).to({dt}),)
""",
        ),
        _snippet(
            f"group norm ({dtype}, 16x64x32x32)",
            "group norm",
            f"""
norm = nn.GroupNorm(8, 64).to({dt})


def fn(x):
    return norm(x)


def inputs():
    return (torch.randn(16, 64, 32, 32).to({dt}),)
""",
        ),
        _snippet(
            f"batch norm, eval ({dtype}, 16x64x32x32)",
            "batch norm",
            f"""
norm = nn.BatchNorm2d(64)
norm.running_mean.uniform_(-1, 1)
norm.running_var.uniform_(0.5, 2)
norm = norm.eval().to({dt})


def fn(x):
    return torch.relu(norm(x))


def inputs():
    return (torch.randn(16, 64, 32, 32).to({dt}),)
""",
        ),
    ]


def _softmaxes(dtype: str) -> list[Ordinary]:
    dt = _DT[dtype]
    return [
        _snippet(
            f"softmax ({dtype}, 2048x1024, logits std 3)",
            "softmax",
            f"""
def fn(x):
    return torch.softmax(x, dim=-1)


def inputs():
    return ((torch.randn(2048, 1024) * 3).to({dt}),)
""",
        ),
        _snippet(
            f"log_softmax ({dtype}, 1024x2048)",
            "log_softmax",
            f"""
def fn(x):
    return F.log_softmax(x, dim=-1)


def inputs():
    return ((torch.randn(1024, 2048) * 2).to({dt}),)
""",
        ),
    ]


def _attention(dtype: str) -> list[Ordinary]:
    dt = _DT[dtype]
    return [
        _snippet(
            f"SDPA causal ({dtype}, 4x8x512x64)",
            "attention sdpa",
            f"""
def fn(q, k, v):
    return F.scaled_dot_product_attention(q, k, v, is_causal=True)


def inputs():
    return tuple(torch.randn(4, 8, 512, 64).to({dt}) for _ in range(3))
""",
        ),
        _snippet(
            f"attention written out ({dtype}, 4x8x512x64)",
            "attention written out",
            f"""
def fn(q, k, v):
    scores = (q @ k.transpose(-2, -1)) / 8.0
    return torch.softmax(scores, dim=-1) @ v


def inputs():
    return tuple(torch.randn(4, 8, 512, 64).to({dt}) for _ in range(3))
""",
        ),
    ]


def _linear_algebra(dtype: str) -> list[Ordinary]:
    dt = _DT[dtype]
    return [
        _snippet(
            f"matmul ({dtype}, 1024x1024 @ 1024x2048)",
            "matmul",
            f"""
def fn(a, b):
    return a @ b


def inputs():
    return torch.randn(1024, 1024).to({dt}), (torch.randn(1024, 2048) / 32).to({dt})
""",
        ),
        _snippet(
            f"linear + bias + relu ({dtype}, 4096x1024 -> 1024)",
            "linear",
            f"""
layer = nn.Linear(1024, 1024).to({dt})


def fn(x):
    return torch.relu(layer(x))


def inputs():
    return (torch.randn(4096, 1024).to({dt}),)
""",
        ),
        _snippet(
            f"MLP linear-GELU-linear ({dtype}, 2048x512)",
            "mlp",
            f"""
mlp = nn.Sequential(nn.Linear(512, 2048), nn.GELU(), nn.Linear(2048, 512)).to({dt})


def fn(x):
    return mlp(x)


def inputs():
    return (torch.randn(2048, 512).to({dt}),)
""",
        ),
    ]


def _convs(dtype: str) -> list[Ordinary]:
    dt = _DT[dtype]
    return [
        _snippet(
            f"conv2d + relu module ({dtype}, 8x32x64x64)",
            "conv module",
            f"""
conv = nn.Conv2d(32, 64, 3, padding=1).to({dt})


def fn(x):
    return torch.relu(conv(x))


def inputs():
    return (torch.randn(8, 32, 64, 64).to({dt}),)
""",
        ),
        _snippet(
            f"conv2d, weight in a module-level tensor ({dtype}, 8x32x64x64)",
            "conv global weight",
            f"""
torch.manual_seed(0)
WEIGHT = (torch.randn(64, 32, 3, 3) * 0.05).to({dt})
BIAS = torch.zeros(64).to({dt})


def fn(x):
    return F.conv2d(x, WEIGHT, BIAS, padding=1)


def inputs():
    return (torch.randn(8, 32, 64, 64).to({dt}),)
""",
        ),
    ]


def _blocks(dtype: str) -> list[Ordinary]:
    dt = _DT[dtype]
    return [
        _snippet(
            f"transformer encoder layer, eval ({dtype}, 4x256x512)",
            "transformer encoder layer",
            f"""
torch.manual_seed(0)
layer = nn.TransformerEncoderLayer(512, 8, 2048, batch_first=True, norm_first=True).eval().to({dt})


def fn(x):
    return layer(x)


def inputs():
    return (torch.randn(4, 256, 512).to({dt}),)
""",
        ),
        _snippet(
            f"pre-norm block, GELU MLP, SDPA ({dtype}, 4x256x384)",
            "prenorm block",
            f"""
class Block(nn.Module):
    def __init__(self, d=384, heads=6):
        super().__init__()
        self.heads = heads
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.fc1, self.fc2 = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)
        self.drop = nn.Dropout(0.1)

    def forward(self, x):
        b, n, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).reshape(b, n, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4)
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True).transpose(1, 2).reshape(b, n, d)
        x = x + self.drop(self.proj(a))
        return x + self.drop(self.fc2(F.gelu(self.fc1(self.ln2(x)))))


torch.manual_seed(0)
model = Block().eval().to({dt})


def fn(x):
    return model(x)


def inputs():
    return (torch.randn(4, 256, 384).to({dt}),)
""",
        ),
    ]


def ordinary_programs() -> list[Ordinary]:
    """Every ordinary program: the pointwise grid (10 ops x std 1-4 x bf16/fp16), then norms, softmaxes,
    attention, linear algebra, convs and blocks in bf16, fp16 and fp32."""
    out = []
    for op, (expr, _) in POINTWISE.items():
        for dtype in ("bf16", "fp16"):
            for std in (1, 2, 3, 4):
                out.append(_pointwise(op, expr, dtype, std))
    for dtype in ("bf16", "fp16", "fp32"):
        for make in (_norms, _softmaxes, _attention, _linear_algebra, _convs, _blocks):
            out.extend(make(dtype))
    names = [p.name for p in out]
    assert len(names) == len(set(names)), "program names must be unique"
    return out
