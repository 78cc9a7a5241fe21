import torch


class Layer:
    def __init__(self, keys, values):
        self.keys = keys
        self.values = values
        self.is_initialized = True


class Cache:  # a plain object, as transformers' DynamicCache: no dataclass, no pytree node
    def __init__(self):
        self.layers = []


class Output:
    def __init__(self, logits, cache):
        self.logits = logits
        self.cache = cache
        self.dtype = logits.dtype


def fn(x, w):
    cache = Cache()
    h = x
    for _ in range(2):
        h = torch.tanh(h @ w)
        cache.layers.append(Layer(h * 2, h + 1))
    return Output(h.sum(-1), cache)


def inputs():
    return torch.randn(4, 8), torch.randn(8, 8)
