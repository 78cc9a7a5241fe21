"""The small things a user trips on (issue #35), each through the real app (AppTest) with real checks.

Runs named after the model, not a helper class or a bare variable; sidebar names that say they were cut, and a
legend for their marks; a missing module said once, with how to install it where checks run; a run opened from the
sidebar fills an empty editor; a cancelled check says where the program was.
"""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("streamlit")

from streamlit.testing.v1 import AppTest  # noqa: E402

from app.store import RunRecord, RunStore  # noqa: E402
from app.web import editor, result_view  # noqa: E402
from app.web.main import RUN_LEGEND  # noqa: E402
from engine import CheckOptions, CheckResult, ErrorInfo, ErrorKind, Verdict  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
APP = str(REPO / "app" / "web" / "main.py")
SENSOR = (REPO / "tests" / "snippets" / "sensor_encoder.py").read_text()
MISSING = """import torch
import a_package_nobody_installed


def fn(x):
    return x + 1


def inputs():
    return (torch.ones(3),)
"""
QUICK = """import torch


def fn(x):
    return x * 2.0


def inputs():
    return (torch.ones(4),)
"""


def test_runs_are_named_after_the_model_the_check_calls() -> None:
    assert editor.program_name(SENSOR) == "SensorEncoder (pasted)"  # was "PhaseEmbed (pasted)": its first class
    gpt2 = "from transformers import GPT2LMHeadModel\nmodel = GPT2LMHeadModel(config).eval()\nfn = model\n"
    assert editor.program_name(gpt2) == "GPT2LMHeadModel (pasted)"  # was "model (pasted)"
    calls = "import torch\nnet = Net()\n\n\ndef fn(x):\n    y = net(x)\n    return y\n"
    assert editor.program_name(calls) == "Net (pasted)"
    bare = "import torch\n\n\ndef fn(x):\n    x = x.sin()\n    return x\n"
    assert editor.program_name(bare) != "x (pasted)"


@pytest.fixture
def app(divergence_home: Path, inductor_cache: Path) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=300)
    at.run()
    assert not at.exception
    return at


def test_a_missing_module_is_said_once_with_where_to_install_it(app: AppTest) -> None:
    app.text_area(key="source").input(MISSING).run()
    app.button(key="run").click().run()
    assert not app.exception
    traceback = next(e for e in app.expander if e.label == "Traceback")
    folded = {id(c.proto) for c in traceback.code}
    page = [e.value for e in [*app.error, *app.markdown, *app.caption]]
    page += [c.value for c in app.code if id(c.proto) not in folded]
    said = sum(t.count("No module named 'a_package_nobody_installed'") for t in page)
    assert said == 1, page  # was three times: the banner, the message and the open traceback
    banner = next(e.value for e in app.error if "Verdict: ERROR" in e.value)
    assert "install `a_package_nobody_installed` into the server's environment" in banner
    assert "-m pip install a_package_nobody_installed" in banner and "fix the program" not in banner
    assert not next(e for e in app.expander if e.label == "Traceback").proto.expanded


def test_a_sidebar_run_fills_an_empty_editor_and_its_name_says_it_was_cut(app: AppTest) -> None:
    app.text_area(key="source").input(QUICK).run()
    app.button(key="run").click().run()
    run_id = str(app.query_params["run"])
    long_name = "A sensor encoder with a name far longer than the run list has room for"
    record = RunStore().get(run_id)
    assert record is not None
    RunStore().add(RunRecord(**{**record.__dict__, "id": run_id + "-long", "name": long_name}))

    fresh = AppTest.from_file(APP, default_timeout=120)
    fresh.query_params["sid"] = app.session_state["session"]  # the same browser session (?sid=), a new page
    fresh.run()
    assert fresh.session_state["source"] == ""
    labels = [b.label for b in fresh.sidebar.button]
    cut = next(label for label in labels if "A sensor encoder" in label)
    assert "…" in cut and long_name not in cut
    assert RUN_LEGEND in [c.value for c in fresh.sidebar.caption]
    fresh.sidebar.button(key=f"open:{run_id}").click().run()
    assert fresh.session_state["source"] == QUICK  # a ?run= link did this; a click in the list now does too


def test_a_cancelled_check_says_where_the_program_was() -> None:
    stopped = CheckResult(
        Verdict.ERROR,
        "error (cancelled): the check was cancelled",
        CheckOptions(),
        error=ErrorInfo(ErrorKind.CANCELLED, "the check was cancelled"),
        stage_seconds={"starting worker": 0.4, "loading": 0.3, "eager": 10.2, "finishing": 0.1},
    )
    assert (
        result_view.where_it_stopped(stopped)
        == "When Cancel came, your `fn` had not returned when run eagerly after 10 s. "
    )
    started = CheckResult(
        Verdict.ERROR, "", CheckOptions(), error=ErrorInfo(ErrorKind.CANCELLED, ""), stage_seconds={"loading": 12.4}
    )
    assert "your program's module-level code or `inputs()` had not returned after 12 s" in result_view.where_it_stopped(
        started
    )
