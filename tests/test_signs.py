"""A finding read by the signs a film shows it by (the lexicon's ``signs``; queries_v11 dev "pacemaker with no signs of
heart failure", queries_v12 dev "emphysema without signs of CHF": the judges count "No pulmonary edema." as no sign
of heart failure, and pulmonary edema or vascular congestion as heart failure). A query denying the finding accepts a
unit denying a sign, and a unit stating a sign contradicts it; a query asking it present accepts a unit stating a
sign, as ``any_of`` does; both engines rank alike."""

from __future__ import annotations

import pytest

from radsift.errors import LexiconError
from radsift.labels.lexicon import load_lexicon
from radsift.records import Report
from radsift.search import candidates

R = [
    Report("denied", {"findings": "Emphysema. No pulmonary edema."}),
    Report("silent", {"findings": "Emphysema with hyperinflated lungs and flattened hemidiaphragms, unchanged."}),
    Report("sign", {"findings": "Emphysema. Mild pulmonary edema."}),
    Report("named", {"findings": "Emphysema. Congestive heart failure."}),
    Report("clear", {"findings": "Heart size normal. Lungs clear."}),
]


@pytest.fixture(scope="module")
def index(hashing_index_of):
    return hashing_index_of("signs", R)


def test_signs_name_other_concepts_and_an_unknown_one_names_its_line(tmp_path) -> None:
    assert load_lexicon(None)["congestive heart failure"].signs == ("pulmonary edema", "vascular congestion")
    path = tmp_path / "bad_signs.yaml"
    path.write_text("concepts:\n  - name: heart failure\n    category: disease\n    signs: [edma]\n", encoding="utf-8")
    with pytest.raises(LexiconError, match=r"bad_signs\.yaml:4: signs 'edma' of 'heart failure' is not another"):
        load_lexicon(path)


def test_a_denial_reads_the_signs_and_any_of_stays_for_presence_alone(index) -> None:
    (f,) = index.read("no signs of CHF").findings
    assert (f.finding, f.status, f.any_of) == ("congestive heart failure", "absent",
                                               ("pulmonary edema", "vascular congestion"))
    assert index.read("CHF").findings[0].any_of == ("pulmonary edema", "vascular congestion")
    assert index.read("no pneumonia").findings[0].any_of == ()  # "no consolidation" is no "no pneumonia"
    # a sign the query names itself is read on its own
    both = index.read("no CHF or pulmonary edema").findings
    assert [f.finding for f in both] == ["congestive heart failure", "pulmonary edema"] and both[0].any_of == (
        "vascular congestion",)


@pytest.mark.parametrize("engine", candidates.ENGINES)
def test_a_sign_denied_answers_the_absence_and_a_sign_stated_contradicts_it(index, monkeypatch, engine) -> None:
    monkeypatch.setenv(candidates.ENV, engine)
    hits = index.search("emphysema without signs of CHF", k=10, mode="hybrid")
    order = [h.report_id for h in hits]
    assert order[0] == "denied"
    assert order.index("silent") < order.index("sign") and order.index("silent") < order.index("named")
    assert {h.report_id: h.band for h in hits}["denied"] == "states"
    # asked present, a sign stated states it
    assert {h.report_id for h in index.search("heart failure", k=10, mode="hybrid") if h.band == "states"} == {
        "sign", "named"}
