"""Chapter 03 rendered in a real browser: JupyterLab + headless Chromium, live widgets.

nbval checks the *static* figures stored in the notebooks; this test checks what a learner
sees: that the chapter runs top to bottom in JupyterLab without an error and that the live
segment-rolling widget draws -- a slider labelled ``segment.bytes`` and the segment strip plot.
A screenshot goes to ``test-artifacts/chapter03.png``.

Without Chromium at /usr/bin/chromium the test skips and says how to install it.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.browser.lab_harness import (
    BOOK_DIR,
    CHROMIUM_ARGS,
    CHROMIUM_PATH,
    chromium_missing_reason,
    jupyterlab,
    open_and_run_all,
)

pytestmark = [pytest.mark.browser, pytest.mark.timeout(90)]

# The answered chapter: the learner's copy stops at its first blank prediction, by design.
CHAPTER = "_instructor/03-segments-and-rolling.ipynb"
WIDGET_TIMEOUT_MS = 20_000
VIEWPORT = {"width": 1400, "height": 1000}


def test_chapter03_segment_rolling_widget_renders(tmp_path: Path) -> None:
    reason = chromium_missing_reason()
    if reason is not None:
        pytest.skip(reason)
    from playwright.sync_api import sync_playwright

    notebook_path = BOOK_DIR / CHAPTER
    stored_bytes = notebook_path.read_bytes()
    with jupyterlab(tmp_path) as server, sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM_PATH), args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport=VIEWPORT)
            errors = open_and_run_all(page, server, CHAPTER)
            assert errors == [], f"cells raised in the browser: {errors}"
            slider = page.locator(".widget-slider", has_text="segment.bytes").first
            slider.wait_for(state="visible", timeout=WIDGET_TIMEOUT_MS)
            widget = page.locator(".kafkalab-segments-widget").first
            plot = widget.locator(".widget-output img").first
            plot.wait_for(state="visible", timeout=WIDGET_TIMEOUT_MS)
            box = plot.bounding_box()
            assert box is not None and box["width"] > 300 and box["height"] > 100, box
            widget.scroll_into_view_if_needed()
            artifacts = Path(__file__).resolve().parents[2] / "test-artifacts"
            artifacts.mkdir(exist_ok=True)
            page.screenshot(path=str(artifacts / "chapter03.png"))
        finally:
            browser.close()
    # Autosave is off in the test server, so running the chapter must not rewrite it on disk.
    assert notebook_path.read_bytes() == stored_bytes
