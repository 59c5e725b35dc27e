"""The search page's cohort features (issue 19) in headless Chromium, like tests/test_browser.py
(whose server, browser and demo index fixtures it reuses; skips without Chromium or Playwright):
the counts above the hits, paging, relevance bands and their boundaries, Export (the cohort CSV and
its provenance, with the token), and saved searches (save, list, run, new only, remove, name errors).
"""

from __future__ import annotations

import csv
import io
import json
import math
import re
import urllib.request
from urllib.parse import parse_qs, urlencode, urlparse

import pytest

from test_browser import (  # noqa: F401 (fixtures)
    TOKEN,
    BackgroundServer,
    _app,
    _open_page,
    browser,
    demo_index,
    sync_api,
)

pytestmark = pytest.mark.browser
expect = sync_api.expect

# The page's defaults: findings, hybrid, negation aware, 25 results per page.
PAGE_SIZE = 25
DEFAULTS = {"target": "findings", "mode": "hybrid", "level": "report", "negation": "aware"}


def get(srv, path: str, params=None, token: str | None = None):
    """GET srv.url + path with ``params`` (a dict or a list of pairs): (status, headers, body bytes)."""
    url = srv.url + path + ("?" + urlencode(params, doseq=True) if params else "")
    req = urllib.request.Request(url, headers={"Authorization": f"Bearer {token}"} if token else {})
    with urllib.request.urlopen(req, timeout=30) as r:
        return r.status, dict(r.headers), r.read()


def api_search(srv, q: str, token: str | None = None, **params) -> dict:
    return json.loads(get(srv, "/api/search", {"q": q, "k": PAGE_SIZE, **DEFAULTS, **params}, token)[2])


def js_percent(relevance: float) -> int:
    return math.floor(relevance * 100 + 0.5)  # Math.round, not Python's round-half-even


def list_items(page) -> list[str]:
    """The hit list as shown: ``hit:BAND:ID`` for a hit, ``boundary:FROM-TO`` for a divider."""
    return page.locator("#hit-list > li").evaluate_all(
        "ns => ns.map(n => n.classList.contains('band-boundary') ? 'boundary:' + n.dataset.from + '-' + n.dataset.to"
        " : 'hit:' + (n.querySelector('.band-label') ? n.querySelector('.band-label').dataset.band : '') + ':'"
        " + n.dataset.reportId)")


def expected_items(hits: list[dict]) -> list[str]:
    """Where the dividers belong: after the last `states` hit, and between `related` and `unlikely`."""
    out, previous = [], None
    for h in hits:
        if previous == "states" and h["band"] != "states" or previous == "related" and h["band"] == "unlikely":
            out.append(f"boundary:{previous}-{h['band']}")
        out.append(f"hit:{h['band']}:{h['report_id']}")
        previous = h["band"]
    return out


def shown_ids(page) -> list[str]:
    return page.locator("#hit-list .hit").evaluate_all("ns => ns.map(n => n.dataset.reportId)")


def shown_ranks(page) -> list[int]:
    return [int(t) for t in page.locator("#hit-list .hit .rank").all_inner_texts()]


def run_query(page, q: str) -> None:
    with page.expect_response(lambda r: "/api/search" in r.url):
        page.locator("#q").fill(q)
        page.locator("#q").press("Enter")
    expect(page.locator("#hit-list .hit").first).to_be_visible()


