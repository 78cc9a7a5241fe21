"""Plain-text rendering of a CheckResult for the terminal."""

from __future__ import annotations

from engine import outputs as leaf_roles
from engine.judge.headline import headline
from engine.judge.known import recognise
from engine.result import CheckResult, LeafResult

LABEL = "interpreted Triton, not GPU Triton"

_COLUMNS = (
    "leaf",
    "kind",
    "shape",
    "dtype",
    "max abs",
    "max rel",
    "max ULP",
    "mismatch",
    "NaN/inf/±0",
    "verdict",
    "nearer",
    "witness",
)


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
    mismatch = f"{leaf.mismatches}/{leaf.numel - leaf.unwritten}" if leaf.numel else "-"
    if leaf.unwritten:  # elements of memory nobody wrote are not compared: out of the count, and said
        mismatch += f" (+{leaf.unwritten} unwritten)"
    special = f"{leaf.nan_mismatches}/{leaf.inf_mismatches}/{leaf.signed_zero_mismatches}"
    return (
        leaf.name + _layout(leaf),
        leaf.kind.value,
        shape,
        dtype,
        _fmt(leaf.max_abs),
        _fmt(leaf.max_rel),
        _fmt(leaf.max_ulp),
        mismatch,
        special,
        leaf.verdict.value,
        leaf.nearer.value if leaf.nearer else "-",  # the side nearer the exact value: compiled, eager, neither
        leaf.witness.value if leaf.witness else "-",
    )


def _layout(leaf: LeafResult) -> str:
    """A sparse leaf says so by its name in the table (its figures are of its dense form); a strided one says
    nothing."""
    if leaf.layout is None and leaf.compiled_layout is None:
        return ""
    eager, compiled = leaf.layout or "strided", leaf.compiled_layout or "strided"
    return f" ({eager})" if eager == compiled else f" ({eager}→{compiled})"


def table(leaves: tuple[LeafResult, ...]) -> str:
    rows = [_COLUMNS, *(_row(leaf) for leaf in leaves)]
    widths = [min(max(len(r[i]) for r in rows), 40) for i in range(len(_COLUMNS))]
    lines = []
    for n, r in enumerate(rows):
        lines.append("  ".join(cell[:40].ljust(w) for cell, w in zip(r, widths, strict=True)).rstrip())
        if n == 0:
            lines.append("  ".join("-" * w for w in widths))
    return "\n".join(lines)


def render(result: CheckResult) -> str:
    plain = headline(
        result.verdict,
        result.leaves,
        result.error.kind if result.error else None,
        result.inside.origin if result.inside else None,
        known=recognise(result.leaves, result.code.fx_graphs),
    )
    # the plain sentence and the next step first, the figures after them (issue #26)
    out: list[str] = [f"VERDICT: {result.verdict.value.upper()} — {plain.sentence}.", f"  Next: {plain.next_step}."]
    focus = leaf_roles.load_focus(result)
    if len(result.leaves) > 1:  # the outputs that matter and the layout-only leaves, in a line each
        out.extend(f"  {line.replace('`', '')}." for line in leaf_roles.summary(result.leaves, focus) if line)
    out.append("")
    if result.leaves:
        out.append(table(leaf_roles.ordered(result.leaves, focus)))  # values first, trivia last
        out.append("")
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
    if result.inside is not None:
        out.append(f"  inside the program ({result.inside.status}): {result.inside.explanation}")
        out.extend(f"    note: {note}" for note in result.inside.notes)
    for note in result.notes:
        out.append(f"  note: {note}")
    code = result.code
    kernels = sum(len(o.kernels) for o in code.output_code)
    if code.fx_graphs or code.output_code:
        out.append(
            f"  compiled: {len(code.fx_graphs)} graph(s), {len(code.output_code)} output module(s), {kernels}"
            f" kernel(s), {len(code.graph_breaks)} graph break(s), {len(code.recompiles)} recompilation(s)"
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


def render_code(result: CheckResult, program: str | None = None) -> str:
    """Per output module and kernel, the program lines it came from (`show --code`): Inductor's provenance.

    `program` is the program's text (the run's snippet.py): a line torch recorded is printed from it.
    """
    out: list[str] = []
    passes = [("", result)]
    companion = result.load_triton_cpu() if result.triton_cpu else None
    if companion is not None:
        passes.append((f" (Triton on CPU: {LABEL})", companion))
    lines = program.splitlines() if program is not None else []
    for title, checked in passes:
        if not checked.code.output_code:
            out.append(
                f"no output code was captured{title}: the backend writes none, or the check stopped before compiling"
            )
            continue
        for module in checked.code.output_code:
            prov = module.provenance
            languages = sorted({"C++" if k.language == "cpp" else k.language.capitalize() for k in module.kernels}) or [
                "no generated kernels"
            ]
            out.append(f"output module {module.label}{title}: {', '.join(languages)}")
            if prov is None or (prov.status != "tracked" and not prov.kernels):
                out.append(
                    f"  provenance unknown: {prov.reason if prov else 'this run was made without provenance tracking'}"
                )
                out.append("")
                continue
            if prov.reason:
                out.append(f"  note: {prov.reason}")
            for k in prov.kernels:
                what = "library call" if k.extern else "generated kernel"
                nodes = (
                    f"{len(k.nodes)} FX node(s): {', '.join(k.nodes[:8])}{' ...' if len(k.nodes) > 8 else ''}"
                    if k.nodes
                    else "FX nodes unknown"
                )
                out.append(f"  {k.name}  ({what}; {nodes})")
                for s in k.lines:
                    text = lines[s.line - 1].strip() if 0 < s.line <= len(lines) else s.code
                    out.append(f"      {prov.program}:{s.line:<5} {text}")
                if not k.lines:
                    where = f" (torch recorded only: {', '.join(k.elsewhere[:3])})" if k.elsewhere else ""
                    out.append(f"      source lines unknown{where}")
            out.append("")
    return "\n".join(out).rstrip()
