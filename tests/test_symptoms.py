"""A complaint is read as what can cause it (issue 35, item 6: the newcomer batches' lay queries "wheezing", "short of
breath", "chest pain after a fall" were judged on the findings that explain them; a symptom linked to nothing).
The lexicon's ``symptoms`` are checked as they load; a query made only of complaints asks for a unit stating a
cause; several complaints ask for what explains them all; a denied complaint and a query naming a finding beside a
complaint are read as before; both engines rank alike."""

from __future__ import annotations

import textwrap

import pytest

from radsift.errors import LexiconError
from radsift.labels.lexicon import load_lexicon, parse_lexicon
from radsift.records import Report
from radsift.search import candidates
from radsift.search.symptoms import causes, named_symptoms

LEX = load_lexicon()
R = [
    Report("hyper", {"findings": "Hyperinflated lungs. Heart size normal."}),
    Report("edema", {"findings": "Interstitial pulmonary edema. Small bilateral pleural effusions."}),
    Report("rib", {"findings": "Acute fracture of the left 6th rib. No pneumothorax."}),
    Report("pna", {"findings": "Right lower lobe consolidation. Heart size normal."}),
    Report("clear", {"findings": "The lungs are clear. Heart size normal. No wheezing noted on the requisition."}),
    Report("gran", {"findings": "Calcified granuloma in the left upper lobe. Heart size normal."}),
]


def _names(symptoms):
    return [s.name for s in symptoms]


@pytest.mark.parametrize("text, names", [
    ("wheezing", ["wheezing"]),
    ("wheezes", ["wheezing"]),
    ("crackles in the lungs", ["crackles"]),
    ("sharp chest pain when breathing in", ["chest pain"]),
    ("chest pain after a fall", ["chest pain", "injury"]),
    ("coughing up blood", ["coughing up blood"]),  # the longest words first: no cough
    ("short-of-breath", ["shortness of breath"]),
    ("swollen ankles and out of breath", ["swollen ankles", "shortness of breath"]),
    ("chest pain and a lung nodule", []),  # names a finding beside the complaint
    ("fatigue", []),  # a complaint no film explains is no symptom of the lexicon
    ("falling lung volumes", []),
])
def test_a_text_made_only_of_complaints_names_them(text, names):
    assert _names(named_symptoms(text, LEX)) == names


def test_several_complaints_ask_for_what_explains_them_all():
    pain, injury, heartburn, wheeze = (next(s for s in LEX.symptoms if s.name == n)
                                       for n in ("chest pain", "injury", "heartburn", "wheezing"))
    both = causes((pain, injury), LEX)
    assert "rib fracture" in both and "pneumothorax" in both and "pneumonia" not in both and "scoliosis" not in both
    assert both[0] == "rib fracture" == causes((injury, pain), LEX)[0]  # the most telling complaint's order
    assert "consolidation" in causes((pain,), LEX)  # a cause's own alternatives (pneumonia's any_of) come with it
    # none explains both: every cause of either
    assert set(causes((heartburn, wheeze), LEX)) >= {"hiatal hernia", "emphysema"}


@pytest.fixture(scope="module")
def index(hashing_index_of):
    return hashing_index_of("symptoms", R)


def test_the_reading_names_the_causes_and_a_denied_complaint_stays_literal(index):
    f = index.read("coughing up blood").findings
    assert len(f) == 1 and f[0].source == "symptom" and f[0].via == "coughing up blood"
    assert {f[0].finding, *f[0].any_of} >= {"mass", "cavitary lesion", "bronchiectasis"}
    assert "pulmonary edema" not in {f[0].finding, *f[0].any_of}
    # words the index holds ("No wheezing noted") stay the reading, the causes beside them
    literal, link = index.read("wheezing").findings
    assert (literal.finding, literal.source) == ("wheezing", "open") and link.beside == "wheezing"
    assert {link.finding, *link.any_of} >= {"hyperinflation", "emphysema", "bronchial wall thickening"}
    assert [(g.finding, g.status, g.source) for g in index.read("no chest pain").findings] == [
        ("chest pain", "absent", "open")]
    assert all(g.source == "open" for g in index.read("wheezing", read_as="literal").findings)
    assert index.read("pneumothorax after a fall").findings[0].finding == "pneumothorax"  # a finding named: as before


@pytest.mark.parametrize("engine", candidates.ENGINES)
def test_a_complaint_ranks_the_reports_stating_a_cause_first(index, monkeypatch, engine):
    monkeypatch.setenv(candidates.ENV, engine)
    top = lambda q, n: {h.report_id for h in index.search(q, k=6, mode="hybrid")[:n]}  # noqa: E731
    assert top("wheezing", 1) == {"hyper"}
    assert top("short of breath", 2) == {"edema", "pna"}
    assert top("chest pain after a fall", 1) == {"rib"}
    assert top("cough and fever", 1) == {"pna"}
    bands = {h.report_id: h.band for h in index.search("crackles in the lungs", k=6, mode="hybrid")}
    assert bands["edema"] == "states" and bands["gran"] != "states"


def _lexicon(symptoms: str) -> str:
    return textwrap.dedent("""\
        concepts:
          - name: pleural effusion
            category: finding
          - name: pulmonary edema
            category: finding
        symptoms:
        """) + textwrap.indent(textwrap.dedent(symptoms), "  ")


def test_symptoms_load_and_bad_ones_name_the_line():
    lex = parse_lexicon(_lexicon("""\
        - name: shortness of breath
          words: [dyspnea, short of breath]
          causes: [pulmonary edema, pleural effusion]
        """), "my.yaml")
    assert lex.symptoms[0].words == ("shortness of breath", "dyspnea", "short of breath")
    assert lex.symptoms[0].causes == ("pulmonary edema", "pleural effusion")
    with pytest.raises(LexiconError, match=r"my.yaml:10: cause 'pneumonia' of symptom 'cough' is no concept"):
        parse_lexicon(_lexicon("""\
            - name: cough
              causes:
                - pulmonary edema
                - pneumonia
            """), "my.yaml")
    with pytest.raises(LexiconError, match=r"my.yaml:\d+: symptom 'cough' names no cause"):
        parse_lexicon(_lexicon("""\
            - name: cough
              causes: []
            """), "my.yaml")
    with pytest.raises(LexiconError, match=r"symptom word 'dyspnea' of 'breathless' is already one of 'shortness"):
        parse_lexicon(_lexicon("""\
            - name: shortness of breath
              words: [dyspnea]
              causes: [pulmonary edema]
            - name: breathless
              words: [dyspnea]
              causes: [pulmonary edema]
            """), "my.yaml")
    with pytest.raises(LexiconError, match=r"unknown key 'because'"):
        parse_lexicon(_lexicon("""\
            - name: cough
              because: [pulmonary edema]
            """), "my.yaml")
