"""A graph transformer layer stack for molecule property prediction: node embeddings, edge-biased attention written by
hand (keys kept node-major, permuted in the product), a gated readout, configured by a plain dict."""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F

CONFIG = {
    "atom_types": 12,
    "dim": 32,
    "heads": 4,
    "layers": 2,
    "ffn_mult": 2,
    "dropout": 0.2,
    "eps": 1e-5,
    "targets": 3,
}


def scaled(scores, dim):
    # temperature of the attention logits
    return scores / math.sqrt(dim)


class NodeAttention(nn.Module):
    def __init__(self, config):
        super().__init__()
        dim, heads = config["dim"], config["heads"]
        self.heads = heads
        self.head_dim = dim // heads
        self.qkv = nn.Linear(dim, 3 * dim, bias=False)
        self.out = nn.Linear(dim, dim)
        self.drop = nn.Dropout(config["dropout"])

    def forward(self, h):
        n_batch, n_nodes, dim = h.shape
        q, k, v = self.qkv(h).split(dim, dim=-1)
        q = q.reshape(n_batch, n_nodes, self.heads, self.head_dim).permute(0, 2, 1, 3)
        k = k.reshape(n_batch, n_nodes, self.heads, self.head_dim)
        v = v.reshape(n_batch, n_nodes, self.heads, self.head_dim).permute(0, 2, 1, 3)
        logits = scaled(torch.matmul(q, k.permute(0, 2, 3, 1)), self.head_dim)
        weights = self.drop(logits.softmax(dim=-1))
        mixed = torch.matmul(weights, v)
        return self.out(mixed.permute(0, 2, 1, 3).reshape(n_batch, n_nodes, dim))


class FeedForward(nn.Module):
    def __init__(self, config):
        super().__init__()
        hidden = config["dim"] * config["ffn_mult"]
        self.up = nn.Linear(config["dim"], hidden)
        self.down = nn.Linear(hidden, config["dim"])

    def forward(self, h):
        return self.down(F.silu(self.up(h)))


class GraphLayer(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.attn = NodeAttention(config)
        self.ffn = FeedForward(config)
        self.norm_a = nn.LayerNorm(config["dim"], eps=config["eps"])
        self.norm_f = nn.LayerNorm(config["dim"], eps=config["eps"])

    def forward(self, h):
        h = self.norm_a(h + self.attn(h))
        return self.norm_f(h + self.ffn(h))


class MoleculeRegressor(nn.Module):
    def __init__(self, config=CONFIG):
        super().__init__()
        self.config = config
        self.atoms = nn.Embedding(config["atom_types"], config["dim"])
        self.layers = nn.ModuleList(GraphLayer(config) for _ in range(config["layers"]))
        self.gate = nn.Linear(config["dim"], 1)
        self.readout = nn.Linear(config["dim"], config["targets"])

    def forward(self, atoms):
        h = self.atoms(atoms)
        for layer in self.layers:
            h = layer(h)
        gate = torch.sigmoid(self.gate(h))
        pooled = (gate * h).sum(dim=1) / gate.sum(dim=1)
        return {"properties": self.readout(pooled), "nodes": h.shape[1]}

    def num_parameters(self):
        return sum(p.numel() for p in self.parameters())


torch.manual_seed(0)
fn = MoleculeRegressor().eval()


def inputs():
    return (torch.randint(0, CONFIG["atom_types"], (2, 4)),)
