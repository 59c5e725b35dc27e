"""The page's passage view in headless Chromium (like tests/test_browser.py; skips without it):
Show → Section passages sends an "entity | aspect" query to GET /api/passages and lists passages
with their heading and aspect badges, the sentences naming the entity underlined and its words
marked; an unknown aspect shows the API's error listing the known aspects; the link keeps the view."""

from __future__ import annotations

import pytest

from test_browser import ARTIFACTS, BackgroundServer, browser, demo_index, sync_api  # noqa: F401 (fixtures)

pytestmark = pytest.mark.browser


def _app(demo_index):  # noqa: F811
    from radsift.search import Index
    from radsift.serve import create_app

    path, enc = demo_index
    return create_app(Index.open(path, encoder=enc))


def test_passage_view_lists_passages_of_the_aspect_with_matches_marked(demo_index, browser):  # noqa: F811
    with BackgroundServer(_app(demo_index)) as srv:
        page = browser.new_page(viewport={"width": 1440, "height": 1000})
        errors: list[str] = []
        page.on("pageerror", lambda exc: errors.append(str(exc)))
        page.goto(srv.url + "/")
        sync_api.expect(page.locator("#index-info")).to_contain_text("reports")
        page.locator("#level").select_option("passage")
        page.locator("#q").fill("pneumothorax | assessment")
        page.locator("#search-button").click()
        hits = page.locator("li.passage-hit")
        sync_api.expect(hits.first).to_be_visible()
        n = hits.count()
        assert 1 <= n <= 25
        # Every passage is an impression (aspect "assessment"), with its heading and aspect shown.
        assert set(page.locator(".badge-aspect").all_text_contents()) == {"assessment"}
        assert set(page.locator(".badge-heading").all_text_contents()) == {"Impression"}
        sync_api.expect(page.locator("#status")).to_contain_text("aspect assessment")
        # The top passage names the entity: its sentence is underlined and the word marked.
        top = hits.first
        assert top.locator(".matched-sentence").count() >= 1
        assert any("pneumothorax" in t.lower() for t in top.locator(".matched-sentence mark").all_inner_texts())
        # The passage text is shown whole (not only the matched sentences).
        api = page.request.get(srv.url + "/api/passages?q=pneumothorax%20%7C%20assessment&k=25&mode=hybrid").json()
        assert top.locator(".passage-text").inner_text().strip() == api["hits"][0]["text"].strip()
        assert [h.get_attribute("data-report-id") for h in hits.all()] == [h["report_id"] for h in api["hits"]]
        ARTIFACTS.mkdir(exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / "passages.png"), full_page=True)
        # The link keeps the view: reloading it shows passages again.
        assert "level=passage" in page.url
        page.reload()
        sync_api.expect(page.locator("li.passage-hit").first).to_be_visible()
        # An unknown aspect is the API's error, listing the known ones; no passages stay on screen.
        page.locator("#q").fill("pneumothorax | weather")
        page.locator("#search-button").click()
        sync_api.expect(page.locator("#status")).to_contain_text("assessment")
        sync_api.expect(page.locator("#status")).to_contain_text("weather")
        assert errors == []