def test_counts_and_paging(demo_index, browser):  # noqa: F811
    with BackgroundServer(_app(demo_index)) as srv:
        page, errors = _open_page(browser, srv)
        offsets: list[int] = []
        page.on("request", lambda r: offsets.append(int(parse_qs(urlparse(r.url).query).get("offset", ["0"])[0]))
                if "/api/search" in r.url else None)
        run_query(page, "pneumothorax")
        first = api_search(srv, "pneumothorax")
        assert first["matching"] is not None and first["total"] > 2 * PAGE_SIZE and first["more"]
        counts = page.get_by_test_id("counts")
        expect(counts).to_have_text(f"{first['matching']} reports state the reading · {first['total']:,} ranked · "
                                    f"showing 1–{PAGE_SIZE}")
        assert counts.get_attribute("aria-live") == "polite"
        assert shown_ranks(page) == list(range(1, PAGE_SIZE + 1))
        page1 = shown_ids(page)
        assert page1 == [h["report_id"] for h in first["hits"]]
        expect(page.get_by_test_id("prev")).to_be_disabled()
        expect(page.get_by_test_id("next")).to_be_enabled()

        # Next: the second page of the same ranked list, ranks going on from the page size.
        page.get_by_test_id("next").click()
        expect(page.locator("#hit-list .hit .rank").first).to_have_text(str(PAGE_SIZE + 1))
        assert offsets[-1] == PAGE_SIZE
        assert shown_ranks(page) == list(range(PAGE_SIZE + 1, 2 * PAGE_SIZE + 1))
        page2 = shown_ids(page)
        assert len(page2) == PAGE_SIZE and not set(page1) & set(page2)
        assert page2 == [h["report_id"] for h in api_search(srv, "pneumothorax", offset=PAGE_SIZE)["hits"]]
        expect(counts).to_contain_text(f"showing {PAGE_SIZE + 1}–{2 * PAGE_SIZE}")
        expect(page.get_by_test_id("prev")).to_be_enabled()
        assert "offset=25" in page.url  # the page is in the link

        # Previous goes back to the first page.
        page.get_by_test_id("prev").click()
        expect(page.locator("#hit-list .hit .rank").first).to_have_text("1")
        assert shown_ids(page) == page1 and offsets[-1] == 0
        expect(page.get_by_test_id("prev")).to_be_disabled()

        # A changed option starts again at the first page.
        page.get_by_test_id("next").click()
        expect(page.locator("#hit-list .hit .rank").first).to_have_text(str(PAGE_SIZE + 1))
        with page.expect_response(lambda r: "/api/search" in r.url):
            page.locator("#mode").select_option("bm25")
        expect(page.locator("#hit-list .hit .rank").first).to_have_text("1")
        assert offsets[-1] == 0

        # Negation ignored: nothing is read, so no "state the reading" part.
        page.locator("#mode").select_option("hybrid")
        with page.expect_response(lambda r: "/api/search" in r.url and "negation=ignore" in r.url):
            page.locator("#negation").uncheck()
        plain = api_search(srv, "pneumothorax", negation="ignore")
        assert plain["matching"] is None
        expect(counts).to_have_text(f"{plain['total']:,} ranked · showing 1–{PAGE_SIZE}")

        # The last page (from a link): Next is disabled there.
        last = first["total"] - PAGE_SIZE
        page.goto(srv.url + f"/#q=pneumothorax&target=findings&mode=hybrid&level=report&k={PAGE_SIZE}&offset={last}")
        page.reload()
        expect(page.locator("#hit-list .hit .rank").first).to_have_text(str(last + 1))
        expect(counts).to_contain_text(f"showing {last + 1}–{first['total']}")
        expect(page.get_by_test_id("next")).to_be_disabled()
        expect(page.get_by_test_id("prev")).to_be_enabled()
        assert errors == []


def test_bands_and_their_boundaries(demo_index, browser):  # noqa: F811
    with BackgroundServer(_app(demo_index)) as srv:
        page, errors = _open_page(browser, srv)
        run_query(page, "pneumothorax")
        api = api_search(srv, "pneumothorax")
        bands = [h["band"] for h in api["hits"]]
        assert "states" in bands and bands[-1] != "states"  # the query's boundary lies on the first page

        # Each hit's band with its relevance as a percentage.
        labels = page.locator("#hit-list .hit .band-label")
        expect(labels).to_have_count(PAGE_SIZE)
        assert labels.all_inner_texts() == [f"{h['band']} · {js_percent(h['relevance'])}%" for h in api["hits"]]

        # One divider, right after the last hit stating the reading.
        dividers = page.get_by_test_id("band-boundary")
        expect(dividers).to_have_count(1)
        expect(dividers).to_have_text("The reports stating the query's reading end here")
        assert dividers.get_attribute("role") == "separator"
        items = list_items(page)
        assert items == expected_items(api["hits"])
        last_states = max(i for i, item in enumerate(items) if item.startswith("hit:states:"))
        assert items[last_states + 1] == f"boundary:states-{bands[bands.index('states') + bands.count('states')]}"
        assert dividers.evaluate("n => n.previousElementSibling.querySelector('.band-label').dataset.band") == "states"
        assert dividers.evaluate("n => n.nextElementSibling.querySelector('.band-label').dataset.band") != "states"

        # Negation ignored: no reading, so related reports, and where they end.
        with page.expect_response(lambda r: "/api/search" in r.url and "negation=ignore" in r.url):
            page.locator("#q").fill("possible pneumonia")
            page.locator("#negation").uncheck()
        related = api_search(srv, "possible pneumonia", negation="ignore")
        assert "related" in [h["band"] for h in related["hits"]]
        expect(page.locator("#hit-list .hit").first).to_have_attribute("data-report-id", related["hits"][0]["report_id"])
        assert list_items(page) == expected_items(related["hits"])
        expect(page.locator("[data-testid=band-boundary][data-from=related]")).to_have_text("Related reports end here")
        assert errors == []


