"""End to end in a real browser: `divergence serve`, Debian chromium driven by playwright, a gallery case run.

Leaves a screenshot in test-artifacts/. Skips (saying why) without playwright or /usr/bin/chromium;
.ci/run installs chromium and the test extra brings playwright.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.browser_helpers import (
    ARTIFACTS,
    CHROMIUM,
    CHROMIUM_ARGS,
    SLOW,
    skip_without_browser,
    start_server,
    stop_server,
)

skip_without_browser()
from playwright import sync_api  # noqa: E402


@pytest.fixture(scope="module")
def server(divergence_home: Path, inductor_cache: Path) -> Iterator[str]:
    (ARTIFACTS / "e2e-server.log").unlink(missing_ok=True)
    proc, url = start_server(divergence_home, inductor_cache, "e2e-server.log")
    try:
        yield url
    finally:
        stop_server(proc)


@pytest.fixture
def page(server: str) -> Iterator[object]:
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            yield browser.new_page(viewport={"width": 1400, "height": 1800})
        finally:
            browser.close()


def editor_lines(page: object) -> object:
    """The text lines the highlighted editor (an Ace editor in the component's iframe) shows.

    A loaded program mounts a new editor; until the rerun ends the old one may linger, so: the last one.
    """
    return page.locator("iframe[title*='code_editor']").last.content_frame.locator(".ace_text-layer")


def editor_input(page: object) -> object:
    """The highlighted editor's input (Ace's hidden textarea): focusing it is what a click on the editor does."""
    return editor_lines(page).locator("xpath=ancestor::div[contains(@class, 'ace_editor')]//textarea")


@pytest.mark.slow
def test_live_stage_and_cancel_in_a_real_browser(server: str, page: object):
    expect = sync_api.expect
    page.goto(server)
    expect(editor_lines(page)).to_be_attached(timeout=60_000)
    editor_input(page).focus()
    page.keyboard.insert_text("# typed in the highlighted editor\n")
    # straight to the plain text area (this test covers that path in a browser): the typed text comes along
    page.get_by_text("plain text").click()
    program = page.get_by_label("Program", exact=True)
    expect(program).to_have_value("# typed in the highlighted editor\n", timeout=30_000)
    program.fill(SLOW)
    program.press("Control+Enter")
    page.get_by_role("button", name="Run check").click()
    expect(page.get_by_text("▶ loading")).to_be_visible(timeout=60_000)  # the live stage line
    page.get_by_role("button", name="Cancel").click()
    # a cancelled check has no verdict, and says so rather than "Verdict: ERROR"
    expect(page.get_by_text("the check was stopped before it finished")).to_be_visible(timeout=30_000)
    # and where the program was when Cancel came: its inputs() never returned (issue #35)
    cancelled = page.locator("[data-testid='stAlert']").filter(has_text="When Cancel came").first
    expect(cancelled).to_contain_text(
        re.compile(r"your program's module-level code or inputs\(\) had not returned after")
    )
    assert page.get_by_text("Verdict: ERROR").count() == 0
    # and so does the run's status line ("…: error in 3.1 s" before)
    expect(page.get_by_text(re.compile(r"\(pasted\): cancelled after \d+\.\d s"))).to_be_visible()
    assert page.get_by_text(re.compile(r": error in \d")).count() == 0


@pytest.mark.slow
def test_gallery_case_in_a_real_browser(server: str, page: object):
    expect = sync_api.expect
    page.goto(server)
    expect(page.get_by_role("heading", name="Divergence Explorer")).to_be_visible(timeout=60_000)

    page.locator("[data-testid='stSelectbox']").filter(has_text="Case").locator("input").click()
    page.keyboard.type("Float floor division")
    page.keyboard.press("Enter")
    page.get_by_role("button", name="Load into the editor").click()
    expect(editor_lines(page)).to_contain_text('rounding_mode="floor"', timeout=30_000)  # the highlighted editor got it

    page.get_by_role("button", name="Run check").click()
    expect(page.get_by_text("Verdict: DIVERGENT")).to_be_visible(timeout=300_000)
    heat = page.locator(".js-plotly-plot .heatmaplayer image").first
    expect(heat).to_be_attached(timeout=60_000)

    drag = page.locator(".js-plotly-plot .nsewdrag").first
    drag.scroll_into_view_if_needed()
    box = drag.bounding_box()
    assert box is not None
    page.mouse.move(box["x"] + box["width"] * 0.1, box["y"] + box["height"] / 2, steps=3)
    expect(page.locator(".hoverlayer").first).to_contain_text(
        "eager", timeout=10_000
    )  # hover data decoded in the browser

    ARTIFACTS.mkdir(exist_ok=True)
    shot = ARTIFACTS / "e2e-gallery-case.png"
    page.screenshot(path=str(shot), full_page=True)
    assert shot.stat().st_size > 10_000


# No indentation: Ace would indent typed lines again. test_app.py checks this program at this size (the
# Inductor cache then answers); its output is shown in blocks.
TYPED = """import torch
fn = lambda x: torch.softmax(x, -1) * 3.0
inputs = lambda: (torch.randn(768, 1100),)
"""


@pytest.mark.slow
def test_typed_program_runs_and_a_clicked_block_opens_at_full_resolution(server: str, page: object):
    expect = sync_api.expect
    page.goto(server)
    expect(editor_lines(page)).to_be_attached(timeout=60_000)
    editor_input(page).focus()
    page.keyboard.press("Control+A")
    page.keyboard.insert_text(TYPED)
    # straight to Run: leaving the editor hands its text to the app before the click arrives
    page.get_by_role("button", name="Run check").click()
    expect(page.get_by_text(re.compile(r"Verdict: (BENIGN|MATCH)"))).to_be_visible(timeout=300_000)
    caption = page.get_by_text(re.compile(r"768×1100 elements shown as \d+×\d+ blocks of \d+×\d+"))
    expect(caption).to_be_visible(timeout=30_000)
    gh, gw, by, bx = map(int, re.search(r"as (\d+)×(\d+) blocks of (\d+)×(\d+)", caption.text_content() or "").groups())

    # hover a block, then click it: the full-resolution map below shows the block the hover named
    drag = page.locator(".js-plotly-plot .nsewdrag").first
    drag.scroll_into_view_if_needed()
    box = drag.bounding_box()
    assert box is not None
    i, j = int(gh * 0.6), int(gw * 0.3)
    x, y = box["x"] + box["width"] * (j + 0.5) / gw, box["y"] + box["height"] * (i + 0.5) / gh  # about mid-cell
    page.mouse.move(x - 2, y, steps=2)
    page.mouse.move(x, y, steps=2)
    hover = page.locator(".hoverlayer").first
    expect(hover).to_contain_text("block rows", timeout=10_000)
    named = re.search(r"block rows (\d+)–(\d+), cols (\d+)–(\d+)", hover.text_content() or "")
    assert named, hover.text_content()
    r0, r1, c0, c1 = map(int, named.groups())
    assert (r0 % by, c0 % bx, min(r0 + by, 768) - 1, min(c0 + bx, 1100) - 1) == (0, 0, r1, c1)  # a whole block
    assert abs(r0 // by - i) <= 1 and abs(c0 // bx - j) <= 1  # the one under the mouse (cells are ~3 px)
    page.mouse.down()
    page.mouse.up()
    expect(
        page.locator(".js-plotly-plot .gtitle").filter(has_text=f"block rows {r0}–{r1}, cols {c0}–{c1}")
    ).to_be_visible(timeout=60_000)
    expect(page.get_by_role("spinbutton", name="Block row")).to_have_value(str(r0 // by))  # the block inputs follow
    page.screenshot(path=str(ARTIFACTS / "e2e-block-click.png"), full_page=True)
