"""Test-only fault: a compiled graph that keeps returning its first call's result, as a cache keyed on
nothing (or a missing guard) would. Only a second call, on new inputs, can see it."""
import torch
from torch._inductor.compile_fx import compile_fx


def stale_cache_inductor(gm, example_inputs):
    compiled = compile_fx(gm, example_inputs)
    memo = []

    def run(*args):
        if not memo:
            memo.append([o.clone() for o in compiled(*args)])
        return [o.clone() for o in memo[0]]

    return run


def fn(x):
    return torch.tanh(x) * 2


def inputs():
    return (torch.randn(32),)


compile_kwargs = {"backend": stale_cache_inductor}
