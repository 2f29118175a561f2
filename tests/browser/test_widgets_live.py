"""Every chapter widget, live in JupyterLab and headless Chromium: runs, reacts, is labelled.

For each widget the test runs its chapter top to bottom in a real browser, moves one control the
way a reader would (typing into a slider's readout, picking from a menu, clicking a button), and
checks that the text summary beside the drawing now says what kafkalab's engine says for the new
setting, computed here in the test process. It also checks the basics of accessibility: every
control has an accessible name, and the figure has alt text and a status line. A screenshot of
each widget goes to ``test-artifacts/``.

One JupyterLab and one browser serve all the chapters. Without Chromium at /usr/bin/chromium the
tests skip and say how to install it.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.browser.lab_harness import (
    BOOK_DIR,
    CHROMIUM_ARGS,
    CHROMIUM_PATH,
    chromium_missing_reason,
    jupyterlab,
    open_and_run_all,
)

pytestmark = [pytest.mark.browser, pytest.mark.timeout(240)]

WIDGET_TIMEOUT_MS = 60_000
VIEWPORT = {"width": 1400, "height": 1000}
ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"

# Every focusable control inside the widget, with the name assistive technology would read. A
# slider's handle (ipywidgets' noUiSlider) carries no name of its own; its label is the
# description ipywidgets draws beside it, which is what counts for it here.
_UNLABELLED_JS = """root => [...root.querySelectorAll('input, select, textarea, button, [role=slider]')]
    .filter(e => e.offsetParent !== null)
    .filter(e => {
        const box = e.closest('.widget-inline-hbox');
        const described = box && box.querySelector('.widget-label')
            && box.querySelector('.widget-label').textContent.trim();
        const byLabel = described || (e.labels && [...e.labels].some(l => l.textContent.trim()));
        const named = (e.getAttribute('aria-label') || e.getAttribute('title') || '').trim()
            || (e.getAttribute('aria-labelledby') || '').split(' ').some(id => {
                const l = document.getElementById(id); return l && l.textContent.trim(); })
            || (e.tagName === 'BUTTON' && e.textContent.trim());
        return !(byLabel || named);
    })
    .map(e => e.outerHTML.slice(0, 120))"""


@pytest.fixture(scope="module")
def browser_page(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Any, Any]]:
    reason = chromium_missing_reason()
    if reason is not None:
        pytest.skip(reason)
    from playwright.sync_api import sync_playwright

    with jupyterlab(tmp_path_factory.mktemp("lab")) as server, sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM_PATH), args=CHROMIUM_ARGS)
        try:
            yield server, browser
        finally:
            browser.close()


def run_chapter(browser_page: tuple[Any, Any], chapter: str, widget_class: str) -> tuple[Any, Any]:
    """Open and run ``chapter`` (its answered copy where the book has one); return the page and
    the first widget of ``widget_class``."""
    server, browser = browser_page
    answered = Path("_instructor") / chapter  # a learner's copy stops at its first blank exercise
    chapter = str(answered) if (BOOK_DIR / answered).exists() else chapter
    stored = (BOOK_DIR / chapter).read_bytes()
    page = browser.new_page(viewport=VIEWPORT)
    errors = open_and_run_all(page, server, chapter)
    assert errors == [], f"cells raised in the browser: {errors}"
    widget = page.locator(f".{widget_class}").first
    widget.locator(".kafkalab-summary p").wait_for(state="attached", timeout=WIDGET_TIMEOUT_MS)
    widget.scroll_into_view_if_needed()
    assert (BOOK_DIR / chapter).read_bytes() == stored  # autosave is off: the chapter is untouched
    return page, widget


def close_chapter(page: Any) -> None:
    """Shut the chapter's kernel down and close its tab, so kernels do not pile up."""
    page.evaluate("() => window.jupyterapp.shell.currentWidget.sessionContext.shutdown()")
    page.close()


def summary_of(widget: Any) -> str:
    return str(widget.locator(".kafkalab-summary p").text_content()).strip()


