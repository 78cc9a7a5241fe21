"""For a workshop (issue #35): a case's suggested change runs with one click beside the case as written, any two
runs compare side by side, and the code view marks where Dynamo broke the graph, with its reason, on the line.

Real checks through the app (AppTest); the teaching case sums 2**20 elements, twice.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

pytest.importorskip("streamlit")

from streamlit.testing.v1 import AppTest  # noqa: E402

from app.web import compare_view  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
APP = str(REPO / "app" / "web" / "main.py")
GRAPH_BREAK = """import torch


def fn(x):
    y = torch.cos(x) * 2
    scale = y.abs().max().item()
    return torch.sin(y) / scale


def inputs():
    return (torch.randn(16),)
"""


@pytest.fixture
def app(divergence_home: Path, inductor_cache: Path) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=600)
    at.run()
    assert not at.exception
    return at


def test_a_cases_suggested_change_runs_beside_it_with_one_click(app: AppTest) -> None:
    app.selectbox(key="gallery_case").select("teach_reduction_split").run()
    app.button(key="pair:teach_reduction_split:1").click().run()
    assert not app.exception, app.exception
    run_id = str(app.query_params["run"])
    partner = app.session_state[compare_view.PARTNER.format(run_id=run_id)]
    assert partner and partner != run_id
    boxes = [b.value for b in [*app.success, *app.warning, *app.error] if b.value.startswith("**Teaching")]
    assert any("— **MATCH**" in b and "(randn" not in b for b in boxes), boxes  # the case as written
    assert any("(randn instead of randint)** — **BENIGN**" in b for b in boxes), boxes  # its suggested change
    diff = next(c.value for c in app.code if c.language == "diff")
    assert (
        "-    return (torch.randint(-8, 8, (1 << 20,)).float(),)" in diff
        and "+    return (torch.randn(1 << 20),)" in diff
    )

    # any two runs: the case's page compares with the variant the user picks
    app.query_params["run"] = partner
    again = AppTest.from_file(APP, default_timeout=120)
    again.query_params["run"] = partner
    again.query_params["sid"] = app.session_state["session"]
    again.run()
    again.selectbox(key=f"compare_pick:{partner}").set_value(run_id).run()
    assert not again.exception
    assert any("(randn instead of randint)** — **BENIGN**" in b.value for b in again.success)


def test_the_code_view_marks_a_graph_break_with_its_reason_on_its_line(app: AppTest) -> None:
    app.text_area(key="source").input(GRAPH_BREAK).run()
    app.button(key="run").click().run()
    assert not app.exception
    page = next(e.proto.srcdoc for e in app.get("iframe") if "dx-program" in e.proto.srcdoc)
    data = json.loads(re.search(r"^const D = (.*);$", page, re.M).group(1).replace("<\\/", "</"))
    breaks = data["breaks"]
    line = next(i for i, text in enumerate(GRAPH_BREAK.splitlines(), 1) if ".item()" in text)
    assert [b["line"] for b in breaks] == [line], breaks
    assert breaks[0]["reason"].startswith("Unsupported Tensor.item() call"), breaks
