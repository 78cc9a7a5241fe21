"""The app's block picking (a click on a pooled heatmap, a dragged box) and the editor's sync with `source`; no compile.

The events are shaped exactly like what Streamlit 1.67's plotly_chart reports from a browser (checked by
tests/test_e2e_app.py, which clicks a block in chromium).
"""

from __future__ import annotations

import sys
from typing import Any

import numpy as np
import pytest

pytest.importorskip("streamlit")
pytest.importorskip("plotly")

from app.web import editor  # noqa: E402
from app.web import heatmap as hm  # noqa: E402
from app.web.result_view import box_region, clicked_block  # noqa: E402
from tests.test_app_units import arrays_with_noise  # noqa: E402


def pooled_view(shape: tuple[int, int] = (700, 900)) -> hm.HeatmapView:
    a = arrays_with_noise(shape)
    a["compiled"][333, 444] += 1.0
    return hm.heatmap(a, hm.Metric.ABS, hm.default_spec(shape), dtype="torch.float32")


def click_event(view: hm.HeatmapView, i: int, j: int) -> dict[str, Any]:
    """What Streamlit reports for a click on block (i, j)'s marker."""
    blocks = view.figure.data[hm.BLOCKS_TRACE]
    k = i * view.pooled.value.shape[1] + j
    point = {
        "curve_number": hm.BLOCKS_TRACE,
        "point_number": k,
        "point_index": k,
        "x": int(blocks.x[k]),
        "y": int(blocks.y[k]),
        "customdata": {},
    }
    return {"selection": {"points": [point], "point_indices": [k], "box": [], "lasso": []}}


def test_every_block_has_a_marker_at_its_first_element_with_its_range_and_worst_element():
    view = pooled_view()
    pooled = view.pooled
    assert pooled.pooled
    heat, blocks = view.figure.data
    assert heat.hoverinfo == "skip" and blocks.type == "scatter" and blocks.marker.opacity == 0
    gh, gw = pooled.value.shape
    by, bx = pooled.block
    x, y = np.asarray(blocks.x).reshape(gh, gw), np.asarray(blocks.y).reshape(gh, gw)
    assert (x == np.arange(gw)[None, :] * bx).all() and (y == np.arange(gh)[:, None] * by).all()
    custom = np.asarray(blocks.customdata).reshape(
        gh, gw, -1
    )  # value, worst row/col, last row/col, eager, compiled, fp64
    for i, j in ((0, 0), (gh - 1, gw - 1), (333 // by, 444 // bx)):
        r0, r1, c0, c1 = pooled.block_range(i, j)
        value, row, col, last_row, last_col = custom[i, j, :5]
        assert (last_row, last_col) == (r1 - 1, c1 - 1)
        assert r0 <= row < r1 and c0 <= col < c1 and value == pytest.approx(pooled.value[i, j], rel=1e-6)
    assert tuple(custom[333 // by, 444 // bx, 1:3]) == (333, 444)
    assert hm.figure_bytes(view.figure) < 2_000_000


def test_a_full_resolution_map_has_no_block_markers_and_drags_a_box():
    view = hm.heatmap(arrays_with_noise((40, 50)), hm.Metric.ABS, hm.default_spec((40, 50)))
    assert not view.pooled.pooled and [t.type for t in view.figure.data] == ["heatmap"]
    assert view.figure.layout.dragmode == "select"


def test_a_click_picks_the_block_under_it_and_a_box_wins_over_its_points():
    view = pooled_view()
    pooled = view.pooled
    gh, gw = pooled.value.shape
    for i, j in ((0, 0), (3, 7), (gh - 1, gw - 1)):
        assert clicked_block(click_event(view, i, j), pooled) == (i, j)
    event = click_event(view, 3, 7)
    assert clicked_block({"selection": {**event["selection"], "points": []}}, pooled) is None  # deselected
    heat_cell = {
        "selection": {**event["selection"], "points": [{**event["selection"]["points"][0], "curve_number": 0}]}
    }
    assert clicked_block(heat_cell, pooled) is None
    by, bx = pooled.block
    # a box from the middle of block (2, 5) to the middle of block (4, 6), in element units (cells are centred on
    # their block's first element)
    boxed = {
        "selection": {
            **event["selection"],
            "box": [
                {
                    "xref": "x",
                    "yref": "y",
                    "x": [6 * bx + 0.2 * bx, 5 * bx - 0.2 * bx],
                    "y": [2 * by + 0.1, 4 * by - 0.4 * by],
                }
            ],
        }
    }
    assert clicked_block(boxed, pooled) is None
    assert box_region(boxed, pooled) == (2 * by, 5 * by, 5 * bx, 7 * bx)
    assert box_region(None, pooled) is None and clicked_block(None, pooled) is None


def test_the_editor_takes_each_response_once_and_remounts_for_a_program_from_elsewhere():
    state: dict[str, Any] = {"source": "a = 1\n"}
    v1 = editor.sync_version(state)
    assert editor.sync_version(state) == v1  # nothing changed: the same editor stays
    assert not editor.take_response(state, {"id": "", "text": ""})  # an untouched editor's default
    assert editor.take_response(state, {"id": "e1", "type": "blur", "text": "a = 2\n"})
    assert state["source"] == "a = 2\n" and editor.sync_version(state) == v1  # its own edit: no remount
    assert not editor.take_response(state, {"id": "e1", "type": "blur", "text": "a = 2\n"})  # repeated on a rerun
    state["source"] = "loaded = True\n"  # a gallery case, an upload, a stored snippet
    assert not editor.take_response(
        state, {"id": "e1", "type": "blur", "text": "a = 2\n"}
    )  # must not win over the load
    v2 = editor.sync_version(state)
    assert v2 == v1 + 1 and state["source"] == "loaded = True\n"
    assert not editor.take_response(state, {"id": "e2", "type": "blur", "text": "loaded = True\n"})  # blur, no change


def test_an_edit_arriving_with_a_click_elsewhere_is_kept_unless_a_load_came_with_it():
    state: dict[str, Any] = {"source": "a = 1\n"}
    key = editor.component_key(editor.sync_version(state))
    state[key] = {"id": "e1", "type": "blur", "text": "a = 2\n"}  # typed, then the "plain text" switch clicked
    assert editor.take_pending(state) and state["source"] == "a = 2\n"
    assert not editor.take_pending(state)  # once
    state[key] = {"id": "e2", "type": "blur", "text": "a = 3\n"}  # typed, then "Load into the editor" clicked:
    state["source"] = "loaded = True\n"  # the load's callback ran first
    assert not editor.take_pending(state) and state["source"] == "loaded = True\n"


def test_without_the_package_there_is_no_highlighted_editor(monkeypatch: pytest.MonkeyPatch):
    assert editor._component() is not None  # installed here (a dependency)
    monkeypatch.setitem(sys.modules, "code_editor", None)  # what an import failure looks like
    assert editor._component() is None


def test_a_bit_identical_block_hovers_as_error_zero_and_stays_grey():
    a = arrays_with_noise((700, 900))
    a["compiled"][:100, :100] = a["eager"][:100, :100]
    a["ulp"][:100, :100] = 0
    view = hm.heatmap(a, hm.Metric.ABS, hm.default_spec((700, 900)))
    assert np.isnan(view.pooled.value[0, 0])  # grey on the map
    assert np.asarray(view.figure.data[hm.BLOCKS_TRACE].customdata)[0, 0] == 0.0  # "abs 0" on hover, not "NaN"
