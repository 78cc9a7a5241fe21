"""The Probes tab: re-run a stored run's program with derived inputs and call patterns, one line per probe.

The probes run in a background thread (app.web.deep_job) through the app's Runner; the engine stores the
report (probes.json) and each probe's own run under `<run dir>/probes`, which is what the tab shows, then
and whenever the run is reopened. A probe's run opens like any run of the app (it is recorded in the
store only when opened, so the sidebar does not fill up with probe runs nobody looked at).
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Callable
from pathlib import Path

import streamlit as st

from app.store import RunRecord
from app.web import running
from app.web.deep_job import DONE, DeepJob, Snapshot
from app.web.job_registry import JobRegistry
from engine import CheckResult, ProbeKind, ProbeOutcome, ProbeReport, ProbeStatus, Runner, run_probes

PROBES_DIR = "probes"  # inside the run's directory
POLL_S = 1.0
STATUS_ICON = {
    ProbeStatus.OK: ":green[●]",
    ProbeStatus.DIVERGES: ":red[●]",
    ProbeStatus.NOT_APPLICABLE: ":gray[○]",
    ProbeStatus.ERROR: ":red[▲]",
}
STATUS_LABEL = {
    ProbeStatus.OK: "ok",
    ProbeStatus.DIVERGES: "diverges",
    ProbeStatus.NOT_APPLICABLE: "not applicable",
    ProbeStatus.ERROR: "error",
}


@st.cache_resource(show_spinner=False)
def registry() -> JobRegistry[DeepJob]:
    return JobRegistry()


def _key(run_id: str) -> str:
    return f"probes:{run_id}"


def load(run_dir: str | Path) -> ProbeReport | None:
    """The probes kept in a run's directory, or None."""
    try:
        return ProbeReport.load(Path(run_dir) / PROBES_DIR)
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _work(
    source: str, result: CheckResult, directory: Path, kinds: list[str], seeds: int
) -> Callable[[Runner, Callable[[str], None]], None]:
    # the ordinary worker refuses triton_cpu (that pass has its own worker); probes re-check the usual way
    options = result.options.replace(triton_cpu=False)

    def work(runner: Runner, note: Callable[[str], None]) -> None:
        shutil.rmtree(directory, ignore_errors=True)  # a run directory per probe must start empty
        run_probes(
            runner,
            source,
            options,
            "snippet.py",
            kinds=kinds,
            directory=directory,
            seeds=seeds,
            on_outcome=lambda o: note(f"{o.kind.value}: {STATUS_LABEL[o.status]}"),
        )

    return work


def _start(record: RunRecord, result: CheckResult, source: str) -> None:
    state = st.session_state
    kinds = list(state.get(f"probe_kinds:{record.id}") or [k.value for k in ProbeKind])
    seeds = int(state.get(f"probe_seeds:{record.id}", 3))
    work = _work(source, result, Path(record.run_dir) / PROBES_DIR, kinds, seeds)
    state[f"probe_total:{record.id}"] = len(kinds)
    registry().start(_key(record.id), lambda: DeepJob(f"probes-{record.id}", running.runner(), work, running.session()))


def _stop(run_id: str) -> None:
    job = registry().get(_key(run_id))
    if job is not None and job.session == running.session():  # a cancel stops only one's own job
        job.stop()


def _open(record: RunRecord, outcome: ProbeOutcome) -> None:
    """Record the probe's run in the store (the first time) and make it the page's run."""
    assert outcome.run_dir is not None
    probe_id = f"{record.id}-probe-{outcome.kind.value}"
    store = running.store()
    store.add(
        RunRecord(
            id=probe_id,
            created=time.time(),
            name=f"{record.name} · probe {outcome.kind.value}",
            origin=f"probe:{record.id}",
            run_dir=outcome.run_dir,
            options=outcome.options,
            session=running.session(),
        )
    )
    store.finish(probe_id, outcome.verdict.value, outcome.explanation)
    st.session_state["current_run"] = probe_id


