"""What a sweep shows at the end: the table sorted by severity, `sweep.json`, and a self-contained HTML report.

The HTML report needs nothing beside it (no scripts or styles fetched, no run directories), so a CI job
can keep it as an artifact: verdict counts as a bar, the bugs with their minimized repros, and every job
with its explanation, filterable by text and verdict. Where jobs carry PyTorch's own check (zoo jobs),
every view shows it beside our verdict, with the table of where the two disagree: per job, and per leaf
(an op_db job's leaves are its samples).
"""

from __future__ import annotations

import html
import json
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from app.sweep.jobs import SEVERITY_ORDER
from app.sweep.pytorch_check import FAIL, PASS, UNAVAILABLE, disagrees
from app.sweep.state import DONE, BugRow, JobRow, SweepState
from engine import records

JSON_FILE = "sweep.json"
REPORT_FILE = "report.html"
VERDICT_COLOURS = {
    "match": "#2e7d32",
    "benign": "#7cb342",
    "precision-cast": "#f9a825",
    "rng": "#ef6c00",
    "eager-inaccurate": "#0277bd",
    "divergent": "#c62828",
    "error": "#6a1b9a",
    "pending": "#9e9e9e",
    "running": "#1e88e5",
}
TABLE_ROWS = 50


def verdict_order() -> list[str]:
    return [v.value for v in SEVERITY_ORDER] + ["running", "pending"]


def summary(state: SweepState) -> dict[str, Any]:
    counts = state.counts()
    return {"total": sum(counts.values()), "counts": {k: counts[k] for k in verdict_order() if counts.get(k)}}


def ulp_text(row: JobRow) -> str:
    if row.worst_ulp is None:
        return "-"
    return "inf" if row.worst_ulp == float("inf") else f"{row.worst_ulp:.3g}"


def table_text(rows: Sequence[JobRow], bugs: Sequence[BugRow] = (), limit: int = TABLE_ROWS) -> str:
    """The end-of-sweep table: the most severe jobs first; the rest are counted, and all are in sweep.json."""
    pytorch = any(r.pytorch is not None for r in rows)
    header = (
        ("verdict", "program", "options", "worst leaf", "max ULP", "s", "peak MB")
        + (("PyTorch's check",) if pytorch else ())
        + ("run",)
    )
    body = [
        (
            r.verdict or r.status,
            r.name,
            r.label or "-",
            (r.worst_leaf or "-")[:28],
            ulp_text(r),
            f"{r.seconds:.1f}" if r.seconds is not None else "-",
            f"{r.peak_rss_mb:.0f}" if r.peak_rss_mb is not None else "-",
        )
        + ((pytorch_text(r),) if pytorch else ())
        + (r.run_id or "-",)
        for r in rows[:limit]
    ]
    widths = [max(len(str(line[i])) for line in [header, *body]) for i in range(len(header))]
    lines = [
        "  ".join(str(cell).ljust(w) for cell, w in zip(line, widths, strict=False)).rstrip()
        for line in [header, *body]
    ]
    if len(rows) > limit:
        lines.append(f"... and {len(rows) - limit} more (less severe) jobs: all are in {JSON_FILE}")
    for bug in bugs:
        lines.append(
            f"bug {bug.id}: {bug.description} -- minimization {bug.status}{': ' + bug.message if bug.message else ''}"
            + (f" -> {bug.repro}" if bug.repro else "")
        )
    return "\n".join(lines)


def pytorch_text(row: JobRow) -> str:
    """PyTorch's check of a job in a few words: pass, fail (n of m leaves), n/a, or - where it does not apply."""
    if row.pytorch is None:
        return "-"
    detail = row.pytorch_detail
    if row.pytorch == FAIL and detail is not None:
        return f"fail ({len(detail.failed)}/{detail.compared})"
    return row.pytorch + (" !" if disagrees(row.verdict, row.pytorch) else "")


def crosstabs(rows: Sequence[JobRow]) -> tuple[dict[tuple[str, str], int], dict[tuple[str, str], int]]:
    """Our verdict against PyTorch's check, counted over jobs and over leaves (samples): (ours, theirs) -> count."""
    jobs: dict[tuple[str, str], int] = {}
    leaves: dict[tuple[str, str], int] = {}
    for r in rows:
        if r.pytorch is None or r.status != DONE:
            continue
        key = (r.verdict or "?", r.pytorch)
        jobs[key] = jobs.get(key, 0) + 1
        for pair, n in r.pytorch_detail.crosstab.items() if r.pytorch_detail is not None else ():
            ours, _, theirs = pair.partition("|")
            leaves[(ours, theirs)] = leaves.get((ours, theirs), 0) + n
    return jobs, leaves


