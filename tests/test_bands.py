"""Relevance bands (:mod:`radsift.ranking.bands`): the bins, the shrunk estimate, the band rule,
the strict table loader, the packaged (calibrated) table, and the bands the engine gives on a
tiny index written here (the hashing encoder: no model). One real-data check, cheap (a few
hundred Open-i reports, no model), skipped when ``../shared/data`` is absent.
"""

from __future__ import annotations

import copy
import json
import sys
from itertools import islice
from pathlib import Path

import numpy as np
import pytest

from radsift.index import build_index
from radsift.models.hashing import HashingEncoder
from radsift.ranking.bands import (BANDS, BIN_EDGES, RELATED_MIN, SCORE_KINDS, SHRINK, BandTable, band_of,
                                   fit_table, relative_scores, score_bin, score_kind)
from radsift.ranking.tiers import CLASS_NAMES
from radsift.records import Report

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))


# -- bins, estimate, band rule ----------------------------------------------------------------------
def test_score_bin_edges_are_closed_on_the_left():
    assert BIN_EDGES == (0.5, 0.6, 0.7, 0.8, 0.9)
    assert score_bin(0.0) == 0 and score_bin(0.4999) == 0
    assert score_bin(0.5) == 1 and score_bin(0.5999) == 1
    assert score_bin(0.6) == 2 and score_bin(0.7) == 3 and score_bin(0.8) == 4
    assert score_bin(0.8999) == 4 and score_bin(0.9) == 5 and score_bin(1.0) == 5


def test_score_kind_and_relative_scores():
    assert [score_kind(m) for m in ("dense", "bm25", "hybrid", "hybrid-rrf")] == ["dense", "bm25", "hybrid", "hybrid"]
    base = np.array([2.0, 1.0, 4.0, 0.5])
    assert relative_scores(base, [2, 0, 3]).tolist() == [1.0, 0.5, 0.125]
    # the best of the eligible units is the scale: an ineligible higher score does not count
    assert relative_scores(base, [0, 1], eligible=np.array([True, True, False, False])).tolist() == [1.0, 0.5]
    assert relative_scores(np.zeros(3), [0, 1]).tolist() == [0.0, 0.0]


def _table(observations) -> BandTable:
    return BandTable.from_dict(fit_table(observations), source="test")


def test_estimate_is_the_cell_share_shrunk_towards_the_class_share():
    obs = [("hybrid", "states", 0.95, True)] * 10 + [("hybrid", "states", 0.1, False)] * 10
    table = _table(obs)
    prior = (10 + 1) / (20 + 2)  # the class's share (Laplace): 0.5
    high = table.estimate("hybrid", "states", 0.99)
    assert high == pytest.approx((10 + SHRINK * prior) / (10 + SHRINK))
    assert prior < high < 1.0  # shrunk, not the raw 1.0
    low = table.estimate("hybrid", "states", 0.2)
    assert 0.0 < low < prior
    # a cell with no hits gives the class share
    assert table.estimate("hybrid", "states", 0.75) == pytest.approx(prior)
    # a class with no hits at all: 1/2; other kinds and classes are untouched by these hits
    assert table.estimate("dense", "states", 0.99) == pytest.approx(0.5)
    assert table.estimate("hybrid", "none", 0.99) == pytest.approx(0.5)


def test_thin_cells_swing_less_than_thick_ones():
    thin = _table([("bm25", "none", 0.95, True)] + [("bm25", "none", 0.1, False)] * 99)
    thick = _table([("bm25", "none", 0.95, True)] * 100 + [("bm25", "none", 0.1, False)] * 99)
    assert thin.estimate("bm25", "none", 0.95) < 0.5 < thick.estimate("bm25", "none", 0.95)


def test_band_of():
    assert band_of("opposite", 1.0) == "unlikely"  # the opposite of the query is never related
    assert band_of("states", 0.0) == "states"  # stating the reading is always the states band
    for cls in ("partial", "none"):
        assert band_of(cls, RELATED_MIN) == "related"
        assert band_of(cls, RELATED_MIN - 1e-9) == "unlikely"
        assert band_of(cls, 0.5, related_min=0.6) == "unlikely"
    assert RELATED_MIN == 0.2 and BANDS == ("states", "related", "unlikely")


# -- the loader and the packaged table -------------------------------------------------------------
def _good() -> dict:
    return fit_table([("dense", "states", 0.9, True)])


