"""A retrieval memory for a small encoder: new features are written into slots of a bank, which is then made
symmetric (each slot averaged with its mirror) before the queries read it."""

from dataclasses import dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F


@dataclass
class MemoryConfig:
    feature_dim: int = 16
    bank_slots: int = 8
    query_dim: int = 16
    hidden: int = 32
    temperature: float = 0.5
    write_gain: float = 2.0
    dropout: float = 0.1
    momentum: float = 0.9
    normalize_reads: bool = True


class Encoder(nn.Module):
    def __init__(self, cfg: MemoryConfig):
        super().__init__()
        self.fc1 = nn.Linear(cfg.feature_dim, cfg.hidden)
        self.fc2 = nn.Linear(cfg.hidden, cfg.feature_dim)
        self.norm = nn.LayerNorm(cfg.feature_dim)
        self.drop = nn.Dropout(cfg.dropout)

    def forward(self, x):
        return self.norm(x + self.drop(self.fc2(F.gelu(self.fc1(x)))))


class MemoryBank(nn.Module):
    """Writes go straight into the bank tensor the caller owns (it is updated in place, as a cache is)."""

    def __init__(self, cfg: MemoryConfig):
        super().__init__()
        self.gain = cfg.write_gain
        self.momentum = cfg.momentum

    def write(self, bank, slots, values):
        bank.index_put_((slots,), values * self.gain)
        return bank

    def symmetrize(self, bank):
        bank.add_(bank.flip(0))  # slot i and slot n-1-i now hold the same sum
        return bank

    def ema(self, bank, values):
        return self.momentum * bank + (1 - self.momentum) * values


class Reader(nn.Module):
    def __init__(self, cfg: MemoryConfig):
        super().__init__()
        self.query = nn.Linear(cfg.query_dim, cfg.feature_dim)
        self.temperature = cfg.temperature
        self.normalize = cfg.normalize_reads

    def forward(self, queries, bank):
        q = self.query(queries)
        if self.normalize:
            q = F.normalize(q, dim=-1)
            bank = F.normalize(bank, dim=-1)
        weights = torch.softmax(q @ bank.t() / self.temperature, dim=-1)
        return weights @ bank


class RetrievalModel(nn.Module):
    def __init__(self, cfg: MemoryConfig):
        super().__init__()
        self.cfg = cfg
        self.encoder = Encoder(cfg)
        self.memory = MemoryBank(cfg)
        self.reader = Reader(cfg)
        self.head = nn.Linear(cfg.feature_dim, 1)

    def forward(self, features, slots, queries, bank):
        encoded = self.encoder(features)
        bank = self.memory.write(bank, slots, encoded.detach())  # no gradient flows into the memory
        bank = self.memory.symmetrize(bank)
        read = self.reader(queries, bank)
        return self.head(read).squeeze(-1)

    def reset_bank(self):
        return torch.zeros(self.cfg.bank_slots, self.cfg.feature_dim)


def describe(model: RetrievalModel) -> str:
    return f"{model.cfg.bank_slots} slots of {model.cfg.feature_dim}"


cfg = MemoryConfig()
model = RetrievalModel(cfg).eval()
fn = model


def inputs():
    features = torch.randn(3, cfg.feature_dim)
    slots = torch.tensor([0, 3, 6])
    queries = torch.randn(5, cfg.query_dim)
    bank = torch.rand(cfg.bank_slots, cfg.feature_dim)
    return features, slots, queries, bank
