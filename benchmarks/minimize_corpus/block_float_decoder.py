"""A classifier with block-floating-point channel scales: fp16 mantissas and fp32 exponents are decoded with ldexp."""
import torch
import torch.nn as nn
import torch.nn.functional as F

CFG = dict(
    in_dim=16,
    hidden=32,
    n_classes=10,
    n_blocks=2,
    dropout=0.1,
    label_smoothing=0.1,
    exponent_bias=0,
    calibrated=True,
    version="2.1",
)


def smoothed_targets(labels: torch.Tensor, n_classes: int, eps: float) -> torch.Tensor:
    """Only used by the training loss."""
    one_hot = F.one_hot(labels, n_classes).float()
    return one_hot * (1 - eps) + eps / n_classes


class BlockFloatScale(nn.Module):
    """Per-channel scales stored compactly: an fp16 mantissa per channel and an fp32 exponent per channel."""

    def __init__(self, channels: int, exponent_bias: int):
        super().__init__()
        self.exponent_bias = exponent_bias
        self.register_buffer("mantissa", (torch.rand(channels) + 0.5).half())
        self.register_buffer("exponent", torch.randint(-3, 3, (channels,)).float())

    def forward(self):
        return torch.ldexp(self.mantissa, self.exponent + self.exponent_bias)


class Residual(nn.Module):
    def __init__(self, width: int, dropout: float):
        super().__init__()
        self.norm = nn.LayerNorm(width)
        self.fc = nn.Linear(width, width)
        self.drop = nn.Dropout(dropout)
        self.name = "residual"

    def forward(self, x):
        return x + self.drop(F.gelu(self.fc(self.norm(x))))


class Classifier(nn.Module):
    def __init__(self, cfg: dict):
        super().__init__()
        self.cfg = cfg
        self.stem = nn.Linear(cfg["in_dim"], cfg["hidden"])
        self.scale = BlockFloatScale(cfg["hidden"], cfg["exponent_bias"])
        self.blocks = nn.ModuleList([Residual(cfg["hidden"], cfg["dropout"]) for _ in range(cfg["n_blocks"])])
        self.head = nn.Linear(cfg["hidden"], cfg["n_classes"])
        self.temperature = 1.0 if cfg["calibrated"] else 2.0

    def forward(self, x, return_scales=True):
        scales = self.scale()
        h = self.stem(x) * scales
        for block in self.blocks:
            h = block(h)
        logits = self.head(h) / self.temperature
        if return_scales:
            return logits, scales  # the serving layer logs the effective scales
        return logits


def build(cfg: dict = CFG) -> Classifier:
    model = Classifier(cfg)
    return model.eval()


def accuracy(logits: torch.Tensor, labels: torch.Tensor) -> float:
    return (logits.argmax(-1) == labels).float().mean().item()


fn = build()


def inputs():
    return (torch.randn(4, 16),)
