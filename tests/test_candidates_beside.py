"""A concept linked beside the literal reading, on the candidate engine (issue 33; issue 35 item 1).

Lay phrasings keep their literal reading and the link orders units within its tiers. The hashing encoder never
links, so the tests link (``Index._link_function`` replaced: open phrases of the demo reports, each to a lexicon
concept) or add the link to the reading directly (lexicon readings: several findings, sides, locations, two
links). For every mode and level, section units, a filter and paging, the candidate engine answers and its pages,
scores, bands, ``total``, ``matching`` and ``lower_bound`` equal ``RADSIFT_ENGINE=exact``'s.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from engine_pages import answered as _answered
from engine_pages import engine_page as _page

from radsift.ranking.tiers import NORMAL_SCALE
from radsift.records import QueryReading, ReadFinding
from radsift.search import beside, candidates, shortlist
from radsift.search.concepts import Link
from radsift.search.normals import NormalKeyed, unit_normal_keys
from radsift.search.options import check_search, search_options
from radsift.search.plan import plan_search, unit_locations, unit_sides
from radsift.search.reading import asks_for_finding, read_query

#: Open phrases of the demo reports (the literal reading stays: the index holds them) -> the concept linked.
LINKED = {"mediastinal contours": "cardiomegaly", "no cardiomediastinal silhouette": "enlarged cardiomediastinum",
          "pulmonary vascularity": "pulmonary edema", "bony structures": "fracture",
          "possible mediastinum": "pleural effusion", "left mediastinum": "pleural effusion",
          "right lower lobe bony structures": "consolidation", "no bony structures": "rib fracture",
          "spine": "scoliosis", "pulmonary vascularity and mediastinum": "vascular congestion",
          "cardiomediastinal silhouette": "atelectasis"}
#: Lexicon readings with links added beside them: (finding, status) of each link.
ADDED = {"no pneumothorax": [("pleural effusion", "absent")],
         "small left pleural effusion": [("pneumothorax", "present")],
         "cardiomegaly with pulmonary edema and bilateral effusions": [("vascular congestion", "present"),
                                                                       ("atelectasis", "uncertain")],
         "right lower lobe consolidation": [("pneumonia", "present")],
         "possible consolidation": [("atelectasis", "uncertain")],
         "no acute cardiopulmonary abnormality": [("cardiomegaly", "absent")]}
QUERIES = list(LINKED) + list(ADDED)
SETTINGS = [{"mode": "hybrid", "level": "report"}, {"mode": "hybrid", "level": "sentence"},
            {"mode": "dense", "level": "report"}, {"mode": "dense", "level": "sentence"},
            {"mode": "bm25", "level": "report"}, {"mode": "bm25", "level": "sentence"},
            {"mode": "hybrid", "level": "report", "offset": 15}, {"mode": "hybrid", "level": "report", "k": 3,
                                                                  "offset": 40},
            {"mode": "hybrid", "level": "report", "target": "impression"},
            {"mode": "hybrid", "level": "report", "where": ["site=north"]},
            {"mode": "bm25", "level": "report", "where": ["site=south"], "offset": 10},
            {"mode": "dense", "level": "sentence", "where": ["site=north"], "k": 25},
            {"mode": "hybrid", "level": "report", "unit": "section"},
            {"mode": "hybrid", "level": "sentence", "unit": "section", "where": ["site=north"]},
            {"mode": "bm25", "level": "report", "unit": "section", "offset": 5}]


def _ids(kw):
    return "-".join(f"{k}={v}" for k, v in kw.items())


@pytest.fixture(scope="module")
def index(tmp_path_factory, sited_demo_index_at):
    return sited_demo_index_at(tmp_path_factory.mktemp("beside"))


def _reading(query: str, labeler, **kw) -> QueryReading:
    """``read_query``'s reading with the links of :data:`LINKED` (through the linker's place) and :data:`ADDED`."""
    concept = LINKED.get(query, "pleural effusion")
    got = read_query(query, labeler, **{**kw, "link": lambda text: Link(concept, 0.9, concept)})
    if query in ADDED and got.findings:
        links = tuple(ReadFinding(f, s, "linked", None, got.side, f, 0.9, beside=got.findings[0].finding)
                      for f, s in ADDED[query])
        got = replace(got, findings=got.findings + links)
    return got


@pytest.fixture()
def linked(monkeypatch):
    """Every search (both engines) reads its query with the links above."""
    monkeypatch.setattr("radsift.search.walk.read_query",
                        lambda query, labeler, **kw: _reading(query, labeler, **kw))


def test_every_query_is_read_with_a_link_beside_its_literal_reading(index, linked):
    from radsift.search import walk
    from radsift.search.plan import literal_check

    for q in QUERIES:
        read = walk.read_query(q, index.labeler, link=None, literal=literal_check(index.store))
        own = [f for f in read.findings if not f.beside]
        assert own and any(f.beside for f in read.findings), q
        assert all(f.beside == own[0].finding for f in read.findings if f.beside), q


@pytest.mark.parametrize("kw", SETTINGS, ids=_ids)
def test_beside_pages_and_counts_equal_the_exact_engine(index, monkeypatch, linked, kw):
    calls = _answered(monkeypatch)
    for q in QUERIES:
        assert _page(index, monkeypatch, "candidates", q, **kw) == _page(index, monkeypatch, "exact", q, **kw), q
    assert len(calls) == len(QUERIES), "a search with a link beside its reading went to the exact engine"


@pytest.mark.parametrize("first", [1, 7])
def test_beside_with_tiny_pools_is_widened_until_exact(index, monkeypatch, linked, first):
    monkeypatch.setattr(shortlist, "FIRST_DEPTH", first)
    monkeypatch.setattr(shortlist, "BM25_FIRST", first)
    for kw in SETTINGS[:6] + SETTINGS[12:13]:
        for q in QUERIES:
            assert _page(index, monkeypatch, "candidates", q, **kw) == _page(index, monkeypatch, "exact", q, **kw), \
                (q, kw)


@pytest.mark.parametrize("first", [1, 1000])
@pytest.mark.parametrize("gap", [0.05, 0.5])
def test_beside_with_calibrated_tier_boosts_equals_the_exact_engine(index, monkeypatch, linked, gap, first):
    monkeypatch.setattr(index, "tier_gap", gap)
    monkeypatch.setattr(shortlist, "FIRST_DEPTH", first)
    monkeypatch.setattr(shortlist, "BM25_FIRST", first)
    calls = _answered(monkeypatch)
    for kw in SETTINGS[:7] + SETTINGS[9:10]:
        for q in QUERIES:
            assert _page(index, monkeypatch, "candidates", q, **kw) == _page(index, monkeypatch, "exact", q, **kw), \
                (q, kw)
    assert len(calls) == 8 * len(QUERIES)


def _tiers(index, query: str, level: str, unit: str = "sentence"):
    """(the candidate engine's tiers, the exact engine's plan) of ``query`` read with its links."""
    store = index.store
    read = _reading(query, index.labeler, literal=lambda stems: True)
    opts = check_search(query, search_options(level=level, unit=unit), store.manifest.sections,
                        store.manifest.metadata_keys)
    post = candidates.ReadingPostings.of(store, unit)
    qt = beside.query_tiers(store, read, post, {f: i for i, f in enumerate(store.manifest.findings)},
                            level == "report", unit_sides(store, unit) if read.side else None,
                            unit_locations(store, unit)[0] if read.regions else None, index.labeler)
    return _keyed(qt, store, read, query, unit, level == "report"), plan_search(store, opts, read, index.labeler), post


def _keyed(qt, store, read, query: str, unit: str, by_report: bool):
    """``qt`` with the normal key where the query asks for a finding, as the candidate engine's page adds it."""
    if asks_for_finding(read, query):
        return NormalKeyed(qt, unit_normal_keys(store, unit, by_report), NORMAL_SCALE[by_report])
    return qt


