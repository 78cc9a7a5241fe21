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

from dataclasses import dataclass
from typing import Any, Callable

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
            nn.Sequential(nn.Conv2d(32, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(), nn.Conv2d(32, 32, 3, padding=1), nn.BatchNorm2d(32))
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
        Program("layer norm (1024x1024)", _layernorm, lambda: (torch.randn(1024, 1024) * 4 + 1, torch.rand(1024) + 0.5, torch.randn(1024))),
        Program("sums (2^20 elements)", _sums, lambda: (torch.randn(1 << 20) + 0.5,)),
        Program("ill-conditioned (x-1)^7, centred sums", _ill_conditioned, lambda: (1 + (torch.rand(64, 512) - 0.5) * 1e-2,)),
    ]


# ---- faults: compiled more accurate than eager ---------------------------------------------------------

_SCALAR_OPS = {torch.remainder, torch.fmod, torch.Tensor.remainder, torch.Tensor.fmod, torch.Tensor.__mod__}


class ScalarKeptInFp32(TorchFunctionMode):
    """Inductor's bug class (pytorch#186875) as a fault: fmod/remainder of a bf16/fp16 tensor by a Python
    float computed in fp32 with the scalar unrounded, then rounded once; eager rounds the scalar first."""

    def __torch_function__(self, func: Any, types: Any, args: tuple[Any, ...] = (), kwargs: dict[str, Any] | None = None) -> Any:
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
    exec(compile((root / "sample_cases" / "forecaster_remainder_bf16.py").read_text(), "forecaster_remainder_bf16.py", "exec"), namespace)
    forecaster, forecaster_inputs = namespace["fn"], namespace["inputs"]
    noisy = _seeded(NoisyMLP)
    scalar = "scalar kept in fp32 (compiled more accurate)"
    return [
        Program("remainder(x_bf16, 0.7)", _remainder_bf16, lambda: ((torch.randn(256) * 3).bfloat16(),), scalar, _under(ScalarKeptInFp32, _remainder_bf16)),
        Program("fmod(x_fp16, 0.3)", _fmod_fp16, lambda: ((torch.randn(256) * 3).half(),), scalar, _under(ScalarKeptInFp32, _fmod_fp16)),
        Program("bf16 forecaster (remainder by 0.7)", forecaster, forecaster_inputs, scalar, _under(ScalarKeptInFp32, forecaster)),
        Program(
            "explicit bf16 quantization",
            _quantize,
            lambda: (torch.randn(64, 64), torch.randn(64, 64)),
            "explicit rounding skipped (compiled more accurate)",
            _quantize_skipped,
        ),
        Program("x * 2 + rand_like(x)", _jittered, lambda: (torch.randn(64, 64),), "1% off behind a random reference", _one_percent_off(_jittered)),
        Program("noisy MLP (randn_like)", noisy, lambda: (torch.randn(32, 128),), "1% off behind a random reference", _one_percent_off(noisy)),
    ]


def benign_programs() -> list[Program]:
    return _benign()


def fault_programs() -> list[Program]:
    return _faults()
