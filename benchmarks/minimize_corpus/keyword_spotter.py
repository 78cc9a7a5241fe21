"""A keyword spotter: a strided Conv1d front end over audio features, one attention layer, a pooled classifier."""

import torch
import torch.nn as nn
import torch.nn.functional as F


class SpotterConfig:
    n_mels = 16
    channels = 32
    frames = 16
    stride = 4
    heads = 4
    temperature = 2.0 ** 1.5  # sqrt(head_dim)
    dropout = 0.1
    n_keywords = 12
    labels = ("yes", "no", "up", "down", "left", "right", "on", "off", "stop", "go", "silence", "unknown")

    def __init__(self, **overrides):
        for key, value in overrides.items():
            setattr(self, key, value)

    @property
    def steps(self):
        return self.frames // self.stride


class FrontEnd(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.conv = nn.Conv1d(cfg.n_mels, cfg.channels, kernel_size=cfg.stride, stride=cfg.stride)
        self.norm = nn.BatchNorm1d(cfg.channels)

    def forward(self, mels):  # (batch, n_mels, frames) -> (batch, steps, channels)
        return F.relu(self.norm(self.conv(mels))).transpose(1, 2)


class MultiHeadAttention(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.heads = cfg.heads
        self.temperature = cfg.temperature
        self.qkv = nn.Linear(cfg.channels, 3 * cfg.channels)
        self.proj = nn.Linear(cfg.channels, cfg.channels)
        self.drop = nn.Dropout(cfg.dropout)

    def forward(self, x):
        b, t, c = x.shape
        qkv = self.qkv(x).reshape(b, t, 3, self.heads, c // self.heads)
        q, k, v = qkv.unbind(dim=2)  # each (b, t, heads, head_dim)
        q, v = q.transpose(1, 2), v.transpose(1, 2)
        logits = torch.matmul(q, k.permute(0, 2, 3, 1)).div(self.temperature)
        weights = self.drop(torch.softmax(logits, dim=-1))
        mixed = torch.matmul(weights, v).transpose(1, 2).reshape(b, t, c)
        return self.proj(mixed)


class AttentionPool(nn.Module):
    def __init__(self, channels):
        super().__init__()
        self.score = nn.Linear(channels, 1)

    def forward(self, x):
        w = torch.softmax(self.score(x).squeeze(-1), dim=-1)
        return torch.einsum("bt,btc->bc", w, x)


class KeywordSpotter(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.cfg = cfg
        self.front = FrontEnd(cfg)
        self.norm = nn.LayerNorm(cfg.channels)
        self.attention = MultiHeadAttention(cfg)
        self.ffn = nn.Sequential(nn.Linear(cfg.channels, 2 * cfg.channels), nn.ReLU(), nn.Linear(2 * cfg.channels, cfg.channels))
        self.pool = AttentionPool(cfg.channels)
        self.classifier = nn.Linear(cfg.channels, cfg.n_keywords)

    def forward(self, mels):
        x = self.front(mels)
        x = x + self.attention(self.norm(x))
        x = x + self.ffn(x)
        return self.classifier(self.pool(x))

    def predict(self, mels):
        return [self.cfg.labels[i] for i in self(mels).argmax(-1).tolist()]


cfg = SpotterConfig()
model = KeywordSpotter(cfg).eval()
fn = model


def inputs():
    # one clip of 16 frames: 4 steps after the stride-4 front end, as many as heads
    return (torch.randn(1, cfg.n_mels, cfg.frames),)