PYTORCH_COLUMNS = (PASS, FAIL, UNAVAILABLE)


def crosstab_rows(counts: dict[tuple[str, str], int]) -> list[tuple[str, tuple[int, ...]]]:
    """A cross table's rows, most severe verdict first: (our verdict, counts by PyTorch's PYTORCH_COLUMNS)."""
    verdicts = [v for v in verdict_order() if any(k[0] == v for k in counts)]
    return [(v, tuple(counts.get((v, c), 0) for c in PYTORCH_COLUMNS)) for v in verdicts]


def disagreeing(rows: Sequence[JobRow]) -> list[JobRow]:
    """Jobs where one side flags and the other does not, or whose leaves do (a job PyTorch fails on one sample
    we call benign, and another we call divergent that it passes, disagrees twice inside and not as a whole)."""
    found = []
    for r in rows:
        if r.pytorch is None or r.status != DONE:
            continue
        inside = r.pytorch_detail is not None and bool(r.pytorch_detail.disagreements)
        if disagrees(r.verdict, r.pytorch) or inside:
            found.append(r)
    return found


def _grid(counts: dict[tuple[str, str], int], what: str) -> list[str]:
    table = crosstab_rows(counts)
    width = max([len(what)] + [len(v) for v, _ in table])
    lines = [f"  {what:<{width}}  " + "  ".join(f"{c:>5}" for c in PYTORCH_COLUMNS)]
    lines += [f"  {v:<{width}}  " + "  ".join(f"{n:>5}" for n in counts_) for v, counts_ in table]
    return lines


def disagreement_text(rows: Sequence[JobRow], limit: int = TABLE_ROWS) -> str:
    """PyTorch's own check beside ours: the two cross tables, then the jobs where they disagree."""
    jobs, leaves = crosstabs(rows)
    if not jobs:
        return ""
    rules = sorted({r.pytorch_detail.rule for r in rows if r.pytorch_detail is not None})
    lines = ["PyTorch's own check beside ours (" + "; ".join(rules) + ")", "jobs (ours by row, PyTorch's by column):"]
    lines += _grid(jobs, "our verdict")
    if leaves:
        lines += ["leaves (each sample's outputs, in op_db and module_db jobs):"] + _grid(leaves, "our verdict")
    found = disagreeing(rows)
    if not found:
        lines.append("no disagreement: where one flags, so does the other")
        return "\n".join(lines)
    lines.append(
        f"where they disagree ({len(found)} jobs; ours `divergent` where PyTorch's passes: it misses a bug; ours"
        " anything else where it fails: it flags noise, or a drift ours explains):"
    )
    for r in found[:limit]:
        detail = r.pytorch_detail
        example = ""
        if detail is not None and detail.disagreements:
            leaf, ours, theirs = detail.disagreements[0]
            more = len(detail.disagreements) - 1
            example = f"  e.g. {leaf}: ours {ours}, PyTorch's {theirs}" + (f" (+{more} more)" if more else "")
        lines.append(
            f"  {r.verdict:<14} PyTorch's {pytorch_text(r):<12}"
            f" {r.name}{' [' + r.label + ']' if r.label else ''}{example}"
        )
    if len(found) > limit:
        lines.append(f"  ... and {len(found) - limit} more: all are in {JSON_FILE}")
    return "\n".join(lines)


def write_json(state: SweepState, path: Path | None = None) -> Path:
    path = path or state.dir / JSON_FILE
    data = {
        "sweep_dir": str(state.dir),
        "written": time.time(),
        "meta": state.meta(),
        **summary(state),
        "pytorch_check": _crosstab_json(state.by_severity()),
        "jobs": [{**records.to_json(r), "run_id": r.run_id} for r in state.by_severity()],
        "bugs": [records.to_json(b) for b in state.bugs()],
    }
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(data, indent=1, default=str))
    tmp.replace(path)
    return path


