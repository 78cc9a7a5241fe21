"""The Minimize tab of a divergent run: start, follow and stop a minimization; download its repro and issue body.

The job runs in a background thread (app.web.minimize_job) kept in a per-process registry, so the page only
polls it: the live panel is a fragment that reruns itself every second, and any click elsewhere on the
page leaves the job running.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import streamlit as st

from app.store import INTERRUPTED, RunRecord
from app.web import running
from app.web.job_registry import JobRegistry
from app.web.minimize_job import (
    DONE,
    FAILED,
    SNIPPET_FILE,
    STARTING,
    STOPPED,
    MinimizeJob,
    Outcome,
    Settings,
    Snapshot,
    checkpoint_root,
    checkpointed_best,
    load_outcome,
)
from engine import CheckResult, Verdict, data_dir
from minimizer import measure
from minimizer.shrinkray import find_shrinkray

POLL_S = 1.0


@st.cache_resource(show_spinner=False)
def registry() -> JobRegistry[MinimizeJob]:
    return JobRegistry()


def _settings(run_id: str) -> Settings:
    state = st.session_state
    return Settings(
        budget_s=float(state.get(f"min_budget:{run_id}", Settings.budget_s)),
        use_graph=bool(state.get(f"min_graph:{run_id}", True)),
        use_shrinkray=bool(state.get(f"min_shrinkray:{run_id}", True)),
        ablation=bool(state.get(f"min_ablation:{run_id}", True)),
    )


def _start(record: RunRecord, result: CheckResult, source: str) -> None:
    settings = _settings(record.id)
    session = running.session()

    def make() -> MinimizeJob:
        store = running.store()
        store.start_minimization(record.id, session)  # SQLite knows it runs: a killed app leaves it marked interrupted
        on_end = lambda o: store.end_minimization(record.id, o.state, o.message)  # noqa: E731
        return MinimizeJob(
            Path(record.run_dir),
            source,
            result.options,
            running.runner(),
            checkpoint_root(data_dir()),
            settings,
            session,
            on_end,
        )

    registry().start(record.id, make)


def _stop(run_id: str) -> None:
    job = registry().get(run_id)
    if job is not None and job.session == running.session():  # a cancel stops only one's own job
        job.stop()


def _show_settings_it_ran_with(run_id: str, job: MinimizeJob | None, outcome: Outcome | None) -> None:
    """A minimization running or kept shows the settings it ran with, not the defaults (once per session: a change
    the user makes afterwards stays)."""
    settings = job.settings if job is not None else outcome.settings if outcome is not None else None
    state = st.session_state
    seeded = state.get(f"min_seeded:{run_id}")
    if settings is not None and seeded != "ran":
        state[f"min_seeded:{run_id}"] = "ran"
        state[f"min_budget:{run_id}"] = int(settings.budget_s)
        state[f"min_graph:{run_id}"] = settings.use_graph
        state[f"min_shrinkray:{run_id}"] = settings.use_shrinkray and find_shrinkray() is not None
        state[f"min_ablation:{run_id}"] = settings.ablation
    elif not seeded:  # the defaults, through session state only (a widget given both warns on the page)
        state[f"min_seeded:{run_id}"] = "defaults"
        state.setdefault(f"min_budget:{run_id}", int(Settings.budget_s))
        state.setdefault(f"min_graph:{run_id}", True)
        state.setdefault(f"min_shrinkray:{run_id}", find_shrinkray() is not None)
        state.setdefault(f"min_ablation:{run_id}", True)


def render(record: RunRecord, result: CheckResult) -> None:
    if result.verdict is not Verdict.DIVERGENT:
        st.info(
            "Minimize shrinks a divergent program to a small repro ready to file upstream. This run is"
            f" {result.verdict.value}: there is nothing to minimize."
        )
        return
    snippet = Path(record.run_dir) / "snippet.py"
    if not snippet.exists():
        st.warning("The run's snippet.py is missing from its directory; it cannot be minimized.")
        return
    source = snippet.read_text()
    job = registry().get(record.id)
    running_now = job is not None and not job.done()
    st.caption(
        "Shrinks this program while the same leaf keeps the same divergence (a candidate that crashes, stops diverging"
        " or diverges differently is rejected). Every candidate is checked in the engine's worker. The result is a"
        " standalone repro.py, verified in a fresh process, and an issue body in PyTorch's PT2 bug-report form."
    )
    _show_settings_it_ran_with(record.id, job, load_outcome(Path(record.run_dir)))
    _setting_inputs(record.id, disabled=running_now)
    if running_now:
        assert job is not None
        live(record.id)
        return
    best = checkpointed_best(checkpoint_root(data_dir()), source)
    _interrupted(record.id, best)
    outcome = job.snapshot().outcome if job is not None else None
    outcome = outcome or load_outcome(Path(record.run_dir))
    if outcome is not None and outcome.state == DONE:
        label, hint = (
            "Minimize further",
            "starts from the minimized program (its checkpoint) and tries to shrink it more",
        )
    elif best is not None:
        label, hint = "Resume minimizing", "resumes from the checkpointed best candidate"
    else:
        label, hint = "Start minimizing", None
    st.button(
        label, type="primary", key=f"min_start:{record.id}", on_click=_start, args=(record, result, source), help=hint
    )
    if outcome is not None:
        show_outcome(record.id, outcome)


def _setting_inputs(run_id: str, *, disabled: bool) -> None:
    """The budget and the minimizer's optional steps (kept per run in the session)."""
    # two rows of two: four in a row cut the checkboxes' labels at 1024 px ("shrinkray p…")
    a, b = st.columns(2)
    c, d = st.columns(2)
    a.number_input(
        "Time budget (s)",
        min_value=5,
        step=60,
        format="%d",
        key=f"min_budget:{run_id}",
        disabled=disabled,
        help="for the reduction; checking the original, verifying the repro and the ablation come on top",
    )
    b.checkbox("Dynamo-graph rewrite", key=f"min_graph:{run_id}", disabled=disabled)
    installed = find_shrinkray() is not None
    c.checkbox(
        "shrinkray polish",
        key=f"min_shrinkray:{run_id}",
        disabled=disabled or not installed,
        help=(
            "shrinkray polishes the result at the end"
            if installed
            else "shrinkray is not installed: `divergence install-shrinkray` adds it"
        ),
    )
    d.checkbox(
        "Ablation in the issue body",
        key=f"min_ablation:{run_id}",
        disabled=disabled,
        help=(
            "re-check the result under eager, aot_eager, aot_eager_decomp_partition, inductor and Inductor's numerics"
            " flags"
        ),
    )


