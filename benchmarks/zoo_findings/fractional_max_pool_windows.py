"""fractional_max_pool2d/3d on bf16 input, the same _random_samples on both sides: Inductor places some pooling windows
differently from eager, so the pooled values and indices differ (not only ties). Windows computed as ATen's CPU kernel
(generate_intervals: alpha = (in - pool) / (out - 1), start = int((i + u) * alpha) - int(u * alpha)), in fp64 for
reference."""

import torch
import torch.nn.functional as F


def f(x, u):
    return F.fractional_max_pool2d(x, 2, output_size=(4, 4), return_indices=True, _random_samples=u)


def windows(u, size, out, pool):
    alpha = (size - pool) / (out - 1)
    return [int((i + u) * alpha) - int(u * alpha) if i < out - 1 else size - pool for i in range(out)]


torch.manual_seed(0)
hits = 0
for trial in range(200):
    x = torch.randn(1, 1, 9, 9).to(torch.bfloat16)
    u = torch.rand(1, 1, 2).to(torch.bfloat16)
    (ve, ie), (vc, ic) = f(x, u), torch.compile(f)(x, u)
    if not torch.equal(ie, ic):
        hits += 1
        d = (ie != ic).nonzero()[0].tolist()
        a, b = ie[tuple(d)].item(), ic[tuple(d)].item()
        flat = x.flatten()
        print(
            f"  values equal: {torch.equal(ve, vc)}; first differing index: eager {a} (x={flat[a].item()}) compiled {b} (x={flat[b].item()})"
        )
        if hits <= 1:
            uw, uh = u[0, 0, 0].item(), u[0, 0, 1].item()
            print(
                f"u = {u.flatten().tolist()}: eager idx {ie.flatten()[:6].tolist()} compiled idx {ic.flatten()[:6].tolist()}"
            )
            print("   fp64 windows (w, h):", windows(uw, 9, 4, 2), windows(uh, 9, 4, 2))
print(f"indices differ in {hits} of 200 random bf16 cases")
for dtype in (torch.float32,):
    hits = 0
    for trial in range(200):
        x = torch.randn(1, 1, 9, 9, dtype=dtype)
        u = torch.rand(1, 1, 2, dtype=dtype)
        (ve, ie), (vc, ic) = f(x, u), torch.compile(f)(x, u)
        hits += not torch.equal(ie, ic)
    print(f"{dtype}: indices differ in {hits} of 200")
