"""The search page in a real headless Chromium (Debian's package, driven by Playwright).

Serves a small demo index (synthetic reports, hashing encoder) with uvicorn in a background thread,
types a query, presses Enter, checks the highlighted results, opens a full report, flips the
query's reading on its chips (every mention in the opened report marked with its status), and saves a
screenshot to test-artifacts/search-page.png. Skips with a message when Chromium or Playwright is
missing (`make test` installs Chromium when it can).
"""

from __future__ import annotations

import re
import threading
import time
from pathlib import Path

import pytest

CHROMIUM = Path("/usr/bin/chromium")
ARTIFACTS = Path(__file__).resolve().parents[1] / "test-artifacts"
TOKEN = "browser-test-token-0123456789abcdef"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]

pytestmark = pytest.mark.browser

if not CHROMIUM.exists():
    pytest.skip(f"{CHROMIUM} is missing: install Debian's chromium (apt-get install chromium, or `make test` as root) "
                "to run the browser test", allow_module_level=True)
sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed (pip install -e '.[dev]')")

# A report whose text holds markup: the page must show it as text and never run it.
MARKUP_FINDINGS = "Tiny apical pneumothorax <img src=x onerror=\"window.__pwned=1\"> <b>unchanged</b>."


class BackgroundServer:
    """uvicorn serving an app on a free 127.0.0.1 port, in a daemon thread."""

    def __init__(self, app) -> None:
        import uvicorn

        from radsift.serve.server import bind_socket

        self.sock = bind_socket("127.0.0.1", 0)
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}"
        self.server = uvicorn.Server(uvicorn.Config(app, log_level="warning", access_log=False))
        self.thread = threading.Thread(target=self.server.run, kwargs={"sockets": [self.sock]}, daemon=True)

    def __enter__(self) -> "BackgroundServer":
        self.thread.start()
        deadline = time.monotonic() + 15
        while not self.server.started:
            if time.monotonic() > deadline or not self.thread.is_alive():
                raise RuntimeError("uvicorn did not start")
            time.sleep(0.05)
        return self

    def __exit__(self, *exc) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=10)
        self.sock.close()


@pytest.fixture(scope="module")
def demo_index(tmp_path_factory):
    from radsift.demo import generate_reports
    from radsift.index import build_index
    from radsift.models.hashing import HashingEncoder
    from radsift.records import Report

    root = tmp_path_factory.mktemp("browser")
    enc = HashingEncoder(root / "model")
    reports = [d.report for d in generate_reports(n=300, seed=11)]
    reports.append(Report("markup-1", {"findings": MARKUP_FINDINGS, "impression": "Small pneumothorax."},
                          {"exam": "XR CHEST PA", "site": "north"}))
    build_index(root / "idx", reports, encoder=enc, progress=False)
    return root / "idx", enc


@pytest.fixture(scope="module")
def browser():
    with sync_api.sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS, headless=True)
        try:
            yield b
        finally:
            b.close()


def _app(demo_index, **kwargs):
    from radsift.search import Index
    from radsift.serve import create_app

    path, enc = demo_index
    return create_app(Index.open(path, encoder=enc), **kwargs)


def _open_page(browser, srv) -> tuple:
    """A wide page on the server's search page, its script errors collected."""
    page = browser.new_page(viewport={"width": 1440, "height": 900})
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.goto(srv.url + "/")
    sync_api.expect(page.locator("#index-info")).to_contain_text("301 reports")
    return page, errors


