"""Starting checks from the app and following them: one engine Runner per server process, one Job per check.

The page follows a running job by polling it inside the script run. A click anywhere (Cancel included)
interrupts that run; the next run finds the job in session state and carries on following it, so a job
never depends on the script run that started it.
"""

from __future__ import annotations

import atexit
import os
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import streamlit as st

from app.store import INTERRUPTED, RunRecord, RunStore
from app.web import triton_pass
from engine import CheckOptions, CheckResult, ErrorKind, Job, Runner, Verdict

STAGES = ("starting worker", "loading", "eager", "compiling", "compiled run", "fp64 reference", "comparing", "saving")
POLL_S = 0.2
DEFAULT_MAX_QUEUED = 16  # a workshop room's worth; beyond it a check is refused at once rather than waiting forever


def _env_int(name: str, default: int | None) -> int | None:
    try:
        return max(0, int(os.environ[name]))
    except (KeyError, ValueError):
        return default


@st.cache_resource(show_spinner=False)
def runner() -> Runner:
    # DIVERGENCE_MAX_RUNNING: checks at once (default: the cores, up to 4); DIVERGENCE_MAX_QUEUED: waiting ones
    r = Runner(
        max_running=_env_int("DIVERGENCE_MAX_RUNNING", None),
        max_queued=_env_int("DIVERGENCE_MAX_QUEUED", DEFAULT_MAX_QUEUED),
    )
    atexit.register(r.close)
    # importing torch in the worker takes seconds: start it now, not at the first click
    threading.Thread(target=_warm, args=(r,), daemon=True, name="warm-worker").start()
    return r


def _warm(r: Runner) -> None:
    try:
        r.start()
    except Exception:  # the first submit reports a worker that cannot start
        pass


@st.cache_resource(show_spinner=False)
def store() -> RunStore:
    s = RunStore()
    s.recover()  # once per server process: what a killed predecessor left "running" is marked interrupted
    return s


def session() -> str:
    """This browser session's id (app.web.main sets it; kept in the URL as ?sid= across reloads)."""
    return str(st.session_state.get("session", ""))


@dataclass
class Active:
    """A job this session follows."""

    job: Job
    run_id: str
    name: str
    seen: list[str] = field(default_factory=list)
    # the Triton-on-CPU pass, when asked for: it starts once the usual check has finished
    source: str = ""
    filename: str = "snippet.py"
    triton_options: CheckOptions | None = None
    triton: triton_pass.TritonPass | None = None
    cancelled: bool = False
    recorded: bool = False

    def cancel(self) -> None:
        self.cancelled = True
        if self.triton is not None:
            self.triton.cancel()
        else:
            self.job.cancel()


def submit(source: str, filename: str, options: CheckOptions, name: str, origin: str, session: str = "") -> Active:
    # the ordinary worker refuses triton_cpu: the pass runs afterwards in its own worker (app.web.triton_pass)
    job = runner().submit(source, options.replace(triton_cpu=False), filename)
    if options.triton_cpu:
        triton_pass.warm()
    run_id = Path(job.run_dir).name
    record = RunRecord(
        id=run_id,
        created=time.time(),
        name=name,
        origin=origin,
        run_dir=str(job.run_dir),
        options=options,
        session=session,
    )
    store().add(record)
    return Active(
        job, run_id, name, source=source, filename=filename, triton_options=options if options.triton_cpu else None
    )


