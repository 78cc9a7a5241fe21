"""A tabular regressor over raw sensor rows: each row is standardized with var_mean, then a residual MLP scores it."""
import torch
import torch.nn as nn
import torch.nn.functional as F

CONFIG = {
    "n_features": 2048,
    "hidden": 64,
    "n_blocks": 3,
    "dropout": 0.2,
    "eps": 1e-6,
    "activation": "gelu",
    "clip_value": 10.0,
    "use_bias": True,
    "head_init_std": 0.02,
    "name": "sensor-regressor-v3",
}


def describe(config: dict) -> str:
    """Human-readable summary printed by the training script."""
    return ", ".join(f"{k}={v}" for k, v in sorted(config.items()))


class RowStandardize(nn.Module):
    """Per-row standardization: the sensors report absolute readings around a large offset."""

    def __init__(self, eps: float, clip_value: float):
        super().__init__()
        self.eps = eps
        self.clip_value = clip_value
        self.calls = 0

    def forward(self, x):
        var, mean = torch.var_mean(x, dim=-1, keepdim=True)
        z = (x - mean) * torch.rsqrt(var + self.eps)
        return z.clamp(-self.clip_value, self.clip_value), var


class ResidualMLP(nn.Module):
    def __init__(self, width: int, dropout: float):
        super().__init__()
        self.norm = nn.LayerNorm(width)
        self.fc1 = nn.Linear(width, 2 * width)
        self.fc2 = nn.Linear(2 * width, width)
        self.dropout = nn.Dropout(dropout)

    def forward(self, h):
        y = self.fc2(self.dropout(F.gelu(self.fc1(self.norm(h)))))
        return h + y


class SensorRegressor(nn.Module):
    def __init__(self, config: dict):
        super().__init__()
        self.config = config
        self.standardize = RowStandardize(config["eps"], config["clip_value"])
        self.proj = nn.Linear(config["n_features"], config["hidden"], bias=config["use_bias"])
        self.blocks = nn.Sequential(*[ResidualMLP(config["hidden"], config["dropout"]) for _ in range(config["n_blocks"])])
        self.head = nn.Linear(config["hidden"], 1)
        self.log_scale = nn.Parameter(torch.zeros(1))

    def forward(self, readings, mask=None):
        z, var = self.standardize(readings)
        if mask is not None:
            z = z * mask
        h = self.blocks(self.proj(z))
        pred = self.head(h).squeeze(-1) * self.log_scale.exp()
        return pred, var.squeeze(-1)

    @torch.no_grad()
    def predict(self, readings):
        return self.forward(readings)[0]


def make_model(config: dict = CONFIG) -> SensorRegressor:
    model = SensorRegressor(config)
    model.eval()
    return model


def synthetic_batch(n: int, offset: float = 1e5) -> torch.Tensor:
    """Readings around a large offset with unit noise, as the sensors deliver them."""
    return torch.randn(n, CONFIG["n_features"]) + offset


fn = make_model()


def inputs():
    return (synthetic_batch(8),)
