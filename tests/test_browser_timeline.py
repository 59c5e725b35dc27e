"""The page's patient timeline (issue 34, item 3) in headless Chromium, like tests/test_browser.py (whose
server and browser fixtures it reuses; skips without Chromium or Playwright): a patient's reports in date
order with each finding's status per report, from the search panel and from an opened report."""

from __future__ import annotations

import pytest

from test_browser import ARTIFACTS, BackgroundServer, browser, sync_api  # noqa: F401 (fixtures)
from test_timeline_page import built  # noqa: F401 (fixture)

pytestmark = pytest.mark.browser
expect = sync_api.expect


def test_the_page_shows_a_patients_timeline(built, browser):  # noqa: F811
    from radsift.search import Index
    from radsift.serve import create_app

    idx, enc = built
    with BackgroundServer(create_app(Index.open(idx, encoder=enc))) as srv:
        page = browser.new_page(viewport={"width": 1440, "height": 900})
        errors: list[str] = []
        page.on("pageerror", lambda exc: errors.append(str(exc)))
        page.goto(srv.url + "/")
        expect(page.locator("#timeline-form")).to_be_visible()  # the index names patients
        page.locator("#timeline-patient").fill("A")
        page.locator("#timeline-button").click()
        table = page.locator("[data-testid=timeline]")
        expect(table).to_be_visible()
        expect(page.locator("#report-title")).to_have_text("Patient A")
        assert table.locator("tbody tr").evaluate_all("rs => rs.map(r => r.dataset.reportId)") == ["a1", "a2", "a3"]
        cells = table.locator("td[data-finding='pneumothorax']")
        assert cells.evaluate_all("cs => cs.map(c => c.dataset.status)") == ["absent", "present", "present"]
        assert cells.nth(1).get_attribute("title") == "“Small right pneumothorax.”"
        ARTIFACTS.mkdir(exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / "timeline-page.png"))

        # A report opened from the timeline leads back to it.
        table.locator("tbody tr").nth(1).locator("button").click()
        expect(page.locator("#report-title")).to_have_text("a2")
        page.locator("[data-testid=open-timeline]").click()
        expect(page.locator("#report-title")).to_have_text("Patient A")
        expect(table.locator("tbody tr")).to_have_count(3)

        page.locator("#timeline-patient").fill("Z9")
        page.locator("#timeline-button").click()
        expect(page.locator("[data-testid=timeline-error]")).to_contain_text("Patient not found")
        assert errors == []