def test_export_downloads_the_cohort_and_its_provenance(demo_index, browser, tmp_path):  # noqa: F811
    with BackgroundServer(_app(demo_index, token=TOKEN)) as srv:
        page = browser.new_page(viewport={"width": 1440, "height": 900})
        errors: list[str] = []
        page.on("pageerror", lambda exc: errors.append(str(exc)))
        page.goto(srv.url + "/")
        page.locator("#token-input").fill(TOKEN)
        page.locator("#token-input").press("Enter")
        expect(page.locator("#index-info")).to_contain_text("301 reports")
        run_query(page, "pneumothorax")

        exports = []
        page.on("request", lambda r: exports.append(r) if "/api/export" in r.url else None)
        with page.expect_download(lambda d: d.suggested_filename == "cohort.csv.provenance.json") as prov_info, \
                page.expect_download(lambda d: d.suggested_filename == "cohort.csv") as csv_info:
            page.get_by_test_id("export").click()
        assert len(exports) == 1
        sent = parse_qs(urlparse(exports[0].url).query)
        assert exports[0].headers.get("authorization") == f"Bearer {TOKEN}"
        assert {k: v[0] for k, v in sent.items() if k in ("q", "mode", "target", "negation")} == {
            "q": "pneumothorax", "mode": "hybrid", "target": "findings", "negation": "aware"}

        csv_path = tmp_path / "cohort.csv"
        csv_info.value.save_as(csv_path)
        rows = list(csv.DictReader(io.StringIO(csv_path.read_text(encoding="utf-8"))))
        expected = json.loads(get(srv, "/api/export", {"q": "pneumothorax", "mode": "hybrid", "target": "findings",
                                                       "negation": "aware", "format": "json"}, TOKEN)[2])
        assert [r["report_id"] for r in rows] == [r["report_id"] for r in expected["rows"]]
        assert rows and {r["band"] for r in rows} == {"states"}

        prov_path = tmp_path / "cohort.csv.provenance.json"
        prov_info.value.save_as(prov_path)
        provenance = json.loads(prov_path.read_text(encoding="utf-8"))
        assert provenance["query"] == "pneumothorax"
        assert provenance["rows"] == len(rows)
        assert provenance["options"]["target"] == "findings"
        expect(page.locator("#export-note")).to_contain_text(f"Exported {len(rows)} reports")

        # The Cohort menu widens the export: every report of the ranked list.
        page.locator("#include").select_option("all")
        with page.expect_download(lambda d: d.suggested_filename == "cohort.csv") as all_info:
            page.get_by_test_id("export").click()
        all_path = tmp_path / "all.csv"
        all_info.value.save_as(all_path)
        assert parse_qs(urlparse(exports[-1].url).query)["include"] == ["all"]
        assert len(list(csv.DictReader(io.StringIO(all_path.read_text(encoding="utf-8"))))) == \
            api_search(srv, "pneumothorax", token=TOKEN)["total"]

        # A refused export (too many rows) is shown in the error area, and the hits stay.
        page.locator("#include").select_option("")
        page.route("**/api/export?*", lambda route: route.continue_(url=route.request.url + "&max_rows=3"))
        page.get_by_test_id("export").click()
        expect(page.locator("#status.error")).to_contain_text("422")
        expect(page.locator("#status.error")).to_contain_text("writes at most 3")
        expect(page.locator("#hit-list .hit")).to_have_count(PAGE_SIZE)
        expect(page.get_by_test_id("export")).to_be_enabled()
        assert errors == []


