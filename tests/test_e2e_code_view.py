"""The source <-> kernel view and the workshop paths, in a real browser (Debian chromium through playwright).

Clicks a program line and sees its kernel highlighted, and the reverse; follows a leaf's "written by"
link; runs the pointwise-fusion teaching case with Triton on CPU and the interpolate/conv/pool backward
case through Localize's first-diverging-node step (the two paths a first workshop run found broken);
and checks that a result page at 1024 px cuts no label. Screenshots go to test-artifacts/.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.browser_helpers import ARTIFACTS, CHROMIUM, CHROMIUM_ARGS, skip_without_browser, start_server, stop_server

skip_without_browser()
from playwright import sync_api  # noqa: E402

# tests/test_provenance.py's two-kernel program: its check there fills the Inductor cache for this one
TWO = """import torch


def fn(x, w):
    h = torch.sigmoid(x * 2.0)
    o = h @ w
    return torch.relu(o) + 1.0


def inputs():
    return torch.randn(8, 16), torch.randn(16, 4)
"""

# labels Streamlit shortens with an ellipsis, and select boxes whose value does not fit its box ("inducto"):
# what a 1024-px window must not show
CUT_LABELS = """() => [
  ...[...document.querySelectorAll('label, p, span, button, [data-testid="stMarkdownContainer"]')]
    .filter(e => e.offsetParent !== null && e.clientWidth > 0 && e.scrollWidth > e.clientWidth + 1 && getComputedStyle(e).textOverflow === 'ellipsis')
    .map(e => e.innerText.trim()),
  ...[...document.querySelectorAll('[data-testid="stSelectbox"] input')]
    .filter(e => e.offsetParent !== null && e.scrollWidth > e.clientWidth + 1).map(e => e.value),
].filter(t => t)"""  # noqa: E501  (the text as it runs)


@pytest.fixture(scope="module")
def server(divergence_home: Path, inductor_cache: Path) -> Iterator[str]:
    (ARTIFACTS / "e2e-code-view-server.log").unlink(missing_ok=True)
    proc, url = start_server(divergence_home, inductor_cache, "e2e-code-view-server.log")
    try:
        yield url
    finally:
        stop_server(proc)


@pytest.fixture
def browser() -> Iterator[Any]:
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            yield b
        finally:
            b.close()


def run_program(page: Any, server: str, program: str) -> None:
    expect = sync_api.expect
    page.goto(server)
    expect(page.get_by_role("heading", name="Divergence Explorer")).to_be_visible(timeout=60_000)
    page.get_by_text("plain text").click()
    box = page.get_by_label("Program", exact=True)
    box.fill(program)
    box.press("Control+Enter")
    expect(page.get_by_text(re.compile(r"\(pasted\) · runs as"))).to_be_visible(timeout=30_000)  # the app has the text
    page.get_by_role("button", name="Run check").click()
    expect(page.get_by_text(re.compile(r"Verdict: (MATCH|BENIGN|DIVERGENT)"))).to_be_visible(timeout=300_000)


def run_case(page: Any, server: str, case: str, triton: bool = False) -> None:
    expect = sync_api.expect
    page.goto(server)
    expect(page.get_by_role("heading", name="Divergence Explorer")).to_be_visible(timeout=60_000)
    page.locator("[data-testid='stSelectbox']").filter(has_text="Case").locator("input").click()
    page.keyboard.type(case)
    page.keyboard.press("Enter")
    if triton:
        page.get_by_text("Triton on CPU", exact=True).click()
    page.get_by_role("button", name="Load into the editor").click()
    expect(page.get_by_text(re.compile(r"runs as sample_cases/"))).to_be_visible(timeout=30_000)  # loaded before Run
    page.get_by_role("button", name="Run check").click()
    expect(page.get_by_text(re.compile(r"Verdict: (MATCH|BENIGN|DIVERGENT)"))).to_be_visible(timeout=300_000)


def code_frame(page: Any) -> Any:
    """The frame of the source <-> kernel view (one st.iframe among a few)."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        for frame in page.frames:
            try:
                if frame.locator("[data-testid='dx-program']").count():
                    return frame
            except Exception:  # noqa: BLE001 - a frame that went away while being asked
                continue
        time.sleep(0.3)
    raise AssertionError("the source <-> kernel view never appeared")


