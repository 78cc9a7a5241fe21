"""The backward half of a compared call: inputs that require grad, and the gradients of a fixed random cotangent.

Apart because every run of a call does it the same way, eager and compiled (comparison.py) and the fp64
references (reference.py): the same cotangent from the same seed, so their gradients pair up and compare.
"""

from __future__ import annotations

from typing import Any

import torch

from engine.child.leaves import flatten, map_tensors, tensors_of


def requiring_grad(tree: Any) -> Any:
    """The tree with its floating and complex tensors detached and requiring grad (the others as they are)."""

    def mark(t: torch.Tensor) -> torch.Tensor:
        if t.is_floating_point() or t.is_complex():
            return t.detach().requires_grad_(True)
        return t

    return map_tensors(tree, mark)


def backward(out: Any, inputs: Any, state: dict[str, torch.Tensor], seed: int) -> dict[str, torch.Tensor]:
    """Backpropagate a fixed random cotangent; return the gradients of inputs and parameters."""
    outs = [t for _, t in flatten(out) if isinstance(t, torch.Tensor) and t.requires_grad]
    if not outs:
        return {}
    gen = torch.Generator().manual_seed(seed + 1)
    with torch.utils._python_dispatch._disable_current_modes():  # the harness's draw: no faithful trace records it
        cotangents = [
            torch.randn(t.shape, generator=gen, dtype=torch.float64).to(dtype=t.dtype, device=t.device) for t in outs
        ]
    torch.autograd.backward(outs, cotangents)
    grads: dict[str, torch.Tensor] = {}
    for path, t in tensors_of(inputs[0], "args") + tensors_of(inputs[1], "kwargs"):
        if t.grad is not None:
            grads[path] = t.grad.detach().clone()
    for name, t in state.items():
        if isinstance(t, torch.nn.Parameter) and t.grad is not None:
            grads[name] = t.grad.detach().clone()
            t.grad = None
    return grads