def stage_line(active: Active) -> str:
    """'✓ loading 0.1 s · ✓ eager 0.2 s · **▶ compiling 3.0 s** · …  3.2 s' from the stages seen so far.

    Once the check is over, only the stages it ran are listed (no greyed "to come" after "done"), then ✓ done.
    """
    progress = active.job.progress
    if progress.stage not in active.seen:
        active.seen.append(progress.stage)
    seconds = dict(progress.stages)
    took = lambda stage: f" {seconds[stage]:.1f} s" if stage in seconds else ""  # noqa: E731
    over = active.job.done()
    parts = []
    for stage in STAGES:
        if stage == progress.stage and not over:
            parts.append(f"**▶ {stage}{took(stage)}**" + (f" ({progress.detail})" if progress.detail else ""))
        elif stage in active.seen or stage in seconds:
            parts.append(f"✓ {stage}{took(stage)}")
        elif stage not in ("compiled run", "saving") and not over:  # neither happens in every check
            parts.append(f"<span style='opacity:.45'>{stage}</span>")
    if over:
        parts.append("✓ done")
    elif progress.stage not in STAGES:
        parts.insert(
            0, f"**▶ {progress.stage}{took(progress.stage)}**" + (f" ({progress.detail})" if progress.detail else "")
        )
    return " · ".join(parts) + f" &nbsp; `{progress.elapsed_s:5.1f} s`"


def triton_line(tp: triton_pass.TritonPass) -> str:
    progress = tp.progress
    stage = "starting the Triton worker" if progress is None else progress.stage
    elapsed = f" &nbsp; `{progress.elapsed_s:5.1f} s`" if progress is not None else ""
    if tp.done():
        tri = tp.pass_result()
        stage = f"✓ {tri.verdict.value}" if tri is not None else f"not run: {tp.failure or 'no result'}"
    else:
        hint = (
            " (the interpreter runs each kernel in numpy: seconds for pointwise kernels, minutes for large reductions)"
            if stage.startswith("interpreting")
            else ""
        )
        stage = f"**▶ {stage}**{hint}"
    return f"Triton on CPU: {stage}{elapsed}"


def follow(active: Active) -> CheckResult:
    """Show the live stage and a Cancel button until the job (and any Triton pass) ends; record the result."""
    with st.status(f"Checking {active.name} …", expanded=True) as status:
        cancel_slot = st.empty()
        if cancel_slot.button("Cancel", key=f"cancel:{active.run_id}", help="stop the worker that runs this check"):
            active.cancel()
        line = st.empty()
        while not active.job.done():
            line.markdown(stage_line(active), unsafe_allow_html=True)
            time.sleep(POLL_S)
        result = active.job.wait()
        line.markdown(stage_line(active), unsafe_allow_html=True)
        if not active.recorded:  # the verdict is the usual check's; the sidebar may list it while Triton runs
            store().finish(active.run_id, result.verdict.value, result.explanation)
            active.recorded = True
        cancelled = (
            result.error is not None and result.error.kind is ErrorKind.CANCELLED
        )  # stopped: no verdict, no error
        label = (
            f"{active.name}: {'cancelled after' if cancelled else result.verdict.value + ' in'}"
            f" {active.job.progress.elapsed_s:.1f} s"
        )
        if active.triton_options is not None and (active.triton is not None or not active.cancelled):
            if active.triton is None:
                active.triton = triton_pass.TritonPass(result, active.source, active.triton_options, active.filename)
            tri_line = st.empty()
            while not active.triton.done():
                tri_line.markdown(triton_line(active.triton), unsafe_allow_html=True)
                time.sleep(POLL_S)
            tri_line.markdown(triton_line(active.triton), unsafe_allow_html=True)
            result = active.triton.attached or result
            tri = active.triton.pass_result()
            label += f" · Triton on CPU: {tri.verdict.value if tri is not None else 'not run'}"
        cancel_slot.empty()
        status.update(
            label=label,
            state="error" if result.verdict is Verdict.ERROR and not cancelled else "complete",
            expanded=False,
        )
    return result


def load_result(record: RunRecord) -> CheckResult | None:
    """A stored run's result, or None when it never finished (e.g. the app stopped while it ran)."""
    if record.status == INTERRUPTED:
        return None
    try:
        result = CheckResult.load(Path(record.run_dir))
    except (OSError, ValueError, KeyError, TypeError):
        return None
    if record.verdict is None:  # it finished after the app that started it went away
        store().finish(record.id, result.verdict.value, result.explanation)
    return result