def wait_for_summary(page: Any, widget: Any, expected: str) -> str:
    """Wait until the summary contains ``expected`` (the kernel redraws asynchronously)."""
    locator = widget.locator(".kafkalab-summary p", has_text=expected)
    try:
        locator.wait_for(state="attached", timeout=WIDGET_TIMEOUT_MS)
    except Exception:  # report what the page shows instead of a bare timeout
        pytest.fail(f"summary never showed {expected!r}; it shows {summary_of(widget)!r}")
    return summary_of(widget)


def set_slider(page: Any, widget: Any, label: str, value: int) -> None:
    """Type ``value`` into the readout of the slider labelled ``label``, as a reader can."""
    readout = widget.locator(".widget-slider", has_text=label).first.locator(".widget-readout")
    readout.click()
    page.keyboard.press("Control+A")
    page.keyboard.type(str(value))
    page.keyboard.press("Enter")


def check_accessible(widget: Any) -> None:
    unlabelled = widget.evaluate(_UNLABELLED_JS)
    assert unlabelled == [], f"controls without an accessible name: {unlabelled}"
    image = widget.locator(".kafkalab-figure img").first
    assert (image.get_attribute("alt") or "").strip(), "the figure has no alt text"
    assert widget.locator(".kafkalab-summary [role=status]").count() == 1


def screenshot(page: Any, widget: Any, name: str) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    widget.scroll_into_view_if_needed()
    page.screenshot(path=str(ARTIFACTS / name))


def test_chapter03_smaller_segments_roll_more(browser_page: tuple[Any, Any]) -> None:
    from kafkalab.viz.segments import RollingParams, run_rolling, summary

    chapter_params = RollingParams(segment_bytes=4096, segment_ms=60_000, record_bytes=300,
                                   records_per_s=2.0, appends=40)  # as chapter 03 calls it
    page, widget = run_chapter(browser_page, "03-segments-and-rolling.ipynb", "kafkalab-segments-widget")
    assert summary_of(widget) == summary(run_rolling(chapter_params), chapter_params)
    smaller = dataclasses.replace(chapter_params, segment_bytes=2048)
    expected = summary(run_rolling(smaller), smaller)
    set_slider(page, widget, "segment.bytes", 2048)
    assert wait_for_summary(page, widget, expected.split(";")[0]) == expected
    before = int(re.match(r"(\d+) segments", summary(run_rolling(chapter_params), chapter_params)).group(1))
    assert int(re.match(r"(\d+) segments", expected).group(1)) > before
    check_accessible(widget)
    screenshot(page, widget, "widget-03-segments.png")
    close_chapter(page)


def test_chapter04_the_index_search_follows_the_target(browser_page: tuple[Any, Any]) -> None:
    page, widget = run_chapter(browser_page, "04-indexes-and-lookups.ipynb", "kafkalab-index-search-widget")
    assert summary_of(widget).startswith("offset 23:")
    set_slider(page, widget, "target", 40)
    after = wait_for_summary(page, widget, "offset 40:")
    assert "index probes" in after and "found at position" in after
    widget.locator(".widget-toggle-button", has_text="timestamp").first.click()
    wait_for_summary(page, widget, "timestamp ")
    check_accessible(widget)
    screenshot(page, widget, "widget-04-index-search.png")
    close_chapter(page)


def test_chapter05_retention_bytes_deletes_segments(browser_page: tuple[Any, Any]) -> None:
    from kafkalab.viz.cleanup import CleanupParams, run_cleanup, summary

    chapter_params = CleanupParams(policy="delete", retention_bytes=1000)  # as chapter 05 calls it
    page, widget = run_chapter(browser_page, "05-retention-and-deletion.ipynb", "kafkalab-cleanup-widget")
    assert summary_of(widget) == summary(run_cleanup(chapter_params), "delete")
    tighter = dataclasses.replace(chapter_params, retention_bytes=400)
    expected = summary(run_cleanup(tighter), "delete")
    set_slider(page, widget, "retention.bytes", 400)
    assert wait_for_summary(page, widget, expected.split(";")[0]) == expected
    check_accessible(widget)
    screenshot(page, widget, "widget-05-retention.png")
    close_chapter(page)


