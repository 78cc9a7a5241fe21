"""The gradients a repro with `backward` compares (see the package's docstring); a repro carries the part below."""

import torch

from minimizer.vendored.walker import tensors_of


# ---- vendored ----
# ---- gradients: the engine's loss, every gradient of an input or parameter compared ----
def gradients_of(out, args, kwargs, module, seed):
    # the engine's loss: a fixed random cotangent per output, drawn in float64 from seed + 1
    outs = [t for _, t in tensors_of(out, "out") if t.requires_grad]
    if not outs:
        return {}
    gen = torch.Generator().manual_seed(seed + 1)
    torch.autograd.backward(outs, [torch.randn(t.shape, generator=gen, dtype=torch.float64).to(t) for t in outs])
    grads = {
        f"grad {n}": t.grad.detach().clone()
        for n, t in [*tensors_of(args, "args"), *tensors_of(kwargs, "kwargs")]
        if t.grad is not None
    }
    for n, p in module.named_parameters() if module is not None else ():
        if p.grad is not None:
            grads[f"grad self.{n}"] = p.grad.detach().clone()
            p.grad = None  # eager's gradients must not accumulate into compiled's
    return grads
