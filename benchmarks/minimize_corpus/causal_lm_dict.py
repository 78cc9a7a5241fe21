"""A tiny language model configured by a plain dict: fused QKV, post-norm blocks, a dict of outputs."""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F

CONFIG = {
    "vocab": 64,
    "context": 8,
    "d_model": 48,
    "n_head": 4,
    "ffn_mult": 4,
    "n_layer": 2,
    "p_attn": 0.1,
    "p_resid": 0.1,
    "activation": "gelu",
    "init_std": 0.2,
}


def activation(name):
    return {"gelu": F.gelu, "relu": F.relu, "silu": F.silu}[name]


def init_weights(module, std):
    if isinstance(module, nn.Linear):
        nn.init.normal_(module.weight, std=std)
        if module.bias is not None:
            nn.init.zeros_(module.bias)
    elif isinstance(module, nn.Embedding):
        nn.init.normal_(module.weight, std=std)


class CausalSelfAttention(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.n_head = config["n_head"]
        self.d_head = config["d_model"] // config["n_head"]
        self.c_attn = nn.Linear(config["d_model"], 3 * config["d_model"])
        self.c_proj = nn.Linear(config["d_model"], config["d_model"])
        self.p_attn = config["p_attn"]

    def split_heads(self, t):
        b, s, _ = t.shape
        return t.view(b, s, self.n_head, self.d_head)

    def forward(self, x):
        b, s, d = x.shape
        q, k, v = self.c_attn(x).chunk(3, dim=-1)
        q = self.split_heads(q).transpose(1, 2)
        k = self.split_heads(k)
        v = self.split_heads(v).transpose(1, 2)
        att = torch.matmul(q, k.permute(0, 2, 3, 1)) / math.sqrt(self.d_head)
        att = F.dropout(F.softmax(att, dim=-1), p=self.p_attn, training=self.training)
        y = torch.matmul(att, v)
        y = y.transpose(1, 2).contiguous().view(b, s, d)
        return self.c_proj(y)


class Block(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.attn = CausalSelfAttention(config)
        self.ln_1 = nn.LayerNorm(config["d_model"])
        hidden = config["ffn_mult"] * config["d_model"]
        self.fc = nn.Linear(config["d_model"], hidden)
        self.proj = nn.Linear(hidden, config["d_model"])
        self.ln_2 = nn.LayerNorm(config["d_model"])
        self.act = activation(config["activation"])
        self.p_resid = config["p_resid"]

    def forward(self, x):
        x = self.ln_1(x + F.dropout(self.attn(x), self.p_resid, self.training))
        h = self.proj(self.act(self.fc(x)))
        return self.ln_2(x + F.dropout(h, self.p_resid, self.training))


class TinyLM(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.config = config
        self.wte = nn.Embedding(config["vocab"], config["d_model"])
        self.wpe = nn.Embedding(config["context"], config["d_model"])
        self.blocks = nn.ModuleList(Block(config) for _ in range(config["n_layer"]))
        self.lm_head = nn.Linear(config["d_model"], config["vocab"], bias=False)
        self.apply(lambda m: init_weights(m, config["init_std"]))

    def forward(self, idx):
        positions = torch.arange(idx.size(1), device=idx.device)
        h = self.wte(idx) + self.wpe(positions)
        for block in self.blocks:
            h = block(h)
        return {"logits": self.lm_head(h), "last_hidden_state": h}

    @torch.no_grad()
    def generate(self, idx, steps):
        for _ in range(steps):
            logits = self(idx[:, -self.config["context"] :])["logits"]
            idx = torch.cat([idx, logits[:, -1].argmax(-1, keepdim=True)], dim=1)
        return idx


model = TinyLM(CONFIG).eval()
fn = model


def inputs():
    # one prompt of 4 tokens: as many as heads
    return (torch.randint(0, CONFIG["vocab"], (1, 4)),)