def test_search_highlights_and_full_report(demo_index, browser):
    with BackgroundServer(_app(demo_index)) as srv:
        page, errors = _open_page(browser, srv)

        page.locator("#q").fill("small right pneumothorax")
        page.locator("#q").press("Enter")
        hits = page.locator("#hit-list .hit")
        sync_api.expect(hits.first).to_be_visible()
        assert hits.count() == 25  # the page's default k
        marks = page.locator("#hit-list .hit .sentence mark")
        assert marks.count() > 0
        assert "pneumothorax" in " ".join(marks.all_inner_texts()).lower()
        sync_api.expect(page.locator("#status")).to_contain_text("25 reports")

        # One click to the full report, with the matched sentence marked inside it.
        first_id = hits.first.get_attribute("data-report-id")
        hits.first.locator("button.open").click()
        panel = page.locator("#report-panel")
        sync_api.expect(panel).to_be_visible()
        sync_api.expect(page.locator("#report-title")).to_have_text(first_id)
        sync_api.expect(panel.locator(".matched mark").first).to_be_visible()
        assert panel.locator(".report-section h3").count() >= 2

        ARTIFACTS.mkdir(exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / "search-page.png"))

        # Keyboard: Esc closes the report, arrows move through results, Enter opens one.
        page.keyboard.press("Escape")
        sync_api.expect(panel).to_be_hidden()
        page.locator("#q").focus()
        page.keyboard.press("ArrowDown")
        page.keyboard.press("ArrowDown")
        second_id = hits.nth(1).get_attribute("data-report-id")
        page.keyboard.press("Enter")
        sync_api.expect(page.locator("#report-title")).to_have_text(second_id)
        page.keyboard.press("Escape")

        # Impressions: the diagnoses that go with the findings description.
        page.locator("label[for=target-impression]").click()
        sync_api.expect(page.locator("#status")).to_contain_text("impressions")
        badges = page.locator("#hit-list .hit .badge")
        sync_api.expect(badges.first).to_have_text("Impression")
        assert {b.lower() for b in badges.all_inner_texts()} == {"impression"}
        assert errors == []


def test_report_markup_is_shown_as_text_and_never_run(demo_index, browser):
    with BackgroundServer(_app(demo_index)) as srv:
        page = browser.new_page()
        page.goto(srv.url + "/#q=tiny+apical+pneumothorax+unchanged&target=findings&mode=bm25&level=report&k=10")
        hit = page.locator("#hit-list .hit[data-report-id='markup-1']")
        sync_api.expect(hit).to_be_visible()
        assert "<img src=x" in hit.locator(".sentence").inner_text()
        assert hit.locator(".sentence img, .sentence b").count() == 0
        hit.locator("button.open").click()
        sync_api.expect(page.locator("#report-body")).to_contain_text("<b>unchanged</b>")
        assert page.locator("#report-body img").count() == 0
        assert page.evaluate("window.__pwned") is None


def test_nothing_matches_and_filters(demo_index, browser):
    with BackgroundServer(_app(demo_index)) as srv:
        page = browser.new_page()
        page.goto(srv.url + "/")
        sync_api.expect(page.locator("#filters-row")).to_be_visible()
        page.locator("#mode").select_option("bm25")
        page.locator("#q").fill("zzqxv")
        page.locator("#q").press("Enter")
        sync_api.expect(page.locator("#status.empty")).to_contain_text("No reports match")

        page.locator("#mode").select_option("hybrid")
        page.locator("#filter-key").select_option("site")
        page.locator("#filter-value").fill("south")
        page.locator("#filter-value").press("Enter")
        sync_api.expect(page.locator("#filter-chips .chip")).to_have_count(1)
        page.locator("#q").fill("pleural effusion")
        page.locator("#q").press("Enter")
        sync_api.expect(page.locator("#status")).to_contain_text("1 filter")
        first = page.locator("#hit-list .hit").first
        sync_api.expect(first).to_be_visible()
        sites = page.locator("#hit-list .hit .meta li:has(.meta-key:text-is('site'))").all_inner_texts()
        assert sites and {s.split()[-1] for s in sites} == {"south"}

        page.locator("#filter-key").select_option("exam")  # a second key must match too
        page.locator("#filter-value").fill("XR NOWHERE")
        page.locator("#filter-value").press("Enter")
        sync_api.expect(page.locator("#status.empty")).to_contain_text("Remove a filter")


def test_token_is_asked_once_and_errors_are_shown(demo_index, browser):
    with BackgroundServer(_app(demo_index, token=TOKEN)) as srv:
        page = browser.new_page()
        page.goto(srv.url + "/")
        dialog = page.locator("#token-dialog")
        sync_api.expect(dialog).to_be_visible()
        page.locator("#token-input").fill("wrong-token")
        page.locator("#token-input").press("Enter")
        sync_api.expect(page.locator("#token-error")).to_contain_text("not accepted")
        page.locator("#token-input").fill(TOKEN)
        page.locator("#token-input").press("Enter")
        sync_api.expect(dialog).to_be_hidden()
        sync_api.expect(page.locator("#index-info")).to_contain_text("reports")
        page.locator("#q").fill("cardiomegaly")
        page.locator("#q").press("Enter")
        sync_api.expect(page.locator("#hit-list .hit mark").first).to_be_visible()
        assert page.evaluate("sessionStorage.getItem('radsift-token')") == TOKEN

        # The server stops: the page says so instead of failing silently.
        srv.server.should_exit = True
        srv.thread.join(timeout=10)
        page.locator("#q").fill("pleural effusion")
        page.locator("#q").press("Enter")
        sync_api.expect(page.locator("#status.error")).to_contain_text("cannot be reached")


