"""How one stored run is shown: verdict, leaf table, per-leaf heatmaps and distributions, generated code."""

from __future__ import annotations

import dataclasses
import datetime as dt
import math
import re
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import streamlit as st

from app import gallery
from app.store import RunRecord
from app.web import code_view, compare_view, localize_tab, minimize_tab, probes_tab, running, triton_pass
from app.web import heatmap as hm
from engine import CheckResult, ErrorInfo, ErrorKind, GeneratedCode, Kernel, LeafResult, Verdict, records
from engine import outputs as leaf_roles
from engine.judge.headline import headline as verdict_headline
from engine.judge.known import recognise

BANNER = {
    Verdict.MATCH: st.success,
    Verdict.BENIGN: st.success,
    Verdict.PRECISION_CAST: st.warning,
    Verdict.RNG: st.warning,
    Verdict.EAGER_INACCURATE: st.info,
    Verdict.DIVERGENT: st.error,
    Verdict.ERROR: st.error,
}
# colored text, not emoji: a browser without an emoji font (CI's chromium) draws emoji as empty boxes
ICON = {
    "match": ":green[●]",
    "benign": ":green[●]",
    "precision-cast": ":orange[●]",
    "rng": ":violet[●]",
    "eager-inaccurate": ":blue[●]",
    "divergent": ":red[●]",
    "error": ":red[▲]",
    None: ":gray[○]",
}


def run_icon(verdict: str | None, explanation: str | None = None) -> str:
    """The run list's mark for a run: its verdict's colour; a cancelled run is grey, it has no verdict."""
    if verdict == "error" and (explanation or "").startswith("error (cancelled)"):
        return ":gray[■]"
    return ICON.get(verdict, ICON[None])


def fmt(x: float | None) -> str:
    if x is None:
        return "–"
    if x == 0:
        return "0"
    return f"{x:.3g}"


# -- cached loading: arrays can be hundreds of MB; keep few, share them across sessions ---------------------


@st.cache_resource(max_entries=4, show_spinner="Loading arrays …")
def leaf_arrays(run_dir: str, leaf_name: str) -> dict[str, np.ndarray]:
    result = CheckResult.load(Path(run_dir))
    return result.load_arrays(result.leaf(leaf_name))  # memory-mapped (a run of the old format: read whole)


@st.cache_resource(max_entries=16, show_spinner=False)
def leaf_summary(run_dir: str, leaf_name: str) -> dict[str, np.ndarray]:
    result = CheckResult.load(Path(run_dir))
    return result.load_summary(result.leaf(leaf_name))


@st.cache_resource(max_entries=8, show_spinner=False)
def _histogram(run_dir: str, leaf_name: str, dtype: str | None) -> Any:
    summary = leaf_summary(run_dir, leaf_name)
    if "histogram" in summary:
        return hm.histogram_figure(summary["histogram"])
    arrays = leaf_arrays(run_dir, leaf_name)
    ulp = arrays["ulp"] if "ulp" in arrays else hm.views.ulp_distance(arrays["eager"], arrays["compiled"], dtype)
    return hm.ulp_histogram(ulp, hm.bits_identical(arrays["eager"], arrays["compiled"]))


@st.cache_resource(max_entries=8, show_spinner=False)
def _worst(run_dir: str, leaf_name: str, metric: str, dtype: str | None) -> list[hm.WorstElement]:
    summary = leaf_summary(run_dir, leaf_name)
    if "shape" in summary:
        rows = hm.summary_worst(summary, hm.Metric(metric), tuple(summary["shape"]), dtype)
        if rows is not None:
            return rows
    return hm.worst_elements(leaf_arrays(run_dir, leaf_name), hm.Metric(metric), 10, dtype)


# -- the page -----------------------------------------------------------------------------------------------


def header(record: RunRecord) -> None:
    created = dt.datetime.fromtimestamp(record.created).strftime("%Y-%m-%d %H:%M:%S")
    st.markdown(f"### {record.name}")
    st.caption(f"run `{record.id}` · {created} · [link to this run](?run={record.id}) · stored in `{record.run_dir}`")
    snippet = Path(record.run_dir) / "snippet.py"
    source = snippet.read_text() if snippet.exists() else None
    # in a container either way: an element that comes and goes above the tabs would reset their selection
    with st.container():
        if source is not None and source != st.session_state.get("source"):
            _other_program(record, source)


def _other_program(record: RunRecord, source: str) -> None:
    # the caption and its button one above the other: a quarter of the column cut the button's label at 1024 px
    st.caption(
        "The editor above is empty; this run's program is in the Program tab."
        if not st.session_state.get("source")
        else "The editor above holds another program than this run's (its program is in the Program tab)."
    )
    st.button("Load this run's program", key=f"reload_top:{record.id}", on_click=load_snippet, args=(source, record))


