"""The Localize tab of a divergent run: where the divergence starts.

Three steps of the engine's `localize` (engine.run_localization), in a background thread (app.web.deep_job)
through the app's Runner: the ablation ladder (which compiler layer), PyTorch's CompilerBisector in an
isolated worker child (which subsystem and lowering) and the first diverging intermediate (which FX node
and which generated kernel). The engine stores the result as `<run dir>/localize/localization.json`,
which is what the tab shows, then and whenever the run is reopened.
"""

from __future__ import annotations

import re
import shutil
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import streamlit as st

from app.store import RunRecord
from app.web import running
from app.web.deep_job import DONE, DeepJob, Snapshot
from app.web.job_registry import JobRegistry
from engine import LOCALIZATION_STEPS, CheckResult, Localization, Runner, Verdict, run_localization
from engine.localization.conclusion import Conclusion, conclude

LOCALIZE_DIR = "localize"  # inside the run's directory
POLL_S = 1.0
STEP_LABEL = {
    "ablation": "ablation ladder",
    "bisect": "CompilerBisector",
    "intermediates": "first diverging intermediate",
}
LADDER_COLUMNS = {
    "setting": st.column_config.TextColumn(width="medium"),
    "verdict": st.column_config.TextColumn(width="small"),
    "diverges": st.column_config.TextColumn(width="small"),
    "layer at fault": st.column_config.TextColumn(width="small"),
    "what differs": st.column_config.TextColumn(width="medium"),
}
LADDER_SIZE = 6  # rungs of engine.localization.ablation.LADDER: shown as live progress while the ladder runs


@st.cache_resource(show_spinner=False)
def registry() -> JobRegistry[DeepJob]:
    return JobRegistry()


def _key(run_id: str) -> str:
    return f"localize:{run_id}"


def load(run_dir: str | Path) -> Localization | None:
    """The localization kept in a run's directory, or None."""
    try:
        return Localization.load(Path(run_dir) / LOCALIZE_DIR)
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _work(
    source: str, result: CheckResult, directory: Path, steps: list[str]
) -> Callable[[Runner, Callable[[str], None]], None]:
    options = result.options.replace(triton_cpu=False)  # the ordinary worker refuses triton_cpu

    def work(runner: Runner, note: Callable[[str], None]) -> None:
        shutil.rmtree(directory, ignore_errors=True)  # the steps' run directories must start empty
        # the run itself places the steps' ops on its program's lines (its provenance and Dynamo graph)
        run_localization(runner, source, options, "snippet.py", directory, steps=steps, on_step=note, check=result)

    return work


def _start(record: RunRecord, result: CheckResult, source: str) -> None:
    steps = [
        s for s in LOCALIZATION_STEPS if s in (st.session_state.get(f"loc_steps:{record.id}") or LOCALIZATION_STEPS)
    ]
    work = _work(source, result, Path(record.run_dir) / LOCALIZE_DIR, steps)
    registry().start(
        _key(record.id), lambda: DeepJob(f"localize-{record.id}", running.runner(), work, running.session())
    )


def _stop(run_id: str) -> None:
    job = registry().get(_key(run_id))
    if job is not None and job.session == running.session():  # a cancel stops only one's own job
        job.stop()


def render(record: RunRecord, result: CheckResult) -> None:
    stored = load(record.run_dir)
    if result.verdict is not Verdict.DIVERGENT and stored is None:
        what = (
            f"ended in an error ({result.error.kind.value})"
            if result.error is not None
            else f"is {result.verdict.value}"
        )
        st.info(f"Localize finds where a divergence starts. This run {what}: there is nothing to localize.")
        return
    snippet = Path(record.run_dir) / "snippet.py"
    if not snippet.exists():
        st.warning("The run's snippet.py is missing from its directory; it cannot be localized.")
        return
    job = registry().get(_key(record.id))
    running_now = job is not None and not job.done()
    st.caption(
        "The ablation ladder re-checks the program under each compiler stack (the first that diverges names the layer),"
        " PyTorch's CompilerBisector narrows it to a subsystem and lowering (in a worker of its own: its state never"
        " reaches other checks), and every intermediate of the compiled graph is compared with eager to find the first"
        " node that diverges."
    )
    st.multiselect(
        "Steps",
        list(LOCALIZATION_STEPS),
        default=list(LOCALIZATION_STEPS),
        key=f"loc_steps:{record.id}",
        disabled=running_now,
        format_func=lambda s: STEP_LABEL.get(s, s),
    )
    if running_now:
        live(record.id, record.run_dir)
        return
    st.button(
        "Localize",
        type="primary",
        key=f"loc_start:{record.id}",
        on_click=_start,
        args=(record, result, snippet.read_text()),
    )
    snap = job.snapshot() if job is not None else None
    if snap is not None and snap.state != DONE:
        st.warning(f"Localization {snap.state}: {snap.message}")
    if stored is not None:
        show(record, stored, result, snippet.read_text())


