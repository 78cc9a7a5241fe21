"""The engine's verdict rules on whole tensors (see the package's docstring); a repro carries the part below."""

import math

import torch

from minimizer.vendored.elements import element_tests

# ---- vendored ----
# ---- the judge: engine/judge/oracle.py's rules, compact (Divergence Explorer) ----
FP32_EPS = 2.0**-23  # bf16/fp16 compute in fp32 (opmath): their reassociation noise is fp32's
BUDGET = 1e-3  # false alarms per benign check (engine/judge/family.py): a value judged alone holds all of it
_BITS = {torch.half: torch.int16, torch.bfloat16: torch.int16, torch.float: torch.int32, torch.double: torch.int64}
_TOLERANCES = {torch.float16: (1e-3, 1e-5), torch.bfloat16: (1.6e-2, 1e-5), torch.float64: (1e-7, 1e-7)}


def _real(t):  # complex as (real, imag) pairs; float8 and other small floats as float32 (exact)
    t = torch.view_as_real(t.detach().resolve_conj()) if t.is_complex() else t.detach()
    return (t.float() if t.is_floating_point() and t.dtype not in _BITS else t).contiguous()


def _ulps(a, b):
    # steps between a and b (0 where both are NaN, inf where one is), ordering bits so that -0.0 and +0.0 are both 0
    oa, ob = [x.view(_BITS[x.dtype]).long() for x in (a, b)]
    oa, ob = [torch.where(x < 0, -(x & ((1 << (8 * a.element_size() - 1)) - 1)), x) for x in (oa, ob)]
    d = torch.where((oa >= 0) == (ob >= 0), (oa - ob).abs().double(), oa.abs().double() + ob.abs().double())
    return torch.where(a.isnan() ^ b.isnan(), math.inf, torch.where(a.isnan() & b.isnan(), 0.0, d))


def _kind(t):
    # 0 NaN, 1 +inf, 2 -inf, 3 +0, 4 -0, 5 any other value: what a special-value difference compares
    sign = t.signbit().long()
    return torch.where(t.isnan(), 0, torch.where(t.isinf(), 1 + sign, torch.where(t == 0, 3 + sign, 5)))


def judge(eager, compiled, ref, factor, noise_ulps, lead="against fp64, "):
    """(verdict, symptoms, sentence): engine.judge.oracle.judge_values(value_metrics(eager, compiled, ref))."""
    e, c = _real(eager), _real(compiled).to(eager.device)
    shape, exact = tuple(e.shape), not e.is_floating_point()  # a reference of another shape than this is dropped
    r = _real(ref).to(e.device, torch.float64) if ref is not None and ref.shape == shape and not exact else None
    if ref is not None and ref.shape == shape and exact and not (ref.is_floating_point() or ref.is_complex()):
        r = ref.to(e.device, e.dtype)
    e, c, r = e.reshape(-1), c.reshape(-1), None if r is None else r.reshape(-1)
    where = torch.nonzero(e != c if exact else e.view(_BITS[e.dtype]) != c.view(_BITS[e.dtype])).reshape(-1)
    if not where.numel():
        return "match", [], f"bit-identical over {e.numel()} element(s)"
    de, dc, dr = e[where], c[where], None if r is None else r[where]
    if exact:
        diff = (de.long() - dc.long()).abs().double()
        i = int(diff.argmax())
        what = f"{where.numel()} of {e.numel()} exact element(s) differ, max abs {float(diff[i]):g}"
        right = None if dr is None else (int(((dc == dr) & (de != dr)).sum()), int(((de == dr) & (dc != dr)).sum()))
        return _by_reference(["value"], f"{what}{_at(shape, where[i], de[i], dc[i])}", where.numel(), right)
    e64, c64, sign = de.double(), dc.double(), de.signbit() != dc.signbit()
    nan, zero = de.isnan() ^ dc.isnan(), (de == 0) & (dc == 0) & sign
    inf = (de.isinf() ^ dc.isinf()) | (de.isinf() & dc.isinf() & sign)
    ulp, special, rtol_atol = _ulps(de, dc), nan | inf | zero, _TOLERANCES.get(e.dtype, (1.3e-6, 1e-5))
    i = int(torch.where(nan | inf, math.inf, torch.where(zero, 0.5, ulp)).argmax())
    m = dict(n=e.numel(), mismatches=where.numel(), max_ulp=float(ulp.max()), nan=int(nan.sum()), inf=int(inf.sum()))
    m.update(
        zero=int(zero.sum()),
        special=int(special.sum()),
        where=_at(shape, where[i], de[i], dc[i]),
        eps=torch.finfo(e.dtype).eps,
    )
    m["max_abs"] = float(torch.where(e64.isfinite() & c64.isfinite(), (e64 - c64).abs(), 0.0).max())
    m["within"] = bool(torch.isclose(c64, e64, *rtol_atol, equal_nan=True).all())
    m["right"] = None  # where NaN, inf or zero signs differ: at how many only compiled (only eager) agrees with fp64
    if dr is not None and bool(special.any()):
        kc, ke, kr = _kind(c64[special]), _kind(e64[special]), _kind(dr[special])
        m["right"] = (int(((kc == kr) & (ke != kr)).sum()), int(((ke == kr) & (kc != kr)).sum()))
    m["low"], m["errors"] = e.dtype in (torch.float16, torch.bfloat16), None if r is None else _errors(e, c, r)
    m["magnitude"] = float(e.abs().double().nan_to_num(0.0, 0.0, 0.0).max()) if r is None else None
    m["elements"] = element_tests(e.dtype, where, e64, c64, dr, r, shape) if m["errors"] and m["low"] else None
    return _judge(m, factor, noise_ulps, lead)


