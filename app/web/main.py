"""Divergence Explorer's web app: paste or pick a PyTorch program, check it eager vs compiled, explore where it differs.

Run with `divergence serve` (or `streamlit run app/web/main.py`). User code never runs in this process: checks go
to the engine's worker through engine.Runner.
"""

from __future__ import annotations

import sys
from pathlib import Path

# `streamlit run app/web/main.py` puts app/web/ on sys.path, not the repository root that holds the packages
_ROOT = str(Path(__file__).resolve().parents[2])
if _ROOT not in sys.path:
    sys.path.insert(0, _ROOT)

import datetime as dt  # noqa: E402
import uuid  # noqa: E402

import streamlit as st  # noqa: E402
from streamlit.delta_generator import DeltaGenerator  # noqa: E402

from app import gallery  # noqa: E402
from app.store import INTERRUPTED, RunRecord  # noqa: E402
from app.web import ast_lock, compare_view, editor, options_form, result_view, running, sweeps_page  # noqa: E402
from engine import OptionsError  # noqa: E402

ast_lock.install()  # background jobs parse beside Streamlit's compiles of this page (app/web/ast_lock.py)

# what the run list's marks mean (result_view.ICON and run_icon)
RUN_LEGEND = (
    ":green[●] match or benign · :orange[●] precision-cast · :violet[●] rng · :blue[●] eager-inaccurate · "
    ":red[●] divergent · :red[▲] error · "
    ":gray[■] cancelled · :gray[□] interrupted · :gray[○] still running"
)

PLACEHOLDER = """import torch

def fn(x, w):
    return (x @ w).relu().sum(-1)

def inputs():
    return torch.randn(64, 256), torch.randn(256, 128)
"""


@st.cache_data(show_spinner=False, ttl=60)
def _cases() -> tuple[tuple[gallery.SampleCase, ...], tuple[str, ...]]:
    return gallery.load_cases()


def _init_state() -> None:
    state = st.session_state
    state.setdefault("source", "")
    state.setdefault("filename", "snippet.py")
    state.setdefault("origin", "paste")
    state.setdefault("name", "pasted program")
    options_form.init(state)


# -- callbacks: they run before the script, so they may set the widgets' state ------------------------------


def _on_edit() -> None:
    st.session_state.update(
        origin="paste", name=editor.program_name(st.session_state.get("source", "")), filename="snippet.py"
    )


def _on_upload() -> None:
    upload = st.session_state.get("upload")
    if upload is None:
        return
    text = upload.getvalue().decode("utf-8", errors="replace")
    st.session_state.update(source=text, origin="upload", name=upload.name, filename=upload.name)


def _on_load_case() -> None:
    cases, _ = _cases()
    slug = st.session_state.get("gallery_case")
    case = next((c for c in cases if c.slug == slug), None)
    if case is None:
        return
    variant = st.session_state.get("gallery_variant", 0) or 0
    chosen = case.variants[variant - 1] if 0 < variant <= len(case.variants) else None
    options_form.fill(st.session_state, chosen.options if chosen else case.options)
    st.session_state.update(
        source=chosen.source(case.source()) if chosen else case.source(),
        origin=f"gallery:{case.slug}",
        name=f"{case.title} ({chosen.label})" if chosen and chosen.label else case.title,
        filename=f"sample_cases/{case.slug}.py",
    )


def _on_run_pair(slug: str, variant: int) -> None:
    """One click: the case as written, then its suggested change, checked one after the other and shown side by side."""
    cases, _ = _cases()
    case = next((c for c in cases if c.slug == slug), None)
    if case is None or not 0 < variant <= len(case.variants):
        return
    v = case.variants[variant - 1]
    st.session_state["queue"] = [
        (case.source(), f"sample_cases/{slug}.py", case.options, case.title, f"gallery:{slug}"),
        (v.source(case.source()), f"sample_cases/{slug}.py", v.options, f"{case.title} ({v.label})", f"gallery:{slug}"),
    ]
    st.session_state["queue_done"] = []


