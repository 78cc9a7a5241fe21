"""Test-only compile backends: Inductor, then one known fault in what the compiled program returns.

Each fault is applied by a backend defined inside the snippet text, so the snippet stays standalone.
"""

from __future__ import annotations

_BACKEND = """
import torch
from torch._inductor.compile_fx import compile_fx


def _fault(outs, args):
{fault}


def faulty_inductor(gm, example_inputs):
    compiled = compile_fx(gm, example_inputs)

    def run(*args):
        return _fault(compiled(*args), args)

    return run


compile_kwargs = {{"backend": faulty_inductor}}
"""

FAULTS = {
    # one element of the first output moved to the next float up
    "ulp": (
        "    flat = outs[0].view(-1)\n    flat[3] = torch.nextafter(flat[3], torch.tensor(float('inf')))\n    return"
        " outs"
    ),
    "nan": "    outs[0].view(-1)[0] = float('nan')\n    return outs",
    "signed_zero": (
        "    first = outs[0]\n    return (torch.where(first == 0, torch.full_like(first, -0.0), first), *outs[1:])"
    ),
    "stride": "    return (outs[0].t().contiguous().t(), *outs[1:])",
    "widen": "    return (outs[0].double(), *outs[1:])",
    # the compiled graph runs on copies, so in-place updates of inputs are lost
    "drop_mutation": None,
}

_DROP_MUTATION = """
import torch
from torch._inductor.compile_fx import compile_fx


def faulty_inductor(gm, example_inputs):
    compiled = compile_fx(gm, example_inputs)

    def run(*args):
        return compiled(*[a.clone() if isinstance(a, torch.Tensor) else a for a in args])

    return run


compile_kwargs = {"backend": faulty_inductor}
"""


def fault_snippet(fault: str, program: str) -> str:
    """A fn-inputs snippet: `program` (defining fn and inputs) compiled by Inductor with `fault` injected."""
    backend = _DROP_MUTATION if fault == "drop_mutation" else _BACKEND.format(fault=FAULTS[fault])
    return backend + "\n\n" + program.strip() + "\n"
