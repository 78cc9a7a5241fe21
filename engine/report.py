"""Plain-text rendering of a CheckResult for the terminal."""

from __future__ import annotations

from engine.result import CheckResult, LeafResult

LABEL = "interpreted Triton, not GPU Triton"

_COLUMNS = ("leaf", "kind", "shape", "dtype", "max abs", "max rel", "max ULP", "mismatch", "NaN/inf/±0", "verdict")


def _fmt(x: float | None) -> str:
    if x is None:
        return "-"
    if x == 0:
        return "0"
    return f"{x:.3g}"


def _row(leaf: LeafResult) -> tuple[str, ...]:
    shape = "-" if leaf.shape is None else "x".join(map(str, leaf.shape)) or "scalar"
    if leaf.compiled_shape is not None and leaf.compiled_shape != leaf.shape:
        shape += f"→{'x'.join(map(str, leaf.compiled_shape)) or 'scalar'}"
    dtype = leaf.dtype or "-"
    if leaf.compiled_dtype and leaf.compiled_dtype != leaf.dtype:
        dtype += f"→{leaf.compiled_dtype}"
    mismatch = f"{leaf.mismatches}/{leaf.numel}" if leaf.numel else "-"
    special = f"{leaf.nan_mismatches}/{leaf.inf_mismatches}/{leaf.signed_zero_mismatches}"
    return (
        leaf.name,
        leaf.kind.value,
        shape,
        dtype,
        _fmt(leaf.max_abs),
        _fmt(leaf.max_rel),
        _fmt(leaf.max_ulp),
        mismatch,
        special,
        leaf.verdict.value,
    )


def table(leaves: tuple[LeafResult, ...]) -> str:
    rows = [_COLUMNS, *(_row(l) for l in leaves)]
    widths = [min(max(len(r[i]) for r in rows), 40) for i in range(len(_COLUMNS))]
    lines = []
    for n, r in enumerate(rows):
        lines.append("  ".join(cell[:40].ljust(w) for cell, w in zip(r, widths)).rstrip())
        if n == 0:
            lines.append("  ".join("-" * w for w in widths))
    return "\n".join(lines)


def render(result: CheckResult) -> str:
    out: list[str] = []
    if result.leaves:
        out.append(table(result.leaves))
        out.append("")
    out.append(f"VERDICT: {result.verdict.value.upper()}")
    out.append(f"  {result.explanation}")
    for leaf in result.leaves:
        if leaf.verdict.severity > 0:
            out.append(f"  - {leaf.name}: {leaf.explanation}")
    if result.error is not None:
        out.append(f"  error kind: {result.error.kind.value}")
        out.append("  " + result.error.message.replace("\n", "\n  "))
        if result.error.traceback:
            out.append("  traceback (last lines):")
            out.extend("    " + line for line in result.error.traceback.rstrip().splitlines()[-8:])
        tail = result.error.output_tail or result.output_tail
        if tail.strip():
            out.append("  output tail:")
            out.extend("    " + line for line in tail.rstrip().splitlines()[-15:])
    for note in result.notes:
        out.append(f"  note: {note}")
    code = result.code
    kernels = sum(len(o.kernels) for o in code.output_code)
    if code.fx_graphs or code.output_code:
        out.append(
            f"  compiled: {len(code.fx_graphs)} graph(s), {len(code.output_code)} output module(s), {kernels} kernel(s), "
            f"{len(code.graph_breaks)} graph break(s), {len(code.recompiles)} recompilation(s)"
        )
    companion = result.load_triton_cpu() if result.triton_cpu else None
    if companion is not None:
        out.append("")
        out.append(f"TRITON ON CPU ({LABEL}): {companion.verdict.value.upper()}")
        if companion.leaves:
            out.append(table(companion.leaves))
        out.append(f"  {companion.explanation}")
        out.extend(f"  note: {note}" for note in companion.notes)
        kernels = [k.name for o in companion.code.output_code for k in o.kernels if k.language == "triton"]
        out.append(f"  Triton kernels: {', '.join(kernels) or 'none captured'}")
    if result.run_dir:
        out.append(f"  run stored in {result.run_dir}")
    return "\n".join(out)
