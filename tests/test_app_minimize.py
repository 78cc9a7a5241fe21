"""The Minimize tab, driven headlessly (AppTest), with a real minimization of a small CPU divergence.

One test walks the whole flow to keep CI time down (2 cores): check the program, start minimizing, watch
the progress fields move, Stop, resume from the checkpoint with a tiny budget, get the verified repro
and the issue body, and reopen the run with its result kept.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("streamlit")

from streamlit.testing.v1 import AppTest  # noqa: E402

from app.store import RunStore  # noqa: E402
from app.web import minimize_job  # noqa: E402
from tests.apptest_helpers import check_in_app, has_button, wait_for  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
APP = str(REPO / "app" / "web" / "main.py")
SNIPPET = REPO / "tests" / "snippets" / "minimize_floor_divide_noisy.py"
TIMEOUT = 300


def metric(at: AppTest, label: str) -> str:
    found = [m.value for m in at.metric if m.label == label]
    return found[0] if found else ""


@pytest.mark.slow
def test_minimize_tab_start_progress_stop_resume_and_download(
    divergence_home: Path, inductor_cache: Path, tmp_path: Path
):
    at, run_id = check_in_app(APP, SNIPPET.read_text(), TIMEOUT)
    record = RunStore().get(run_id)
    assert record is not None and record.verdict == "divergent"
    assert "Minimize" in [t.label for t in at.tabs]

    # start with a budget that cannot run out before Stop; watch the live fields
    at.number_input(key=f"min_budget:{run_id}").set_value(120)
    polish = at.checkbox(key=f"min_shrinkray:{run_id}")
    if polish.disabled:  # shrinkray is not installed: the polish is off and says why
        assert not polish.value and "not installed" in (polish.help or "")
    else:
        polish.uncheck()
    at.button(key=f"min_start:{run_id}").click().run()
    assert not at.exception, at.exception
    assert any("Minimizing" in m.value for m in at.markdown)
    wait_for(at, lambda a: metric(a, "Oracle calls") not in ("", "0"), 120, "the first oracle calls")
    assert int(metric(at, "Candidates tried")) >= 1 and metric(at, "Best size (tokens)") not in ("", "–")
    assert metric(at, "Elapsed").endswith(" s")
    kept = RunStore().minimization(run_id)  # SQLite knows it runs, so a killed app leaves it marked interrupted
    assert kept is not None and kept.status == "running" and kept.session == at.session_state["session"]
    watcher = AppTest.from_file(APP, default_timeout=TIMEOUT)  # another user opens the same run: progress, but no Stop
    watcher.query_params["run"] = run_id
    watcher.run()
    assert not has_button(watcher, f"min_stop:{run_id}") and any(
        "only that session can stop it" in c.value for c in watcher.caption
    )
    at.button(key=f"min_stop:{run_id}").click().run()
    wait_for(at, lambda a: has_button(a, f"min_start:{run_id}"), 180, "Stop to take effect")
    assert any(w.value.startswith("Stopped after") for w in at.warning), [w.value for w in at.warning]
    stopped = minimize_job.load_outcome(Path(record.run_dir))
    assert stopped is not None and stopped.state == minimize_job.STOPPED
    assert RunStore().minimization(run_id).status == minimize_job.STOPPED  # type: ignore[union-attr]

    # again, with a tiny budget: it resumes from any checkpointed best, runs to the end and verifies the repro
    at.number_input(key=f"min_budget:{run_id}").set_value(8)
    at.button(key=f"min_start:{run_id}").click().run()
    wait_for(
        at,
        lambda a: (
            has_button(a, f"min_start:{run_id}") and any("Minimized" in s.value for s in [*a.success, *a.warning])
        ),
        300,
        "the minimization to finish",
    )
    outcome = minimize_job.load_outcome(Path(record.run_dir))
    assert outcome is not None and outcome.state == minimize_job.DONE, outcome
    assert outcome.repro_verified and outcome.final_tokens < outcome.initial_tokens
    assert RunStore().minimization(run_id).status == minimize_job.DONE  # type: ignore[union-attr]
    assert any("**Minimized** — verified" in s.value for s in at.success)
    labels = [b.proto.label for b in at.get("download_button")]
    assert "Download repro.py" in labels and "Download issue.md" in labels and "Download repro.snippet.py" in labels
    assert any(
        c.language == "python" and "torch.compile" in c.value and "DIVERGENT" in c.value for c in at.code
    )  # repro.py
    assert any(c.language == "markdown" and "Backends:" in c.value for c in at.code), "no issue body"  # issue.md
    assert (Path(record.run_dir) / "minimize" / "repro.py").exists() and (
        Path(record.run_dir) / "minimize" / "issue.md"
    ).exists()
    assert (
        "Minimized from line" in (Path(record.run_dir) / "minimize" / "issue.md").read_text()
    )  # the engine's localization: the line of the first diverging value, in the body's origin sentence
    assert (Path(record.run_dir) / "minimize" / "repro.snippet.py").read_text() == outcome.minimized
    # the issue body (as the tab shows it) runs as pasted, in a fresh interpreter, and prints the difference; its title
    # is shown apart from it (GitHub's title field), in words
    body = next(c.value for c in at.code if c.language == "markdown" and "Describe the bug" in c.value)
    assert body.startswith("### 🐛 Describe the bug") and "kept while minimizing" not in body and "(value)" not in body
    block = tmp_path / "issue_script.py"
    block.write_text(re.findall(r"```python\n(.*?)```", body, re.S)[0])
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"} | {"TORCHINDUCTOR_CACHE_DIR": str(inductor_cache)}
    ran = subprocess.run(
        [sys.executable, "-I", str(block)], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300
    )
    shown = re.search(r"^eager +(\[.*\])\ncompiled +(\[.*\])$", ran.stdout, re.M)  # the script prints both sides
    assert ran.returncode == 0 and shown is not None and shown[1] != shown[2], ran.stdout + ran.stderr
    assert any(
        c.value == outcome.title and "torch.compile gives different values from eager" in c.value for c in at.code
    ), outcome.title

    # reopened in a new session: the result is read back, nothing runs
    again = AppTest.from_file(APP, default_timeout=TIMEOUT)
    again.query_params["run"] = run_id
    again.run()
    assert not again.exception and any("**Minimized** — verified" in s.value for s in again.success)
    assert has_button(again, f"min_start:{run_id}")
    # with the budget it ran with, not the default (issue #35)
    assert again.number_input(key=f"min_budget:{run_id}").value == 8 and outcome.settings.budget_s == 8
