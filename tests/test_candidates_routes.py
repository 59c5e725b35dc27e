"""Searches moved from the exact engine onto the candidate engine (issue 33): open-vocabulary findings, section units.

For each route moved: :func:`radsift.search.candidates.exact_reason` lets it through, and the candidate
engine's pages, scores, bands and counts (``total``, ``matching``, ``lower_bound``) equal ``RADSIFT_ENGINE=exact``'s.
"""

from __future__ import annotations

import pytest
from engine_pages import answered as _answered
from engine_pages import engine_page as _page

from radsift.demo import generate_reports
from radsift.search import candidates, reading, shortlist

#: Queries read as findings outside the lexicon (``source == "open"``) on the demo reports: alone, denied,
#: uncertain, with a side word or a location, two phrases, one with no mention.
OPEN_QUERIES = ["mediastinal contours", "cardiomediastinal silhouette", "no cardiomediastinal silhouette",
                "pulmonary vascularity", "abnormal cardiomediastinal silhouette", "bony structures", "spine",
                "mediastinum", "possible mediastinum", "left mediastinum", "right lower lobe bony structures",
                "pulmonary vascularity and mediastinum", "no bony structures", "unheardof widget"]
SETTINGS = [{"mode": "hybrid", "level": "report"}, {"mode": "hybrid", "level": "sentence"},
            {"mode": "dense", "level": "report"}, {"mode": "bm25", "level": "report"},
            {"mode": "bm25", "level": "sentence"}, {"mode": "hybrid", "level": "report", "offset": 15},
            {"mode": "hybrid", "level": "report", "k": 3, "offset": 40},
            {"mode": "hybrid", "level": "report", "target": "impression"},
            {"mode": "bm25", "level": "report", "where": ["site=north"], "offset": 10},
            {"mode": "hybrid", "level": "report", "where": ["site=south"]},
            {"mode": "dense", "level": "sentence", "where": ["site=north"], "k": 25}]

#: Lexicon queries (one finding, denied, a side, a location, several findings, no finding) for section units.
LEXICON_QUERIES = ["no pneumothorax", "pneumothorax", "small left pleural effusion", "no right pneumothorax",
                   "no cardiomegaly", "endotracheal tube", "possible consolidation", "left", "lungs are clear",
                   "cardiomegaly with pulmonary edema and bilateral effusions", "right lower lobe consolidation",
                   "no acute cardiopulmonary abnormality"]
SECTION_SETTINGS = [{**kw, "unit": "section"} for kw in SETTINGS]


@pytest.fixture(scope="module")
def index(tmp_path_factory, sited_demo_index_at):
    return sited_demo_index_at(tmp_path_factory.mktemp("routes"))


def _forget_open(index) -> None:
    """Drop what the candidate engine kept of open phrases (a test that changes how they are read)."""
    post = candidates.ReadingPostings.of(index.store, "sentence")
    post._open.clear()
    post._readings.clear()
    for key in [k for k in post._views if isinstance(k[0], tuple)]:
        post._views.pop(key)


def test_the_queries_are_read_as_open_vocabulary_findings(index):
    for q in OPEN_QUERIES:
        read = index.read(q)
        assert any(not f.labeled for f in read.findings) and not any(f.beside for f in read.findings), q
        req = type("R", (), {"options": type("O", (), {"mode": "hybrid", "negation": "aware", "first_stage": None,
                                                       "prf": False, "unit": "sentence"})()})()
        assert candidates.exact_reason(req, read, None) is None, q


@pytest.mark.parametrize("kw", SETTINGS, ids=lambda kw: "-".join(f"{k}={v}" for k, v in kw.items()))
def test_open_vocabulary_pages_and_counts_equal_the_exact_engine(index, monkeypatch, kw):
    calls = _answered(monkeypatch)
    for q in OPEN_QUERIES:
        assert _page(index, monkeypatch, "candidates", q, **kw) == _page(index, monkeypatch, "exact", q, **kw), q
    assert len(calls) == len(OPEN_QUERIES), "an open-vocabulary search went to the exact engine"


def test_open_vocabulary_with_tiny_pools_is_widened_until_exact(index, monkeypatch):
    monkeypatch.setattr(shortlist, "FIRST_DEPTH", 1)
    monkeypatch.setattr(shortlist, "BM25_FIRST", 1)
    for kw in SETTINGS[:4]:
        for q in OPEN_QUERIES:
            assert _page(index, monkeypatch, "candidates", q, **kw) == _page(index, monkeypatch, "exact", q, **kw), q