@pytest.mark.slow
def test_a_line_and_its_kernel_highlight_each_other(server: str, browser: Any):
    expect = sync_api.expect
    page = browser.new_page(viewport={"width": 1400, "height": 1400})
    run_program(page, server, TWO)

    # the leaf's "written by" link opens the Generated code tab with the kernel that computed the output
    expect(page.get_by_text(re.compile(r"Written by kernel cpp_fused_add_relu_\d"))).to_be_visible(timeout=30_000)
    link = next(f for f in page.frames if f.locator("[data-testid='dx-show-kernel']").count())
    link.locator("[data-testid='dx-show-kernel']").click()
    view = code_frame(page)
    relu = view.locator(".chip", has_text="relu")
    expect(relu).to_have_class(re.compile(r"\bhot\b"), timeout=10_000)
    expect(page.get_by_role("tab", name="Generated code")).to_have_attribute("aria-selected", "true")

    # a program line: its kernel lights up, in the legend and in the output code, the others dim
    view.locator("#prog .ln[data-line='5']").click()
    sigmoid = view.locator(".chip", has_text="sigmoid")
    expect(sigmoid).to_have_class(re.compile(r"\bhot\b"))
    expect(view.locator(".chip", has_text="extern_kernels.mm")).to_have_class(re.compile(r"\bdim\b"))
    expect(view.locator("#out .ln.hot").first).to_be_visible()
    assert all(
        "sigmoid" in (k or "")
        for k in view.locator("#out .ln.hot").evaluate_all("rows => rows.map(r => r.dataset.kernel)")
    )
    expect(view.get_by_test_id("dx-detail")).to_contain_text("h = torch.sigmoid(x * 2.0)")
    page.screenshot(path=str(ARTIFACTS / "e2e-code-view-line.png"))

    # a kernel's line in the output code: its program line is selected and the others dim
    view.locator("#out .ln[data-kernel*='extern_kernels.mm']").first.click()
    expect(view.locator("#prog .ln[data-line='6']")).to_have_class(re.compile(r"\bsel\b"))
    expect(view.locator("#prog .ln[data-line='5']")).to_have_class(re.compile(r"\bdim\b"))
    expect(view.get_by_test_id("dx-detail")).to_contain_text("FX nodes: mm")
    page.screenshot(path=str(ARTIFACTS / "e2e-code-view-kernel.png"))

    # the same result page in a 1024-px window, with another program in the editor (the result then offers to load its
    # own): no label is cut short, on any tab
    page.set_viewport_size({"width": 1024, "height": 2200})
    box = page.get_by_label("Program", exact=True)
    box.fill(TWO.replace("+ 1.0", "+ 2.0"))
    box.press("Control+Enter")
    expect(page.get_by_role("button", name="Load this run's program")).to_be_visible(timeout=30_000)
    assert_no_cut_labels(page, "e2e-result-1024")


def assert_no_cut_labels(page: Any, shot: str) -> None:
    """On every tab of the result, no label cut short with an ellipsis (a screenshot of each in test-artifacts/)."""
    for tab in ("Leaves", "Generated code", "Probes", "Localize", "Minimize", "Program"):
        page.get_by_role("tab", name=tab).click()
        time.sleep(1.5)
        page.screenshot(path=str(ARTIFACTS / f"{shot}-{tab.replace(' ', '-').lower()}.png"))
        cut = page.evaluate(CUT_LABELS)
        assert cut == [], f"{tab} tab: {cut}"


