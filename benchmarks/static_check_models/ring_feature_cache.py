"""A streaming feature cache for an online recommender: the newest item features are written into a ring of slots
(the cache tensor is the caller's and is updated in place), the ring is then balanced with its reverse, and a scorer
reads it. Configured by a small class with class attributes."""

import torch
import torch.nn as nn


class Settings:
    item_dim = 8
    slots = 6
    user_dim = 8
    hidden = 16
    balance = True
    clamp = 5.0


def mlp(sizes):
    layers = []
    for a, b in zip(sizes, sizes[1:], strict=False):
        layers += [nn.Linear(a, b), nn.ReLU()]
    return nn.Sequential(*layers[:-1])


class ItemTower(nn.Module):
    def __init__(self, s=Settings):
        super().__init__()
        self.net = mlp([s.item_dim, s.hidden, s.item_dim])

    def forward(self, items):
        return self.net(items).clamp(-Settings.clamp, Settings.clamp)


class RingCache(nn.Module):
    def __init__(self, s=Settings):
        super().__init__()
        self.balance = s.balance

    def update(self, cache, positions, rows):
        cache.index_put_((positions,), rows)
        if self.balance:
            cache.add_(cache.flip(0))
        return cache


class Scorer(nn.Module):
    def __init__(self, s=Settings):
        super().__init__()
        self.user = nn.Linear(s.user_dim, s.item_dim)

    def forward(self, users, cache):
        return torch.einsum("ud,sd->us", self.user(users), cache)


class Recommender(nn.Module):
    def __init__(self):
        super().__init__()
        self.items = ItemTower()
        self.cache = RingCache()
        self.scorer = Scorer()

    def forward(self, items, positions, users, cache):
        rows = self.items(items)
        cache = self.cache.update(cache, positions, rows.detach())
        scores = self.scorer(users, cache)
        return scores.softmax(dim=-1)

    def reset(self):
        return torch.zeros(Settings.slots, Settings.item_dim)


torch.manual_seed(0)
fn = Recommender().eval()


def inputs():
    return (
        torch.randn(2, Settings.item_dim),
        torch.tensor([1, 4]),
        torch.randn(3, Settings.user_dim),
        torch.rand(Settings.slots, Settings.item_dim),
    )