def test_a_capped_phrase_says_its_count_is_a_lower_bound_in_both_engines(index, monkeypatch):
    """More candidate sentences than the reader reads: the same mentions read, ``matching`` a lower bound."""
    monkeypatch.setattr(reading, "OPEN_CANDIDATES", 7)
    _forget_open(index)
    try:
        for q in ("cardiomediastinal silhouette", "no cardiomediastinal silhouette", "mediastinum"):
            for kw in SETTINGS[:4]:
                got = _page(index, monkeypatch, "candidates", q, **kw)
                assert got == _page(index, monkeypatch, "exact", q, **kw), q
                assert got[1][2] is True, q
    finally:
        monkeypatch.undo()
        _forget_open(index)


def test_an_open_phrase_is_read_once_per_store(index, monkeypatch):
    _forget_open(index)
    reads = []
    real = candidates.open_mentions
    monkeypatch.setattr(candidates, "open_mentions", lambda *a, **k: reads.append(a[0]) or real(*a, **k))
    monkeypatch.setenv(candidates.ENV, "candidates")
    for kw in SETTINGS[:3]:
        index.search("pulmonary vascularity", **kw)
    assert reads == ["pulmonary vascularity"]


def test_open_phrases_kept_are_bounded(index, monkeypatch):
    monkeypatch.setattr(candidates, "OPEN_KEPT", 2)
    _forget_open(index)
    monkeypatch.setenv(candidates.ENV, "candidates")
    for q in OPEN_QUERIES[:5]:
        index.search(q)
    post = candidates.ReadingPostings.of(index.store, "sentence")
    assert len(post._open) == 2
    assert all(k[0][1] in post._open for k in post._views if isinstance(k[0], tuple))
    _forget_open(index)


def test_a_link_beside_the_literal_reading_goes_to_the_candidate_engine(index):
    """Moved in its turn (tests/test_candidates_beside.py): only a link beside no literal reading stays."""
    from radsift.records import QueryReading, ReadFinding
    read = QueryReading((ReadFinding("mediastinum", "present", "open", None, None),
                         ReadFinding("cardiomegaly", "present", "linked", None, None, "x", 0.9, beside="mediastinum")),
                        None, "aware")
    req = type("R", (), {"options": type("O", (), {"mode": "hybrid", "negation": "aware", "first_stage": None,
                                                   "prf": False, "unit": "sentence"})()})()
    assert candidates.exact_reason(req, read, None) is None
    alone = type(read)(read.findings[1:], None, "aware")
    assert candidates.exact_reason(req, alone, None) == "a link beside no literal reading"


def test_units_with_terms_from_postings_is_the_scan_over_every_unit(index):
    """The open reader's candidates (sentences holding every word, best match first) from the terms' postings:
    the rows and order of the scan over every unit."""
    from radsift.ranking.bm25 import units_with_terms
    from radsift.text.tokens import tokenize

    retriever = index.store.bm25("sentence")
    n = index.store.units("sentence").report_row.shape[0]
    scan = type("Scan", (), {"vocab_dict": retriever.vocab_dict, "get_scores": lambda self, t: retriever.get_scores(t)})()
    for q in OPEN_QUERIES + ["pleural effusion", "the lungs are clear", "no acute", "left left"]:
        stems = tokenize(q)
        got = units_with_terms(retriever, stems, n)
        assert got.tolist() == units_with_terms(scan, stems, n).tolist(), q


@pytest.mark.parametrize("level", ["report", "sentence"])
def test_every_unit_left_out_is_bounded_or_its_report_already_stands_higher(index, level):
    """``QueryTiers.lowest_outside``: a unit left out of a pool either has a tier no lower than the bound, or (report
    level) a unit of its report inside the pool has a strictly lower tier (so it cannot stand for its report)."""
    import numpy as np

    from radsift.search.plan import unit_locations, unit_sides

    store = index.store
    post = candidates.ReadingPostings.of(store, "sentence")
    codes = {f: i for i, f in enumerate(store.manifest.findings)}
    rng = np.random.default_rng(0)
    n = post.n_units
    every = np.arange(n)
    for q in OPEN_QUERIES[:6] + ["no pneumothorax", "cardiomegaly", "left pleural effusion", "no cardiomegaly"]:
        read = index.read(q)
        sides = unit_sides(store, "sentence") if read.side else None
        places = unit_locations(store, "sentence")[0] if read.regions else None
        qt = candidates.QueryTiers(store, read, post, codes, level == "report", sides, places, index.labeler)
        tiers = qt.tiers(every)
        for size in (5, 50, 400):
            inside = np.unique(np.concatenate([rng.choice(n, size, replace=False), qt.keep_rows()[:size]]))
            low = qt.lowest_outside([inside], None)
            out = np.setdiff1d(every, inside)
            best_in = np.full(post.n_reports, np.iinfo(np.int64).max)
            np.minimum.at(best_in, post.report_row[inside], tiers[inside])
            beaten = best_in[post.report_row[out]] < tiers[out] if level == "report" else np.zeros(out.size, bool)
            assert ((tiers[out] >= low) | beaten).all(), (q, size)


