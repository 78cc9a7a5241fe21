"""A sequence tagger whose positional table is rebuilt per call: the learned rows for the positions in use are
scattered into the table, which is then mirrored (each row plus its reverse twin) so that the first and
last positions share one code, as a palindromic-sequence model wants."""

import math
from collections import OrderedDict

import torch
import torch.nn as nn
import torch.nn.functional as F

HPARAMS = OrderedDict(
    vocab_size=50,
    max_len=12,
    embed_dim=24,
    pos_scale=0.5,
    hidden_dim=48,
    n_tags=5,
    dropout=0.25,
    layer_norm_eps=1e-5,
    pad_id=0,
)


class MirroredPositions(nn.Module):
    def __init__(self, hp):
        super().__init__()
        # rebuilt in place on every call (no allocation per call): the learned rows over a fixed ramp
        self.register_buffer("table", torch.linspace(-1, 1, hp["max_len"]).unsqueeze(-1).repeat(1, hp["embed_dim"]))
        self.learned = nn.Embedding(hp["max_len"], hp["embed_dim"])
        self.scale = hp["pos_scale"]

    @torch.no_grad()
    def refresh(self, length):
        positions = torch.arange(length, device=self.table.device)
        self.table[positions] = self.learned(positions) * self.scale
        self.table.add_(self.table.flip(0))

    def forward(self, length):
        self.refresh(length)
        return self.table[:length]


class Highway(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.transform = nn.Linear(dim, dim)
        self.gate = nn.Linear(dim, dim)

    def forward(self, x):
        g = torch.sigmoid(self.gate(x))
        return g * F.relu(self.transform(x)) + (1 - g) * x


class Tagger(nn.Module):
    def __init__(self, hp):
        super().__init__()
        self.hp = hp
        self.embed = nn.Embedding(hp["vocab_size"], hp["embed_dim"], padding_idx=hp["pad_id"])
        self.positions = MirroredPositions(hp)
        self.norm = nn.LayerNorm(hp["embed_dim"], eps=hp["layer_norm_eps"])
        self.highway = Highway(hp["embed_dim"])
        self.mlp = nn.Sequential(
            nn.Linear(hp["embed_dim"], hp["hidden_dim"]),
            nn.GELU(),
            nn.Dropout(hp["dropout"]),
            nn.Linear(hp["hidden_dim"], hp["n_tags"]),
        )
        self.dropout = nn.Dropout(hp["dropout"])

    def forward(self, tokens):
        x = self.embed(tokens) * math.sqrt(self.hp["embed_dim"])
        x = x + self.positions(tokens.shape[1])
        x = self.dropout(self.norm(x))
        x = x + self.highway(x)
        return F.log_softmax(self.mlp(x), dim=-1)

    def decode(self, tokens):
        return self(tokens).argmax(-1)


def tag_accuracy(model, tokens, tags):
    predicted = model.decode(tokens)
    mask = tokens != model.hp["pad_id"]
    return (predicted[mask] == tags[mask]).float().mean()


model = Tagger(HPARAMS)
model.eval()
fn = model


def inputs():
    # two sentences of 8 tokens (the table holds 12 positions)
    return (torch.randint(1, HPARAMS["vocab_size"], (2, 8)),)