@pytest.mark.parametrize("damage, cell", [
    (lambda d: d["cells"].pop("bm25"), "cells.bm25"),
    (lambda d: d["cells"]["dense"].pop("opposite"), "cells.dense.opposite"),
    (lambda d: d["cells"]["hybrid"]["none"].pop(), "cells.hybrid.none"),
    (lambda d: d["cells"]["hybrid"]["none"].append([0, 0]), "cells.hybrid.none"),
    (lambda d: d["cells"]["dense"]["states"].__setitem__(2, [3, 4]), "cells.dense.states[2]"),
    (lambda d: d["cells"]["bm25"]["partial"].__setitem__(0, [-1, 0]), "cells.bm25.partial[0]"),
    (lambda d: d["cells"]["bm25"]["partial"].__setitem__(5, [2.0, 1]), "cells.bm25.partial[5]"),
    (lambda d: d["cells"]["bm25"]["partial"].__setitem__(5, [2]), "cells.bm25.partial[5]"),
    (lambda d: d.__setitem__("bin_edges", [0.5, 0.7, 0.9]), "bin_edges"),
])
def test_from_dict_refuses_a_bad_table_naming_the_cell(damage, cell):
    data = copy.deepcopy(_good())
    BandTable.from_dict(data, source="t.json")  # the undamaged table loads
    damage(data)
    with pytest.raises(ValueError) as err:
        BandTable.from_dict(data, source="t.json")
    assert cell in str(err.value) and "t.json" in str(err.value)


def test_packaged_table_is_calibrated_not_the_placeholder():
    table = BandTable.packaged()
    assert table.source.endswith("bands.json")
    for kind in SCORE_KINDS:
        for cls in CLASS_NAMES:
            assert len(table.cells[kind][cls]) == len(BIN_EDGES) + 1
    assert sum(n for n, _ in table.cells["hybrid"]["states"]) > 0
    for kind in SCORE_KINDS:  # every kind was fitted, with and without the reading
        assert sum(n for n, _ in table.cells[kind]["states"]) > 100
        assert sum(n for n, _ in table.cells[kind]["none"]) > 100
    raw = json.loads(Path(table.source).read_text(encoding="utf-8"))
    assert not raw["about"].startswith("placeholder") and "dev" in raw["about"]
    assert "bench_bands.py --calibrate" in raw["command"] and raw["date"]
    # what the calibration says, coarsely: stating the reading is far likelier relevant than not
    for kind in SCORE_KINDS:
        assert table.estimate(kind, "states", 0.95) > 0.7
        assert table.estimate(kind, "partial", 0.3) < RELATED_MIN


# -- the engine's bands on a tiny index ---------------------------------------------------------------
REPORTS = [
    Report("big", {"findings": "Cardiomegaly. Lungs are clear."}),
    Report("marked", {"findings": "Marked cardiomegaly with pulmonary edema."}),
    Report("enlarged", {"findings": "The heart is enlarged. No pneumothorax."}),
    Report("border", {"findings": "Borderline cardiomegaly."}),
    Report("no", {"findings": "No cardiomegaly. No pleural effusion."}),
    Report("normal", {"findings": "Heart size is normal. Lungs are clear."}),
    Report("clear", {"findings": "The lungs are clear."}),
    Report("ptx", {"findings": "Small right pneumothorax."}),
]
STATES_CARDIOMEGALY = {"big", "marked", "enlarged"}
DENIES_CARDIOMEGALY = {"no", "normal"}
MODES = ("dense", "bm25", "hybrid", "hybrid-rrf")


@pytest.fixture(scope="module")
def index(hashing_index_of):
    return hashing_index_of("bands", REPORTS)


def _stated_by_labels(index, finding: str, status: int) -> set[str]:
    """Reports one of whose sentences carries the stored label (finding, status)."""
    store = index.store
    labels = store.labels()
    code = store.manifest.findings.index(finding)
    rows = labels.row[(labels.finding == code) & (labels.status == status)]
    report_rows = np.unique(store.units("sentence").report_row[rows])
    return {store.report_ids[r] for r in report_rows.tolist()}


@pytest.mark.parametrize("mode", MODES)
def test_stating_reports_are_the_states_band_and_denying_ones_unlikely(index, mode):
    res = index.search("cardiomegaly", k=20, mode=mode)
    bands = {h.report_id: h.band for h in res}
    assert {r for r, b in bands.items() if b == "states"} == STATES_CARDIOMEGALY
    for rid in DENIES_CARDIOMEGALY & set(bands):  # bm25 does not list "Heart size is normal."
        assert bands[rid] == "unlikely"
    assert "no" in bands
    assert all(0.0 <= h.relevance <= 1.0 for h in res)
    assert res.matching == len(_stated_by_labels(index, "cardiomegaly", 1)) == len(STATES_CARDIOMEGALY)