def _open_run(run_id: str) -> None:
    """A run picked in the sidebar: it shows below, and its program fills the editor when the editor is empty (as
    a `?run=` link does; a program being edited is never replaced: the run's page offers to load it)."""
    st.session_state["current_run"] = run_id
    st.session_state["scroll_to"] = run_id
    if not st.session_state.get("source", "").strip():
        _fill_editor(run_id)


def _open_link(run_id: str) -> None:
    """A new session opened through a run's link: its program fills the still empty editor, then its result shows."""
    if not st.session_state.get("source"):
        _fill_editor(run_id)
    st.session_state["scroll_to"] = run_id


def _fill_editor(run_id: str) -> None:
    """The run's program and settings into the editor and the settings form."""
    record = running.store().get(run_id)
    snippet = Path(record.run_dir) / "snippet.py" if record is not None else None
    if record is not None and snippet is not None and snippet.exists():
        result_view.load_snippet(snippet.read_text(), record)
        try:
            options_form.fill(st.session_state, record.options)
        except (OptionsError, TypeError, ValueError):
            pass  # the run's program still loads; its settings stay the defaults


# -- page parts ---------------------------------------------------------------------------------------------


def past_runs(sidebar: DeltaGenerator) -> None:
    sidebar.markdown("## Your runs")
    session = running.session()
    mine = running.store().recent(30, session=session)
    if not mine:
        sidebar.caption("Runs you start are kept here, and stay after a reload or a restart of the app.")
    else:
        sidebar.caption(RUN_LEGEND)
    for r in mine:
        _run_button(sidebar, r, "open")
    others = running.store().recent(30, exclude_session=session)
    if others:
        with sidebar.expander(f"Other sessions' runs ({len(others)}{'+' if len(others) == 30 else ''})"):
            for r in others:
                _run_button(st, r, "other")


def _run_button(where: object, r: RunRecord, prefix: str) -> None:
    when = dt.datetime.fromtimestamp(r.created).strftime("%m-%d %H:%M")
    icon = ":gray[□]" if r.status == INTERRUPTED else result_view.run_icon(r.verdict, r.explanation)
    current = r.id == st.session_state.get("current_run")
    # the open run is marked by an arrow and bold type, not a red (primary) button that would hide a red status dot
    name = ellipsize(r.name, 30 if current else 32)
    label = f"{'**▸** ' if current else ''}{icon} {'**' + name + '**' if current else name} · {when}"
    where.button(
        label,
        key=f"{prefix}:{r.id}",
        on_click=_open_run,
        args=(r.id,),
        width="stretch",
        help=f"{r.name}{' (the run shown below)' if current else ''}",
    )  # type: ignore[attr-defined]


def ellipsize(text: str, limit: int) -> str:
    """A name cut to fit its button says so: 'SensorEncoder with a very lon…', never a word cut without a sign."""
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def _on_pick_row() -> None:
    """A click on a gallery row picks that case (the selectbox below follows)."""
    cases, _ = _cases()
    rows = (st.session_state.get("gallery_table") or {}).get("selection", {}).get("rows", [])
    if rows and 0 <= rows[0] < len(cases):
        st.session_state["gallery_case"] = cases[rows[0]].slug
        st.session_state["gallery_variant"] = 0