@pytest.mark.parametrize("kw", SECTION_SETTINGS, ids=lambda kw: "-".join(f"{k}={v}" for k, v in kw.items()))
def test_section_units_pages_and_counts_equal_the_exact_engine(index, monkeypatch, kw):
    calls = _answered(monkeypatch)
    for q in LEXICON_QUERIES + OPEN_QUERIES[:6]:
        assert _page(index, monkeypatch, "candidates", q, **kw) == _page(index, monkeypatch, "exact", q, **kw), q
    assert len(calls) == len(LEXICON_QUERIES) + 6, "a section search went to the exact engine"


def test_section_units_with_tiny_pools_are_widened_until_exact(index, monkeypatch):
    monkeypatch.setattr(shortlist, "FIRST_DEPTH", 1)
    monkeypatch.setattr(shortlist, "BM25_FIRST", 1)
    for kw in SECTION_SETTINGS[:5]:
        for q in LEXICON_QUERIES + OPEN_QUERIES[:4]:
            assert _page(index, monkeypatch, "candidates", q, **kw) == _page(index, monkeypatch, "exact", q, **kw), q


@pytest.fixture(scope="module")
def long_index(hashing_index_of):
    """Demo reports, one in four with a findings section of many reports' findings: sections of several windows."""
    base = [d.report for d in generate_reports(n=160, seed=11)]
    reports = []
    for i, r in enumerate(base):
        sections = dict(r.sections)
        if i % 4 == 0:
            sections["findings"] = " ".join(b.sections.get("findings", "") for b in base[i:i + 40])
        reports.append(r.__class__(r.id, sections, r.metadata))
    return hashing_index_of("routes-long", reports)


def test_sections_of_several_windows_score_by_their_best_window_in_both_engines(long_index, monkeypatch):
    assert long_index.store.units("section").windows is not None
    calls = _answered(monkeypatch)
    for kw in SECTION_SETTINGS[:7]:
        for q in LEXICON_QUERIES[:8] + OPEN_QUERIES[:3]:
            assert _page(long_index, monkeypatch, "candidates", q, **kw) == \
                _page(long_index, monkeypatch, "exact", q, **kw), (q, kw)
    assert calls


@pytest.mark.parametrize("gap", [0.0, 0.05, 0.5, 3.0])
def test_calibrated_tier_boosts_pages_and_counts_equal_the_exact_engine(index, monkeypatch, gap):
    """``gap``: each tier costs ``gap`` times the score spread (a much better score crosses a tier). The stop rule's
    bound holds for any step; no report counts as covered by a unit of a lower tier."""
    monkeypatch.setattr(index, "tier_gap", gap)
    calls = _answered(monkeypatch)
    queries = LEXICON_QUERIES + OPEN_QUERIES[:6]
    for kw in SETTINGS[:7] + SETTINGS[9:] + SECTION_SETTINGS[:1]:
        for q in queries:
            assert _page(index, monkeypatch, "candidates", q, **kw) == _page(index, monkeypatch, "exact", q, **kw), \
                (q, kw)
    assert len(calls) == len(queries) * 10, "a search with calibrated tier boosts went to the exact engine"


@pytest.mark.parametrize("gap", [0.05, 0.5])
def test_calibrated_tier_boosts_with_tiny_pools_are_widened_until_exact(index, monkeypatch, gap):
    monkeypatch.setattr(index, "tier_gap", gap)
    monkeypatch.setattr(shortlist, "FIRST_DEPTH", 1)
    monkeypatch.setattr(shortlist, "BM25_FIRST", 1)
    for kw in SETTINGS[:5]:
        for q in LEXICON_QUERIES + OPEN_QUERIES[:4]:
            assert _page(index, monkeypatch, "candidates", q, **kw) == _page(index, monkeypatch, "exact", q, **kw), \
                (q, kw)
