"""The engine's element rule on whole tensors (see the package's docstring); a repro carries the part below."""

import math

import torch

# ---- vendored ----
# ---- the element rule for bf16/fp16 (engine/judge/elements.py): k1 elements, eager exact and compiled not ----
_FORMATS = {torch.bfloat16: (8, -126), torch.float16: (11, -14)}  # significand bits, least normal exponent


def _step(r, bits, least):
    # the step of a format at |r|: 2^(e - bits), with frexp's exponent one above IEEE's
    return torch.ldexp(torch.ones_like(r), torch.frexp(r)[1].long().clamp(min=least + 1) - bits)


def _log10p(total, square):
    # log10 of Hoeffding's bound on the sign-flip tail of a sum of block counts
    return 0.0 if total <= 0 or square <= 0 else -(total * total) / (2 * square) / math.log(10)


def element_tests(dtype, where, e, c, r, ref, shape):
    """engine.judge.elements.Tally's tests (no float32 twin) from the differing elements `where` (e, c, r: float64)."""
    q = _step(r, *_FORMATS[dtype])
    finite = ref[ref.isfinite()]
    rms = math.sqrt(float(finite.dot(finite)) / finite.numel()) if finite.numel() else 0.0
    width = 4.0 * _step(r.abs().clamp(min=rms), 24, -126)  # the tie band's floor: 4 fp32 ULPs
    usable = r.isfinite() & e.isfinite() & c.isfinite()
    exact = torch.round(r / q) * q
    error_e, error_c = torch.where(usable, (e - r).abs(), 0.0), torch.where(usable, (c - r).abs(), 0.0)
    tie = ((q / 2 - (r - exact).abs()) <= width) & ((e - exact).abs() <= q) & ((c - exact).abs() <= q)
    e_exact, c_exact = (e == exact) & usable, (c == exact) & usable
    k1, k2 = e_exact & ~c_exact & ~tie, c_exact & ~e_exact & ~tie
    worse, better = usable & (error_c - error_e > 2 * width), usable & (error_c - error_e < -2 * width)
    up = (2 * (k1 & (c > e)).long() - k1.long()) - (2 * (k2 & (e > c)).long() - k2.long())
    away = (2 * (k1 & (c.abs() > e.abs())).long() - k1.long()) - (2 * (k2 & (e.abs() > c.abs())).long() - k2.long())
    rows = torch.stack([k1.long() - k2.long(), worse.long() - better.long(), up, away])
    numel, last = math.prod(shape), shape[-1] if shape else 1
    block = last * math.ceil(numel // last / 65536) if last and numel // last >= 64 else 1
    blocks = torch.zeros(4, max(1, math.ceil(numel / block)), dtype=torch.long, device=where.device)
    per_block = blocks.index_add_(1, where // block, rows)
    sums = [(float(x.sum()), float((x * x).sum())) for x in per_block.double()]
    (x_t, x_v), (d_t, d_v), (u_t, u_v), (a_t, a_v) = sums
    n1, n2, n_up = int(k1.sum()), int(k2.sum()), int((k1 & (c > e)).sum())
    n_away = int((k1 & (c.abs() > e.abs())).sum())
    n_worse, n_better = int(worse.sum()), int(better.sum())
    one_sided = n1 >= 8 and n1 >= 2 * n2
    share = max(abs(2 * n_up - n1), abs(2 * n_away - n1)) / n1 if n1 else 0.0
    direction = min(_log10p(u_t, u_v), _log10p(-u_t, u_v), _log10p(a_t, a_v), _log10p(-a_t, a_v))
    tests = [
        {"name": "exactness", "log10p": _log10p(x_t, x_v), "multiplicity": 1, "effect": one_sided},
        {"name": "distance", "log10p": _log10p(d_t, d_v), "multiplicity": 1, "effect": n_worse >= max(8, 2 * n_better)},
        {"name": "direction", "log10p": direction, "multiplicity": 4, "effect": one_sided and share >= 0.5},
    ]
    if len(shape) >= 2 and last >= 2 and numel // last >= 64:  # one column much richer in k1 than the value
        a, b = [torch.zeros(last).double().index_add_(0, where.cpu() % last, k.double().cpu()) for k in (k1, k2)]
        log10p = -((a - b).clamp_min(0) ** 2) / (2 * (a + b).clamp_min(1)) / math.log(10)
        effect = (a >= 8) & (a >= 2 * b) & (a * float(b.sum()) >= 2 * b * float(a.sum()))
        i = int(torch.argmin(torch.where(effect, log10p, log10p + 1e6)))
        tests.append({"name": "column", "log10p": float(log10p[i]), "multiplicity": last, "effect": bool(effect[i])})
    finding = f"compiled is off in {n1:,} of {numel:,} elements where eager equals fp64 rounded to {dtype}, {n2:,} "
    return {"tests": tests, "finding": finding + f"the other way round; further from fp64 in {n_worse:,}"}