def about_case(record: RunRecord) -> None:
    """A gallery case's own explanation, beside its result: what it teaches, what was measured."""
    if not record.origin.startswith("gallery:"):
        return
    slug = record.origin.split(":", 1)[1]
    case = next((c for c in gallery.load_cases()[0] if c.slug == slug), None)
    if case is not None and case.explanation:
        with st.expander(f"About this case: {case.title}", expanded=True):
            st.markdown(case.explanation)
            if case.upstream:
                st.caption(f"upstream: {case.upstream}")


_MISSING = re.compile(r"No module named '([\w.]+)'")


def missing_module(message: str) -> str | None:
    """The top-level module a program could not import: the user installs it where checks run (the server's own
    environment: the worker is started with the server's Python), not in their program."""
    m = _MISSING.search(message)
    return m.group(1).split(".")[0] if m else None


def headline(result: CheckResult) -> str:
    """The verdict's sentence without what the banner already says: the verdict's name, a one-leaf tally."""
    text = result.explanation
    if text.startswith(f"{result.verdict.value}: "):
        text = text[len(result.verdict.value) + 2 :]
    return re.sub(r" \(1 leaves: [^)]*\)$", "", text)


# what the program was doing in each stage of the worker's (engine.runner's stage names), in the user's words
_STAGE_WORDS = {
    "queued": "it was still waiting for a free worker",
    "starting worker": "the worker was still starting (importing torch)",
    "loading": "your program's module-level code or `inputs()` had not returned",
    "eager": "your `fn` had not returned when run eagerly",
    "compiling": "torch.compile was still compiling your `fn`",
    "compiled run": "the compiled `fn` had not returned",
    "fp64 reference": "the float64 reference run of your `fn` had not returned",
    "faithful reference": "the float64 reference run of your `fn` had not returned",
    "comparing": "eager's and compiled's outputs were still being compared",
}


def where_it_stopped(result: CheckResult) -> str:
    """'It was stopped while your `fn` had not returned when run eagerly, after 10 s.' from the stages it went
    through (the last one is where it was when Cancel came), or '' when nothing says."""
    stages = [(name, s) for name, s in result.stage_seconds.items() if name not in ("finishing", "saving")]
    if not stages:
        return ""
    name, seconds = stages[-1]
    words = _STAGE_WORDS.get(name.split(":")[0].strip(), f"it was in its {name} stage")
    return f"When Cancel came, {words} after {seconds:.0f} s. "


def _cancelled(result: CheckResult, error: ErrorInfo) -> None:
    st.warning(
        "**Cancelled** — the check was stopped before it finished, so it has no verdict. "
        f"{where_it_stopped(result)}"
        "Run it again to get one."
    )
    tail = error.output_tail or result.output_tail
    if tail.strip():
        with st.expander("Output tail"):
            st.code(tail.rstrip()[-4000:], language="text")


def banner(result: CheckResult) -> None:
    if result.error is not None and result.error.kind is ErrorKind.CANCELLED:
        _cancelled(result, result.error)
        return
    show = BANNER[result.verdict]
    known = recognise(result.leaves, result.code.fx_graphs)
    plain = verdict_headline(
        result.verdict,
        result.leaves,
        result.error.kind if result.error else None,
        result.inside.origin if result.inside else None,
        known=known,
    )
    missing = missing_module(result.error.message) if result.error is not None else None
    next_step = (
        f"install `{missing}` into the server's environment (`{sys.executable} -m pip install {missing}`, or the "
        "package that provides it), then run the check again"
        if missing
        else plain.next_step
    )
    # the plain sentence and the next step first, the figures (an error's message) after them (issue #26)
    figures = f"\n\n{headline(result)}"
    focus = leaf_roles.load_focus(result)
    # a divergence of memory layouts alone says so first, with the value outputs' verdicts (a GPT-2 with its cache);
    # a known cause (engine/judge/known.py, "looks like the known ... issue") stays before it
    layout_only = leaf_roles.layout_only_sentence(result.leaves, focus)
    sentence = (
        f"{plain.sentence}; {layout_only}" if layout_only and known is not None else layout_only or plain.sentence
    )
    show(f"**Verdict: {result.verdict.value.upper()}** — {sentence}. **Next:** {next_step}.{figures}")
    if len(result.leaves) > 1 and not layout_only:
        lead, layout = leaf_roles.summary(result.leaves, focus)
        for line in (lead, layout):
            if line:
                st.markdown(line + ".")
    if result.error is not None:
        _error_details(result, result.error, missing_module=missing is not None)
    for note in result.notes:
        st.caption(f"note: {note}")
    if len(result.seeds) > 1:
        st.dataframe(
            [{"seed": s.seed, "verdict": s.verdict.value, "explanation": s.explanation} for s in result.seeds],
            hide_index=True,
            width="stretch",
        )


def _error_details(result: CheckResult, err: ErrorInfo, *, missing_module: bool) -> None:
    st.markdown(f"**Error kind:** `{err.kind.value}`")
    if err.message.strip() not in headline(result):  # the banner said it already when it is one line
        st.code(err.message, language="text", wrap_lines=True)
    if err.traceback.strip():
        # open when it says more than the message above (where the program failed), folded when it only repeats it
        with st.expander("Traceback", expanded=not missing_module):
            st.code(err.traceback.rstrip(), language="python")
    tail = err.output_tail or result.output_tail
    if tail.strip():
        with st.expander("Output tail", expanded=True):
            st.code(tail.rstrip()[-4000:], language="text")