@st.fragment(run_every=POLL_S)
def live(run_id: str, run_dir: str) -> None:
    """The live panel; reruns itself every second, and the whole page once the job has ended."""
    job = registry().get(_key(run_id))
    if job is None:
        return
    snap = job.snapshot()
    if snap.state != "running":
        st.rerun()
    progress_panel(snap, Path(run_dir) / LOCALIZE_DIR)
    if job.session == running.session():
        st.button(
            "Stop",
            key=f"loc_stop:{run_id}",
            on_click=_stop,
            args=(run_id,),
            disabled=snap.stopping,
            help="kills the checks in flight",
        )
    else:
        st.caption("Started in another session: only that session can stop it.")


def steps_line(started: tuple[str, ...] | list[str], rungs: int) -> str:
    """'✓ ablation ladder (6/6 rungs) · **▶ CompilerBisector**': the steps run one after another, so every step
    started before the last one is done."""
    parts = []
    for i, step in enumerate(started):
        label = STEP_LABEL.get(step, step) + (f" ({rungs}/{LADDER_SIZE} rungs)" if step == "ablation" else "")
        parts.append(f"**▶ {label}**" if i == len(started) - 1 else f"✓ {label}")
    return " · ".join(parts)


def progress_panel(snap: Snapshot, directory: Path) -> None:
    # the ladder's rungs write result.json as they finish: count them for a live figure
    rungs = len(list((directory / "ablation").glob("*/result.json"))) if (directory / "ablation").is_dir() else 0
    what = (
        "stopping: killing the checks in flight …" if snap.stopping else (steps_line(snap.notes, rungs) or "starting …")
    )
    st.markdown(f"**Localizing** · {what} · `{snap.elapsed_s:.0f} s`")


def ladder_rows(loc: Localization) -> list[dict[str, Any]]:
    assert loc.ablation is not None
    first = loc.ablation.first_diverging
    return [
        {
            "setting": r.setting,
            "verdict": r.verdict.value,
            "diverges": "yes" if r.diverges else "no",
            "layer at fault": "◀ first to diverge" if r.setting == first else "",
            "what differs": rung_summary(r.explanation),
        }
        for r in loc.ablation.rows
    ]


_DIFFER = re.compile(r"(\d[\d,]*) of (\d[\d,]*) element\(s\) differ.*?max abs ([-+\d.e]+)")


def rung_summary(explanation: str) -> str:
    """A rung's figures in a few words, never cut mid-number: 'out: 2620 of 3072 values differ, by up to 3.41'. The
    whole sentence is below the table."""
    first = (explanation.splitlines() or [""])[0]
    m = _DIFFER.search(first)
    if m is None:
        words = first.split(": ", 1)[0]
        return words if len(words) <= 80 else words[:79].rsplit(" ", 1)[0] + "…"
    leaf = first.split(":", 2)[1].strip() if first.count(":") >= 2 else ""
    leaf = leaf if leaf and len(leaf) <= 40 else ""
    return f"{leaf + ': ' if leaf else ''}{m.group(1)} of {m.group(2)} values differ, by up to {m.group(3)}"


def _highlight(row: Any) -> list[str]:
    style = "background-color: rgba(255, 75, 75, 0.25); font-weight: bold" if row["layer at fault"] else ""
    return [style] * len(row)


def conclusion_of(loc: Localization, result: CheckResult | None, program: str) -> Conclusion:
    """The stored conclusion, or (a localization kept before conclusions were) one made now from its steps."""
    return loc.conclusion if loc.conclusion is not None else conclude(loc, result, program)


