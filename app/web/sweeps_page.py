"""The app's Sweeps page: every sweep `divergence sweep` made, its verdict counts, bugs and jobs.

It only reads: a sweep's state file (SQLite in WAL mode, so a sweep that is still running keeps writing
while the page reads it) and its minimized repros. Each job's run opens on the check page (`?run=<id>`),
where the sweep listed it in the app's run store. A sweep of zoo jobs also shows PyTorch's own check beside
ours: a column of the job table, the cross table of the two, and a filter for the jobs where they disagree.
"""

from __future__ import annotations

import datetime as dt
import sqlite3
from pathlib import Path

import plotly.graph_objects as go
import streamlit as st

from app.sweep.registry import list_sweeps, sweeps_root
from app.sweep.report import (
    PYTORCH_COLUMNS,
    VERDICT_COLOURS,
    crosstab_rows,
    crosstabs,
    disagreeing,
    pytorch_text,
    summary,
    ulp_text,
    verdict_order,
)
from app.sweep.state import DONE, BugRow, JobRow, SweepState

REFRESH_S = 3.0


def render() -> None:
    st.set_page_config(page_title="Sweeps · Divergence Explorer", layout="wide")
    st.markdown("## Sweeps")
    sweeps = list_sweeps()
    if not sweeps:
        st.info(
            "No sweeps yet. `divergence sweep sample_cases --matrix backend=inductor,aot_eager` checks the gallery"
            f" under two backends; every sweep is listed here (they live in {sweeps_root()})."
        )
        return
    chosen = st.selectbox("Sweep", sweeps, key="sweep_dir", format_func=_label)
    try:
        state = SweepState(chosen.resolve())
    except (OSError, sqlite3.Error) as exc:
        st.error(f"{chosen} cannot be read: {exc}")
        return
    if state.running_elsewhere():
        # a running sweep: this part reruns on its own, the rest of the page stays as it is
        st.fragment(run_every=REFRESH_S)(_sweep)(state, True)
    else:
        _sweep(state, False)


def _label(path: Path) -> str:
    try:
        state = SweepState(path)
        counts = summary(state)
        when = dt.datetime.fromtimestamp((path / "sweep.sqlite").stat().st_mtime).strftime("%Y-%m-%d %H:%M")
        flag = " · running" if state.running_elsewhere() else ""
        return f"{path.name} · {counts['total']} jobs · {when}{flag}"
    except (OSError, sqlite3.Error):
        return f"{path.name} (unreadable)"


def _sweep(state: SweepState, running: bool) -> None:
    try:
        meta = state.meta()
        rows = state.by_severity()
        bugs = state.bugs()
    except sqlite3.Error as exc:
        st.error(f"{state.dir} cannot be read: {exc}")
        return
    totals = summary(state)
    command = " ".join(meta.get("command", [])) or "divergence sweep"
    st.caption(f"`{command}` · {state.dir}" + (" · **running**: refreshes every few seconds" if running else ""))
    counts = totals["counts"]
    _totals(counts, totals["total"])
    if bugs:
        _bugs(rows, bugs)
    pytorch = any(r.pytorch is not None for r in rows)
    only_disagreeing = _pytorch_check(rows) if pytorch else None
    _jobs(rows, counts, only_disagreeing, pytorch=pytorch)


def _totals(counts: dict[str, int], total: int) -> None:
    """Jobs finished, divergent and failed, and a bar per verdict."""
    left, right = st.columns([1, 2])
    with left:
        done = sum(n for v, n in counts.items() if v not in ("pending", "running"))
        st.metric("jobs finished", f"{done} / {total}")
        st.metric("divergent", counts.get("divergent", 0))
        st.metric("errors", counts.get("error", 0))
    with right:
        order = [v for v in verdict_order() if v in counts]
        figure = go.Figure(
            go.Bar(
                x=order,
                y=[counts[v] for v in order],
                marker_color=[VERDICT_COLOURS.get(v, "#999") for v in order],
                text=[counts[v] for v in order],
                textposition="auto",
            )
        )
        figure.update_layout(height=230, margin={"l": 10, "r": 10, "t": 10, "b": 10}, yaxis_title="jobs")
        st.plotly_chart(figure, key="sweep_counts", config={"displayModeBar": False})