@pytest.mark.parametrize("unit", ["sentence", "section"])
@pytest.mark.parametrize("level", ["report", "sentence"])
def test_the_tiers_of_every_unit_are_the_exact_engines(index, level, unit):
    """``literal * (L + 1) + link`` with ``L`` the highest link tier of every unit, exactly (float32 scores
    ``base - tier * step`` then round alike); the kept units and the classes follow the literal reading."""
    for q in QUERIES:
        qt, plan, post = _tiers(index, q, level, unit)
        assert isinstance(getattr(qt, "inner", qt), beside.BesideTiers), q
        every = np.arange(post.n_units)
        assert np.array_equal(qt.tiers(every), plan.tiers), q
        assert np.array_equal(np.flatnonzero(plan.keep), qt.keep_rows()), q
        assert np.array_equal(qt.states(every), plan.keep), q
        assert qt.scale > 1, q


@pytest.mark.parametrize("strict", [True, False])
@pytest.mark.parametrize("level", ["report", "sentence"])
def test_every_unit_left_out_is_bounded_or_its_report_already_stands_higher(index, level, strict):
    """``BesideTiers.lowest_outside``: a unit left out of a pool either has a tier no lower than the bound, or (report
    level, strict tiers) a unit of its report inside the pool has a strictly lower tier (so it cannot stand for its
    report). Calibrated boosts (``strict`` False): a lower tier no longer outranks every score, so every unit left
    out is bounded (the literal readings alone too)."""
    rng = np.random.default_rng(1)
    for q in QUERIES + ["no pneumothorax", "cardiomegaly", "left pleural effusion", "right lower lobe consolidation"]:
        qt, plan, post = _tiers(index, q, level)
        tiers, n = plan.tiers, post.n_units
        every = np.arange(n)
        mask = every % 3 != 0
        for size in (3, 30, 300):
            inside = np.unique(np.concatenate([rng.choice(n, size, replace=False), qt.keep_rows()[:size],
                                               getattr(qt, "link", qt).keep_rows()[:size]]))
            for elig in (None, mask):
                low = qt.lowest_outside([inside], None if elig is None else (lambda rows: elig[rows]), strict)
                out = np.setdiff1d(every, inside)
                out = out if elig is None else out[elig[out]]
                best_in = np.full(post.n_reports, np.iinfo(np.int64).max)
                np.minimum.at(best_in, post.report_row[inside], tiers[inside])
                beaten = best_in[post.report_row[out]] < tiers[out] if level == "report" and strict else \
                    np.zeros(out.size, bool)
                assert ((tiers[out] >= low) | beaten).all(), (q, size)
                assert low <= int(tiers[out][~beaten].min(initial=np.iinfo(np.int64).max)), (q, size)