AGREES = {True: "✓ same op", False: "≠ another op", None: "–"}


def findings_rows(conclusion: Conclusion) -> list[dict[str, str]]:
    return [
        {
            "step": f.step,
            "op (line)": (
                f"{f.site.name} ({f.site.line})" if f.site and f.site.line else (f.site.name if f.site else "–")
            ),
            "agrees": AGREES[f.agrees],
            "what it says": f.says,
        }
        for f in conclusion.findings
    ]


def conclusion_card(conclusion: Conclusion) -> None:
    """One answer first: where, what, what next. The steps that led to it follow."""
    box = st.error if conclusion.site is not None else st.warning
    box(f"**Conclusion** — {conclusion.sentence}\n\n**Next:** {conclusion.next_step}.")
    if conclusion.also:
        st.caption("Also named by a step: " + "; ".join(s.describe() for s in conclusion.also))
    # a static table: its cells wrap, where a data grid cut "what it says" mid-sentence at any width
    st.table(findings_rows(conclusion), border="horizontal", hide_index=True)


def show(record: RunRecord, loc: Localization, result: CheckResult | None = None, program: str = "") -> None:
    conclusion_card(conclusion_of(loc, result, program))
    st.markdown("##### How each step got there")
    if loc.ablation is not None:
        st.markdown("#### Ablation ladder")
        table = ladder_rows(loc)
        try:
            import pandas as pd  # streamlit's own dependency; only for the highlighted row

            # a static table: its cells wrap (a data grid cut the rung's figures mid-number)
            st.table(pd.DataFrame(table).style.apply(_highlight, axis=1), border="horizontal", hide_index=True)
        except ImportError:
            st.table(table, border="horizontal", hide_index=True)
        st.markdown(f"**Layer at fault:** {loc.ablation.layer}")
        st.caption(loc.ablation.conclusion)
        with st.expander("Each rung's verdict in full"):
            for r in loc.ablation.rows:
                st.markdown(f"**{r.setting}** — {r.explanation}")
    st.markdown("#### CompilerBisector")
    if loc.bisect is None:
        st.caption("not run")
    else:
        st.markdown(bisect_line(loc))
        st.caption(loc.bisect.explanation)
    st.markdown("#### First diverging node")
    if loc.intermediates is None:
        st.caption("not run")
    else:
        node_card(record, loc)


def bisect_line(loc: Localization) -> str:
    b = loc.bisect
    assert b is not None
    parts = [f"backend `{b.backend or '–'}`", f"subsystem `{b.subsystem or '–'}`"]
    if b.debug_info:
        parts.append(f"op `{b.debug_info}`")
    if b.narrowed_op:
        parts.append(f"then lowerings: `{b.narrowed_op}`")
    errors = f", {b.predicate_errors} could not run" if b.predicate_errors else ""
    return f"**{b.status}** · " + " · ".join(parts) + f" · {b.predicate_calls} runs{errors} · {b.seconds:.1f} s"


def _open_instrumented(record: RunRecord, run_dir: str) -> None:
    """Record the instrumented compile's run in the store and make it the page's run (its generated code)."""
    run_id = f"{record.id}-intermediates"
    store = running.store()
    store.add(
        RunRecord(
            id=run_id,
            created=time.time(),
            name=f"{record.name} · intermediates exposed",
            origin=f"localize:{record.id}",
            run_dir=run_dir,
            options=record.options,
            session=running.session(),
        )
    )
    result = running.load_result(store.get(run_id))  # type: ignore[arg-type]
    if result is not None:
        store.finish(run_id, result.verdict.value, result.explanation)
    st.session_state["current_run"] = run_id


def _wrapper_excerpt(run_dir: str | None, label: str | None, line: int | None) -> str | None:
    """A few lines of the instrumented compile's wrapper around the kernel's call."""
    if not (run_dir and line):
        return None
    try:
        code = CheckResult.load(Path(run_dir)).code
    except (OSError, ValueError, KeyError, TypeError):
        return None
    out = next((o for o in code.output_code if o.label == label), None)
    if out is None:
        return None
    lines = out.source.splitlines()
    lo, hi = max(0, line - 4), min(len(lines), line + 3)
    return "\n".join(f"{'>' if n + 1 == line else ' '}{n + 1:5d}  {lines[n]}" for n in range(lo, hi))


