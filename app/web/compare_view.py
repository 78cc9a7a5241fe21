"""Two runs side by side: a case beside its suggested variant, or any run beside another one.

What a workshop asks ("what if the data were random?") is answered by two verdicts next to each other: each run's
verdict and plain sentence, its value outputs with their figures, and what differs between the two programs and
their settings. Nothing runs here; both runs are read from the store.
"""

from __future__ import annotations

import difflib
import json
from pathlib import Path

import streamlit as st

from app.store import RunRecord
from app.web import running
from engine import CheckResult, records
from engine import outputs as leaf_roles
from engine.judge.headline import headline as verdict_headline

PARTNER = "compare:{run_id}"  # session state: the run shown beside this one


def partner_of(run_id: str) -> str | None:
    return st.session_state.get(PARTNER.format(run_id=run_id))


def set_partner(run_id: str, other: str | None) -> None:
    key = PARTNER.format(run_id=run_id)
    if other:
        st.session_state[key] = other
    else:
        st.session_state.pop(key, None)


def picker(record: RunRecord) -> None:
    """'Compare with…': any other run of this session (or the one already beside it)."""
    others = [r for r in running.store().recent(30, session=running.session()) if r.id != record.id]
    current = partner_of(record.id)
    ids = [""] + [r.id for r in others]
    if current and current not in ids:
        ids.append(current)
    names = {r.id: r.name for r in others}

    def chosen() -> None:
        set_partner(record.id, st.session_state.get(f"compare_pick:{record.id}") or None)

    st.selectbox(
        "Compare with another run",
        ids,
        index=ids.index(current) if current in ids else 0,
        key=f"compare_pick:{record.id}",
        format_func=lambda i: "–" if not i else f"{names.get(i, i)} ({i[9:15] if len(i) > 15 else i})",
        on_change=chosen,
    )


def render(left: tuple[RunRecord, CheckResult], right: tuple[RunRecord, CheckResult]) -> None:
    """Both verdicts side by side, then what differs between the two programs and settings."""
    st.markdown("#### Side by side")
    columns = st.columns(2, gap="medium")
    for column, (record, result) in zip(columns, (left, right), strict=True):
        with column:
            _one(record, result)
    (a_rec, a_res), (b_rec, b_res) = left, right
    a_src, b_src = _program(a_rec), _program(b_rec)
    if a_src is not None and b_src is not None and a_src != b_src:
        diff = difflib.unified_diff(a_src.splitlines(), b_src.splitlines(), a_rec.name, b_rec.name, lineterm="", n=1)
        st.code("\n".join(diff), language="diff")
    settings = _settings_diff(a_res, b_res)
    if settings:
        st.caption("Settings that differ: " + "; ".join(settings))


def _one(record: RunRecord, result: CheckResult) -> None:
    plain = verdict_headline(result.verdict, result.leaves, result.error.kind if result.error else None)
    box = {
        "divergent": st.error,
        "error": st.error,
        "precision-cast": st.warning,
        "rng": st.warning,
        "eager-inaccurate": st.info,
    }.get(result.verdict.value, st.success)
    box(f"**{record.name}** — **{result.verdict.value.upper()}**: {plain.sentence}.")
    rows = [
        {
            "leaf": leaf.name,
            "verdict": leaf.verdict.value,
            "differ": f"{leaf.mismatches}/{leaf.numel}" if leaf.numel else "–",
            "max abs": f"{leaf.max_abs:.3g}",
            "error vs fp64 (eager / compiled)": (
                f"{leaf.eager_ref_max:.2g} / {leaf.compiled_ref_max:.2g}"
                if leaf.eager_ref_max is not None and leaf.compiled_ref_max is not None
                else "–"
            ),
        }
        for leaf in leaf_roles.ordered(result.leaves, leaf_roles.load_focus(result))
        if leaf_roles.role(leaf) is not leaf_roles.Role.TRIVIA
    ][:6]
    if rows:
        st.dataframe(rows, hide_index=True, width="stretch")
    st.caption(f"run `{record.id}` · [open it](?run={record.id})")


def _program(record: RunRecord) -> str | None:
    path = Path(record.run_dir) / "snippet.py"
    return path.read_text() if path.exists() else None


def _settings_diff(a: CheckResult, b: CheckResult) -> list[str]:
    x, y = records.to_json(a.options), records.to_json(b.options)
    return [
        f"{k}: {json.dumps(x.get(k))} → {json.dumps(y.get(k))}"
        for k in sorted(set(x) | set(y))
        if x.get(k) != y.get(k) and k not in ("seed", "timeout_s")
    ]