def test_a_link_beside_no_literal_reading_goes_to_the_exact_engine(index):
    """Only links (no literal finding: the exact engine then reads no link either) stay on the exact engine."""
    req = type("R", (), {"options": type("O", (), {"mode": "hybrid", "negation": "aware", "first_stage": None,
                                                   "prf": False, "unit": "sentence"})()})()
    alone = QueryReading((ReadFinding("cardiomegaly", "present", "linked", None, None, "x", 0.9, beside="spine"),))
    assert candidates.exact_reason(req, alone, None) == "a link beside no literal reading"
    both = QueryReading((ReadFinding("spine", "present", "open"),) + alone.findings)
    assert candidates.exact_reason(req, both, None) is None


def test_a_plain_unit_standing_for_its_report_is_bounded(tmp_path, monkeypatch):
    """A report stating both findings from two units that each deny the other: its plain units ("The lungs are
    clear.") rank above both and stand for it. A pool holding the two (or one plain unit too) leaves a plain unit
    out: the bound (the report is not covered, its plain tier counts) says so, with the link beside or without it."""
    from radsift.index import build_index
    from radsift.models.hashing import HashingEncoder
    from radsift.records import Report
    from radsift.search import Index

    enc = HashingEncoder(tmp_path / "model")
    build_index(tmp_path / "idx", [
        Report("r0", {"findings": "Cardiomegaly but no pleural effusion. Pleural effusion without cardiomegaly. "
                                  "The lungs are clear. The bones are intact."}),
        Report("r1", {"findings": "The lungs are clear. Small pneumothorax."}),
        Report("r2", {"findings": "Normal chest. No pneumothorax."})], encoder=enc, progress=False)
    index = Index.open(tmp_path / "idx", encoder=enc)
    store, query = index.store, "cardiomegaly and pleural effusion"
    post = candidates.ReadingPostings.of(store, "sentence")
    codes = {f: i for i, f in enumerate(store.manifest.findings)}
    literal = QueryReading((ReadFinding("cardiomegaly", "present", "lexicon"),
                            ReadFinding("pleural effusion", "present", "lexicon")))
    link = ReadFinding("pneumothorax", "present", "linked", None, None, "pneumothorax", 0.9, beside="cardiomegaly")
    request = check_search(query, search_options(level="report"), store.manifest.sections, store.manifest.metadata_keys)
    for read in (literal, replace(literal, findings=literal.findings + (link,))):
        tiers = plan_search(store, request, read, index.labeler).tiers
        assert tiers[2] == tiers[3] < min(tiers[0], tiers[1])  # the plain units stand for r0
        qt = _keyed(beside.query_tiers(store, read, post, codes, True, None, None, index.labeler), store, read, query,
                    "sentence", True)
        assert np.array_equal(qt.tiers(np.arange(post.n_units)), tiers)
        for elig in (None, lambda rows: np.ones(len(rows), dtype=bool)):
            assert qt.lowest_outside([np.array([0, 1])], elig) <= tiers[2]
            # a plain unit inside does not cover its report: another one, as good, may stand for it
            assert qt.lowest_outside([np.array([0, 1, 2])], elig) <= tiers[3]
        monkeypatch.setattr("radsift.search.walk.read_query", lambda *a, _r=read, **k: _r)
        monkeypatch.setattr(shortlist, "FIRST_DEPTH", 1)
        for k in (1, 2):
            assert _page(index, monkeypatch, "candidates", query, k=k) == _page(index, monkeypatch, "exact", query, k=k)


