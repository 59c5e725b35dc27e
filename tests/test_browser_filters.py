"""The search page offers the CLI's two metadata filters: "contains" (key~value, any case) and
"is exactly" (key=value). Runs in headless Chromium like tests/test_browser.py (skips without it)."""

from __future__ import annotations

from urllib.parse import parse_qs, urlparse

import pytest

from test_browser import BackgroundServer, _app, browser, demo_index, sync_api  # noqa: F401 (fixtures)

pytestmark = pytest.mark.browser


def test_contains_filter_matches_any_case_and_is_exactly_does_not(demo_index, browser):  # noqa: F811
    with BackgroundServer(_app(demo_index)) as srv:
        page = browser.new_page()
        sent: list[list[str]] = []
        page.on("request", lambda r: sent.append(parse_qs(urlparse(r.url).query).get("where", []))
                if "/api/search" in r.url else None)
        page.goto(srv.url + "/")
        sync_api.expect(page.locator("#filters-row")).to_be_visible()
        assert page.locator("#filter-op").input_value() == "~"  # "contains" is the default
        page.locator("#filter-key").select_option("site")
        page.locator("#filter-value").fill("SOU")
        page.locator("#filter-value").press("Enter")
        sync_api.expect(page.locator("#filter-chips .chip")).to_contain_text("site contains SOU")
        page.locator("#q").fill("pleural effusion")
        page.locator("#q").press("Enter")
        sync_api.expect(page.locator("#hit-list .hit").first).to_be_visible()
        assert sent[-1] == ["site~SOU"]
        sites = page.locator("#hit-list .hit .meta li:has(.meta-key:text-is('site'))").all_inner_texts()
        assert sites and {s.split()[-1] for s in sites} == {"south"}

        page.locator("#filter-chips .chip-remove").click()
        page.locator("#filter-op").select_option("=")
        page.locator("#filter-key").select_option("site")
        page.locator("#filter-value").fill("SOU")
        page.locator("#filter-value").press("Enter")
        sync_api.expect(page.locator("#filter-chips .chip")).to_contain_text("site is SOU")
        sync_api.expect(page.locator("#status.empty")).to_contain_text("Remove a filter")
        assert sent[-1] == ["site=SOU"]
