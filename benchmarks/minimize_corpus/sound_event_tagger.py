"""A sound-event tagger: a strided Conv1d stem with GroupNorm, one post-norm transformer layer whose projections
live in a ModuleDict (fairseq-style float softmax), and a tagger wrapper that holds per-class thresholds."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

SETTINGS = {
    "n_mels": 8,
    "stem_stride": 4,
    "embed": 16,
    "heads": 4,
    "ffn": 32,
    "groups": 4,
    "dropout": 0.3,
    "classes": ["speech", "music", "dog", "siren", "rain"],
    "threshold": 0.5,
}


class Stem(nn.Module):
    def __init__(self, n_mels: int, embed: int, stride: int, groups: int) -> None:
        super().__init__()
        self.conv = nn.Conv1d(n_mels, embed, kernel_size=stride, stride=stride)
        self.norm = nn.GroupNorm(groups, embed)
        self.act = nn.GELU()

    def forward(self, mels: torch.Tensor) -> torch.Tensor:
        return self.act(self.norm(self.conv(mels))).transpose(1, 2)  # (batch, frames, embed)


class MultiheadSelfAttention(nn.Module):
    def __init__(self, embed: int, heads: int, dropout: float) -> None:
        super().__init__()
        self.heads = heads
        self.head_dim = embed // heads
        self.scaling = self.head_dim**-0.5
        self.proj = nn.ModuleDict({name: nn.Linear(embed, embed) for name in ("q", "k", "v", "out")})
        self.dropout = nn.Dropout(dropout)

    def _heads(self, x: torch.Tensor) -> torch.Tensor:
        bsz, frames, _ = x.shape
        return x.view(bsz, frames, self.heads, self.head_dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        bsz, frames, embed = x.shape
        q = self._heads(self.proj["q"](x)).permute(0, 2, 1, 3)
        k = self._heads(self.proj["k"](x))
        v = self._heads(self.proj["v"](x)).permute(0, 2, 1, 3)
        attn = torch.matmul(q, k.permute(0, 2, 3, 1)) * self.scaling
        probs = F.softmax(attn.float(), dim=-1).type_as(attn)
        out = torch.matmul(self.dropout(probs), v)
        return self.proj["out"](out.permute(0, 2, 1, 3).reshape(bsz, frames, embed))


class EncoderLayer(nn.Module):
    def __init__(self, embed: int, heads: int, ffn: int, dropout: float) -> None:
        super().__init__()
        self.attn = MultiheadSelfAttention(embed, heads, dropout)
        self.attn_norm = nn.LayerNorm(embed)
        self.fc1 = nn.Linear(embed, ffn)
        self.fc2 = nn.Linear(ffn, embed)
        self.ffn_norm = nn.LayerNorm(embed)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.attn_norm(x + self.dropout(self.attn(x)))
        return self.ffn_norm(x + self.dropout(self.fc2(F.relu(self.fc1(x)))))


class EventTagger(nn.Module):
    def __init__(self, settings: dict) -> None:
        super().__init__()
        embed = settings["embed"]
        self.stem = Stem(settings["n_mels"], embed, settings["stem_stride"], settings["groups"])
        self.layer = EncoderLayer(embed, settings["heads"], settings["ffn"], settings["dropout"])
        self.classifier = nn.Linear(embed, len(settings["classes"]))
        self.register_buffer("thresholds", torch.full((len(settings["classes"]),), settings["threshold"]))

    def forward(self, mels: torch.Tensor) -> torch.Tensor:
        frames = self.layer(self.stem(mels))
        return torch.sigmoid(self.classifier(frames.amax(dim=1)))

    def tags(self, mels: torch.Tensor) -> list[list[str]]:
        hits = self(mels) > self.thresholds
        return [[SETTINGS["classes"][i] for i in row.nonzero().flatten().tolist()] for row in hits]


tagger = EventTagger(SETTINGS)
tagger.eval()
fn = tagger


def inputs():
    # one clip of 16 mel frames: the stem's stride 4 leaves 4 frames for 4 heads
    return (torch.randn(1, SETTINGS["n_mels"], 16),)