def _at(shape, flat, e, c):
    index = [int(i) for i in torch.unravel_index(flat, shape)] if shape else []
    return f" (worst at {index}: eager {e.item()!r}, compiled {c.item()!r})"


def _errors(e, c, r):
    """Both sides' error against fp64 (RMS and worst) and the reference's size, over the finite elements."""
    usable = e.isfinite() & c.isfinite() & r.isfinite()
    if not usable.any():
        return None
    xs = [r[usable], (e.double() - r)[usable], (c.double() - r)[usable]]
    return {"rms": [math.sqrt(float(x.dot(x)) / len(x)) for x in xs], "max": [float(x.abs().max()) for x in xs]}


def _by_reference(symptoms, what, differing, right):
    """Integers, NaN/inf positions, signs of zero: divergent unless compiled agrees with fp64 at every one."""
    if right is None:
        return "divergent", symptoms, what
    said = f"{what}; the float64 reference agrees with compiled at {right[0]} and with eager at {right[1]}"
    if right[0] == differing:
        return "eager-inaccurate", symptoms, f"eager's kernel is less accurate here: {said}"
    return "divergent", symptoms, said


def _judge(m, factor, noise_ulps, lead):
    drift = f"{m['mismatches']} of {m['n']} element(s) differ, max {m['max_ulp']:g} ULP, max abs {m['max_abs']:.3g}"
    right, zeros = m["right"], m["zero"]
    if zeros and not m["nan"] and not m["inf"] and right and right[0] < zeros and right[1] < zeros:
        # zeros' signs that fp64 gives to neither side follow evaluation order: judged without them
        if m["mismatches"] <= zeros:
            return "benign", [], f"only the signs of {zeros} zero(s) differ, and fp64 sides with neither"
        m = {**m, "mismatches": m["mismatches"] - zeros, "zero": 0, "right": None}
    symptoms = [s for s, k in (("nan", "nan"), ("inf", "inf"), ("signed-zero", "zero")) if m[k]]
    if symptoms:
        what = f"{m['nan']} NaN, {m['inf']} infinity and {m['zero']} zero-sign difference(s) of {m['n']}{m['where']}"
        return _by_reference(symptoms, what, m["special"], m["right"])  # NaN on one side, inf on the other: once
    if m["max_ulp"] == 0:
        return "benign", [], f"only NaN payloads differ in {m['mismatches']} element(s)"
    scale = noise_ulps * FP32_EPS + m["eps"] if m["low"] else noise_ulps * m["eps"]
    if m["errors"] is None:  # no fp64 reference: torch.testing's tolerances, then what rounding gives
        rounding = None if m["magnitude"] is None else (factor + 1.0) * scale * m["magnitude"]
        if m["within"] or (rounding is not None and math.isfinite(rounding) and m["max_abs"] <= rounding):
            return "benign", [], f"{drift}; no fp64 reference, within tolerances or what rounding gives"
        return "divergent", ["value"], f"{drift}; no fp64 reference, beyond tolerances and rounding{m['where']}"
    (ref_rms, e_rms, c_rms), (ref_max, e_max, c_max) = m["errors"]["rms"], m["errors"]["max"]
    rms_floor, max_floor = scale * ref_rms, scale * ref_max
    vs = f"{lead}compiled's error is {c_rms:.3g} RMS / {c_max:.3g} max vs eager's {e_rms:.3g} / {e_max:.3g}"
    rms_ok, max_ok = c_rms <= factor * e_rms + rms_floor, c_max <= factor * e_max + max_floor
    if not (rms_ok and max_ok):
        a, b = (c_rms, e_rms) if not rms_ok else (c_max, e_max)
        worse = f"{a / b:.3g}x" if b > 0 else "infinitely"
        target = "fp64" if lead == "against fp64, " else "that reference"
        return "divergent", ["value"], f"{drift}; {vs}: compiled is {worse} further from {target}{m['where']}"
    tests = m["elements"]["tests"] if m["elements"] else ()
    quarter = [BUDGET * 0.25 / max(t["multiplicity"], 1) for t in tests]  # each test's share, as family.py splits
    fired = [t["name"] for t, q in zip(tests, quarter, strict=True) if t["effect"] and t["log10p"] <= math.log10(q)]
    if fired:
        finding = f"{m['elements']['finding']} (the {' and '.join(fired)} test of the element rule)"
        return "divergent", ["value"], f"{drift}; {vs}; {finding}"
    if e_rms > factor * c_rms + rms_floor or e_max > factor * c_max + max_floor:
        return "eager-inaccurate", ["value"], f"eager's kernel is less accurate here: {drift}; {vs}"
    return "benign", [], f"{drift}; {vs}, within {factor:g}x plus the noise floor: reassociation noise"


def significant_strides(t):  # of dimensions longer than one: torch is free to choose the rest
    return () if t.numel() <= 1 else tuple(s for n, s in zip(t.shape, t.stride(), strict=True) if n > 1)