def test_chapter06_compaction_keeps_the_latest_per_key(browser_page: tuple[Any, Any]) -> None:
    page, widget = run_chapter(browser_page, "06-log-compaction.ipynb", "kafkalab-cleanup-widget")
    first = summary_of(widget)
    assert first.startswith("cleanup.policy=compact")
    set_slider(page, widget, "keys", 2)
    after = wait_for_summary(page, widget, "cleanup.policy=compact")
    for _ in range(40):
        if summary_of(widget) != first:
            break
        page.wait_for_timeout(250)
    assert summary_of(widget) != first, "moving the keys slider did not change the drawing"
    check_accessible(widget)
    screenshot(page, widget, "widget-06-compaction.png")
    del after
    close_chapter(page)


def test_chapter08_a_killed_follower_leaves_the_isr(browser_page: tuple[Any, Any]) -> None:
    page, widget = run_chapter(browser_page, "08-replication.ipynb", "kafkalab-isr-widget")
    follower = widget.locator("select").first.input_value()
    widget.locator("button", has_text="kill").click()  # drawn at the next sample, after advancing
    widget.locator("button", has_text="advance").click()  # 15 s: past broker.session.timeout.ms
    after = wait_for_summary(page, widget, "t = 20.0 s")
    assert f"broker {follower}: down" in after
    isr = re.search(r"ISR \[([\d, ]*)\]", after).group(1)
    assert follower not in [x.strip() for x in isr.split(",")], after
    check_accessible(widget)
    screenshot(page, widget, "widget-08-isr.png")
    close_chapter(page)


def test_chapter09_a_killed_leader_is_fenced_and_replaced(browser_page: tuple[Any, Any], tmp_path: Path) -> None:
    from kafkalab.viz.controller import TOPIC, ControllerLab, summary

    lab = ControllerLab(tmp_path)  # the chapter's widget: seed 7, 2 s run before it is drawn
    try:
        lab.advance(2_000)
        victim = lab.cluster.leader(TOPIC, 0)
        lab.kill(victim)
        expected = summary(lab.advance(10_000))  # the slider's default: past broker.session.timeout.ms
    finally:
        lab.close()
    page, widget = run_chapter(browser_page, "09-the-controller.ipynb", "kafkalab-controller-widget")
    assert widget.locator("select").first.input_value() == str(victim)
    widget.locator("button", has_text="kill").click()
    widget.locator("button", has_text="advance").click()
    after = wait_for_summary(page, widget, "t = 12.0 s")
    assert after == expected
    assert f"{TOPIC}-0: leader {victim} " not in after and '"fenced"' not in after
    check_accessible(widget)
    screenshot(page, widget, "widget-09-controller.png")
    close_chapter(page)


def test_chapter13_a_task_fires_when_the_wheel_reaches_it(browser_page: tuple[Any, Any]) -> None:
    page, widget = run_chapter(browser_page, "13-delayed-operations-and-the-timing-wheel.ipynb",
                               "kafkalab-timing-wheel-widget")
    set_slider(page, widget, "delay (ms)", 30)
    widget.locator("button", has_text="add task").click()
    wait_for_summary(page, widget, "added ")
    for _ in range(10):
        if "Fired: nothing" not in summary_of(widget):
            break
        widget.locator("button", has_text="jump to next bucket").click()
        page.wait_for_timeout(300)
    assert re.search(r"Fired: \S+ at \d+ ms", summary_of(widget)), summary_of(widget)
    check_accessible(widget)
    screenshot(page, widget, "widget-13-timing-wheel.png")
    close_chapter(page)


def test_chapter10_a_new_member_takes_its_share(browser_page: tuple[Any, Any], tmp_path: Path) -> None:
    page, widget = run_chapter(browser_page, "10-consumer-groups-and-rebalancing.ipynb", "kafkalab-rebalance-widget")
    before = summary_of(widget)
    assert before.count("partitions") == 3, before  # three members, as the chapter starts them
    widget.locator("button", has_text="add member").click()
    widget.locator("button", has_text="advance").click()  # 5 s: the newcomer joins, the group rebalances
    after = wait_for_summary(page, widget, "t = 10.0 s")
    counts = [int(n) for n in re.findall(r"(\d+) partitions", after)]
    assert len(counts) == 4 and min(counts) >= 1, after
    check_accessible(widget)
    screenshot(page, widget, "widget-10-rebalance.png")
    check_kip848_race(page, page.locator(".kafkalab-kip848-widget").first, tmp_path)  # same chapter, one run
    close_chapter(page)