# leaf, verdict and how many differ fit a 1024-px window with the sidebar open (~560 px of table): pinned on the left
LEAF_COLUMNS = {
    "leaf": st.column_config.TextColumn(width=200, pinned=True),
    "verdict": st.column_config.TextColumn(width=175, pinned=True),
    "mismatched": st.column_config.TextColumn(width=110),
    "witness": st.column_config.TextColumn(width=110),
}


def leaf_rows(leaves: tuple[LeafResult, ...] | list[LeafResult]) -> list[dict[str, Any]]:
    """One row per leaf; what a reader needs first (name, verdict, how many differ) in the first columns, so a narrow
    window shows them without scrolling sideways."""
    rows = []
    for leaf in leaves:
        shape = "–" if leaf.shape is None else ("×".join(map(str, leaf.shape)) or "scalar")
        if leaf.compiled_shape is not None and leaf.compiled_shape != leaf.shape:
            shape += f" → {'×'.join(map(str, leaf.compiled_shape)) or 'scalar'}"
        dtype = (leaf.dtype or "–").replace("torch.", "")
        if leaf.compiled_dtype and leaf.compiled_dtype != leaf.dtype:
            dtype += f" → {leaf.compiled_dtype.replace('torch.', '')}"
        verdict = leaf.verdict.value
        if leaf_roles.role(leaf) is leaf_roles.Role.LAYOUT_ONLY:
            verdict = f"layout only (values {leaf_roles.values_verdict(leaf).value})"
        rows.append(
            {
                "leaf": leaf.name,
                "verdict": verdict,
                "mismatched": (
                    (
                        f"{leaf.mismatches}/{leaf.numel - leaf.unwritten}"
                        + (f" (+{leaf.unwritten} unwritten)" if leaf.unwritten else "")
                    )
                    if leaf.numel
                    else "–"
                ),
                "max abs": fmt(leaf.max_abs),
                "max ULP": fmt(leaf.max_ulp),
                "kind": leaf.kind.value,
                "shape": shape,
                "dtype": dtype,
                "max rel": fmt(leaf.max_rel),
                "NaN": leaf.nan_mismatches,
                "inf": leaf.inf_mismatches,
                "±0": leaf.signed_zero_mismatches,
                "witness": leaf.witness.value if leaf.witness else "–",  # what decided: fp64, faithful-fp64, tolerance
            }
        )
    return rows


def leaf_table(record: RunRecord, result: CheckResult) -> None:
    """Value leaves first (the outputs that matter before them), layout-only ones after, trivia folded away."""
    focus = leaf_roles.load_focus(result)
    ordered = leaf_roles.ordered(result.leaves, focus)
    shown = [
        leaf
        for leaf in ordered
        if leaf_roles.role(leaf) is not leaf_roles.Role.TRIVIA or leaf_roles.focused(leaf.name, focus)
    ]
    trivia = [leaf for leaf in ordered if leaf not in shown]
    if shown:
        st.dataframe(leaf_rows(shown), hide_index=True, width="stretch", column_config=LEAF_COLUMNS)
    if trivia:
        first = ", ".join(leaf.name for leaf in trivia[:3])
        with st.expander(f"{len(trivia)} other value(s) that match: flags, devices, counts, None ({first}…)"):
            st.dataframe(leaf_rows(trivia), hide_index=True, width="stretch", column_config=LEAF_COLUMNS)
    if len(result.leaves) > 1 and record.run_dir and ":" not in record.id:
        choices = [leaf.name for leaf in ordered if leaf_roles.role(leaf) is not leaf_roles.Role.TRIVIA]
        st.multiselect(
            "Outputs that matter",
            choices,
            default=[f for f in focus if f in choices],
            key=f"focus:{record.id}",
            on_change=_save_focus,
            args=(record, result),
            help=(
                "They lead this run's views and its summary line; kept with the run (and settable from Python as "
                "CheckOptions(focus=...)). The verdict still judges every output."
            ),
        )


def _save_focus(record: RunRecord, result: CheckResult) -> None:
    names = st.session_state.get(f"focus:{record.id}") or []
    leaf_roles.save_focus(record.run_dir, names)
    st.session_state.pop(f"leaf:{record.id}", None)  # the leaf picker opens on the first of them


