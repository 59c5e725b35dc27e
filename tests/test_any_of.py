"""A finding read with its alternatives (the lexicon's ``any_of``; queries_v8 dev: "new pneumonia", "pneumonia getting
better" were judged relevant on "interval development of left lower lobe consolidation", "improved airspace disease"):
a query for pneumonia accepts a unit stating consolidation, an infiltrate or airspace disease; a denial stays
literal; ``read_as=literal`` drops the alternatives; both engines rank alike."""

from __future__ import annotations

import pytest

from radsift.records import Report
from radsift.search import candidates

R = [
    Report("named", {"findings": "Right lower lobe pneumonia. Heart size normal."}),
    Report("sign", {"findings": "New consolidation in the right lower lobe. Heart size normal."}),
    Report("airspace", {"findings": "Patchy airspace disease at the left base. Heart size normal."}),
    Report("atel", {"findings": "Left basilar atelectasis. Heart size normal."}),
    Report("clear", {"findings": "No consolidation. No pneumonia. Heart size normal."}),
    Report("other", {"findings": "Small left pleural effusion. Heart size normal."}),
]


@pytest.fixture(scope="module")
def index(hashing_index_of):
    return hashing_index_of("any_of", R)


def test_the_reading_names_the_alternatives_and_a_denial_stays_literal(index):
    f = index.read("pneumonia").findings[0]
    assert f.finding == "pneumonia" and f.any_of == ("consolidation", "infiltrate", "airspace disease")
    assert "or consolidation, infiltrate, airspace disease" in index.read("pneumonia").describe()
    assert index.read("no pneumonia").findings[0].any_of == ()
    assert index.read("pneumonia", read_as="literal").findings[0].any_of == ()
    # an alternative the query names itself is read on its own
    both = index.read("pneumonia with consolidation").findings
    assert [f.finding for f in both] == ["pneumonia", "consolidation"] and "consolidation" not in both[0].any_of


@pytest.mark.parametrize("engine", candidates.ENGINES)
def test_a_unit_stating_an_alternative_ranks_with_the_named_finding(index, monkeypatch, engine):
    monkeypatch.setenv(candidates.ENV, engine)
    order = [h.report_id for h in index.search("pneumonia", k=10, mode="hybrid")]
    assert set(order[:3]) == {"named", "sign", "airspace"}
    # with a change asked, the alternative saying it leads
    assert [h.report_id for h in index.search("new pneumonia", k=10, mode="hybrid")][0] == "sign"
    literal = {h.report_id: h.band for h in index.search("pneumonia", k=10, mode="hybrid", read_as="literal")}
    assert literal["named"] == "states" and literal["sign"] != "states"  # without them, the signs state nothing


@pytest.mark.parametrize("engine", candidates.ENGINES)
def test_counts_and_bands_read_the_alternatives(index, monkeypatch, engine):
    monkeypatch.setenv(candidates.ENV, engine)
    hits = index.search("pneumonia", k=10, mode="hybrid")
    assert {h.report_id for h in hits if h.band == "states"} == {"named", "sign", "airspace"}


def test_a_cohort_row_kept_for_an_alternative_carries_its_evidence(index):
    from radsift.search.cohort import collect_cohort

    cohort = collect_cohort(index, "pneumonia", include="states")
    rows = {r.hit.report_id: r for r in cohort.rows}
    assert set(rows) == {"named", "sign", "airspace"}
    assert [e.finding for e in rows["sign"].evidence] == ["consolidation"]
    assert [e.finding for e in rows["named"].evidence] == ["pneumonia"]
    # no concept links: the literal finding alone
    assert {r.hit.report_id for r in collect_cohort(index, "pneumonia", include="states", concepts=False).rows} == {"named"}


@pytest.mark.parametrize("engine", candidates.ENGINES)
def test_the_named_finding_ranks_before_its_alternatives_within_a_tier(hashing_index_of, monkeypatch, engine):
    # the signs are short and name pneumonia (a question), the named one is long: by similarity the signs lead
    reports = [Report(f"sign{i}", {"findings": f"Consolidation {i}. Rule out pneumonia."}) for i in range(3)] + [
        Report("named", {"findings": "Today the study shows a left basilar pneumonia among the many unrelated "
                                     "changes of the bones, the soft tissues and the upper abdomen."})]
    idx = hashing_index_of("any_of_named", reports)
    monkeypatch.setenv(candidates.ENV, engine)
    assert idx.search("pneumonia", k=10, mode="hybrid")[0].report_id == "named"


def test_copd_accepts_emphysema_and_keeps_hyperinflation_apart(hashing_index_of, monkeypatch):
    # queries_v11 dev "pleural effusion in a patient with COPD": judged relevant on "hyperinflated compatible with
    # emphysema" beside an effusion
    reports = [Report("emph", {"findings": "Emphysema. Small right pleural effusion."}),
               Report("hyper", {"findings": "Hyperinflated lungs. Small right pleural effusion."}),
               Report("named", {"findings": "COPD. Small right pleural effusion."})]
    idx = hashing_index_of("any_of_copd", reports)
    assert idx.read("COPD").findings[0].any_of == ("emphysema",)
    for engine in candidates.ENGINES:
        monkeypatch.setenv(candidates.ENV, engine)
        bands = {h.report_id: h.band for h in idx.search("pleural effusion in a patient with COPD", k=3, mode="hybrid")}
        assert bands["named"] == bands["emph"] == "states" and bands["hyper"] != "states"


GONE = [
    Report("resolved", {"findings": "Interval resolution of the left basilar airspace disease. Heart size normal."}),
    Report("denied", {"findings": "No pneumonia. Heart size normal."}),
    Report("still", {"findings": "Persistent left basilar airspace disease. Heart size normal."}),
    Report("nocons", {"findings": "No focal consolidation. Heart size normal."}),
]


@pytest.fixture(scope="module")
def gone_index(hashing_index_of):
    return hashing_index_of("any_of_gone", GONE)


@pytest.mark.parametrize("engine", candidates.ENGINES)
def test_a_finding_gone_keeps_its_alternatives_and_their_resolution_leads(gone_index, monkeypatch, engine):
    # queries_v6 dev "pneumonia cleared up": the judges counted "resolution of the left-sided airspace disease" and
    # "consolidation ... cleared"; a report's word for a pneumonia gone is its signs gone
    monkeypatch.setenv(candidates.ENV, engine)
    (f,) = gone_index.read("pneumonia cleared up").findings
    assert (f.status, f.any_of) == ("absent", ("consolidation", "infiltrate", "airspace disease"))
    hits = gone_index.search("pneumonia cleared up", k=10, mode="hybrid")
    order, bands = [h.report_id for h in hits], {h.report_id: h.band for h in hits}
    assert order[0] == "resolved" and order.index("denied") < order.index("still")
    # a plain denial of a sign says nothing of a pneumonia that cleared: it states no reading
    assert bands["resolved"] == bands["denied"] == "states" and bands["nocons"] != "states"
    assert order.index("denied") < order.index("nocons")
    assert gone_index.read("no pneumonia").findings[0].any_of == ()  # a plain denial stays literal