def check_kip848_race(page: Any, widget: Any, tmp_path: Path) -> None:
    """Chapter 10's classic-against-KIP-848 widget: a fourth consumer joins both groups."""
    from kafkalab.viz.kip848 import ProtocolRace, summary

    race = ProtocolRace(tmp_path / "race")  # as show_kip848 starts it live: three consumers, 8 s
    try:
        for _ in range(3):
            race.add()
        race.advance(8_000)
        race.add()
        race.advance(5_000)
        expected = summary(race.race())
    finally:
        race.close()
    widget.scroll_into_view_if_needed()
    widget.locator("button", has_text="add consumer").click()
    widget.locator("button", has_text="advance").click()  # 5 s
    assert wait_for_summary(page, widget, "t = 13.0 s") == expected
    check_accessible(widget)
    screenshot(page, widget, "widget-10-kip848.png")


def test_chapter10_the_assignor_grid_follows_the_assignor(browser_page: tuple[Any, Any]) -> None:
    from kafkalab.viz.assignors import GroupParams, rebalance_story, revocation_table, summary

    page, widget = run_chapter(browser_page, "10-consumer-groups-and-rebalancing.ipynb", "kafkalab-assignor-widget")
    chapter_params = GroupParams(assignor="cooperative-sticky", consumers=3, partitions=(10,))  # as chapter 10 calls it
    assert summary_of(widget) == summary(rebalance_story(chapter_params), revocation_table(chapter_params))
    widget.locator("select").first.select_option("range")
    ranged = dataclasses.replace(chapter_params, assignor="range")
    expected = summary(rebalance_story(ranged), revocation_table(ranged))
    assert wait_for_summary(page, widget, "range: generation 1") == expected
    check_accessible(widget)
    screenshot(page, widget, "widget-10-assignors.png")
    close_chapter(page)


def test_chapter07_a_longer_linger_fills_batches(browser_page: tuple[Any, Any], tmp_path: Path) -> None:
    from kafkalab.viz.accumulator import simulate, summary

    page, widget = run_chapter(browser_page, "07-the-producer.ipynb", "kafkalab-accumulator-widget")
    assert summary_of(widget) == summary(simulate(tmp_path / "a", linger_ms=5), 5, 16_384)
    set_slider(page, widget, "linger.ms", 50)
    expected = summary(simulate(tmp_path / "b", linger_ms=50), 50, 16_384)
    assert wait_for_summary(page, widget, "linger.ms=50") == expected
    before = float(re.search(r"([\d.]+) records per batch", summary_of(widget)).group(1))
    assert before > float(re.search(r"([\d.]+) records per batch",
                                    summary(simulate(tmp_path / "c", linger_ms=5), 5, 16_384)).group(1))
    check_accessible(widget)
    screenshot(page, widget, "widget-07-accumulator.png")
    close_chapter(page)


def test_chapter12_a_crashed_producers_transaction_is_aborted_after_the_timeout(
        browser_page: tuple[Any, Any], tmp_path: Path) -> None:
    from kafkalab.viz.transactions import TIMEOUT_MS, TxnLab, summary

    lab = TxnLab(tmp_path / "data")
    try:
        page, widget = run_chapter(browser_page, "12-idempotence-and-transactions.ipynb",
                                   "kafkalab-transactions-widget")
        assert summary_of(widget) == summary(lab.timeline())
        lab.send(0)
        widget.locator("button", has_text="send").click()
        assert wait_for_summary(page, widget, "step 1") == summary(lab.timeline())
        lab.crash()
        lab.advance(TIMEOUT_MS + 1_000)
        widget.locator("button", has_text="crash producer").click()
        wait_for_summary(page, widget, "step 2")
        widget.locator("button", has_text="advance past timeout").click()
        after = wait_for_summary(page, widget, "step 3")
        assert after == summary(lab.timeline()) and "CompleteAbort" in after and "ABORT in p0" in after
    finally:
        lab.close()
    check_accessible(widget)
    screenshot(page, widget, "widget-12-transactions.png")
    close_chapter(page)
