"""The Streamlit app driven headlessly (streamlit.testing AppTest), with real checks in the engine's worker.

Programs are tiny and mostly the same one, so after the first compile the shared Inductor cache answers.
"""

from __future__ import annotations

import base64
import json
import shutil
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest

pytest.importorskip("streamlit")
pytest.importorskip("plotly")

from streamlit.testing.v1 import AppTest  # noqa: E402

from app.store import DONE, RunRecord, RunStore  # noqa: E402
from engine import CheckOptions, CheckResult, Runner, Verdict  # noqa: E402
from engine.judge.views import ulp_distance  # noqa: E402
from tests.apptest_helpers import check_in_app, has_button  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
APP = str(REPO / "app" / "web" / "main.py")
TIMEOUT = 300

PROGRAM = """import torch

def fn(x):
    return torch.softmax(x, -1) * 3.0

def inputs():
    return (torch.randn(64, 96),)
"""

BIG = """import torch

def fn(x):
    return torch.softmax(x, -1) * 3.0

def inputs():
    return (torch.randn(768, 1100),)
"""

ONE = """import torch

def fn(x):
    return (torch.softmax(x, -1) * 3.0).sum().reshape(1)

def inputs():
    return (torch.randn(64, 96),)
"""

BROKEN = """import torch

def fn(x):
    print("about to fail")
    return x @ torch.ones(5, 5)

def inputs():
    return (torch.randn(3, 4),)
"""


@pytest.fixture
def app(divergence_home: Path, inductor_cache: Path) -> AppTest:
    """A fresh browser session on the app (the worker and the store are shared by the process, as in a server)."""
    at = AppTest.from_file(APP, default_timeout=TIMEOUT)
    at.run()
    assert not at.exception
    return at


@pytest.fixture(scope="module")
def stored_run(runner: Runner, divergence_home: Path) -> tuple[str, CheckResult]:
    """A check run by the engine directly and recorded in the app's store: what a past session left behind."""
    run_id = f"stored-{int(time.time() * 1000)}"
    run_dir = divergence_home / "runs" / run_id
    options = CheckOptions(timeout_s=240)
    store = RunStore()
    store.add(
        RunRecord(
            id=run_id, created=time.time(), name="big softmax", origin="paste", run_dir=str(run_dir), options=options
        )
    )
    result = runner.check(BIG, options, "snippet.py", run_dir=run_dir)
    store.finish(run_id, result.verdict.value, result.explanation)
    assert result.verdict in (Verdict.BENIGN, Verdict.MATCH), result.explanation
    return run_id, result


def banner(at: AppTest) -> str:
    texts = [e.value for e in [*at.success, *at.warning, *at.error] if "Verdict:" in e.value]
    assert texts, "no verdict banner"
    return texts[0]


def run_check(at: AppTest) -> AppTest:
    at.button(key="run").click().run()
    assert not at.exception, at.exception
    return at


def charts(at: AppTest) -> list[dict[str, Any]]:
    return [json.loads(el.proto.spec) for el in at.get("plotly_chart")]


def decode(typed: dict[str, Any]) -> np.ndarray:
    """A plotly base64 typed array back to numpy."""
    data = np.frombuffer(base64.b64decode(typed["bdata"]), dtype=np.dtype(typed["dtype"]))
    shape = typed.get("shape")
    return data.reshape([int(s) for s in str(shape).split(",")]) if shape else data


@pytest.mark.slow
def test_paste_and_run(app: AppTest):
    app.text_area(key="source").input(PROGRAM).run()
    run_check(app)
    assert (
        app.status[0].state == "complete" and "torch.softmax(x, -1) * 3.0 (pasted)" in app.status[0].label
    )  # named after the program
    assert banner(app).startswith("**Verdict: ")
    table = next(df.value for df in app.dataframe if "leaf" in df.value.columns)
    assert list(table["leaf"]) == ["out"] and {
        "max abs",
        "max rel",
        "max ULP",
        "mismatched",
        "NaN",
        "inf",
        "±0",
        "verdict",
    } <= set(table.columns)
    assert any(c["data"][0]["type"] == "heatmap" for c in charts(app))
    run_id = app.query_params["run"]
    record = RunStore().get(run_id)
    assert (
        record is not None
        and record.status == DONE
        and record.verdict == CheckResult.load(Path(record.run_dir)).verdict.value
    )


@pytest.mark.slow
def test_upload_loads_the_file_into_the_editor_and_runs_it(app: AppTest):
    app.file_uploader(key="upload").upload("my_model.py", PROGRAM.encode(), "text/x-python").run()
    assert app.text_area(key="source").value == PROGRAM
    assert app.session_state["filename"] == "my_model.py"
    run_check(app)
    assert "my_model.py" in app.status[0].label
    assert any("### my_model.py" in m.value for m in app.markdown)