def test_tiers_are_exact_where_every_unit_states_something(tmp_path):
    """Where no unit is plain, the highest unit tier of every unit (the report tier's multiplier) and the link's
    ``L`` are the special units' alone, as the exact engine's ``tiers.max()``."""
    from radsift.index import build_index
    from radsift.models.hashing import HashingEncoder
    from radsift.records import Report
    from radsift.search import Index

    enc = HashingEncoder(tmp_path / "model")
    build_index(tmp_path / "idx", [Report("r0", {"findings": "Cardiomegaly and pleural effusion."}),
                                   Report("r1", {"findings": "Cardiomegaly. Cardiomegaly again."}),
                                   Report("r2", {"findings": "Cardiomegaly with pleural effusion. Cardiomegaly."})],
                encoder=enc, progress=False)
    index = Index.open(tmp_path / "idx", encoder=enc)
    store, query = index.store, "cardiomegaly and pleural effusion"
    post = candidates.ReadingPostings.of(store, "sentence")
    codes = {f: i for i, f in enumerate(store.manifest.findings)}
    literal = QueryReading((ReadFinding("cardiomegaly", "present", "lexicon"),
                            ReadFinding("pleural effusion", "present", "lexicon")))
    link = ReadFinding("cardiomegaly", "present", "linked", None, None, "cardiomegaly", 0.9, beside="pleural effusion")
    linked = QueryReading((ReadFinding("pleural effusion", "present", "lexicon"), link))
    for level in ("report", "sentence"):
        request = check_search(query, search_options(level=level), store.manifest.sections,
                               store.manifest.metadata_keys)
        for read in (literal, linked):
            qt = _keyed(beside.query_tiers(store, read, post, codes, level == "report", None, None, index.labeler),
                        store, read, query, "sentence", level == "report")
            assert np.array_equal(qt.tiers(np.arange(post.n_units)), plan_search(store, request, read,
                                                                                 index.labeler).tiers), (level, read)
