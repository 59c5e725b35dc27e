"""A hit that states the concept linked beside the query's words, and not the words, is ``related``, not ``unlikely``
(:mod:`radsift.search.linkbands`; the twenty-seventh session's walkthrough: "Small right pneumothorax." was
``unlikely 0.01`` for *collapsed lung*). ``states`` still means the words; a hit stating their opposite keeps its band;
both engines band alike."""

from __future__ import annotations

from dataclasses import replace

import pytest

from radsift.records import QueryReading, ReadFinding, Report
from radsift.search import candidates
from radsift.search.concepts import Link
from radsift.search.linkbands import LINKED_SHARE, lifted
from radsift.search.reading import read_query


def test_lifted_only_where_the_link_is_stated_and_the_words_are_not():
    bands = [("unlikely", 0.01), ("unlikely", 0.02), ("states", 0.9), ("unlikely", 0.0), ("unlikely", 0.05)]
    classes = ["partial", "partial", "states", "opposite", "none"]
    got = lifted(bands, classes, [1.0, 1.0, 1.0, 1.0, 0.05], "hybrid", [True, False, True, True, True])
    assert got[0] == ("related", round(LINKED_SHARE, 3))  # capped at the share the judgments found
    assert got[1:4] == bands[1:4]  # no link stated; the words stated; their opposite stated
    assert got[4][1] <= LINKED_SHARE and got[4][1] >= bands[4][1]  # a low relative score: its own estimate
    assert lifted(bands, classes, [1.0] * 5, "hybrid", None) == bands


R = [Report("words", {"findings": "Collapsed lung on the right with a large pneumothorax."}),
     Report("link", {"findings": "Small right pneumothorax. Heart size normal."}),
     Report("denied", {"findings": "No pneumothorax. Heart size normal."}),
     Report("other", {"findings": "Mild cardiomegaly. No pleural effusion."})]


@pytest.fixture(scope="module")
def index(hashing_index_of):
    return hashing_index_of("link-bands", R)


@pytest.fixture()
def linked(monkeypatch):
    """'collapsed lung' read literally (the index holds the words) with pneumothorax linked beside it (the hashing
    encoder links nothing)."""
    def read(query, labeler, **kw):
        got = read_query(query, labeler, **{**kw, "link": lambda text: Link("pneumothorax", 0.95, "pneumothorax")})
        if not any(f.beside for f in got.findings):
            own = got.findings[0].finding
            got = replace(got, findings=got.findings + (
                ReadFinding("pneumothorax", "present", "linked", None, None, "pneumothorax", 0.95, beside=own),))
        return got

    monkeypatch.setattr("radsift.search.walk.read_query", read)


@pytest.mark.parametrize("engine", candidates.ENGINES)
@pytest.mark.parametrize("mode", ["hybrid", "dense"])
def test_a_report_stating_the_link_alone_is_related(index, monkeypatch, linked, engine, mode):
    monkeypatch.setenv(candidates.ENV, engine)
    hits = index.search("collapsed lung", k=10, mode=mode)
    assert any(f.beside for f in hits.reading.findings)
    band = {h.report_id: (h.band, h.relevance) for h in hits}
    assert band["words"][0] == "states"
    assert band["link"][0] == "related" and band["link"][1] <= LINKED_SHARE
    assert band.get("denied", ("unlikely",))[0] == "unlikely"
    assert band.get("other", ("unlikely",))[0] == "unlikely"


def test_no_link_beside_changes_no_band(index, monkeypatch):
    hits = index.search("pneumothorax", k=10, mode="hybrid")
    assert not any(f.beside for f in hits.reading.findings)
    assert {h.report_id: h.band for h in hits}["link"] == "states"
    assert isinstance(hits.reading, QueryReading)