def test_reading_chips_flip_the_ranking_and_mark_every_mention(demo_index, browser):
    with BackgroundServer(_app(demo_index)) as srv:
        page, errors = _open_page(browser, srv)
        page.locator("#k").select_option("10")
        page.locator("#q").fill("pneumothorax")
        page.locator("#q").press("Enter")

        # The query's reading: one chip, pneumothorax read as present; the hits state it.
        chip = page.locator("#reading-chips .reading-chip[data-finding='pneumothorax']")
        sync_api.expect(chip).to_have_attribute("data-status", "present")
        tags = page.locator("#hit-list .hit .status-tag")
        sync_api.expect(tags.first).to_be_visible()
        assert set(tags.all_inner_texts()) and all(t.startswith("pneumothorax: present") for t in tags.all_inner_texts())

        # Flip the chip to absent: the search runs again with the override, and every hit now denies it.
        with page.expect_response(lambda r: "/api/search" in r.url and "reading=pneumothorax%3Dabsent" in r.url):
            chip.locator("select").select_option("absent")
        chip = page.locator("#reading-chips .reading-chip[data-finding='pneumothorax']")
        sync_api.expect(chip).to_have_attribute("data-status", "absent")
        sync_api.expect(chip).to_have_class(re.compile(r"\bflipped\b"))
        sync_api.expect(page.locator("#hit-list .hit .status-tag").first).to_contain_text("pneumothorax: absent")
        statuses = {t.split(":")[1].split()[0] for t in page.locator("#hit-list .hit .status-tag").all_inner_texts()}
        assert statuses == {"absent"}
        assert "reading=pneumothorax%3Dabsent" in page.url  # the flipped reading is in the link

        # The opened report marks every mention of the finding with its status, not only the matched sentence.
        first = page.locator("#hit-list .hit").first
        report_id = first.get_attribute("data-report-id")
        first.locator("button.open").click()
        sync_api.expect(page.locator("#report-title")).to_have_text(report_id)
        mentions = page.locator("#report-body mark.mention")
        sync_api.expect(mentions.first).to_be_visible()
        api = srv_get(srv.url, f"/api/reports/{report_id}?q=pneumothorax&reading=pneumothorax%3Dabsent")
        expected = sorted((m["status"], m["start"]) for ms in api["mentions"].values() for m in ms)
        assert mentions.count() == len(expected) >= 1
        assert sorted(page.locator("#report-body mark.mention").evaluate_all(
            "ns => ns.map(n => n.dataset.status)")) == sorted(s for s, _ in expected)
        sync_api.expect(page.locator("#report-body .mention-summary")).to_contain_text("pneumothorax:")
        ARTIFACTS.mkdir(exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / "reading-chips.png"))
        page.keyboard.press("Escape")

        # The negation switch: off ranks by similarity only and says so; the chips stay to show the reading.
        with page.expect_response(lambda r: "/api/search" in r.url and "negation=ignore" in r.url):
            page.locator("#negation").uncheck()
        sync_api.expect(page.locator("#reading-note")).to_contain_text("negation ignored")
        sync_api.expect(page.locator("#reading-row")).to_have_class(re.compile(r"\bis-off\b"))

        # A new query is read afresh: the override of the old one is dropped.
        page.locator("#negation").check()
        page.locator("#q").fill("no pleural effusion")
        page.locator("#q").press("Enter")
        chip = page.locator("#reading-chips .reading-chip[data-finding='pleural effusion']")
        sync_api.expect(chip).to_have_attribute("data-status", "absent")
        assert page.locator("#reading-chips .reading-chip").count() == 1
        assert errors == []


def srv_get(base: str, path: str) -> dict:
    import json
    import urllib.request

    with urllib.request.urlopen(base + path, timeout=10) as r:
        return json.loads(r.read())
