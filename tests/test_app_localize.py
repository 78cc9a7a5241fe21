"""The Probes and Localize tabs, driven headlessly (AppTest), on a real small CPU divergence.

Compiles dominate on CI's two cores: one check of floor_divide_off_by_one is shared by both tests, the
probes are three (one of them not applicable, so no compile), and floor division's graph is one node.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

pytest.importorskip("streamlit")

from streamlit.testing.v1 import AppTest  # noqa: E402

from app.store import RunStore  # noqa: E402
from app.web import localize_tab, probes_tab  # noqa: E402
from tests.apptest_helpers import check_in_app, has_button, wait_for  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
APP = str(REPO / "app" / "web" / "main.py")
SAMPLE = REPO / "sample_cases" / "floor_divide_off_by_one.py"
TIMEOUT = 300


def reopen(run_id: str) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=TIMEOUT)
    at.query_params["run"] = run_id
    at.run()
    assert not at.exception, at.exception
    return at


@pytest.fixture(scope="module")
def divergent_run(divergence_home: Path, inductor_cache: Path) -> str:
    """floor_divide_off_by_one checked through the app; its run id."""
    _, run_id = check_in_app(APP, SAMPLE.read_text(), TIMEOUT)
    record = RunStore().get(run_id)
    assert record is not None and record.verdict == "divergent", record
    return str(run_id)


@pytest.mark.slow
def test_probes_tab_runs_shows_stores_and_opens_a_probe(divergent_run: str) -> None:
    run_id = divergent_run
    at = reopen(run_id)
    assert "Probes" in [t.label for t in at.tabs]
    at.multiselect(key=f"probe_kinds:{run_id}").set_value(["seeds", "transposed", "second-call"]).run()
    at.number_input(key=f"probe_seeds:{run_id}").set_value(2).run()
    at.button(key=f"probe_start:{run_id}").click().run()
    assert not at.exception, at.exception
    assert any("**Probing**" in m.value for m in at.markdown) or has_button(
        at, f"probe_start:{run_id}"
    )  # it may already be done
    wait_for(
        at,
        lambda a: (
            has_button(a, f"probe_start:{run_id}") and probes_tab.load(RunStore().get(run_id).run_dir) is not None
        ),
        240,
        "the probes",
    )
    report = probes_tab.load(RunStore().get(run_id).run_dir)  # type: ignore[union-attr]
    assert report is not None
    status = {o.kind.value: o.status.value for o in report.outcomes}
    assert status == {"seeds": "diverges", "transposed": "not-applicable", "second-call": "diverges"}, report
    table = next(d.value for d in at.dataframe if "probe" in d.value.columns)
    assert list(table["probe"]) == ["seeds", "transposed", "second-call"]
    assert list(table["status"]) == ["diverges", "not applicable", "diverges"]
    assert list(table["seed"])[0] == "0" and list(table["first divergent leaf"])[0] != "–"

    # reopened: the table is read back; a probe's run opens as a run of its own
    again = reopen(run_id)
    assert any("3 probes" in e.value for e in again.error)
    again.button(key=f"probe_open:{run_id}:seeds").click().run()
    assert not again.exception, again.exception
    assert again.query_params["run"] == f"{run_id}-probe-seeds"
    assert any("Verdict: DIVERGENT" in e.value for e in again.error)


@pytest.mark.slow
def test_localize_tab_ladder_bisector_and_first_node(divergent_run: str) -> None:
    run_id = divergent_run
    at = reopen(run_id)
    at.button(key=f"loc_start:{run_id}").click().run()
    assert not at.exception, at.exception
    wait_for(
        at,
        lambda a: (
            has_button(a, f"loc_start:{run_id}") and localize_tab.load(RunStore().get(run_id).run_dir) is not None
        ),
        280,
        "the localization",
    )
    loc = localize_tab.load(RunStore().get(run_id).run_dir)  # type: ignore[union-attr]
    assert loc is not None and loc.ablation is not None and loc.bisect is not None and loc.intermediates is not None

    again = reopen(run_id)  # everything below is read back from the run's directory
    ladder = next(t.value for t in again.table if "layer at fault" in t.value.columns)
    assert list(ladder["setting"])[:4] == ["eager", "aot_eager", "aot_eager_decomp_partition", "inductor"]
    assert list(ladder["layer at fault"]).index("◀ first to diverge") == 3
    assert any(m.value.startswith("**Layer at fault:** Inductor") for m in again.markdown)
    # one answer first: the op, its line and what to do, with each step's agreement beside it
    conclusion = next(e.value for e in again.error if e.value.startswith("**Conclusion**"))
    assert (
        'a // b, torch.div(a, b, rounding_mode="floor")` (line 6, aten.div.Tensor_mode)' in conclusion
        and "**Next:** Minimize" in conclusion
    ), conclusion
    findings = next(t.value for t in again.table if "agrees" in t.value.columns)
    assert list(findings["step"]) == ["ladder", "bisector", "first diverging node"]
    assert list(findings["agrees"])[1:] == ["✓ same op", "✓ same op"]
    assert any(
        "subsystem `lowerings`" in m.value and "op `div`" in m.value and " runs" in m.value for m in again.markdown
    ), "no bisector line"
    assert any("**`div`**" in m.value and "aten.div" in m.value for m in again.markdown), "no first-node card"
    # the card says its figures once: its title line has them, its sentence no longer repeats them (issue #35)
    card = [m.value for m in again.markdown if "first diverging intermediate:" in m.value]
    assert card and not any(re.search(r"\d+ of \d+ element\(s\) differ, max [\d.e+]+ ULP", t) for t in card), card
    assert any("cpp_fused" in c.value for c in again.code), "no kernel source"
    assert has_button(again, f"loc_open:{run_id}")

    # the Generated code tab marks the localized node on the check's own line and kernel (the localization's
    # instrumented compile is labelled 1_inference, the check's module 0_inference), and `//` is no comment there
    view = code_view_data(again)
    kernels = {k["key"] for k in view["kernels"]}
    assert view["divergence"]["line"] == 6 and view["divergence"]["kernel"] in kernels, view["divergence"]
    assert view["divergence"]["kernel"].startswith("0_inference/cpp_fused_div")
    assert "a // b" in view["program"][5] and 'class="cm"' not in view["program"][5]


def code_view_data(at: AppTest) -> dict:
    """The data the Generated code tab's program <-> kernel view was drawn from."""
    page = next(e.proto.srcdoc for e in at.get("iframe") if "dx-program" in e.proto.srcdoc)
    return json.loads(re.search(r"^const D = (.*);$", page, re.M).group(1).replace("<\\/", "</"))
