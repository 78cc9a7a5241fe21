"""The app's pure parts, no compile: heatmap pooling and hover data, the run store, the gallery, settings, `serve`."""

from __future__ import annotations

import argparse
import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("streamlit")
pytest.importorskip("plotly")

from app import gallery  # noqa: E402
from app.cli.main import build_parser, serve_command  # noqa: E402
from app.store import DONE, INTERRUPTED, RUNNING, RunRecord, RunStore, alive, process_identity  # noqa: E402
from app.web import heatmap as hm  # noqa: E402
from app.web import options_form  # noqa: E402
from engine import CheckOptions  # noqa: E402

REPO = Path(__file__).resolve().parent.parent


def arrays_with_noise(shape: tuple[int, ...], seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    ref = rng.standard_normal(shape)
    eager = ref.astype(np.float32)
    compiled = eager.copy()
    flat = compiled.reshape(-1)
    picked = rng.random(flat.size) < 0.2
    flat[picked] = np.nextafter(flat[picked], np.float32(np.inf))
    ulp = (
        (eager.view(np.int32).astype(np.int64) - compiled.view(np.int32).astype(np.int64)).__abs__().astype(np.float64)
    )
    return {"eager": eager, "compiled": compiled, "ulp": ulp, "ref": ref}


def test_pooling_matches_brute_force_block_max_and_argmax():
    a = arrays_with_noise((97, 130))
    a["compiled"][40, 77] += 1.0  # the worst element
    value = hm.element_metric(a, hm.Metric.ABS)
    pooled = hm.pooled_metric(a, hm.Metric.ABS, (10, 13))
    assert pooled.value.shape == (10, 10)
    for i in range(10):
        for j in range(10):
            r0, r1, c0, c1 = pooled.block_range(i, j)
            block = value[r0:r1, c0:c1]
            if np.isnan(block).all():
                assert np.isnan(pooled.value[i, j])
                continue
            assert pooled.value[i, j] == pytest.approx(np.nanmax(block), rel=1e-6)
            assert value[pooled.worst_row[i, j], pooled.worst_col[i, j]] == pytest.approx(np.nanmax(block), rel=1e-6)
    assert (pooled.worst_row[4, 5], pooled.worst_col[4, 5]) == (40, 77)


def test_bit_identical_cells_are_nan_and_tiny_errors_are_not():
    eager = np.array([[1.0, -0.0, np.nan, 1e-30]], dtype=np.float32)
    compiled = np.array([[1.0, 0.0, np.nan, np.nextafter(np.float32(1e-30), np.float32(1))]], dtype=np.float32)
    value = hm.element_metric({"eager": eager, "compiled": compiled}, hm.Metric.ABS)
    assert np.isnan(value[0, 0]) and np.isnan(value[0, 2])  # same bits: shown as "identical"
    assert value[0, 1] == 0.0  # a sign-only difference is a difference (bottom colour), not identical
    assert 0 < value[0, 3] < 1e-36
    scale = hm.log_scale(value, hm.Metric.ABS)
    z = hm.to_colour(value, scale)
    assert np.isnan(z[0, 0]) and z[0, 1] == scale.zmin and scale.zmin <= z[0, 3] <= scale.zmax


def test_a_bit_identical_map_spans_its_own_elements():
    eager = np.arange(32, dtype=np.float32).reshape(8, 4)
    view = hm.heatmap(
        {"eager": eager, "compiled": eager.copy()}, hm.Metric.ABS, hm.default_spec((8, 4)), dtype="torch.float32"
    )
    layout = view.figure.layout  # all grey (no value to range on): not plotly's empty -1..6, and row 0 on top
    assert tuple(layout.xaxis.range) == (-0.5, 3.5) and tuple(layout.yaxis.range) == (7.5, -0.5)


def test_one_sided_nan_is_the_worst_element():
    eager = np.array([1.0, 2.0, 3.0], dtype=np.float32)
    compiled = np.array([1.0, np.nan, 3.5], dtype=np.float32)
    worst = hm.worst_elements({"eager": eager, "compiled": compiled}, hm.Metric.ABS, k=5)
    assert [w.index for w in worst] == [(1,), (2,)]
    assert np.isinf(worst[0].metric)


def test_large_output_figure_fits_the_budget_with_hover_data():
    a = arrays_with_noise((1500, 2100))
    view = hm.heatmap(a, hm.Metric.ABS, hm.default_spec((1500, 2100)), dtype="torch.float32")
    size = hm.figure_bytes(view.figure)
    grid = view.pooled.value.shape
    assert size < 2_000_000 and max(grid) <= hm.MAX_SIDE and view.pooled.pooled
    trace = json.loads(view.figure.to_json())["data"][hm.BLOCKS_TRACE]
    assert "worst element" in trace["hovertemplate"] and "fp64" in trace["hovertemplate"]


def test_any_rank_slice_through_the_worst_element():
    a = arrays_with_noise((3, 4, 50, 60))
    a["compiled"][2, 1, 10, 20] = 9.0
    spec = hm.default_spec((3, 4, 50, 60), (2, 1, 10, 20))
    assert (spec.row_dim, spec.col_dim, spec.fixed()) == (2, 3, {0: 2, 1: 1})
    view = hm.heatmap(a, hm.Metric.ABS, spec)
    assert not view.pooled.pooled  # 50x60 is shown element by element
    assert np.nanargmax(view.pooled.value) == 10 * 60 + 20
    # rows from dim 0, cols from dim 3: a transposed, sliced view
    other = hm.SliceSpec(3, 0, (0, 1, 10, 0))
    sliced = hm.take_slice(a, other)
    assert sliced["eager"].shape == (60, 3) and sliced["compiled"][20, 2] == 9.0


def test_ratio_metric_uses_the_fp64_reference():
    ref = np.array([1.0, 2.0, 3.0])
    eager = np.array([1.0, 2.0, 3.0], dtype=np.float32)
    compiled = np.array([1.0, 2.0 + 2.0**-20, 3.0], dtype=np.float32)
    a = {"eager": eager, "compiled": compiled, "ref": ref}
    assert hm.Metric.RATIO in hm.available_metrics(a)
    value = hm.element_metric(a, hm.Metric.RATIO, "torch.float32")
    assert np.isnan(value[0]) and value[1] > 1.0
    assert hm.Metric.RATIO not in hm.available_metrics({"eager": eager, "compiled": compiled})


def test_block_detail_outlines_the_block_at_full_resolution():
    a = arrays_with_noise((400, 400))
    view = hm.block_detail(a, hm.Metric.ULP, hm.default_spec((400, 400)), (100, 108), (200, 208))
    trace = view.figure.data[0]
    assert np.asarray(trace.z).shape == (32, 32)  # a small block gets some neighbourhood
    shape = view.figure.layout.shapes[0]
    assert (shape.x0, shape.x1, shape.y0, shape.y1) == (199.5, 207.5, 99.5, 107.5)


def test_ulp_histogram_counts_every_element():
    ulp = np.array([0, 0, 1, 2, 3, 4, 5, 1000, np.inf])
    fig = hm.ulp_histogram(ulp)
    assert sum(fig.data[0].y) == ulp.size and fig.data[0].x[0] == "0 (identical)"


BACKWARD = CheckOptions(backward=True)


def test_store_round_trip_in_wal_mode(tmp_path: Path):
    store = RunStore(tmp_path / "app.sqlite")
    r1 = RunRecord(
        id="r1", created=1.0, name="mine.py", origin="upload", run_dir=str(tmp_path / "runs" / "r1"), options=BACKWARD
    )
    store.add(r1)
    store.add(
        RunRecord(id="r2", created=2.0, name="pasted snippet", origin="paste", run_dir=str(tmp_path / "runs" / "r2"))
    )
    store.finish("r1", "divergent", "it differs")
    reopened = RunStore(tmp_path / "app.sqlite")  # a restarted app
    r1 = reopened.get("r1")
    assert r1 is not None and (r1.status, r1.verdict, r1.options) == (DONE, "divergent", BACKWARD)
    assert [r.id for r in reopened.recent()] == ["r2", "r1"] and reopened.get("nope") is None
    with sqlite3.connect(tmp_path / "app.sqlite") as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_a_restarted_store_marks_what_dead_servers_left_running_as_interrupted(tmp_path: Path):
    dead = f"{os.getpid()}:0"  # our pid with another start time: a recycled pid is not the old server
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        live = process_identity(sleeper.pid)
        assert alive(live) and not alive(dead) and not alive("999999999:1") and alive(process_identity())
        old = RunStore(tmp_path / "app.sqlite", owner=dead)
        runs = tmp_path / "runs"
        for run_id in ("finished", "cut", "wrote-result", "elsewhere"):
            (runs / run_id).mkdir(parents=True)
        old.add(
            RunRecord(
                id="finished", created=1.0, name="a", origin="paste", run_dir=str(runs / "finished"), session="s1"
            )
        )
        old.finish("finished", "match", "bit-identical")
        old.add(RunRecord(id="cut", created=2.0, name="b", origin="paste", run_dir=str(runs / "cut"), session="s1"))
        old.add(
            RunRecord(
                id="wrote-result",
                created=3.0,
                name="c",
                origin="paste",
                run_dir=str(runs / "wrote-result"),
                session="s2",
            )
        )
        (runs / "wrote-result" / "result.json").write_text(json.dumps({"verdict": "divergent", "explanation": "late"}))
        old.start_minimization("finished", "s1")
        other_server = RunStore(tmp_path / "app.sqlite", owner=live)
        other_server.add(
            RunRecord(id="elsewhere", created=4.0, name="d", origin="paste", run_dir=str(runs / "elsewhere"))
        )

        restarted = RunStore(tmp_path / "app.sqlite")
        assert restarted.recover() == (["cut"], ["finished"])
        status = {r.id: (r.status, r.verdict) for r in restarted.recent()}
        assert status == {
            "finished": (DONE, "match"),
            "cut": (INTERRUPTED, None),
            "wrote-result": (DONE, "divergent"),
            "elsewhere": (RUNNING, None),
        }
        assert restarted.minimization("finished").status == INTERRUPTED  # type: ignore[union-attr]
        assert [r.id for r in restarted.recent(session="s1")] == ["cut", "finished"]
        assert [r.id for r in restarted.recent(exclude_session="s1")] == ["elsewhere", "wrote-result"]
    finally:
        sleeper.kill()
        sleeper.wait()


def test_an_older_database_gains_the_new_columns(tmp_path: Path):
    with sqlite3.connect(tmp_path / "app.sqlite") as conn:
        conn.execute(
            "CREATE TABLE runs (id TEXT PRIMARY KEY, created REAL NOT NULL, name TEXT NOT NULL, origin TEXT NOT NULL,"
            " run_dir TEXT NOT NULL, options TEXT NOT NULL, status TEXT NOT NULL, verdict TEXT, explanation TEXT,"
            " finished REAL)"
        )
        conn.execute(
            "INSERT INTO runs VALUES ('old', 1.0, 'x', 'paste', '/nowhere', '{}', 'done', 'match', 'same', 2.0)"
        )
    conn.close()
    store = RunStore(tmp_path / "app.sqlite")
    old = store.get("old")
    assert old is not None and (old.verdict, old.session) == ("match", "")


def test_gallery_reads_every_sample_case_without_running_it():
    cases, problems = gallery.load_cases(REPO / "sample_cases")
    assert not problems and len(cases) >= 20
    by_slug = {c.slug: c for c in cases}
    case = by_slug["interpolate_conv_pool_backward"]
    assert case.options.backward is True and case.category and "\n" not in case.one_line
    assert all(len(c.one_line) <= gallery.SUMMARY_CHARS for c in cases)


def test_settings_round_trip_through_the_widgets():
    options = CheckOptions(
        device="cpu",
        backend="aot_eager",
        dynamic=False,
        dtype="bf16",
        backward=True,
        seeds=3,
        strict=True,
        inductor_config={"fallback_random": True, "max_autotune": False},
    )
    state = dict(options_form.DEFAULTS)
    options_form.fill(state, options)
    assert state["opt_fallback_random"] is True and state["opt_config"] == "max_autotune=False"
    assert options_form.options_from_state(state) == options


def test_serve_binds_to_localhost_unless_told(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.delenv("STREAMLIT_SERVER_ADDRESS", raising=False)
    args = build_parser().parse_args(["serve"])
    command = serve_command(args)
    assert command[1:4] == ["-m", "streamlit", "run"] and command[4].endswith("app/web/main.py")
    assert command[command.index("--server.address") + 1] == "127.0.0.1" and "--server.port" not in command
    assert command[command.index("--client.toolbarMode") + 1] == "minimal"  # no Deploy button for the app's users
    monkeypatch.setenv("STREAMLIT_SERVER_ADDRESS", "0.0.0.0")
    command = serve_command(build_parser().parse_args(["serve", "--port", "9000"]))
    assert (
        command[command.index("--server.address") + 1] == "0.0.0.0"
        and command[command.index("--server.port") + 1] == "9000"
    )
    command = serve_command(argparse.Namespace(address="::1", port=None, streamlit_args=["--", "--theme.base", "dark"]))
    assert command[-2:] == ["--theme.base", "dark"]


def test_localize_shows_done_steps_ticked_and_only_the_last_running():
    from app.web.localize_tab import steps_line

    assert (
        steps_line(["ablation", "bisect", "intermediates"], 6)
        == "✓ ablation ladder (6/6 rungs) · ✓ CompilerBisector · **▶ first diverging intermediate**"
    )
    assert steps_line(["ablation"], 2) == "**▶ ablation ladder (2/6 rungs)**"


def test_ulp_histogram_axis_starts_below_one_element_and_ticks_by_decade():
    import math

    fig = hm.ulp_histogram(np.array([0.0, 0.0, 0.0, 1.0, 7.0]))
    assert (
        fig.layout.yaxis.range[0] < 0 == math.log10(1) and fig.layout.yaxis.dtick == 1
    )  # a one-element bin is a visible bar
    assert fig.layout.xaxis.automargin and fig.layout.yaxis.automargin  # the axis title clears the tick labels