def render_run(record: RunRecord, result: CheckResult) -> None:
    header(record)
    banner(result)
    about_case(record)
    if ":" not in record.id:
        side_by_side(record, result)
    with_triton = record.options.triton_cpu or result.triton_cpu is not None
    tri = triton_pass.load(result) if with_triton else None
    if with_triton:
        triton_caption(tri)
    names = (
        ["Leaves", "Generated code"]
        + (["Triton on CPU"] if with_triton else [])
        + ["Probes", "Localize", "Minimize", "Program"]
    )
    tabs = dict(zip(names, st.tabs(names), strict=True))
    with tabs["Leaves"]:
        if result.leaves:
            leaf_table(record, result)
            leaf_explorer(record, result)
        else:
            st.info("Nothing was compared.")
    with tabs["Generated code"]:
        code_tab(record, result, tri)
    if with_triton:
        with tabs["Triton on CPU"]:
            triton_tab(record, tri)
    with tabs["Probes"]:
        probes_tab.render(record, result)
    with tabs["Localize"]:
        localize_tab.render(record, result)
    with tabs["Minimize"]:
        minimize_tab.render(record, result)
    with tabs["Program"]:
        snippet_tab(record, result)
        with st.expander("Details: style, environment, stage times, options"):
            details_tab(result)


def side_by_side(record: RunRecord, result: CheckResult) -> None:
    """This run beside another (a case beside its suggested change, or any run the user picks)."""
    with st.expander("Compare with another run", expanded=compare_view.partner_of(record.id) is not None):
        compare_view.picker(record)
        other_id = compare_view.partner_of(record.id)
        other = running.store().get(other_id) if other_id else None
        other_result = running.load_result(other) if other is not None else None
        if other is not None and other_result is not None:
            compare_view.render((other, other_result), (record, result))
        elif other_id:
            st.caption(f"Run `{other_id}` has no result to show.")


def triton_caption(tri: CheckResult | None) -> None:
    if tri is None:
        st.caption("Triton on CPU: not run; see its tab.")
    elif tri.error is not None:
        st.markdown(f"{ICON['error']} **Triton on CPU**: {triton_pass.outcome(tri)}; see its tab.")
    else:
        st.markdown(
            f"{ICON.get(tri.verdict.value, '')} **Triton on CPU**: **{tri.verdict.value}** (interpreted, not GPU"
            " Triton); see its tab."
        )


def triton_tab(record: RunRecord, tri: CheckResult | None) -> None:
    """The Triton-on-CPU pass: what it is, its verdict and leaves, or why it could not run."""
    if tri is None:
        st.warning(
            "The Triton-on-CPU pass did not run: it was cancelled, or the app stopped before it finished. Run the check"
            " again to get it."
        )
        return
    kernels = sum(len(o.kernels) for o in tri.code.output_code)
    if tri.error is None:
        st.markdown(
            f"**{triton_pass.LABEL}.** The program was compiled again with Inductor's Triton backend for CPU tensors,"
            " in a separate worker; Triton's numpy interpreter ran the kernels, and that output was compared with"
            " eager like any compiled run. The interpreter has its own numerics: this is not what a GPU computes."
        )
        (st.error if tri.verdict is Verdict.DIVERGENT else st.success)(
            f"**Interpreted Triton on CPU: {tri.verdict.value.upper()}** — {headline(tri)}"
        )
    else:
        st.markdown(
            "The program was compiled again with Inductor's Triton backend for CPU tensors, in a separate worker. "
            + (f"Its {kernels} Triton kernel(s) were generated (see the Generated code tab), but " if kernels else "")
            + f"{'they were' if kernels else 'the kernels were'} not run to the end, so there is no interpreted result:"
        )
        (st.info if tri.error.kind in (ErrorKind.OPTIONS, ErrorKind.TIMEOUT) else st.warning)(
            f"**{triton_pass.outcome(tri).capitalize()}** — {tri.error.message.strip()}"
        )
        if tri.error.traceback.strip():
            with st.expander("Traceback"):
                st.code(tri.error.traceback.rstrip(), language="python")
    for note in tri.notes:
        st.caption(f"note: {note}")
    if tri.leaves:
        st.dataframe(leaf_rows(tri.leaves), hide_index=True, width="stretch")
        if tri.run_dir is not None:
            # its own keys and directory, so its widgets never collide with the main check's
            leaf_explorer(dataclasses.replace(record, id=f"{record.id}:triton", run_dir=tri.run_dir), tri)