@pytest.mark.parametrize("mode", ("dense", "hybrid"))
def test_an_absent_query_turns_the_bands_round(index, mode):
    res = index.search("no cardiomegaly", k=20, mode=mode)
    bands = {h.report_id: h.band for h in res}
    assert {r for r, b in bands.items() if b == "states"} == DENIES_CARDIOMEGALY
    assert all(bands[r] == "unlikely" for r in STATES_CARDIOMEGALY)
    assert res.matching == len(_stated_by_labels(index, "cardiomegaly", -1)) == 2


@pytest.mark.parametrize("mode", MODES)
def test_ignoring_negation_reads_no_class(index, mode):
    res = index.search("cardiomegaly", k=20, mode=mode, negation="ignore")
    assert res.matching is None
    assert len(res) and all(h.band in ("related", "unlikely") for h in res)


def test_the_calibration_script_records_what_the_engine_reads(index):
    """bench_bands.py recovers each hit's class and relative score from the engine's own table
    lookups: one per hit, in page order; this goes red if the engine stops reading them so."""
    from bench_bands import recording

    with recording() as rec:
        res = index.search("cardiomegaly", k=20, mode="hybrid")
        calls = list(rec.calls)
        rec.calls.clear()
        ignored = index.search("cardiomegaly", k=20, mode="hybrid", negation="ignore")
    assert len(calls) == len(res)
    classes = {h.report_id: cls for h, (_, cls, _) in zip(res, calls)}
    assert {r for r, c in classes.items() if c == "states"} == STATES_CARDIOMEGALY
    assert {classes[r] for r in DENIES_CARDIOMEGALY} == {"opposite"}
    assert classes["border"] == "partial" and classes["clear"] == "partial"
    assert {kind for kind, _, _ in calls} == {"hybrid"}
    assert all(0.0 <= rel <= 1.0 for _, _, rel in calls)
    assert [c for _, c, _ in rec.calls] == ["none"] * len(ignored)
    assert max(rel for _, _, rel in rec.calls) == pytest.approx(1.0)  # the best hit is the scale
    # outside the block the engine reads the packaged table again
    assert BandTable.packaged() is not None and not hasattr(BandTable.packaged(), "calls")


# -- real data, cheap -----------------------------------------------------------------------------------
@pytest.mark.shared
def test_states_band_on_real_openi_reports_is_what_the_judge_reads(shared_data, tmp_path):
    """400 Open-i reports (hashing encoder, BM25: a few seconds): the states band's reports state the
    query by the independent regex judge (at least 90%), and ``matching`` counts the labels' reports."""
    from bench_bands import RELEVANT_VERDICTS, phrase_regex
    from negation_judge import judge

    from radsift.corpus import ReaderOptions, read_corpus
    from radsift.search import Index

    options = ReaderOptions(format="csv", id_column="uid", sections={"findings": "findings", "impression": "impression"})
    reports = list(islice(read_corpus([shared_data / "openi" / "reports.csv"], options), 400))
    enc = HashingEncoder(tmp_path / "model")
    build_index(tmp_path / "idx", reports, encoder=enc, progress=False)
    idx = Index.open(tmp_path / "idx", encoder=enc)
    texts = {r.id: "\n".join(t for t in r.sections.values() if t) for r in reports}
    judged = stated = 0
    for name, polarity in (("cardiomegaly", "present"), ("pneumothorax", "absent"), ("pleural effusion", "present")):
        variants = [v for v in (phrase_regex(p) for p in idx.labeler.lexicon[name].synonyms) if v]
        res = idx.search(name if polarity == "present" else f"no {name}", k=50, mode="bm25", include_report=False,
                         mentions=False)
        assert res.matching == len(_stated_by_labels(idx, name, 1 if polarity == "present" else -1)) > 0
        for h in res:
            if h.band == "states":
                judged += 1
                stated += judge(texts[h.report_id], variants) in RELEVANT_VERDICTS[polarity]
    assert judged > 50 and stated / judged >= 0.9


def test_an_empty_class_takes_its_share_over_every_score_kind():
    from radsift.ranking.bands import BIN_EDGES, BandTable, fit_table

    data = fit_table([("bm25", "opposite", 0.95, False)] * 30 + [("bm25", "opposite", 0.95, True)] * 3)
    table = BandTable.from_dict(data)
    pooled = table.estimate("hybrid", "opposite", 0.95)  # no hybrid "opposite" hit: bm25's share
    assert 0.05 < pooled < 0.15
    empty = BandTable.from_dict(fit_table([]))
    assert empty.estimate("hybrid", "opposite", 0.9) == 0.0 and empty.estimate("hybrid", "partial", 0.9) == 0.5
    assert len(BIN_EDGES) == 5