@pytest.mark.slow
def test_gallery_case_loads_source_and_options_then_runs(app: AppTest):
    app.selectbox(key="gallery_case").select("interpolate_conv_pool_backward").run()
    app.button(key="load_case").click().run()
    assert app.checkbox(key="opt_backward").value is True  # the case's [options]
    app.selectbox(key="gallery_case").select("floor_divide_off_by_one").run()
    app.button(key="load_case").click().run()
    source = (REPO / "sample_cases" / "floor_divide_off_by_one.py").read_text()
    assert app.text_area(key="source").value == source and app.checkbox(key="opt_backward").value is False
    run_check(app)
    assert banner(app).startswith("**Verdict: DIVERGENT**")
    assert "Float floor division off by one" in app.status[0].label


@pytest.mark.slow
def test_heatmap_figure_is_pooled_small_and_hovers_the_worst_element(app: AppTest, stored_run: tuple[str, CheckResult]):
    run_id, result = stored_run
    app.query_params["run"] = run_id
    at = AppTest.from_file(APP, default_timeout=TIMEOUT)
    at.query_params["run"] = run_id
    at.run()
    assert not at.exception
    specs = [el.proto.spec for el in at.get("plotly_chart")]
    heat = json.loads(specs[0])
    trace, blocks = heat["data"]  # the colours, and one clickable marker per block carrying the hover
    assert trace["type"] == "heatmap" and blocks["type"] == "scatter" and len(specs[0]) < 2_000_000
    z = decode(trace["z"])
    assert z.ndim == 2 and max(z.shape) <= 512 and z.shape != (768, 1100)  # block maxima, not every element
    custom = decode(blocks["customdata"]).reshape(z.shape + (-1,))
    assert custom.shape[2] == 8  # value, worst row, worst col, block's last row, last col, eager, compiled, fp64
    template = blocks["hovertemplate"]
    assert "block rows %{y}–" in template and "worst element" in template and "fp64" in template
    first_row, first_col = decode(blocks["y"]).reshape(z.shape), decode(blocks["x"]).reshape(z.shape)
    # the hover of the hottest cell names the worst element of the whole leaf, with its three values
    arrays = result.load_arrays(result.leaf("out"))
    i, j = np.unravel_index(np.nanargmax(np.where(np.isnan(z), -np.inf, z)), z.shape)
    value, row, col, last_row, last_col, eager, compiled, ref = custom[i, j]
    assert first_row[i, j] <= row <= last_row < 768 and first_col[i, j] <= col <= last_col < 1100  # inside its block
    assert eager == arrays["eager"][int(row), int(col)] and compiled == arrays["compiled"][int(row), int(col)]
    assert ref == pytest.approx(arrays["ref"][int(row), int(col)], rel=1e-6)
    assert value == pytest.approx(abs(float(eager) - float(compiled)), rel=1e-5)
    # the block detail below shows the worst block at full resolution
    detail = json.loads(specs[1])["data"][0]
    assert detail["type"] == "heatmap" and decode(detail["z"]).shape[0] >= 2


def test_a_run_stored_in_the_old_arrays_format_reopens_with_the_same_views(
    stored_run: tuple[str, CheckResult], divergence_home: Path
):
    """A run kept before the uncompressed format (one compressed arrays.npz, with a ulp array, no summary)
    still opens; its map, histogram and worst elements, computed here from every element, are the ones the
    check summarised for the new format."""
    run_id, result = stored_run
    old_dir = divergence_home / "runs" / f"{run_id}-npz"
    shutil.copytree(result.run_dir, old_dir)
    leaf = result.leaf("out")
    arrays = dict(result.load_arrays(leaf))
    arrays["ulp"] = ulp_distance(arrays["eager"], arrays["compiled"], leaf.dtype)
    np.savez_compressed(old_dir / "arrays.npz", **{f"{leaf.arrays}/{kind}": value for kind, value in arrays.items()})
    shutil.rmtree(old_dir / "arrays")
    RunStore().add(
        RunRecord(
            id=old_dir.name,
            created=time.time(),
            name="old format",
            origin="paste",
            run_dir=str(old_dir),
            options=result.options,
        )
    )

    def views(run: str) -> tuple[str, str]:
        at = AppTest.from_file(APP, default_timeout=TIMEOUT)
        at.query_params["run"] = run
        at.run()
        assert not at.exception
        worst = next(df.value for df in at.dataframe if "ULP" in df.value.columns and "index" in df.value.columns)
        return json.dumps([c["data"] for c in charts(at)]), worst.to_json()

    assert views(old_dir.name) == views(run_id)