@pytest.mark.slow
def test_triton_on_cpu_runs_the_pointwise_fusion_case(server: str, browser: Any):
    expect = sync_api.expect
    page = browser.new_page(viewport={"width": 1400, "height": 1400})
    run_case(page, server, "pointwise fusion", triton=True)
    expect(
        page.get_by_text(re.compile(r"Triton on CPU: (match|benign) \(interpreted, not GPU Triton\)"))
    ).to_be_visible(timeout=300_000)
    page.get_by_role("tab", name="Triton on CPU").click()
    expect(page.get_by_text(re.compile(r"Interpreted Triton on CPU: (MATCH|BENIGN)"))).to_be_visible(timeout=30_000)
    assert page.get_by_text("0 compatible backends").count() == 0
    page.get_by_role("tab", name="Generated code").click()
    page.get_by_text("Triton on CPU (interpreted)").click()
    expect(page.get_by_role("tab", name="Generated code")).to_have_attribute(
        "aria-selected", "true"
    )  # the rerun kept the tab
    view = code_frame(page)
    expect(view.locator(".chip", has_text="triton_poi_fused_add_mul_relu_sqrt_0")).to_be_visible(timeout=30_000)
    expect(view.locator("#prog .ln[data-line='6']")).to_have_attribute("data-kernels", re.compile("triton_poi_fused"))
    page.screenshot(path=str(ARTIFACTS / "e2e-triton-pointwise.png"))


@pytest.mark.slow
def test_localize_answers_on_the_interpolate_conv_pool_backward_case(server: str, browser: Any):
    """The first-diverging-node step used to fail there (AOTAutograd restrided the backward's saved tensors by the
    instrumented outputs' strides); now it runs, and says plainly why it cannot name a node: only gradients diverge,
    and the backward graph is not instrumented (it used to say "the divergence arises before Inductor", which the
    ladder contradicts: Inductor is the first layer to diverge there)."""
    expect = sync_api.expect
    page = browser.new_page(viewport={"width": 1400, "height": 1600})
    run_case(page, server, "interpolate, conv2d")
    page.get_by_role("tab", name="Localize").click()
    steps = page.locator("[data-testid='stMultiSelect']").filter(has_text="Steps")
    for label in ("ablation ladder", "CompilerBisector"):  # the step under test only: the others cost minutes
        steps.get_by_role("button", name=f"Remove {label}").first.click()
    page.get_by_role("button", name="Localize", exact=True).click()
    expect(page.get_by_role("heading", name="First diverging node")).to_be_visible(timeout=400_000)
    # on torch 2.13 no node of the forward graph diverges; the divergent leaves are gradients
    answer = page.get_by_text(
        re.compile(
            r"No first diverging node: the divergent leaves are gradients, and the backward graph is not compared"
        )
    )
    expect(answer.first).to_be_visible(timeout=30_000)
    assert page.get_by_text("before Inductor").count() == 0
    # a divergent run's tabs (Localize's result, Minimize's settings) at 1024 px: no label cut short
    page.set_viewport_size({"width": 1024, "height": 2200})
    assert_no_cut_labels(page, "e2e-divergent-1024")
    assert page.get_by_text("could not run").count() == 0
    assert page.get_by_text("mismatch in length of strides and shape").count() == 0
    assert page.get_by_text("TORCHDYNAMO_VERBOSE").count() == 0
    page.screenshot(path=str(ARTIFACTS / "e2e-localize-interpolate.png"))


def test_the_editor_keeps_its_line_numbers_beside_pasted_code(server: str, browser: Any):
    """A real paste (the clipboard, Ctrl+V) used to leave the highlighted editor's line numbers a row below the code."""
    expect = sync_api.expect
    context = browser.new_context(
        viewport={"width": 1400, "height": 1400}, permissions=["clipboard-read", "clipboard-write"]
    )
    page = context.new_page()
    page.goto(server)
    editor = page.locator("iframe[title*='code_editor']").last.content_frame
    expect(editor.locator(".ace_text-layer")).to_be_attached(timeout=60_000)
    editor.locator(".ace_content").click()
    page.evaluate("text => navigator.clipboard.writeText(text)", TWO)
    page.keyboard.press("Control+V")
    expect(editor.locator(".ace_line").nth(4)).to_contain_text("torch.sigmoid")

    def offset() -> float:
        number, line = (
            editor.locator(".ace_gutter-cell").nth(4).bounding_box(),
            editor.locator(".ace_line").nth(4).bounding_box(),
        )
        return abs(number["y"] - line["y"])

    deadline = time.monotonic() + 5
    while offset() > 1 and time.monotonic() < deadline:
        time.sleep(0.2)
    assert offset() <= 1, f"line 5's number is {offset():.0f} px off its code"