def render(record: RunRecord, result: CheckResult) -> None:
    snippet = Path(record.run_dir) / "snippet.py"
    report = load(record.run_dir)
    if result.error is not None and report is None:
        # every probe is this check again with other inputs: it would fail the same way
        st.info(
            f"Probes re-run a program that checks. This run ended in an error ({result.error.kind.value}), so every"
            " probe would end in the same error: fix the program (or its settings) and run it again, then probe."
        )
        return
    if not snippet.exists():
        st.warning("The run's snippet.py is missing from its directory; it cannot be probed.")
        return
    source = snippet.read_text()
    job = registry().get(_key(record.id))
    running_now = job is not None and not job.done()
    st.caption(
        "Re-runs this program with derived inputs and call patterns, each probe an ordinary check with its options"
        " (seed included) stored, so a failure replays exactly. A probe whose inputs make eager itself raise is *not"
        " applicable*, not a bug."
    )
    a, b = st.columns([4, 1])
    a.multiselect(
        "Probes",
        [k.value for k in ProbeKind],
        default=[k.value for k in ProbeKind],
        key=f"probe_kinds:{record.id}",
        disabled=running_now,
    )
    b.number_input(
        "Seeds",
        min_value=1,
        max_value=20,
        value=3,
        key=f"probe_seeds:{record.id}",
        disabled=running_now,
        help="how many input seeds the seeds probe tries",
    )
    if running_now:
        live(record.id)
        return
    st.button(
        "Run probes", type="primary", key=f"probe_start:{record.id}", on_click=_start, args=(record, result, source)
    )
    snap = job.snapshot() if job is not None else None
    if snap is not None and snap.state != DONE:
        st.warning(f"Probes {snap.state}: {snap.message}")
    if report is not None:
        show_report(record, report)


@st.fragment(run_every=POLL_S)
def live(run_id: str) -> None:
    """The live panel; reruns itself every second, and the whole page once the job has ended."""
    job = registry().get(_key(run_id))
    if job is None:
        return
    snap = job.snapshot()
    if snap.state != "running":
        st.rerun()  # the page swaps the live panel for the table
    progress_panel(snap, int(st.session_state.get(f"probe_total:{run_id}", len(ProbeKind))))
    if job.session == running.session():
        st.button(
            "Stop",
            key=f"probe_stop:{run_id}",
            on_click=_stop,
            args=(run_id,),
            disabled=snap.stopping,
            help="kills the checks in flight",
        )
    else:
        st.caption("Started in another session: only that session can stop it.")


def progress_panel(snap: Snapshot, total: int) -> None:
    done = len(snap.notes)
    what = (
        "stopping: killing the checks in flight …"
        if snap.stopping
        else f"{done} of {total} probes done, two checks at a time"
    )
    st.markdown(f"**Probing** · {what} · `{snap.elapsed_s:.0f} s`")
    st.progress(min(done / max(total, 1), 1.0))
    for note in snap.notes:
        st.caption(note)


def rows(report: ProbeReport) -> list[dict[str, object]]:
    return [
        {
            "probe": o.kind.value,
            "status": STATUS_LABEL[o.status],
            "verdict": o.verdict.value,
            "first divergent leaf": o.first_divergent_leaf or "–",
            "seed": "–" if o.failing_seed is None else str(o.failing_seed),  # one type per column (Arrow)
            "what": o.description,
            "explanation": (o.explanation.splitlines() or [""])[0][:300],
        }
        for o in report.outcomes
    ]


def show_report(record: RunRecord, report: ProbeReport) -> None:
    failed = [o for o in report.outcomes if o.status is ProbeStatus.ERROR]
    # green only when every probe ran and none diverged
    box = st.error if report.diverging else (st.warning if failed else st.success)
    box(
        f"**{report.summary()}**"
        + (f" — {len(failed)} could not run; see their explanations below" if failed and not report.diverging else "")
    )
    st.dataframe(rows(report), hide_index=True, width="stretch")
    openable = [o for o in report.outcomes if o.run_dir is not None and (Path(o.run_dir) / "result.json").exists()]
    if not openable:
        return
    st.markdown("**Open a probe's run** (its leaves, heatmaps, generated code and the exact options that replay it)")
    cols = st.columns(min(len(openable), 5))
    for i, o in enumerate(openable):
        cols[i % len(cols)].button(
            f"{STATUS_ICON[o.status]} {o.kind.value}",
            key=f"probe_open:{record.id}:{o.kind.value}",
            on_click=_open,
            args=(record, o),
            width="stretch",
        )
