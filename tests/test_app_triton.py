"""The app's "Triton on CPU" setting, driven headlessly (AppTest), with real checks in both workers."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

pytest.importorskip("streamlit")
pytest.importorskip("plotly")
pytest.importorskip("triton")

from streamlit.testing.v1 import AppTest  # noqa: E402

from app.web import options_form  # noqa: E402
from engine import CheckOptions, CheckResult  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
APP = str(REPO / "app" / "web" / "main.py")
TIMEOUT = 300
LABEL = "interpreted Triton on CPU (not GPU Triton)"

FUSED = (
    "import torch\ndef fn(x, y):\n    return torch.relu(x * y + 1.0), (x * 2).sum(-1)\ndef inputs():\n    return"
    " torch.randn(8, 16), torch.randn(8, 16)\n"
)
TANH = "import torch\ndef fn(x):\n    return torch.tanh(x) * 2\ndef inputs():\n    return (torch.randn(8, 16),)\n"


@pytest.fixture
def app(divergence_home: Path, inductor_cache: Path) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=TIMEOUT)
    at.run()
    assert not at.exception
    return at


def run_with_triton(at: AppTest, source: str) -> AppTest:
    at.checkbox(key="opt_triton_cpu").check().run()
    at.text_area(key="source").input(source).run()
    at.button(key="run").click().run()
    assert not at.exception, at.exception
    return at


def texts(at: AppTest) -> str:
    return "\n".join(
        e.value for kind in ("markdown", "caption", "success", "warning", "error", "info") for e in at.get(kind)
    )


def test_triton_setting_is_off_by_default_and_survives_loading_a_case():
    state = dict(options_form.DEFAULTS)
    assert state["opt_triton_cpu"] is False and options_form.options_from_state(state).triton_cpu is False
    state["opt_triton_cpu"] = True
    options_form.fill(state, CheckOptions(backward=True))  # a gallery case's options say nothing about it
    assert state["opt_triton_cpu"] is True and options_form.options_from_state(state).triton_cpu is True


@pytest.mark.slow
def test_triton_pass_beside_the_check_and_reopened(app: AppTest):
    run_with_triton(app, FUSED)
    status = app.status[0]
    assert status.state == "complete" and re.search(r"Triton on CPU: (match|benign)$", status.label), status.label
    page = texts(app)
    assert LABEL in page and "Triton on CPU" in [t.label for t in app.tabs]
    # the kernels side by side: C++ from the check, Triton from the pass
    cpp = [c.value for c in app.code if c.language == "cpp"]
    triton = [c.value for c in app.code if c.language == "python" and "@triton.jit" in c.value]
    assert cpp and triton and any("tl.sum" in t for t in triton)
    assert any(re.match(r"\*\*Interpreted Triton on CPU: (MATCH|BENIGN)\*\*", e.value) for e in app.success)
    tables = [df.value for df in app.dataframe if "leaf" in df.value.columns]
    assert len(tables) == 2 and list(tables[1]["leaf"]) == ["out[0]", "out[1]"]  # the check's and the pass's
    run_id = app.query_params["run"]
    result = CheckResult.load(_run_dir(run_id))
    assert result.triton_cpu is not None and result.load_triton_cpu() is not None
    # reopened in another tab: the same view, nothing re-run
    again = AppTest.from_file(APP, default_timeout=TIMEOUT)
    again.query_params["run"] = run_id
    again.run()
    assert not again.exception and not again.status
    assert LABEL in texts(again) and any("@triton.jit" in c.value for c in again.code)


@pytest.mark.slow
def test_a_program_the_interpreter_cannot_run_says_why(app: AppTest):
    run_with_triton(app, TANH)
    assert app.status[0].state == "complete"  # the usual check is fine; only the pass could not run
    assert any("Could not run" in w.value and "tanh" in w.value for w in app.warning), [w.value for w in app.warning]
    assert any("@triton.jit" in c.value and "tanh" in c.value for c in app.code)  # its source is still shown


def _run_dir(run_id: str) -> Path:
    from app.store import RunStore

    record = RunStore().get(run_id)
    assert record is not None
    return Path(record.run_dir)
