import torch


class Layer:
    def __init__(self):
        self.keys = torch.zeros(2, 0, 4)


class Cache:
    def __init__(self):
        self.layers = [Layer(), Layer()]
        self.seen = 0

    def update(self, i, k):
        layer = self.layers[i]
        layer.keys = torch.cat([layer.keys, k], dim=1)  # re-bound, not written in place
        if i == 0:
            self.seen += k.shape[1]
        return layer.keys


def fn(x, cache):
    a = cache.update(0, x.sin())
    b = cache.update(1, x.cos())
    return (a * b).sum(1)


def inputs():
    cache = Cache()
    cache.update(0, torch.randn(2, 3, 4))
    cache.update(1, torch.randn(2, 3, 4))
    return torch.randn(2, 1, 4), cache