def _interrupted(run_id: str, best: str | None) -> None:
    """Say so when the app stopped while this run's minimization ran, and what it kept."""
    kept = running.store().minimization(run_id)
    if kept is not None and kept.status == INTERRUPTED:
        when = dt.datetime.fromtimestamp(kept.started).strftime("%Y-%m-%d %H:%M:%S")
        st.warning(
            f"The minimization started {when} was **interrupted**: the app stopped while it ran. "
            + (
                f"Its best candidate so far ({measure(best).tokens} tokens) is checkpointed: Resume continues from it."
                if best is not None
                else "It had not found a smaller candidate yet."
            )
        )


@st.fragment(run_every=POLL_S)
def live(run_id: str) -> None:
    """The live panel; reruns itself every second, and the whole page once the job has ended."""
    job = registry().get(run_id)
    if job is None:
        return
    snap = job.snapshot()
    if snap.outcome is not None:
        st.rerun()  # the page swaps the live panel for the result and the Start button
    progress_panel(snap)
    if job.session == running.session():
        st.button(
            "Stop",
            key=f"min_stop:{run_id}",
            on_click=_stop,
            args=(run_id,),
            disabled=snap.stopping,
            help="kills the checks in flight; the best candidate so far stays checkpointed",
        )
    else:
        st.caption("Started in another session: only that session can stop it.")