def test_saved_searches(demo_index, browser, tmp_path):  # noqa: F811
    saved_dir = tmp_path / "saved"
    with BackgroundServer(_app(demo_index, saved_dir=saved_dir)) as srv:
        page, errors = _open_page(browser, srv)
        items = page.locator("[data-testid=saved-list] [data-testid=saved-item]")
        expect(page.get_by_test_id("saved-list")).to_contain_text("None yet")
        expect(items).to_have_count(0)

        # Save the current search: it is listed with its query and options.
        run_query(page, "pneumothorax")
        page.get_by_test_id("saved-name").fill("ptx-followup")
        with page.expect_response(lambda r: r.url.endswith("/api/saved") and r.request.method == "POST"):
            page.get_by_test_id("save-search").click()
        item = page.locator("[data-testid=saved-item][data-name='ptx-followup']")
        expect(item).to_be_visible()
        expect(item).to_contain_text("pneumothorax")
        expect(item).to_contain_text("findings")
        saved = json.loads(get(srv, "/api/saved")[2])["saved"]
        assert [(s["name"], s["query"], s["options"]["target"]) for s in saved] == [
            ("ptx-followup", "pneumothorax", "findings")]

        # A name with "/" is refused with the API's words; so is a name already taken.
        page.get_by_test_id("saved-name").fill("bad/name")
        page.get_by_test_id("save-search").click()
        expect(page.get_by_test_id("saved-error")).to_contain_text("no path separators")
        page.get_by_test_id("saved-name").fill("ptx-followup")
        page.get_by_test_id("save-search").click()
        expect(page.get_by_test_id("saved-error")).to_contain_text("exists")
        expect(items).to_have_count(1)

        # The list is loaded with the page.
        page.goto(srv.url + "/")
        expect(items).to_have_count(1)

        # Run: its cohort's rows in the results, with the first-run note.
        run = json.loads(get(srv, "/api/saved/ptx-followup")[2])
        ids = [r["report_id"] for r in run["rows"]]
        assert len(ids) >= 3
        item.get_by_test_id("saved-run").click()
        expect(page.locator("#hit-list .hit")).to_have_count(len(ids))
        assert shown_ids(page) == ids
        expect(page.get_by_test_id("counts")).to_contain_text(f"{run['matching']} reports state the reading")
        expect(page.get_by_test_id("saved-run-notes")).to_contain_text("No earlier run")
        expect(page.get_by_test_id("next")).to_be_hidden()
        first = page.locator("#hit-list .hit").first
        expect(first.locator(".evidence mark.mention").first).to_be_visible()
        first.locator("button.open").click()
        expect(page.locator("#report-title")).to_have_text(ids[0])
        expect(page.locator("#report-body mark.mention").first).to_be_visible()
        page.keyboard.press("Escape")

        # New only, after a run that saw all but the first two reports (as `radsift saved run` records it);
        # the index was also rebuilt with another model since: a warning says so.
        (saved_dir / "ptx-followup.seen.json").write_text(json.dumps(ids[2:]), encoding="utf-8")
        meta = json.loads((saved_dir / "ptx-followup.json").read_text(encoding="utf-8"))
        assert meta["last_run"]  # the page's run was recorded
        meta["model_fingerprint"] = meta["last_run"]["model_fingerprint"] = "0000000000000000"
        (saved_dir / "ptx-followup.json").write_text(json.dumps(meta), encoding="utf-8")
        item.get_by_test_id("saved-new").check()
        with page.expect_response(lambda r: "/api/saved/ptx-followup/run?new=true" in r.url):
            item.get_by_test_id("saved-run").click()
        expect(page.locator("#hit-list .hit")).to_have_count(2)
        assert shown_ids(page) == ids[:2]
        notes = page.get_by_test_id("saved-run-notes")
        expect(notes).to_contain_text("Only reports added to the index since the last run")
        expect(notes).to_contain_text("rebuilt with another model")
        expect(page.get_by_test_id("counts")).to_contain_text("2 new in this cohort")
        # That run was recorded too: nothing is new any more.
        with page.expect_response(lambda r: "/api/saved/ptx-followup/run?new=true" in r.url):
            item.get_by_test_id("saved-run").click()
        expect(page.get_by_test_id("counts")).to_contain_text("0 new in this cohort")

        # Remove: gone from the list and from the server.
        with page.expect_response(lambda r: "/api/saved/ptx-followup" in r.url and r.request.method == "DELETE"):
            item.get_by_test_id("saved-remove").click()
        expect(items).to_have_count(0)
        assert json.loads(get(srv, "/api/saved")[2])["saved"] == []
        assert not re.search(r"ptx-followup\.json$", " ".join(p.name for p in saved_dir.iterdir()))
        assert errors == []