def leaf_explorer(record: RunRecord, result: CheckResult) -> None:
    focus = leaf_roles.load_focus(result)
    leaves = leaf_roles.ordered(result.leaves, focus)
    first = leaf_roles.first_to_show(leaves, focus)
    names = [leaf.name for leaf in leaves]
    name = st.selectbox("Leaf", names, index=names.index(first.name) if first else 0, key=f"leaf:{record.id}")
    leaf = result.leaf(name)
    # with one leaf the banner above already says this sentence
    st.markdown(
        f"{ICON.get(leaf.verdict.value, '')} **{leaf.verdict.value}**"
        + (f" — {leaf.explanation}" if len(leaves) > 1 else "")
    )
    writer = code_view.writers(result).get(leaf.name)
    if writer is not None:
        code_view.writer_link(writer, linked=":" not in record.id)
    if leaf.eager_ref_rms is not None:
        st.caption(
            f"error against the fp64 reference: eager RMS {fmt(leaf.eager_ref_rms)}, max {fmt(leaf.eager_ref_max)}; "
            f"compiled RMS {fmt(leaf.compiled_ref_rms)}, max {fmt(leaf.compiled_ref_max)}"
        )
    if leaf.arrays is None:
        if leaf.eager_value is not None or leaf.compiled_value is not None:
            st.markdown(f"eager `{leaf.eager_value}` · compiled `{leaf.compiled_value}`")
        st.info("No per-element arrays were stored for this leaf (not a tensor, a structural mismatch, or too large).")
        return
    arrays = leaf_arrays(record.run_dir, leaf.name)
    summary = leaf_summary(record.run_dir, leaf.name)
    full = "eager" in arrays and "compiled" in arrays
    if not full and "shape" not in summary:
        st.info("The arrays of this leaf are missing from the run directory.")
        return
    if full and arrays["eager"].shape != arrays["compiled"].shape:
        st.info("Eager and compiled have different shapes; there is no element-wise map.")
        return
    shape = tuple(arrays["eager"].shape) if full else tuple(int(n) for n in summary["shape"])
    if math.prod(shape) == 1:
        single_value(leaf, arrays if full else {})
        return
    metrics = hm.available_metrics(arrays) if full else hm.summary_metrics(summary)
    heatmap_section(record, leaf, arrays, summary, shape, metrics)
    # one above the other: side by side at 1024 px the table's seven numeric columns were cut ("2.17e")
    if "histogram" in summary or "ulp" in arrays or (full and hm.Metric.ULP in metrics):
        st.plotly_chart(
            _histogram(record.run_dir, leaf.name, leaf.dtype), key=f"hist:{record.id}:{leaf.name}", theme=None
        )
    metric = st.session_state.get(f"metric:{record.id}:{leaf.name}", metrics[0])
    worst_table(_worst(record.run_dir, leaf.name, hm.Metric(metric).value, leaf.dtype), hm.Metric(metric))


def single_value(leaf: LeafResult, arrays: Mapping[str, np.ndarray]) -> None:
    """A leaf of one element (a 0-d tensor, shape (1,), (1, 1), ...): its values in one line, where a map of one cell,
    a histogram of one element and a one-row table would say less."""
    values = {k: repr(arrays[k].reshape(-1)[0].item()) for k in ("eager", "compiled", "ref") if k in arrays}
    eager, compiled = (
        values.get("eager", leaf.eager_value),
        values.get("compiled", leaf.compiled_value),
    )  # the leaf keeps reprs
    shape = "×".join(map(str, leaf.shape or ())) or "scalar"
    text = f"one value ({shape}): eager `{eager}`, compiled `{compiled}`" + (
        f", fp64 `{values['ref']}`" if "ref" in values else ""
    )
    if leaf.mismatches:
        text += f" · abs difference {fmt(leaf.max_abs)}, {fmt(leaf.max_ulp)} ULP"
    st.markdown(text + ("" if leaf.mismatches else " · bit-identical"))


def worst_table(rows: list[hm.WorstElement], metric: hm.Metric) -> None:
    st.markdown(f"**10 worst elements** by {metric.label}")
    if not rows:
        st.caption("All elements are bit-identical.")
        return
    st.dataframe(
        [
            {
                "index": str(list(w.index)),
                "eager": f"{w.eager:.9g}",
                "compiled": f"{w.compiled:.9g}",
                "fp64": "–" if w.ref is None else f"{w.ref:.12g}",
                "abs": fmt(w.abs_err),
                "rel": fmt(w.rel_err),
                "ULP": fmt(w.ulp),
            }
            for w in rows
        ],
        hide_index=True,
        width="stretch",
    )


def _spec_controls(key: str, shape: tuple[int, ...], worst_index: tuple[int, ...] | None) -> hm.SliceSpec:
    base = hm.default_spec(shape, worst_index)
    rank = len(shape)
    if rank == 1:
        return base
    dims = list(range(rank))
    a, b = st.columns(2)
    row_dim = a.selectbox(
        "Rows: dimension",
        dims,
        index=base.row_dim,
        key=f"{key}:rows",
        format_func=lambda d: f"dim {d} (size {shape[d]})",
    )
    col_choices = [d for d in dims if d != row_dim]
    default_col = base.col_dim if base.col_dim in col_choices else col_choices[-1]
    col_dim = b.selectbox(
        "Columns: dimension",
        col_choices,
        index=col_choices.index(default_col),
        key=f"{key}:cols:{row_dim}",
        format_func=lambda d: f"dim {d} (size {shape[d]})",
    )
    index = list(base.index)
    others = [d for d in dims if d not in (row_dim, col_dim)]
    if others:
        cols = st.columns(len(others))
        for c, d in zip(cols, others, strict=True):
            if shape[d] > 1:
                index[d] = c.slider(f"index in dim {d}", 0, shape[d] - 1, value=index[d], key=f"{key}:dim{d}")
            else:
                index[d] = 0
    return hm.SliceSpec(row_dim, col_dim, tuple(index))