def phase(snap: Snapshot) -> str:
    if snap.stopping:
        return "stopping: killing the checks in flight …"
    if snap.state == STARTING:
        return "checking the original twice to fix the divergence's signature …"
    if snap.progress is None:
        return "reducing …"
    return f"reducing: pass `{snap.progress.pass_name}` (then: confirm, verify repro.py in a fresh process, ablation)"


def progress_panel(snap: Snapshot) -> None:
    st.markdown(f"**Minimizing** · {phase(snap)}")
    p = snap.progress
    cols = st.columns(5)
    cols[0].metric("Candidates tried", p.candidates_tried if p else 0)
    cols[1].metric("Oracle calls", p.oracle_calls if p else 0)
    best = cols[2]
    if p is not None:
        best.metric(
            "Best size (tokens)",
            p.best_tokens,
            delta=p.best_tokens - p.initial_tokens,
            delta_color="inverse",
            help=f"of {p.initial_tokens} at the start",
        )
    else:
        best.metric("Best size (tokens)", "–")
    # the candidate under test is an edit of the best one: often larger for a moment (a pass first tries coarse
    # edits elsewhere in the program), so it comes after the best and says what it is
    cols[3].metric(
        "Candidate tested last",
        p.current_tokens if p else "–",
        help="its size in tokens; only an interesting candidate becomes the best",
    )
    cols[4].metric("Elapsed", f"{snap.elapsed_s:.0f} s")
    for note in snap.notes:
        st.caption(note)


def show_outcome(run_id: str, o: Outcome) -> None:
    when = dt.datetime.fromtimestamp(o.finished).strftime("%Y-%m-%d %H:%M:%S")
    sizes = (
        f"{o.initial_lines} → {o.final_lines} lines, {o.initial_tokens} → {o.final_tokens} tokens, {o.initial_ops} →"
        f" {o.final_ops} torch ops; {o.oracle_calls} oracle calls in {o.elapsed_s:.0f} s · {when}"
    )
    if o.state == DONE:
        (st.success if o.repro_verified and o.confirmed else st.warning)(f"**Minimized** — {o.message}")
    elif o.state == STOPPED:
        st.warning(o.message)
    elif o.state == FAILED:
        st.error(o.message)
    st.caption(sizes)
    for note in o.notes:
        st.caption(f"note: {note}")
    if o.state != DONE:
        if o.minimized:
            with st.expander("Best candidate so far (checkpointed)"):
                st.code(o.minimized, language="python", line_numbers=True)
        return
    snippet_tab, repro_tab, issue_tab, out_tab = st.tabs(
        ["Minimized program", "repro.py", "Issue body (markdown)", "repro.py output"]
    )
    with snippet_tab:  # what a user pastes: the app and `divergence check` accept it as it is
        st.download_button(
            "Download repro.snippet.py", o.minimized, file_name=SNIPPET_FILE, key=f"min_dl_snippet:{run_id}"
        )
        st.code(o.minimized, language="python", line_numbers=True)
    with repro_tab:
        if o.repro is not None:
            st.download_button("Download repro.py", o.repro, file_name="repro.py", key=f"min_dl_repro:{run_id}")
            st.code(o.repro, language="python", line_numbers=True, height=480)
        else:
            st.info("No repro was generated.")
    with issue_tab:
        if o.title:
            st.markdown("**Title** (GitHub's title field)")
            st.code(o.title, language="text", wrap_lines=True)
        if o.report is not None:
            st.download_button("Download issue.md", o.report, file_name="issue.md", key=f"min_dl_issue:{run_id}")
            source, preview = st.tabs(["Markdown", "Preview"])
            with source:
                st.code(o.report, language="markdown", height=480)
            with preview:
                st.markdown(o.report)
        else:
            st.info("No issue body: the ablation was switched off.")
    with out_tab:
        st.code(o.repro_output.rstrip() or "(no output)", language="text")
