"""How a pacemaker is wired, as a film shows it (the newcomer check's dev device queries *single lead pacemaker*, v14,
and *biventricular pacemaker*, v5, led with pacemakers wired otherwise): a query's "single lead", "dual chamber",
"biventricular" / "cardiac resynchronization" are patterns of the device (:mod:`radsift.text.patterns`), said by a
report in its words or by the leads' tips, so within the tier the units saying the wiring asked rank first; a
cardiac resynchronization device is a pacemaker (the lexicon). A tunneled line is one too (*Hickman catheter*, v5 dev,
led with central lines saying nothing of a tunnel): a Hickman, Broviac or Groshong is a central venous catheter."""

from __future__ import annotations

import numpy as np
import pytest

from radsift.labels import Labeler
from radsift.ranking.places import with_qualifiers
from radsift.records import Report
from radsift.search import candidates
from radsift.text.patterns import BIVENTRICULAR, DUAL_LEAD, PATTERN, SINGLE_LEAD, TUNNELED, query_pattern
from radsift.text.tokens import stem


@pytest.mark.parametrize("query, bits", [
    ("single lead pacemaker", SINGLE_LEAD), ("single-chamber pacer", SINGLE_LEAD),
    ("dual chamber pacemaker", DUAL_LEAD), ("dual-lead pacer", DUAL_LEAD), ("pacemaker with two leads", DUAL_LEAD),
    ("biventricular pacemaker", BIVENTRICULAR), ("cardiac resynchronization device", BIVENTRICULAR),
    ("BiV ICD", BIVENTRICULAR), ("CRT-D", BIVENTRICULAR), ("heart device with three wires", BIVENTRICULAR),
    ("Hickman catheter", TUNNELED), ("tunneled dialysis catheter", TUNNELED), ("Broviac line", TUNNELED),
    ("pacemaker", 0), ("single frontal view", 0), ("a 2 cm nodule", 0), ("one lung", 0), ("central line", 0),
])
def test_a_query_names_the_wiring(query, bits):
    assert query_pattern(query)[1] == bits


def test_units_say_the_wiring_in_words_or_by_the_leads_tips():
    texts = ["A single lead pacemaker.", "Dual-chamber pacemaker.", "Pacemaker leads in the right atrium and ventricle.",
             "Pacemaker generator with 2 leads.", "Left-sided biventricular pacemaker.",
             "Leads overlie the right ventricle and a lateral cardiac vein.", "Lead in the coronary sinus.",
             "Stable pacemaker.", "Left-sided tunneled catheter.", "Right Hickman line."]
    terms = [{stem(w) for w in t.lower().replace(".", "").replace("-", " ").split()} for t in texts]

    def units_with(stems):
        return [i for i, t in enumerate(terms) if all(s in t for s in stems)]

    got = with_qualifiers(np.zeros(len(texts), dtype=np.uint64), units_with) & np.uint64(PATTERN)
    assert [int(g) for g in got] == [SINGLE_LEAD, DUAL_LEAD, DUAL_LEAD, DUAL_LEAD, BIVENTRICULAR, BIVENTRICULAR,
                                     BIVENTRICULAR, 0, TUNNELED, TUNNELED]


@pytest.fixture(scope="module")
def labeler() -> Labeler:
    return Labeler()


@pytest.mark.parametrize("text", ["Cardiac resynchronization device in the left chest.", "CRT-D in place.",
                                  "Biventricular pacer with leads in the right atrium, right ventricle and coronary "
                                  "sinus."])
def test_a_resynchronization_device_is_a_pacemaker(labeler, text):
    assert ("pacemaker", "present") in {(m.finding, m.status) for m in labeler.label(text)}


@pytest.mark.parametrize("text", ["Left Hickman with tip in the SVC.", "Broviac in place.", "Groshong removed."])
def test_a_tunneled_line_by_its_makers_name_is_a_central_venous_catheter(labeler, text):
    assert "central venous catheter" in {m.finding for m in labeler.label(text)}


R = [
    Report("dual", {"findings": "Left chest pacemaker with leads in the right atrium and right ventricle. Lungs clear."}),
    Report("biv", {"findings": "Left chest pacemaker with leads in the right atrium, right ventricle and coronary "
                               "sinus. Lungs clear."}),
    Report("single", {"findings": "Left chest pacemaker with a single lead in the right ventricle. Lungs clear."}),
    Report("none", {"findings": "No pacemaker. Lungs clear."}),
    Report("line", {"findings": "Right internal jugular central line, tip in the SVC. Lungs clear."}),
    Report("tunneled", {"findings": "Left tunneled central line, tip in the SVC. Lungs clear."}),
]


@pytest.fixture(scope="module")
def index(hashing_index_of):
    return hashing_index_of("leads", R)


@pytest.mark.parametrize("engine", candidates.ENGINES)
@pytest.mark.parametrize("query, first", [("biventricular pacemaker", "biv"), ("single lead pacemaker", "single"),
                                          ("dual chamber pacemaker", "dual"),
                                          ("cardiac resynchronization device", "biv")])
def test_the_wiring_asked_ranks_first(index, monkeypatch, engine, query, first):
    monkeypatch.setenv(candidates.ENV, engine)
    order = [h.report_id for h in index.search(query, k=10, mode="hybrid")]
    assert order[0] == first and order.index("none") > order.index(first)


@pytest.mark.parametrize("engine", candidates.ENGINES)
def test_a_hickman_catheter_finds_the_tunneled_line_first(index, monkeypatch, engine):
    monkeypatch.setenv(candidates.ENV, engine)
    order = [h.report_id for h in index.search("Hickman catheter", k=10, mode="hybrid")]
    assert order[:2] == ["tunneled", "line"]