def intermediates_status(i: Any, ablation: Any = None) -> None:
    """No first diverging node: say plainly why, as a warning where the step could not answer, and never against the
    ladder (`ablation`, when it ran): the ladder compares whole compiler layers, which this step cannot."""
    text = i.explanation
    if i.status == "failed":
        st.warning(f"**The first-diverging-node step could not run** — {text}")
    elif i.status == "none-diverges" and not i.reproduced:
        st.warning(
            "**No first diverging node: with every intermediate exposed, the program no longer diverges.** Exposing"
            " each node as an extra output changes how Inductor fuses the graph, and here that change removes the"
            " divergence, so this step cannot point at a node. The ablation ladder and the bisector above still"
            " localize the layer and the lowering."
        )
    elif i.status == "backward-not-compared":
        st.warning(
            "**No first diverging node: the divergent leaves are gradients, and the backward graph is not compared.**"
            f" {text}.{_ladder_says(ablation)}"
        )
    elif i.status == "none-diverges":
        st.warning(
            "**No first diverging node: every intermediate matches, yet the output still diverges.**"
            f" {text}.{_ladder_says(ablation)}"
        )
    else:
        st.info(f"**{i.status}** — {text}")


def _ladder_says(ablation: Any) -> str:
    """What the ladder found, in the words of a node card that found no node (the conclusion above says what next)."""
    if ablation is None or not ablation.first_diverging:
        return ""
    return f" The ladder above puts it in {ablation.layer}; the conclusion at the top says where and what next."


_COUNTS = re.compile(r"\d[\d,]* of \d[\d,]* element\(s\) differ, max [\d.e+]+ ULP, ")


def _without_counts(explanation: str) -> str:
    """The node's sentence without the 'N of M element(s) differ, max X ULP' its title line already shows."""
    return _COUNTS.sub("", explanation, count=1)


def node_card(record: RunRecord, loc: Localization) -> None:
    i = loc.intermediates
    assert i is not None
    with st.container(border=True):
        if i.first is None:
            intermediates_status(i, loc.ablation)
            for note in i.notes:
                st.caption(f"note: {note[:500]}")
            return
        f = i.first
        st.markdown(
            f":red[●] **`{f.node}`** · op `{f.op}` · graph {f.graph} · {f.mismatches} of {f.numel} elements differ ·"
            f" max {f.max_ulp:.3g} ULP"
        )
        st.markdown(_without_counts(i.explanation))
        if not i.reproduced:
            st.warning(
                "With every intermediate exposed as an output, the final output no longer diverges: the extra outputs"
                " changed fusion, so this node may not be where the original compile goes wrong."
            )
        st.caption(f"{i.compared_nodes} nodes compared · diverging nodes in graph order:")
        st.code("\n".join(i.diverging_nodes) or f.node, language="text")
        if i.kernel:
            st.markdown(
                f"Computed by kernel **`{i.kernel}`**: output code `{i.output_code_label}`, called at line"
                f" {i.wrapper_line} of its wrapper (anchor `{i.anchor}`). Names are those of the instrumented compile;"
                " open it for its full generated code."
            )
            if i.kernel_source:
                st.code(
                    i.kernel_source.strip("\n"),
                    language="cpp" if 'extern "C"' in i.kernel_source or "#include" in i.kernel_source else "python",
                    line_numbers=True,
                    height=min(420, 22 * (i.kernel_source.count("\n") + 2)),
                )
            excerpt = _wrapper_excerpt(i.run_dir, i.output_code_label, i.wrapper_line)
            if excerpt:
                st.code(excerpt, language="python")
        if i.run_dir and (Path(i.run_dir) / "result.json").exists():
            st.button(
                "Open the instrumented compile (generated code)",
                key=f"loc_open:{record.id}",
                on_click=_open_instrumented,
                args=(record, i.run_dir),
            )
        if i.graph_code:
            with st.expander("The ATen graph that was compared"):
                st.code(i.graph_code, language="python")
        for note in i.notes:
            st.caption(f"note: {note[:500]}")