def gallery_section() -> None:
    cases, problems = _cases()
    with st.expander(f"Gallery: {len(cases)} sample cases", expanded=not st.session_state["source"]):
        if not cases:
            st.info(f"No sample cases found in {gallery.default_directory()}.")
            return
        st.dataframe(
            # two columns that fit the gallery's width; the picked case's summary and expectation show below
            [{"case": c.title, "category": c.category} for c in cases],
            hide_index=True,
            width="stretch",
            height=260,
            key="gallery_table",
            on_select=_on_pick_row,
            selection_mode="single-row",
            column_config={
                "case": st.column_config.TextColumn(width="large"),
                "category": st.column_config.TextColumn(width="medium"),
            },
        )
        by_slug = {c.slug: c for c in cases}
        slug = st.selectbox(
            "Case (or click a row above)", list(by_slug), key="gallery_case", format_func=lambda s: by_slug[s].title
        )
        case = by_slug[slug]
        expected = f" · expected on CPU: {case.expected_cpu.value}"
        st.caption(
            f"{case.category} · "
            + case.one_line
            + expected
            + (f" · upstream: {case.upstream}" if case.upstream else "")
        )
        if case.explanation:
            with st.expander("About this case"):
                st.markdown(case.explanation)
        variants = [0] + list(range(1, len(case.variants) + 1))
        if len(variants) > 1:
            st.radio(
                "Options",
                variants,
                key="gallery_variant",
                horizontal=False,
                format_func=lambda i: _variant_label(case, i),
            )
        else:
            st.session_state["gallery_variant"] = 0
        st.button("Load into the editor", key="load_case", on_click=_on_load_case)
        for i, v in enumerate(case.variants, 1):
            if v.replace is not None:
                st.button(
                    f"Run it and the suggested change ({v.label or 'variant'}) side by side",
                    key=f"pair:{case.slug}:{i}",
                    on_click=_on_run_pair,
                    args=(case.slug, i),
                    help="checks the case as written, then the change its explanation suggests; shows both verdicts",
                )
        for p in problems:
            st.caption(f"skipped: {p}")


def _variant_label(case: gallery.SampleCase, i: int) -> str:
    if i == 0:
        opts = ", ".join(f"{k}={v}" for k, v in case.settings.items()) or "defaults"
        return f"case options ({opts}) → expect {case.expected_cpu.value}"
    v = case.variants[i - 1]
    opts = ", ".join([v.label] * bool(v.label) + [f"{k}={val}" for k, val in v.settings.items()])
    return f"{opts} → expect {v.expected_cpu.value}"


def input_section() -> bool:
    """The editor, upload and Run button; True when Run was clicked."""
    editor.render(
        _on_edit,
        "Paste a snippet: fn + inputs, a KernelBench Model + get_inputs, or a script that calls torch.compile.\n\n"
        + PLACEHOLDER,
    )
    st.caption(f"{st.session_state['name']} · runs as `{st.session_state['filename']}`")
    run, upload = st.columns([1, 2], vertical_alignment="center")
    with upload.popover("…or upload a .py file", width="stretch"):
        st.file_uploader(
            "Upload a .py file", type=["py"], key="upload", on_change=_on_upload, label_visibility="collapsed"
        )
    return run.button("Run check", type="primary", key="run", width="stretch")


def start_check() -> None:
    source = st.session_state["source"]
    if not source.strip():
        st.warning("The editor is empty: paste a program, upload a file or load a gallery case first.")
        return
    try:
        options = options_form.options_from_state(st.session_state)
    except (OptionsError, ValueError, TypeError) as exc:
        st.error(f"Settings: {exc}")
        return
    origin = st.session_state["origin"]
    name = editor.program_name(source) if origin == "paste" else st.session_state["name"]
    st.session_state["active"] = running.submit(
        source, st.session_state["filename"], options, name, origin, running.session()
    )


def _submit_queued() -> None:
    source, filename, options, name, origin = st.session_state["queue"].pop(0)
    st.session_state["active"] = running.submit(source, filename, options, name, origin, running.session())


def _next_queued(finished: str) -> running.Active | None:
    """After a queued check: the next one starts; after the last, the runs of the queue show side by side."""
    if "queue_done" not in st.session_state:
        return None
    st.session_state["queue_done"].append(finished)
    if st.session_state.get("queue"):
        _submit_queued()
        return st.session_state["active"]  # type: ignore[no-any-return]
    done = st.session_state.pop("queue_done")
    if len(done) == 2:
        compare_view.set_partner(done[1], done[0])  # the variant's page shows the case as written beside it
    return None