def _bugs(rows: list[JobRow], bugs: list[BugRow]) -> None:
    """The divergent jobs grouped by bug, each bug's minimization, and its repro to download."""
    st.markdown("#### Bugs")
    by_bug: dict[str, list[str]] = {}
    for r in rows:
        if r.bug:
            by_bug.setdefault(r.bug, []).append(r.name + (f" [{r.label}]" if r.label else ""))
    st.dataframe(
        [
            {
                "bug": b.id,
                "what": b.description,
                "jobs": len(by_bug.get(b.id, [])),
                "minimization": b.status,
                "tokens": f"{b.tokens_before} → {b.tokens_after}" if b.tokens_after is not None else "",
                "outcome": b.message or "",
            }
            for b in bugs
        ],
        hide_index=True,
        width="stretch",
        key="sweep_bugs",
    )
    for b in bugs:
        if b.repro and Path(b.repro).is_file():
            st.download_button(
                f"repro.py of bug {b.id}",
                Path(b.repro).read_text(),
                file_name=f"repro-{b.id}.py",
                key=f"repro:{b.id}",
            )


def _jobs(rows: list[JobRow], counts: dict[str, int], only_disagreeing: set[str] | None, *, pytorch: bool) -> None:
    """Every job, the most severe first, filtered by verdict and by text (and to PyTorch's disagreements)."""
    st.markdown("#### Jobs")
    shown = [v for v in verdict_order() if v in counts]
    pick, text = st.columns([2, 1])
    verdicts = pick.multiselect("Verdicts", shown, default=shown, key="sweep_verdicts")
    needle = text.text_input("Program or options contain", key="sweep_filter").strip().lower()
    table = [
        {
            "verdict": (r.verdict if r.status == DONE else r.status) + (f" ({r.error_kind})" if r.error_kind else ""),
            "program": r.name,
            "options": r.label or "-",
            "worst leaf": r.worst_leaf or "",
            "max ULP": ulp_text(r),
            "seconds": r.seconds,
            "peak MB": r.peak_rss_mb,
            **({"PyTorch's check": pytorch_text(r)} if pytorch else {}),
            "where": r.where_ran or "",
            "run": f"./?run={r.run_id}" if r.status == DONE and r.run_id else None,
            "explanation": r.explanation or "",
        }
        for r in rows
        if (r.verdict if r.status == DONE else r.status) in verdicts
        and (not needle or needle in f"{r.program} {r.label}".lower())
        and (only_disagreeing is None or r.key in only_disagreeing)
    ]
    st.caption(f"{len(table)} of {len(rows)} jobs, the most severe first; a run opens on the check page")
    st.dataframe(
        table,
        hide_index=True,
        width="stretch",
        key="sweep_jobs",
        column_config={
            "run": st.column_config.LinkColumn("run", display_text="open run"),
            "seconds": st.column_config.NumberColumn("seconds", format="%.1f"),
            "peak MB": st.column_config.NumberColumn("peak MB", format="%.0f"),
        },
    )


def _pytorch_check(rows: list) -> set[str] | None:  # type: ignore[type-arg]
    """PyTorch's own check beside ours: the cross table over jobs and leaves; the keys of the disagreeing jobs when
    the user asks to see those alone (None: every job)."""
    st.markdown("#### PyTorch's own check beside ours")
    rules = sorted({r.pytorch_detail.rule for r in rows if r.pytorch_detail is not None})
    st.caption("; ".join(rules))
    jobs, leaves = crosstabs(rows)
    columns = st.columns(2)
    tables = ((jobs, "jobs"), (leaves, "leaves (each sample's outputs, in op_db and module_db jobs)"))
    for column, (counts, what) in zip(columns, tables, strict=True):
        column.caption(what)
        column.dataframe(
            [
                {"our verdict": v, **{f"PyTorch's {c}": n for c, n in zip(PYTORCH_COLUMNS, row, strict=True)}}
                for v, row in crosstab_rows(counts)
            ],
            hide_index=True,
            key=f"sweep_crosstab_{what[:4]}",
        )
    found = disagreeing(rows)
    if not st.checkbox(f"only the {len(found)} jobs where PyTorch's check and ours disagree", key="sweep_disagree"):
        return None
    return {r.key for r in found}