def box_region(event: Any, pooled: hm.Pooled) -> tuple[int, int, int, int] | None:
    """Rows [r0, r1) and cols [c0, c1) of the slice under a box dragged on the heatmap, from Streamlit's selection.

    The axes count elements; a pooled map's cell (i, j) is centred on its block's first element, so it spans
    half a block either side of (i * rows per block, j * cols per block).
    """
    try:
        box = event["selection"]["box"][0]
        (x0, x1), (y0, y1) = sorted(box["x"]), sorted(box["y"])
    except (KeyError, IndexError, TypeError, ValueError):
        return None
    by, bx = pooled.block
    gh, gw = pooled.value.shape
    i0, i1 = max(0, math.floor(y0 / by + 0.5)), min(gh - 1, math.floor(y1 / by + 0.5))
    j0, j1 = max(0, math.floor(x0 / bx + 0.5)), min(gw - 1, math.floor(x1 / bx + 0.5))
    if i0 > i1 or j0 > j1:
        return None
    r0, _, c0, _ = pooled.block_range(i0, j0)
    _, r1, _, c1 = pooled.block_range(i1, j1)
    return r0, r1, c0, c1


def clicked_block(event: Any, pooled: hm.Pooled) -> tuple[int, int] | None:
    """Grid position (i, j) of the block whose marker was clicked on a pooled map, from Streamlit's selection.

    A drag also lists the markers inside its box; that is a region, not a click, so a box wins.
    """
    try:
        selection = event["selection"]
        if selection.get("box") or not selection.get("points"):
            return None
        point = selection["points"][0]
        if point.get("curve_number") != hm.BLOCKS_TRACE:
            return None
        row, col = int(point["y"]), int(point["x"])
    except (KeyError, IndexError, TypeError, ValueError, AttributeError):
        return None
    by, bx = pooled.block
    gh, gw = pooled.value.shape
    if not (0 <= row < pooled.shape[0] and 0 <= col < pooled.shape[1]):
        return None
    return min(row // by, gh - 1), min(col // bx, gw - 1)


def heatmap_section(
    record: RunRecord,
    leaf: LeafResult,
    arrays: Mapping[str, np.ndarray],
    summary: Mapping[str, np.ndarray],
    shape: tuple[int, ...],
    metrics: tuple[hm.Metric, ...],
) -> None:
    """The map of one slice: the check's own block maxima where it pooled this slice (no array is read),
    else pooled here from the stored arrays; a picked block at full resolution from the stored arrays."""
    key = f"{record.id}:{leaf.name}"
    full = "eager" in arrays and "compiled" in arrays
    metric = hm.Metric(
        st.radio(
            "Metric",
            [m.value for m in metrics],
            format_func=lambda v: hm.Metric(v).label,
            horizontal=True,
            key=f"metric:{key}",
        )
    )
    worst = leaf.worst_index if leaf.worst_index is not None and len(leaf.worst_index) == len(shape) else None
    spec = _spec_controls(key, shape, worst) if full else hm.default_spec(shape, worst)
    pooled_by_check = hm.summary_pooled(summary, metric, spec, shape)
    if not full and not _values_not_kept(leaf, drawable=pooled_by_check is not None):
        return
    view = hm.heatmap(
        arrays, metric, spec, dtype=leaf.dtype, title=f"{leaf.name}: {metric.label}", pooled=pooled_by_check
    )
    pooled = view.pooled
    modes = ("points", "box") if pooled.pooled else ("box",)
    event = st.plotly_chart(
        view.figure,
        key=f"heatmap:{key}",
        on_select="rerun",
        selection_mode=modes,
        theme=None,
        config={"displaylogo": False},
    )
    if not full:  # nothing to show at full resolution
        return
    where = (spec.row_dim, spec.col_dim, tuple(sorted(spec.fixed().items())))
    _remember_selection(event, pooled, key, where)
    _map_caption(pooled)
    picked = _picked_region(pooled, key, where)
    if picked is None:
        return
    r0, r1, c0, c1 = picked
    detail = hm.block_detail(arrays, metric, spec, (r0, r1), (c0, c1), dtype=leaf.dtype)
    if (r1 - r0) > hm.DETAIL_MAX_SIDE or (c1 - c0) > hm.DETAIL_MAX_SIDE:
        st.caption(
            f"The selection is larger than {hm.DETAIL_MAX_SIDE}×{hm.DETAIL_MAX_SIDE}; its top-left part is shown."
        )
    st.plotly_chart(detail.figure, key=f"detail:{key}", theme=None, config={"displaylogo": False})


def _values_not_kept(leaf: LeafResult, *, drawable: bool) -> bool:
    """Say that a leaf's values were not kept; True when the check's own pooled map can still be drawn."""
    st.caption(
        f"This leaf's {leaf.numel:,} elements were above the storage limit, so its values were not kept: the map is"
        " the one the check pooled, of the slice through the worst element; other slices and full-resolution"
        " blocks need the values."
    )
    if not drawable:
        st.info(
            "The check kept no map of this leaf (its slice is small enough to draw every element, which needs the"
            " values)."
        )
    return drawable


def _remember_selection(event: Any, pooled: hm.Pooled, key: str, where: tuple[Any, ...]) -> None:
    """Keep the map's latest box (a region) or click (a block) in the session, once each."""
    box = box_region(event, pooled)
    if box is not None and st.session_state.get(f"{key}:lastbox") != (where, box):
        st.session_state[f"{key}:lastbox"] = (where, box)
        st.session_state[f"{key}:region"] = (where, box)
    # the selection stays in the chart's state across reruns: act on a click once, so the block inputs stay
    # usable afterwards, and forget it when it is cleared, so clicking the same block again works
    click = clicked_block(event, pooled) if pooled.pooled else None
    if click is None:
        st.session_state.pop(f"{key}:lastclick", None)
    elif st.session_state.get(f"{key}:lastclick") != (where, click):
        st.session_state[f"{key}:lastclick"] = (where, click)
        st.session_state[f"{key}:bi"], st.session_state[f"{key}:bj"] = click
        st.session_state.pop(f"{key}:region", None)


def _map_caption(pooled: hm.Pooled) -> None:
    by, bx = pooled.block
    h, w = pooled.shape
    if pooled.pooled:
        st.caption(
            f"{h}×{w} elements shown as {pooled.value.shape[0]}×{pooled.value.shape[1]} blocks of {by}×{bx}: each cell"
            " is its block's maximum; hover for the block's index range and worst element. Grey: bit-identical."
            " **Click a block** (or pick one below) to see it at full resolution; a drag zooms the map, and the"
            " toolbar's box select drags out a region instead."
        )
    else:
        st.caption(
            "Every element at full resolution. Grey: bit-identical (eager and compiled have the same bits). Drag a box"
            " to zoom into a region."
        )


def _picked_region(pooled: hm.Pooled, key: str, where: tuple[Any, ...]) -> tuple[int, int, int, int] | None:
    """The rows and columns to show at full resolution: a dragged box of this slice, else the picked block (the
    block inputs, starting at the worst block); None for an unpooled map with no box."""
    region_key, bi_key, bj_key = f"{key}:region", f"{key}:bi", f"{key}:bj"
    region = st.session_state.get(region_key)
    picked = None
    if pooled.pooled:
        finite = np.where(np.isnan(pooled.value), -np.inf, pooled.value)
        wi, wj = (int(v) for v in np.unravel_index(int(np.argmax(finite)), finite.shape))
        grid = pooled.value.shape
        for k, default, top in ((bi_key, wi, grid[0] - 1), (bj_key, wj, grid[1] - 1)):
            # a new slice or metric can shrink the grid below a block picked earlier
            st.session_state[k] = min(int(st.session_state.get(k, default)), top)
        a, b = st.columns(2)

        def drop_region() -> None:  # a picked block replaces a dragged box
            st.session_state.pop(region_key, None)

        bi = a.number_input(
            "Block row",
            0,
            grid[0] - 1,
            step=1,
            key=bi_key,
            on_change=drop_region,
            help="starts at the block holding the worst element",
        )
        bj = b.number_input("Block column", 0, grid[1] - 1, step=1, key=bj_key, on_change=drop_region)
        picked = pooled.block_range(int(bi), int(bj))
    if region is not None and region[0] == where:
        picked = region[1]
    return picked


def _language(k: Kernel) -> str:
    return "C++" if k.language == "cpp" else k.language.capitalize()


def kernel_column(title: str, code: GeneratedCode, key: str) -> None:
    """One compiler's kernels: a list and each kernel's source (for the side-by-side view)."""
    kernels = [(o.label, k) for o in code.output_code for k in o.kernels]
    st.markdown(f"**{title}** · {len(kernels)} kernel(s)")
    if not kernels:
        st.caption("no kernels were captured")
        return
    st.dataframe(
        [{"kernel": k.name, "language": _language(k), "lines": k.source.count("\n") + 1} for _, k in kernels],
        hide_index=True,
        width="stretch",
    )
    for i, (_, k) in enumerate(kernels):
        with st.expander(f"{k.name} ({_language(k)})", expanded=i == 0):
            st.code(
                k.source.strip("\n"),
                language="cpp" if k.language == "cpp" else "python",
                line_numbers=True,
                height=min(420, 22 * (k.source.count("\n") + 2)),
            )
    for i, out in enumerate(code.output_code):
        st.download_button(
            f"Download output code {out.label}",
            out.source,
            file_name=f"output_code_{out.label or i}.py",
            key=f"dl-{key}:{i}",
        )


def code_tab(record: RunRecord, result: CheckResult, tri: CheckResult | None = None) -> None:
    code = result.code
    code_view.render(record, result, tri, localize_tab.load(record.run_dir))
    if tri is not None:
        left, right = st.columns(2, gap="medium")
        with left:
            languages = sorted({_language(k) for o in code.output_code for k in o.kernels})
            kernel_column(f"This check ({', '.join(languages) or 'no kernels'})", code, f"main:{record.id}")
        with right:
            kernel_column(f"Triton on CPU: {triton_pass.LABEL}", tri.code, f"triton:{record.id}")
        st.divider()
    kernels = [(o.label, k) for o in code.output_code for k in o.kernels]
    st.markdown(
        f"{len(code.fx_graphs)} FX graph(s) · {len(code.output_code)} output module(s) · {len(kernels)} kernel(s) · "
        f"{len(code.graph_breaks)} graph break(s) · {len(code.recompiles)} recompilation(s)"
    )
    if not (code.fx_graphs or code.output_code or code.graph_breaks):
        st.info(
            "No generated code was captured: the backend writes none (eager, aot_eager) or the check stopped before"
            " compiling."
        )
        return
    if kernels:
        st.dataframe(
            [
                {
                    "module": label,
                    "kernel": k.name,
                    "language": "C++" if k.language == "cpp" else k.language.capitalize(),
                    "lines": k.source.count("\n") + 1,
                }
                for label, k in kernels
            ],
            hide_index=True,
            width="stretch",
        )
    _output_modules(record, code)
    _graphs_and_breaks(record, code)


def _output_modules(record: RunRecord, code: GeneratedCode) -> None:
    """Each output module Inductor wrote: its kernels, then its wrapper, with a download."""
    for i, out in enumerate(code.output_code):
        with st.expander(f"Output code {out.label}: {len(out.kernels)} kernel(s)", expanded=i == 0):
            for k in out.kernels:
                st.markdown(f"**`{k.name}`** ({'C++' if k.language == 'cpp' else k.language})")
                st.code(
                    k.source.strip("\n"),
                    language="cpp" if k.language == "cpp" else "python",
                    line_numbers=True,
                    height=min(420, 22 * (k.source.count("\n") + 2)),
                )
            st.markdown("**Wrapper module**")
            st.code(out.source, language="python", line_numbers=True, height=420)
            st.download_button(
                "Download output code",
                out.source,
                file_name=f"output_code_{out.label or i}.py",
                key=f"dl-out:{record.id}:{i}",
            )


def _graphs_and_breaks(record: RunRecord, code: GeneratedCode) -> None:
    """Dynamo's FX graphs, its graph breaks and its recompilations, as torch's logs gave them."""
    for i, graph in enumerate(code.fx_graphs):
        with st.expander(f"FX graph {i}", expanded=False):
            st.code(graph, language="python", height=min(420, 22 * (graph.count("\n") + 2)))
            st.download_button("Download FX graph", graph, file_name=f"fx_graph_{i}.py", key=f"dl-fx:{record.id}:{i}")
    if code.graph_breaks:
        with st.expander(f"Graph breaks ({len(code.graph_breaks)})", expanded=True):
            for text in code.graph_breaks:
                st.code(text, language="text", wrap_lines=True)
            st.download_button(
                "Download graph breaks",
                "\n\n".join(code.graph_breaks),
                file_name="graph_breaks.txt",
                key=f"dl-gb:{record.id}",
            )
    if code.recompiles:
        with st.expander(f"Recompilations ({len(code.recompiles)})"):
            for text in code.recompiles:
                st.code(text, language="text", wrap_lines=True)


def snippet_tab(record: RunRecord, result: CheckResult) -> None:
    snippet = Path(record.run_dir) / "snippet.py"
    if snippet.exists():
        source = snippet.read_text()
        st.code(source, language="python", line_numbers=True)
        st.button(
            "Load this snippet into the editor", key=f"reload:{record.id}", on_click=load_snippet, args=(source, record)
        )
    log = Path(record.run_dir) / "output.log"
    text = result.output_tail
    if not text and log.exists():
        text = log.read_text(errors="replace")[-8000:]
    st.markdown("**Output**")
    st.code(text.rstrip() or "(the snippet printed nothing)", language="text")


def load_snippet(source: str, record: RunRecord) -> None:
    """Put a stored run's program into the editor (a callback: before the widgets are drawn)."""
    st.session_state["source"] = source
    st.session_state["origin"] = record.origin
    st.session_state["name"] = record.name
    st.session_state["filename"] = record.name if record.name.endswith(".py") else "snippet.py"


def details_tab(result: CheckResult) -> None:
    st.markdown(f"**Style:** {result.style or '–'}")
    if result.environment:
        st.markdown("**Environment:** " + " · ".join(f"{k} {v}" for k, v in result.environment.items()))
    if result.stage_seconds:
        total = sum(result.stage_seconds.values())
        st.markdown(
            "**Stage times:** "
            + " · ".join(f"{k} {v:.2f} s" for k, v in result.stage_seconds.items())
            + f" · **total {total:.2f} s**"
        )
    if result.peak_rss_mb is not None:
        st.markdown(
            f"**Peak memory of the check:** {result.peak_rss_mb:,.0f} MiB (resident, including what it shares with the"
            " warm worker)"
        )
    st.markdown("**Options**")
    st.code(records.dumps(result.options, indent=1), language="json")