def show_current() -> None:
    run_id = st.session_state.get("current_run")
    if not run_id:
        return
    record = running.store().get(run_id)
    if record is None:
        st.warning(f"No stored run `{run_id}` (it may belong to another data directory).")
        return
    result = running.load_result(record)
    if result is None:
        if record.status == INTERRUPTED:
            when = dt.datetime.fromtimestamp(record.created).strftime("%Y-%m-%d %H:%M:%S")
            st.warning(
                f"Run `{run_id}` ({record.name}, started {when}) was **interrupted**: the app stopped while it ran, so"
                " it has no result. Its program is below; run it again to get one."
            )
            _show_snippet(record)
        else:
            st.info(f"Run `{run_id}` has no result yet: it is still running in another session.")
        return
    st.markdown("<div id='dx-result'></div>", unsafe_allow_html=True)
    # always one element here, so the result's tabs keep their place in the page (and their selection) on the
    # rerun after the one that scrolled
    with st.empty():
        if st.session_state.pop("scroll_to", None) == run_id:
            _scroll_to_result(run_id)
    result_view.render_run(record, result)


def _scroll_to_result(run_id: str) -> None:
    """Bring the result to the top of the window, once, when it arrives: after Run, a link, a click in the run list.

    The script runs in the component's iframe, which shares the page's origin; the run id makes each one new.
    """
    st.iframe(
        f"<script>/* {run_id} */ const go = () => {{ const el = window.parent.document.getElementById('dx-result'); "
        "if (el) el.scrollIntoView({block: 'start'}); else setTimeout(go, 100); }; setTimeout(go, 50);</script>",
        height=1,
    )


def _show_snippet(record: RunRecord) -> None:
    snippet = Path(record.run_dir) / "snippet.py"
    if snippet.exists():
        st.code(snippet.read_text(), language="python", line_numbers=True)


def main() -> None:
    st.set_page_config(page_title="Divergence Explorer", layout="wide")
    _init_state()
    if "current_run" not in st.session_state:
        # a new session: a ?run=<id> link (another tab, a restarted app) opens that stored run
        st.session_state["current_run"] = st.query_params.get("run")
        if st.session_state["current_run"]:
            _open_link(st.session_state["current_run"])
    if "session" not in st.session_state:
        # ?sid= keeps a reload (or a restarted app) in the same session, so its runs stay listed as its own
        sid = st.query_params.get("sid", "")
        st.session_state["session"] = sid if sid.isalnum() and len(sid) <= 32 else uuid.uuid4().hex[:12]
    if st.query_params.get("sid") != st.session_state["session"]:
        st.query_params["sid"] = st.session_state["session"]
    running.runner()  # starts the warm worker with the first page view
    sidebar = st.sidebar.container()  # filled last, so it lists a run that finished during this script run
    st.markdown("## Divergence Explorer")
    st.caption(
        "Runs a PyTorch program eagerly and with torch.compile, compares every element against an fp64 reference, and"
        " tells you whether compile changed the answer, where, and whether it matters."
    )
    # the gallery across the page: in the editor's column a case's title did not fit its picker at 1024 px
    gallery_section()
    left, right = st.columns([3, 2], gap="large")
    with right:
        options_form.render()
    with left:
        clicked = input_section()
    # one container whether or not a check runs: the result below keeps its place in the page, so its
    # tabs keep their selection (a widget in the Minimize tab reruns the page; moved tabs reset to the first)
    with st.container():
        if clicked:
            if "active" in st.session_state:
                st.toast("A check is already running; cancel it or wait for it.")
            else:
                start_check()
        if "active" not in st.session_state and st.session_state.get("queue"):
            _submit_queued()
        active = st.session_state.get("active")
        while active is not None:
            running.follow(active)
            del st.session_state["active"]
            st.session_state["current_run"] = active.run_id
            st.session_state["scroll_to"] = active.run_id
            if active.cancelled:  # Cancel stops what was queued after it too
                st.session_state.pop("queue", None)
                st.session_state.pop("queue_done", None)
                break
            active = _next_queued(active.run_id)
    current = st.session_state.get("current_run")
    if current and st.query_params.get("run") != current:
        st.query_params["run"] = current
    st.divider()
    show_current()
    past_runs(sidebar)


# the check page, and the Sweeps page of app/web/sweeps_page.py (a run it links to opens here, with ?run=<id>)
st.navigation(
    [st.Page(main, title="Check", default=True), st.Page(sweeps_page.render, title="Sweeps", url_path="sweeps")]
).run()