def test_clicking_a_block_opens_it_at_full_resolution_and_the_block_inputs_follow(stored_run: tuple[str, CheckResult]):
    run_id, _ = stored_run
    at = AppTest.from_file(APP, default_timeout=TIMEOUT)
    at.query_params["run"] = run_id
    at.run()
    blocks = json.loads(at.get("plotly_chart")[0].proto.spec)["data"][1]
    gh, gw = decode(json.loads(at.get("plotly_chart")[0].proto.spec)["data"][0]["z"]).shape
    i, j = 2, gw - 3
    k = i * gw + j
    x, y = int(decode(blocks["x"])[k]), int(decode(blocks["y"])[k])
    by, bx = y // i, x // j
    # what Streamlit puts in the chart's state when the block's marker is clicked in a browser
    point = {"curve_number": 1, "point_number": k, "point_index": k, "x": x, "y": y, "customdata": {}}
    at.session_state[f"heatmap:{run_id}:out"] = {
        "selection": {"points": [point], "point_indices": [k], "box": [], "lasso": []}
    }
    at.run()
    assert not at.exception
    detail = json.loads(at.get("plotly_chart")[1].proto.spec)
    assert detail["layout"]["title"]["text"].startswith(f"block rows {y}–{y + by - 1}, cols {x}–{x + bx - 1} ")
    assert (at.number_input(key=f"{run_id}:out:bi").value, at.number_input(key=f"{run_id}:out:bj").value) == (i, j)
    # the click stays in the chart's state; picking another block by number still works
    at.number_input(key=f"{run_id}:out:bi").set_value(i + 1).run()
    detail = json.loads(at.get("plotly_chart")[1].proto.spec)
    assert detail["layout"]["title"]["text"].startswith(f"block rows {y + by}–{y + 2 * by - 1}, cols {x}–")


def test_code_tab_lists_and_shows_the_kernels(app: AppTest, stored_run: tuple[str, CheckResult]):
    run_id, result = stored_run
    at = AppTest.from_file(APP, default_timeout=TIMEOUT)
    at.query_params["run"] = run_id
    at.run()
    kernels = [k for o in result.code.output_code for k in o.kernels]
    assert kernels, "the engine captured no kernels"
    listed = [df.value for df in at.dataframe if "kernel" in df.value.columns]
    assert listed and set(listed[0]["kernel"]) == {k.name for k in kernels}
    cpp = [c.value for c in at.code if c.language == "cpp"]
    assert any(kernels[0].source.strip()[:200] in c for c in cpp)
    assert any(c.language == "python" and "def call(" in c.value for c in at.code)  # the wrapper module
    assert "Download output code" in [b.proto.label for b in at.get("download_button")]
    # the program <-> kernel view: one self-contained page holding the program and each kernel's lines
    view = [e.proto.srcdoc for e in at.get("iframe") if "dx-program" in e.proto.srcdoc]
    assert len(view) == 1 and all(k.name in view[0] for k in kernels) and "softmax(x, -1) * 3.0" in view[0]


@pytest.mark.slow
def test_a_single_number_output_is_one_line_not_a_map_of_one_cell(app: AppTest):
    app.text_area(key="source").input(ONE).run()
    run_check(app)
    assert not app.get("plotly_chart")  # no 1x1 heatmap, no histogram of one element
    assert any(m.value.startswith("one value (1): eager `") and "compiled `" in m.value for m in app.markdown), [
        m.value for m in app.markdown
    ]
    assert not any("10 worst elements" in m.value for m in app.markdown)


def test_a_gallery_case_explains_itself_with_the_figures_its_check_measures(app: AppTest):
    """The pointwise-fusion case blamed a fused multiply-add for its differing elements; they all come from sqrt, and
    its figures are now the [measured_cpu] ones tests/test_sample_cases.py checks."""
    from app.gallery import load_cases

    case = next(c for c in load_cases()[0] if c.slug == "teach_fusion_pointwise")
    app.selectbox(key="gallery_case").set_value(case.slug).run()
    shown = " ".join(m.value for e in app.expander if e.label == "About this case" for m in e.markdown)
    figures = {m.name: m.value for m in case.measured_cpu}
    assert f"{figures['differ']:,} of {figures['numel']:,} elements differ by exactly {figures['ulp']} ULP" in shown, (
        shown
    )
    assert (
        "They all come from `sqrt`" in shown
        and "contracts `x*y + 1` into a fused multiply-add" not in shown
        and "{" not in shown
    )


def test_pasted_programs_are_named_after_what_they_compute(app: AppTest):
    """Every fn + inputs program used to be named "fn (pasted)" in the run list."""
    names = []
    for program in (PROGRAM, BROKEN):
        app.text_area(key="source").input(program).run()
        names.append(next(c.value for c in app.caption if " · runs as " in c.value).split(" · runs as ")[0])
    assert names == ["torch.softmax(x, -1) * 3.0 (pasted)", "x @ torch.ones(5, 5) (pasted)"]


