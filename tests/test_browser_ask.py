"""The page's Ask panel in headless Chromium (like tests/test_browser.py; skips without it): a question
goes to POST /api/ask (an OpenAI-compatible fake on 127.0.0.1 answers), the answer shows with its
citations as buttons that open the cited report, the invalid citation is removed and said, the
sources and the exact prompt are shown, markup in an answer stays text, and a back-end failure is
shown as an error. Saves test-artifacts/ask-panel.png."""

from __future__ import annotations

import pytest

from test_browser import ARTIFACTS, BackgroundServer, browser, demo_index, sync_api  # noqa: F401 (fixtures)
from test_rag import FakeLLMServer

pytestmark = pytest.mark.browser


@pytest.fixture()
def fake():
    server = FakeLLMServer()
    yield server
    server.close()


def _app(demo_index, llm_url):  # noqa: F811
    from radsift.search import Index
    from radsift.serve import create_app

    path, enc = demo_index
    return create_app(Index.open(path, encoder=enc), llm={"url": llm_url})


def test_ask_panel_answers_with_citations_sources_and_prompt(demo_index, browser, fake):  # noqa: F811
    fake.reply = "Pneumothorax [1], like [2]; see also [7]. <img src=x onerror=\"window.__pwned=1\">"
    with BackgroundServer(_app(demo_index, fake.url)) as srv:
        page = browser.new_page(viewport={"width": 1440, "height": 1000})
        errors: list[str] = []
        page.on("pageerror", lambda exc: errors.append(str(exc)))
        page.goto(srv.url + "/")
        sync_api.expect(page.locator("#index-info")).to_contain_text("reports")
        page.locator("#ask-box > summary").click()
        page.locator("#ask-q").fill("small right apical pneumothorax with a visible pleural line")
        page.locator("#ask-button").click()
        answer = page.locator("#ask-answer")
        sync_api.expect(answer).to_contain_text("Pneumothorax")
        assert answer.locator("button.cite").all_inner_texts() == ["1", "2"]
        assert "[7]" not in answer.inner_text()
        sync_api.expect(page.locator("#ask-notes")).to_contain_text("removed")
        assert page.evaluate("window.__pwned") is None and "<img" in answer.inner_text()
        sources = page.locator("#ask-sources li")
        assert sources.count() == 3
        assert "cited" in (sources.nth(0).get_attribute("class") or "")
        assert "cited" not in (sources.nth(2).get_attribute("class") or "")
        first_id = sources.nth(0).get_attribute("data-report-id")
        assert f"[1] Report {first_id}" in page.locator("#ask-prompt").text_content()
        sync_api.expect(page.locator("#ask-meta")).to_contain_text("openai-compatible")
        ARTIFACTS.mkdir(exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / "ask-panel.png"), full_page=True)

        # A citation opens the report it cites.
        answer.locator("button.cite").first.click()
        sync_api.expect(page.locator("#report-panel")).to_be_visible()
        sync_api.expect(page.locator("#report-title")).to_have_text(first_id)
        page.keyboard.press("Escape")

        # The model alone: no sources, and the request says so.
        page.locator("#ask-retrieval").uncheck()
        page.locator("#ask-button").click()
        sync_api.expect(page.locator("#ask-sources")).to_contain_text("the model answered alone")
        assert fake.requests[-1]["body"]["messages"][1]["content"].startswith("Findings:")

        # A back-end that returns garbage: a clear error, no answer.
        fake.mode = "garbage"
        page.locator("#ask-button").click()
        sync_api.expect(page.locator("#ask-status.error")).to_contain_text("not a chat completion")
        assert not errors
