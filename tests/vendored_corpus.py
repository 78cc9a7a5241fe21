"""Values for holding the repro's compact judge equal to the engine's (tests/test_vendored_judge.py).

`random_values` draws (eager, compiled, fp64 reference) triples of every dtype a leaf can have, with the faults and
the noise the rules tell apart: reassociation noise, one-step faults in a subset of elements (up, down, in one
column), a wrong scale, NaN/inf/signed-zero positions, integers off by one, eager the inaccurate side, no reference.
"""

from __future__ import annotations

from collections.abc import Iterator

import torch

Triple = tuple[str, torch.Tensor, torch.Tensor, torch.Tensor | None]
SHAPES = ((), (7,), (5, 9), (128, 16), (70, 3), (3, 2, 40))
FLOATS = (torch.bfloat16, torch.float16, torch.float32, torch.float64)


def _step_towards(t: torch.Tensor, where: torch.Tensor, up: bool) -> torch.Tensor:
    # one step of t's own dtype, at `where`
    target = torch.full_like(t, float("inf") if up else float("-inf"))
    return torch.where(where, torch.nextafter(t, target), t)


def _floats(g: torch.Generator, shape: tuple[int, ...], dtype: torch.dtype) -> Iterator[Triple]:
    r = torch.randn(shape, generator=g, dtype=torch.float64) * 3
    e = r.to(dtype)
    noise = (r + torch.randn(shape, generator=g, dtype=torch.float64) * r.abs() * 2e-7).to(torch.float32).to(dtype)
    some = torch.rand(shape, generator=g) < 0.4
    yield "identical", e, e.clone(), r
    yield "reassociation noise", e, noise, r
    yield "one step up in 40%", e, _step_towards(e, some, True), r
    yield "one step down in 40%", e, _step_towards(e, some, False), r
    yield "one step either way", e, _step_towards(_step_towards(e, some, True), ~some & (r > 0), False), r
    if len(shape) >= 2:
        column = torch.zeros(shape, dtype=torch.bool)
        column[..., 1] = True
        yield "one step in one column", e, _step_towards(e, column, True), r
    yield "1% off", e, (r * 1.01).to(dtype), r
    yield "eager the inaccurate side", (r * 1.01).to(dtype), e, r
    yield "no reference, noise", e, noise, None
    yield "no reference, 1% off", e, (r * 1.01).to(dtype), None
    yield "reference of another shape", e, noise, r.reshape(-1)[:1]
    if e.numel() > 2:
        nan = e.clone().reshape(-1)
        nan[1] = float("nan")
        yield "a NaN", e, nan.reshape(shape), r
        inf = e.clone().reshape(-1)
        inf[2] = float("inf")
        r_inf = r.clone().reshape(-1)
        r_inf[2] = float("inf")
        yield "an infinity fp64 agrees with", e, inf.reshape(shape), r_inf.reshape(shape)
        yield "an infinity, no reference", e, inf.reshape(shape), None
        zeros = torch.zeros(shape, dtype=dtype)
        signs = torch.where(some, -zeros, zeros)
        yield "zero signs fp64 gives neither", zeros, signs, torch.where(~some, -zeros.double(), zeros.double())
        yield "zero signs fp64 gives eager", zeros, signs, zeros.double()
        yield "zero signs and noise", torch.where(some, zeros, e), torch.where(some, -zeros, noise), r
        payload = e.clone().reshape(-1)
        payload[0] = float("nan")
        other = payload.clone()
        other[0] = -float("nan")
        yield "NaN payloads", payload.reshape(shape), other.reshape(shape), None


def _exact(g: torch.Generator, shape: tuple[int, ...]) -> Iterator[Triple]:
    e = torch.randint(-50, 50, shape, generator=g, dtype=torch.int32)
    some = torch.rand(shape, generator=g) < 0.3
    c = torch.where(some, e + 1, e)
    yield "integers identical", e, e.clone(), e.long()
    yield "integers off by one, fp64 with eager", e, c, e.long()
    yield "integers off by one, fp64 with compiled", e, c, c.long()
    yield "integers off by one, no reference", e, c, None
    yield "bools", e > 0, c > 0, None


def random_values(seed: int = 0) -> list[Triple]:
    """Every family of values on every shape and floating dtype, from one seed."""
    g = torch.Generator().manual_seed(seed)
    found: list[Triple] = []
    for shape in SHAPES:
        for dtype in FLOATS:
            found += [(f"{name} {dtype} {shape}", *rest) for name, *rest in _floats(g, shape, dtype)]
        found += [(f"{name} {shape}", *rest) for name, *rest in _exact(g, shape)]
        z = torch.randn(shape, generator=g, dtype=torch.complex128)
        found.append((f"complex, 1% off {shape}", z.to(torch.complex64), (z * 1.01).to(torch.complex64), z))
    return found