def _crosstab_json(rows: Sequence[JobRow]) -> dict[str, Any] | None:
    jobs, leaves = crosstabs(rows)
    if not jobs:
        return None
    return {
        "jobs": {f"{o}|{t}": n for (o, t), n in jobs.items()},
        "leaves": {f"{o}|{t}": n for (o, t), n in leaves.items()},
        "disagreeing_jobs": [r.key for r in disagreeing(rows)],
    }


def write_html(state: SweepState, path: Path | None = None) -> Path:
    path = path or state.dir / REPORT_FILE
    path.write_text(render_html(state))
    return path


NO_BUGS = (
    '<p class="muted">No bugs grouped: run the sweep with --minimize to group divergent jobs by bug and minimize'
    " each.</p>"
)


def render_html(state: SweepState) -> str:
    meta = state.meta()
    rows = state.by_severity()
    bugs = state.bugs()
    totals = summary(state)
    total = max(1, totals["total"])
    bar = "".join(
        f'<span style="flex:{n};background:{VERDICT_COLOURS.get(v, "#999")}" title="{v}: {n}"></span>'
        for v, n in totals["counts"].items()
    )
    legend = " · ".join(
        f'<b style="color:{VERDICT_COLOURS.get(v, "#999")}">{n} {html.escape(v)}</b>'
        for v, n in totals["counts"].items()
    )
    boxes = "".join(
        f'<label><input type="checkbox" class="vf" value="{v}" checked onchange="f()"> {v}</label> '
        for v in totals["counts"]
    )
    pytorch = any(r.pytorch is not None for r in rows)
    job_rows = "\n".join(_job_row(r, pytorch) for r in rows)
    agreement = _agreement_html(rows)
    bug_rows = "\n".join(_bug_row(b, state) for b in bugs) or NO_BUGS
    command = html.escape(" ".join(meta.get("command", [])) or "divergence sweep")
    return f"""<!doctype html>
<html><head><meta charset="utf-8"><title>Divergence sweep: {html.escape(state.dir.name)}</title>
<style>
body {{ font: 14px/1.4 system-ui, sans-serif; margin: 2em; color: #222; }}
.bar {{ display: flex; height: 18px; border-radius: 3px; overflow: hidden; margin: .5em 0; }}
table {{ border-collapse: collapse; width: 100%; }} th, td {{ text-align: left; padding: 3px 8px; border-bottom: 1px solid #eee; vertical-align: top; }}
th {{ background: #fafafa; position: sticky; top: 0; }} td.v {{ font-weight: 600; white-space: nowrap; }}
.muted {{ color: #777; }} code, pre {{ font-size: 12px; }} pre {{ background: #f6f6f6; padding: .6em; overflow-x: auto; }}
details summary {{ cursor: pointer; }}
</style></head><body>
<h1>Divergence sweep <code>{html.escape(state.dir.name)}</code></h1>
<p class="muted"><code>{command}</code><br>{totals["total"]} jobs in {html.escape(str(state.dir))}; written {time.strftime("%Y-%m-%d %H:%M:%S")}</p>
<div class="bar">{bar}</div><p>{legend}</p>
<h2>Bugs</h2>
{bug_rows}
{agreement}
<h2>Jobs</h2>
<p><input id="q" placeholder="filter by program, options or explanation" size="50" oninput="f()"> {boxes}</p>
<table id="jobs"><thead><tr><th>verdict</th><th>program</th><th>options</th><th>worst leaf</th><th>max ULP</th><th>s</th><th>peak MB</th>{"<th>PyTorch's check</th>" if pytorch else ""}<th>run</th><th>explanation</th></tr></thead>
<tbody>
{job_rows}
</tbody></table>
<script>
function f() {{
  const q = document.getElementById("q").value.toLowerCase();
  const on = new Set([...document.querySelectorAll(".vf:checked")].map(b => b.value));
  for (const tr of document.querySelectorAll("#jobs tbody tr")) {{
    tr.style.display = on.has(tr.dataset.v) && tr.textContent.toLowerCase().includes(q) ? "" : "none";
  }}
}}
</script>
<p class="muted">{total if totals["total"] else 0} jobs. Each run opens with <code>divergence show RUN_DIR</code> or in the app (<code>?run=RUN_ID</code>) on the machine that ran the sweep.</p>
</body></html>
"""  # noqa: E501  (the page's HTML, one element a line)