def test_broken_snippet_shows_its_error_and_the_next_run_works(app: AppTest):
    app.text_area(key="source").input(BROKEN).run()
    run_check(app)
    assert app.status[0].state == "error"
    text = banner(app)
    assert text.startswith("**Verdict: ERROR**")
    assert any("Error kind" in m.value and "eager" in m.value for m in app.markdown)
    assert any("about to fail" in c.value for c in app.code)  # the output tail
    assert any("mat1 and mat2" in c.value or "shapes cannot be multiplied" in c.value for c in app.code)
    # the traceback is the user's: no frame of the tool's own harness (with the server's paths) on top of it
    tb = next(c.value for c in app.code if c.value.startswith("Traceback"))
    assert str(REPO) not in tb and tb.splitlines()[1] == '  File "snippet.py", line 5, in fn', tb
    # a run that failed cannot be probed: every probe would fail the same way, and the tab says so
    assert any("ended in an error (eager)" in i.value for i in app.info) and not any(
        b.key.startswith("probe_start") for b in app.button
    )
    app.text_area(key="source").input(PROGRAM).run()
    run_check(app)
    assert app.status[0].state == "complete" and not banner(app).startswith("**Verdict: ERROR**")


def test_a_syntax_error_keeps_its_caret_under_the_line(app: AppTest):
    app.text_area(key="source").input("import torch\ndef fn(x):\n    return x +* 2\ninputs = (torch.ones(2),)\n").run()
    run_check(app)
    # the plain sentence and next step, then the message's first line: no traceback in the banner
    assert (
        banner(app)
        == "**Verdict: ERROR** — the check could not compare eager with compiled (snippet error). **Next:** fix the"
        " program so that it loads and defines what the message asks for.\n\nerror (snippet): syntax error in"
        " snippet.py, line 3: invalid syntax"
    )
    assert any(c.value.endswith("return x +* 2\n                  ^") for c in app.code)  # the caret in its own block


def test_each_session_lists_its_own_runs_and_keeps_them_across_a_reload(divergence_home: Path):
    mine, run_id = check_in_app(APP, PROGRAM, TIMEOUT)
    assert has_button(mine, f"open:{run_id}") and mine.query_params["sid"] == mine.session_state["session"]
    other = AppTest.from_file(APP, default_timeout=TIMEOUT)  # another user on the same server
    other.run()
    assert other.session_state["session"] != mine.session_state["session"]
    assert not has_button(other, f"open:{run_id}") and has_button(other, f"other:{run_id}")
    reloaded = AppTest.from_file(APP, default_timeout=TIMEOUT)  # the first user reloads the page: the URL keeps ?sid=
    reloaded.query_params["sid"] = mine.query_params["sid"]
    reloaded.run()
    assert has_button(reloaded, f"open:{run_id}")
    assert RunStore().get(run_id).session == mine.session_state["session"]  # type: ignore[union-attr]


def test_reopening_a_stored_run_recomputes_nothing(
    app: AppTest, stored_run: tuple[str, CheckResult], divergence_home: Path
):
    run_id, result = stored_run
    before = sorted(p.name for p in (divergence_home / "runs").iterdir())
    at = AppTest.from_file(APP, default_timeout=TIMEOUT)  # another tab, or the app after a restart
    at.query_params["run"] = run_id
    at.run()
    assert not at.exception and not at.status  # nothing ran
    assert banner(at).startswith(f"**Verdict: {result.verdict.value.upper()}**")
    assert (
        at.session_state["source"] == BIG and at.session_state["name"] == "big softmax"
    )  # the link brings its program
    assert any(m.value == "### big softmax" for m in at.markdown)
    assert sorted(p.name for p in (divergence_home / "runs").iterdir()) == before
    # and from the sidebar of a session that is showing something else (it was not this session's run)
    assert not has_button(app, f"open:{run_id}")
    app.button(key=f"other:{run_id}").click().run()
    assert app.query_params["run"] == run_id and banner(app).startswith(f"**Verdict: {result.verdict.value.upper()}**")


@pytest.mark.slow
def test_the_named_mechanisms_show_in_the_app(app: AppTest):
    # a Python scalar eager rounds to bf16 (the faithful fp64 reference decides), then a random draw (rng)
    app.selectbox(key="gallery_case").select("fmod_remainder_scalar_bf16").run()
    app.button(key="load_case").click().run()
    run_check(app)
    assert banner(app).startswith("**Verdict: DIVERGENT**") and "eager's semantics" in banner(app)
    table = next(df.value for df in app.dataframe if "leaf" in df.value.columns)
    assert "faithful-fp64" in set(table["witness"])
    app.selectbox(key="gallery_case").select("rng_rand_like").run()
    app.button(key="load_case").click().run()
    run_check(app)
    assert banner(app).startswith("**Verdict: RNG**") and "fallback_random=True" in banner(app)
