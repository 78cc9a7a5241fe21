# A test-only backend: Inductor, then one output element moved by one ULP.
import torch
from torch._inductor.compile_fx import compile_fx


def one_ulp_inductor(gm, example_inputs):
    compiled = compile_fx(gm, example_inputs)

    def run(*args):
        outs = compiled(*args)
        first = outs[0]
        flat = first.view(-1)
        flat[3] = torch.nextafter(flat[3], torch.tensor(float("inf")))
        return outs

    return run


def fn(x, y):
    return x * y + 1.0


def inputs():
    return torch.randn(64), torch.randn(64)


compile_kwargs = {"backend": one_ulp_inductor}
