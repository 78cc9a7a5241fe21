"""What a sweep shows at the end: the table sorted by severity, `sweep.json`, and a self-contained HTML report.

The HTML report needs nothing beside it (no scripts or styles fetched, no run directories), so a CI job
can keep it as an artifact: verdict counts as a bar, the bugs with their minimized repros, and every job
with its explanation, filterable by text and verdict.
"""

from __future__ import annotations

import html
import json
import time
from pathlib import Path
from typing import Any, Sequence

from app.sweep.jobs import SEVERITY_ORDER
from app.sweep.state import DONE, BugRow, JobRow, SweepState

JSON_FILE = "sweep.json"
REPORT_FILE = "report.html"
VERDICT_COLOURS = {"match": "#2e7d32", "benign": "#7cb342", "precision-cast": "#f9a825", "rng": "#ef6c00", "divergent": "#c62828", "error": "#6a1b9a",
                   "pending": "#9e9e9e", "running": "#1e88e5"}
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
    header = ("verdict", "program", "options", "worst leaf", "max ULP", "s", "run")
    body = [
        (r.verdict or r.status, r.name, r.label or "-", (r.worst_leaf or "-")[:28], ulp_text(r), f"{r.seconds:.1f}" if r.seconds is not None else "-", r.run_id or "-")
        for r in rows[:limit]
    ]
    widths = [max(len(str(line[i])) for line in [header, *body]) for i in range(len(header))]
    lines = ["  ".join(str(cell).ljust(w) for cell, w in zip(line, widths)).rstrip() for line in [header, *body]]
    if len(rows) > limit:
        lines.append(f"... and {len(rows) - limit} more (less severe) jobs: all are in {JSON_FILE}")
    for bug in bugs:
        lines.append(f"bug {bug.id}: {bug.description} -- minimization {bug.status}{': ' + bug.message if bug.message else ''}"
                     + (f" -> {bug.repro}" if bug.repro else ""))
    return "\n".join(lines)


def write_json(state: SweepState, path: Path | None = None) -> Path:
    path = path or state.dir / JSON_FILE
    data = {
        "sweep_dir": str(state.dir),
        "written": time.time(),
        "meta": state.meta(),
        **summary(state),
        "jobs": [r.to_json() for r in state.by_severity()],
        "bugs": [b.to_json() for b in state.bugs()],
    }
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(data, indent=1, default=str))
    tmp.replace(path)
    return path


def write_html(state: SweepState, path: Path | None = None) -> Path:
    path = path or state.dir / REPORT_FILE
    path.write_text(render_html(state))
    return path


def render_html(state: SweepState) -> str:
    meta = state.meta()
    rows = state.by_severity()
    bugs = state.bugs()
    totals = summary(state)
    total = max(1, totals["total"])
    bar = "".join(
        f'<span style="flex:{n};background:{VERDICT_COLOURS.get(v, "#999")}" title="{v}: {n}"></span>' for v, n in totals["counts"].items()
    )
    legend = " · ".join(f'<b style="color:{VERDICT_COLOURS.get(v, "#999")}">{n} {html.escape(v)}</b>' for v, n in totals["counts"].items())
    boxes = "".join(
        f'<label><input type="checkbox" class="vf" value="{v}" checked onchange="f()"> {v}</label> ' for v in totals["counts"]
    )
    job_rows = "\n".join(_job_row(r) for r in rows)
    bug_rows = "\n".join(_bug_row(b, state) for b in bugs) or '<p class="muted">No bugs grouped: run the sweep with --minimize to group divergent jobs by bug and minimize each.</p>'
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
<h2>Jobs</h2>
<p><input id="q" placeholder="filter by program, options or explanation" size="50" oninput="f()"> {boxes}</p>
<table id="jobs"><thead><tr><th>verdict</th><th>program</th><th>options</th><th>worst leaf</th><th>max ULP</th><th>s</th><th>run</th><th>explanation</th></tr></thead>
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
"""


def _job_row(r: JobRow) -> str:
    verdict = r.verdict if r.status == DONE else r.status
    colour = VERDICT_COLOURS.get(verdict or "", "#999")
    kind = f" ({html.escape(r.error_kind)})" if r.error_kind else ""
    return (
        f'<tr data-v="{html.escape(verdict or "")}"><td class="v" style="color:{colour}">{html.escape(verdict or "")}{kind}</td>'
        f'<td title="{html.escape(r.program)}">{html.escape(r.name)}</td><td>{html.escape(r.label or "-")}</td>'
        f'<td>{html.escape(r.worst_leaf or "-")}</td><td>{ulp_text(r)}</td><td>{f"{r.seconds:.1f}" if r.seconds is not None else "-"}</td>'
        f'<td><code>{html.escape(r.run_id or "-")}</code></td><td>{html.escape(r.explanation or "")}</td></tr>'
    )


def _bug_row(b: BugRow, state: SweepState) -> str:
    jobs = [r for r in state.jobs() if r.bug == b.id]
    repro = ""
    if b.repro and Path(b.repro).is_file():
        repro = f"<details><summary>repro.py</summary><pre>{html.escape(Path(b.repro).read_text())}</pre></details>"
    names = ", ".join(sorted({html.escape(r.name + (" " + r.label if r.label else "")) for r in jobs}))
    return (f'<h3><code>{b.id}</code> {html.escape(b.description)}</h3><p>{len(jobs)} job{"s" if len(jobs) != 1 else ""}: {names}<br>'
            f'minimization <b>{html.escape(b.status)}</b>{": " + html.escape(b.message) if b.message else ""}</p>{repro}')