def _job_row(r: JobRow, pytorch: bool = False) -> str:
    verdict = r.verdict if r.status == DONE else r.status
    colour = VERDICT_COLOURS.get(verdict or "", "#999")
    kind = f" ({html.escape(r.error_kind)})" if r.error_kind else ""
    theirs = ""
    if pytorch:
        title = (
            html.escape(r.pytorch_detail.rule + (": " + r.pytorch_detail.note if r.pytorch_detail.note else ""))
            if r.pytorch_detail
            else ""
        )
        theirs = f'<td title="{title}">{html.escape(pytorch_text(r))}</td>'
    return (
        f'<tr data-v="{html.escape(verdict or "")}"><td class="v"'
        f' style="color:{colour}">{html.escape(verdict or "")}{kind}</td>'
        f'<td title="{html.escape(r.program)}">{html.escape(r.name)}</td><td>{html.escape(r.label or "-")}</td>'
        f"<td>{html.escape(r.worst_leaf or '-')}</td><td>{ulp_text(r)}</td>"
        f"<td>{f'{r.seconds:.1f}' if r.seconds is not None else '-'}</td>"
        f"<td>{f'{r.peak_rss_mb:.0f}' if r.peak_rss_mb is not None else '-'}</td>{theirs}"
        f"<td><code>{html.escape(r.run_id or '-')}</code></td><td>{html.escape(r.explanation or '')}</td></tr>"
    )


def _disagreements(r: JobRow) -> str:
    found = r.pytorch_detail.disagreements if r.pytorch_detail else ()
    return "; ".join(f"{leaf}: ours {o}, theirs {t}" for leaf, o, t in found[:3])


def _agreement_html(rows: Sequence[JobRow]) -> str:
    """PyTorch's check beside ours: the cross tables and the disagreeing jobs ('' without zoo jobs)."""
    jobs, leaves = crosstabs(rows)
    if not jobs:
        return ""

    def grid(counts: dict[tuple[str, str], int], what: str) -> str:
        head = "".join(f"<th>PyTorch's {c}</th>" for c in PYTORCH_COLUMNS)
        body = "".join(
            f"<tr><td>{v}</td>" + "".join(f"<td>{n}</td>" for n in row) + "</tr>" for v, row in crosstab_rows(counts)
        )
        return (
            '<table style="width:auto;display:inline-table;margin-right:2em">'
            f"<thead><tr><th>{what}</th>{head}</tr></thead><tbody>{body}</tbody></table>"
        )

    found = disagreeing(rows)
    items = "".join(
        f"<tr><td>{html.escape(r.verdict or '')}</td><td>{html.escape(pytorch_text(r))}</td>"
        f"<td>{html.escape(r.name)}</td><td>{html.escape(_disagreements(r))}</td></tr>"
        for r in found
    )
    rules = "; ".join(sorted({r.pytorch_detail.rule for r in rows if r.pytorch_detail is not None}))
    listing = (
        f"<table><thead><tr><th>ours</th><th>PyTorch's</th><th>program</th><th>leaves</th></tr></thead><tbody>{items}</tbody></table>"
        if found
        else "<p>No disagreement: where one flags, so does the other.</p>"
    )
    return (
        f'<h2>PyTorch\'s own check beside ours</h2><p class="muted">{html.escape(rules)}</p>'
        f"{grid(jobs, 'jobs: ours')}{grid(leaves, 'leaves: ours') if leaves else ''}"
        f"<h3>Where they disagree ({len(found)} jobs)</h3>{listing}"
    )


def _bug_row(b: BugRow, state: SweepState) -> str:
    jobs = [r for r in state.jobs() if r.bug == b.id]
    repro = ""
    if b.repro and Path(b.repro).is_file():
        repro = f"<details><summary>repro.py</summary><pre>{html.escape(Path(b.repro).read_text())}</pre></details>"
    names = ", ".join(sorted({html.escape(r.name + (" " + r.label if r.label else "")) for r in jobs}))
    return (
        f"<h3><code>{b.id}</code> {html.escape(b.description)}</h3><p>{len(jobs)} job{'s' if len(jobs) != 1 else ''}:"
        f" {names}<br>minimization"
        f" <b>{html.escape(b.status)}</b>{': ' + html.escape(b.message) if b.message else ''}</p>{repro}"
    )
