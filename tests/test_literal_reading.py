"""The user's words stay (issue 35, item 1): a concept link is added beside the literal reading of a query
whose phrase occurs in the index, never in its place; words of place and substance count in the link.

Reports and lexicon written for these tests; the hashing encoder (bag of hashed words, no model)
makes similarities predictable: texts that share words are close.
"""

from __future__ import annotations

import json
import textwrap

import numpy as np
import pytest
from typer.testing import CliRunner

from radsift.cli import app
from radsift.errors import ConfigError
from radsift.index import build_index
from radsift.models.hashing import HashingEncoder
from radsift.models.settings import SearchSettings, write_search_settings
from radsift.records import Report
from radsift.search.concepts import LINK_MARGIN, ConceptLinker, Link
from radsift.search.linkwords import (
    concept_places,
    concept_substances,
    directions_of,
    normal_statement,
    off_film,
    query_places,
    sizes_of,
    substances_of,
    symptom_only,
    tones_of,
)
from radsift.search.reading import read_query

LEXICON = """
concepts:
  - name: acute cardiopulmonary abnormality
    category: finding
    synonyms: [acute cardiopulmonary process]
    descriptions: [acute chest trauma problem]
  - name: pleural effusion
    category: finding
    synonyms: [effusion]
    descriptions: [water collecting around the lungs]
"""

R = [
    Report("denies", {"findings": "The patient denies chest trauma."}),
    Report("has-pain", {"findings": "Chest trauma on admission."}),
    Report("acute-no", {"findings": "No acute cardiopulmonary process."}),
    Report("acute-no-2", {"findings": "No acute cardiopulmonary process. The patient denies chest trauma."}),
    Report("eff", {"findings": "Small right pleural effusion."}),
    Report("lungs", {"findings": "The lungs are clear."}),
]


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    root = tmp_path_factory.mktemp("literal")
    lexicon = root / "lex.yaml"
    lexicon.write_text(textwrap.dedent(LEXICON), encoding="utf-8")
    enc = HashingEncoder(root / "model")
    write_search_settings(enc.path, SearchSettings(0.75, 0.5))  # the CLI opens the index with this model
    build_index(root / "idx", R, encoder=enc, progress=False, lexicon=lexicon)
    return root, enc


@pytest.fixture()
def index(built):
    from radsift.search import Index

    root, enc = built
    idx = Index.open(root / "idx", encoder=enc)
    idx.settings = SearchSettings(0.75, 0.5, "test")
    return idx


def ids(hits):
    return [h.report_id for h in hits]


# -- the literal reading stays --------------------------------------------------------------------
def test_a_phrase_the_index_holds_keeps_its_literal_reading_and_the_link_stands_beside_it(index):
    hits = index.search("no chest trauma", k=6)
    words, link = hits.reading.findings
    assert (words.finding, words.source, words.status, words.beside) == ("chest trauma", "open", "absent", None)
    assert (link.finding, link.source, link.status) == ("acute cardiopulmonary abnormality", "linked", "absent")
    assert link.beside == "chest trauma"
    # The reports denying chest trauma come first; among them the one that also states the link leads.
    assert ids(hits)[:2] == ["acute-no-2", "denies"]
    assert ids(hits).index("acute-no") > ids(hits).index("denies")
    assert hits.matching == 2  # the counts follow the user's words
    text = hits.reading.describe()
    assert text.startswith("chest trauma: absent (open") and "also acute cardiopulmonary abnormality: absent" in text


def test_read_as_literal_and_linked_remove_either_reading(index):
    literal = index.search("no chest trauma", k=6, read_as="literal")
    assert [(f.finding, f.source) for f in literal.reading.findings] == [("chest trauma", "open")]
    linked = index.search("no chest trauma", k=6, read_as="linked")  # the link in the words' place, as before
    (f,) = linked.reading.findings
    assert (f.finding, f.source, f.beside) == ("acute cardiopulmonary abnormality", "linked", None)
    assert set(ids(linked)[:2]) == {"acute-no", "acute-no-2"}
    with pytest.raises(ConfigError, match="read_as must be one of both, literal, linked"):
        index.search("no chest trauma", read_as="words")


def test_either_reading_can_be_ignored_and_the_other_then_stands_alone(index):
    no_link = index.search("no chest trauma", k=6, reading={"acute cardiopulmonary abnormality": "ignore"})
    assert [f.finding for f in no_link.reading.findings] == ["chest trauma"]
    no_words = index.search("no chest trauma", k=6, reading={"chest trauma": "ignore"})
    (f,) = no_words.reading.findings
    assert f.finding == "acute cardiopulmonary abnormality" and f.beside is None  # the link now reads alone


def test_a_phrase_the_index_never_holds_is_read_as_its_link(index):
    hits = index.search("water collecting around the lungs", k=3)
    (f,) = hits.reading.findings
    assert (f.finding, f.source, f.beside) == ("pleural effusion", "linked", None)
    assert ids(hits)[0] == "eff"


def test_a_query_with_a_phrase_the_index_never_holds_is_read_as_its_link(index):
    # "zebra" occurs in no report: no unit could state the literal reading, so the link reads alone.
    (f,) = index.read("no chest trauma or zebra").findings
    assert (f.finding, f.source, f.beside) == ("acute cardiopulmonary abnormality", "linked", None)


def test_the_cli_and_the_api_show_both_readings(built, index, monkeypatch, tmp_path):
    from fastapi.testclient import TestClient

    from radsift.serve.app import create_app

    root, _ = built
    monkeypatch.setattr("radsift.models.encoder.Encoder.load",
                        classmethod(lambda cls, model=None, **kw: HashingEncoder(model)))
    runner = CliRunner()
    res = runner.invoke(app, ["search", str(root / "idx"), "no chest trauma", "-k", "3", "--no-audit"])
    assert res.exit_code == 0, res.output
    out = " ".join(res.output.split())
    assert "read as: chest trauma absent (open, cue 'no'); also: acute cardiopulmonary abnormality absent" in out
    res = runner.invoke(app, ["search", str(root / "idx"), "no chest trauma", "--json", "--read-as", "literal",
                              "--no-audit"])
    assert res.exit_code == 0, res.output
    assert [f["finding"] for f in json.loads(res.output)["reading"]["findings"]] == ["chest trauma"]
    client = TestClient(create_app(index, audit_log=tmp_path / "audit.jsonl"))
    data = client.get("/api/search", params={"q": "no chest trauma", "k": 3}).json()
    assert [(f["finding"], f["beside"]) for f in data["reading"]["findings"]] == [
        ("chest trauma", None), ("acute cardiopulmonary abnormality", "chest trauma")]
    data = client.get("/api/search", params={"q": "no chest trauma", "read_as": "linked"}).json()
    assert [f["finding"] for f in data["reading"]["findings"]] == ["acute cardiopulmonary abnormality"]
    assert client.get("/api/search", params={"q": "no chest trauma", "read_as": "nope"}).status_code == 422


# -- words of place and substance count in the link ----------------------------------------------------
def test_words_of_place_and_substance_are_read():
    assert query_places("fluid around the lungs") == ["pleura"]
    assert query_places("fluid in the pleural space") == ["pleura"]
    assert query_places("liquid in the sac around my heart") == ["pericardium"]
    assert query_places("water in the lungs") == ["lung"]
    # queries_v12 "crooked spine and a fluid build-up by one lung": beside one lung is outside it
    assert query_places("a fluid build-up by one lung") == ["pleura"]
    assert query_places("fluid in one lung") == ["lung"]
    # fluid lies on a lung outside it; a spot on the lung is only seen on it
    assert query_places("water on the lungs") == ["pleura"] and query_places("fluid on my left lung") == ["pleura"]
    assert query_places("a shadow on the lung") == [] and query_places("spot on my lung") == []
    assert query_places("fluid in the lung bases") == []
    assert concept_places("pleural effusion", ["effusion"]) == {"pleura"}
    assert concept_places("pericardial effusion", ["pericardial fluid"]) == {"pericardium"}
    assert concept_places("pulmonary edema", ["edema"]) == frozenset()
    assert substances_of(["hydropneumothorax"]) == {"air", "fluid"}
    assert substances_of(["blood around the lung"]) == {"blood", "fluid"}


def _linker(query_near: dict[str, float]):
    """A linker whose one phrase per concept has the given cosine with the query (unit vector e0)."""
    names = list(query_near)
    vectors = []
    for i, cos in enumerate(query_near.values()):
        v = np.zeros(len(names) + 1, dtype=np.float32)
        v[0], v[i + 1] = cos, np.sqrt(1 - cos ** 2)
        vectors.append(v)
    places = [concept_places(n, []) for n in names]
    return ConceptLinker(names, names, np.arange(len(names)), np.stack(vectors), names, places).with_substances(
        [substances_of([n]) for n in names])


def test_a_place_in_the_query_links_to_a_concept_of_that_place():
    query = np.eye(4, dtype=np.float32)[0]
    linker = _linker({"pulmonary edema": 0.9, "pleural effusion": 0.8, "hydropneumothorax": 0.84})
    assert linker.link(query, 0.5).concept == "pulmonary edema"  # no words: the closest
    # "around the lungs" is the pleura; "fluid" rules out air and fluid together.
    assert linker.link(query, 0.5, text="fluid around the lungs").concept == "pleural effusion"
    assert linker.link(query, 0.5, text="water in the lungs").concept == "pulmonary edema"


def test_a_link_needs_a_clear_winner():
    query = np.eye(3, dtype=np.float32)[0]
    close = _linker({"pleural plaque": 0.80, "pleural thickening": 0.78})
    assert close.link(query, 0.5, margin=0.05) is None
    assert close.link(query, 0.5, margin=0.0).concept == "pleural plaque"
    assert close.link(query, 0.5) is None  # the default margin (0.05, chosen on the three development batches)
    assert LINK_MARGIN == 0.05
    assert _linker({"pleural plaque": 0.80, "pleural thickening": 0.755}).link(query, 0.5) is None
    wide = _linker({"pleural plaque": 0.80, "pleural thickening": 0.74})
    assert wide.link(query, 0.5).concept == "pleural plaque"
    clear = _linker({"pleural plaque": 0.90, "pleural thickening": 0.70})
    assert clear.link(query, 0.5, margin=0.05).concept == "pleural plaque"


# -- the spine, the glands and symptoms (issue 35, item 1: the second development batch) ----------------------
def test_the_spine_and_the_glands_are_places():
    assert query_places("disc herniation") == ["spine"]
    assert query_places("rods joining the bones of the lumbar spine") == ["spine"]
    assert query_places("chalky glands in the middle of my chest") == ["nodes"]
    assert query_places("a round nodular spot") == []  # a nodule is no node
    assert concept_places("degenerative change", ["spondylosis", "osteophyte"]) == {"spine"}
    assert concept_places("compression fracture", ["vertebral compression fracture"]) == {"spine"}
    assert concept_places("calcified lymph node", ["calcified node"]) == {"nodes"}
    assert concept_places("lymphadenopathy", ["adenopathy"]) == {"nodes"}
    assert concept_places("hiatal hernia", ["hernia"]) == frozenset()
    assert concept_places("atelectasis", ["discoid atelectasis"]) == frozenset()  # "discoid" is no disc
    assert concept_places("nodule", ["nodular opacity"]) == frozenset()


def test_a_query_naming_the_spine_or_glands_links_only_there():
    query = np.eye(5, dtype=np.float32)[0]
    linker = _linker({"hiatal hernia": 0.9, "spinal fusion": 0.6, "calcified granuloma": 0.84,
                      "calcified lymph node": 0.8})
    assert linker.link(query, 0.5, text="herniation").concept == "hiatal hernia"  # no place named
    assert linker.link(query, 0.5, text="disc herniation").concept == "spinal fusion"
    assert linker.link(query, 0.7, text="disc herniation") is None  # the spine's concept is too far
    assert linker.link(query, 0.5, text="chalky spots in the chest").concept == "hiatal hernia"
    assert linker.link(query, 0.5, text="chalky glands in the chest").concept == "calcified lymph node"


def test_a_symptom_alone_links_to_nothing():
    for text in ("chest pain", "back pain", "shortness of breath", "shortness of breath when climbing stairs",
                 "my back hurts when i bend over", "sudden sharp chest pain", "fever", "cough"):
        assert symptom_only(text), text
    for text in ("chest pain popped lung", "ankle swelling big heart on the film", "chest wall pain",
                 "fluid around the lungs", "high pressure in the vessels of my lungs", ""):
        assert not symptom_only(text), text
    query = np.eye(3, dtype=np.float32)[0]
    linker = _linker({"acute cardiopulmonary abnormality": 0.9, "rib fracture": 0.6})
    assert linker.link(query, 0.5, text="chest pain") is None
    assert np.isneginf(linker.scores(query, "chest pain")).all()
    assert linker.link(query, 0.5, text="chest pain and a broken rib").concept == "acute cardiopulmonary abnormality"


def test_a_finding_off_the_film_links_to_nothing():
    for text in ("swollen glands in the groin", "a clot in my left leg", "a cyst in the liver", "water in the knee",
                 "a broken bone in my right hand", "stones in both kidneys"):
        assert off_film(text), text
    # a part named beside the finding, or one the chest film shows, does not count
    for text in ("ankle swelling big heart on the film", "fall on an outstretched hand broken collarbone",
                 "a broken bone in my arm", "a big iv in my neck", "swollen legs and fluid around the lungs",
                 "fluid in the lungs", ""):
        assert not off_film(text), text
    query = np.eye(3, dtype=np.float32)[0]
    linker = _linker({"lymphadenopathy": 0.9, "fracture": 0.6})
    assert linker.link(query, 0.5, text="swollen glands in the groin") is None
    assert np.isneginf(linker.scores(query, "swollen glands in the groin")).all()
    assert linker.link(query, 0.5, text="swollen glands in the chest").concept == "lymphadenopathy"


# -- the newcomer's check (issue 35, item 6): lungs hold no glands, compounds and parts, substances, prefixes,
# -- normal statements -------------------------------------------------------------------------------------
def test_the_lungs_hold_no_glands():
    query = np.eye(4, dtype=np.float32)[0]
    linker = _linker({"calcified lymph node": 0.82, "calcified granuloma": 0.75, "pleural effusion": 0.5})
    assert linker.link(query, 0.5, text="calcium deposits in the chest").concept == "calcified lymph node"
    assert linker.link(query, 0.5, text="calcium deposits in the lungs").concept == "calcified granuloma"


def test_a_compound_and_its_part_are_not_rivals():
    query = np.eye(5, dtype=np.float32)[0]
    near = {"hydropneumothorax": 0.835, "pneumothorax": 0.833, "chest tube": 0.778, "atelectasis": 0.67}
    assert _linker(near).link(query, 0.7) is None  # rivals within the margin: no link, as before
    parts = [["pneumothorax", "pleural effusion"], [], [], []]  # pleural effusion is not in this lexicon
    linker = _linker(near).with_parts(parts)
    link = linker.link(query, 0.7)  # "collapsed lung": the part, which every hydropneumothorax states too
    assert (link.concept, round(link.score, 3)) == ("pneumothorax", 0.833)
    assert linker.decide(query)[2] == pytest.approx(0.778, abs=1e-3)  # the margin is over the next concept
    close = _linker({"hydropneumothorax": 0.835, "pneumothorax": 0.833, "chest tube": 0.81}).with_parts(parts[:3])
    assert close.link(query[:4], 0.7) is None  # the part still needs its clear win over the next
    # The part first, the compound second: the part is linked as well.
    flipped = _linker({"pneumothorax": 0.835, "hydropneumothorax": 0.833, "chest tube": 0.7}).with_parts(
        [[], ["pneumothorax"], []])
    assert flipped.link(query[:4], 0.7).concept == "pneumothorax"
    # A compound that beats its part by the margin is linked itself ("a hard chalky dot in my lung").
    calcified = _linker({"calcified granuloma": 0.78, "granuloma": 0.64, "nodule": 0.63}).with_parts(
        [["granuloma"], [], []])
    assert calcified.link(query[:4], 0.7).concept == "calcified granuloma"


def test_a_substance_named_decides_between_close_concepts():
    query = np.eye(4, dtype=np.float32)[0]
    linker = _linker({"pleural effusion": 0.767, "blunted costophrenic angle": 0.752, "pulmonary edema": 0.689})
    assert linker.link(query, 0.7, text="buildup in the chest") is None  # no substance named: rivals
    assert linker.link(query, 0.7, text="fluid buildup in the chest").concept == "pleural effusion"
    # Only a concept naming the query's substance wins so; one naming none stays a rival to one naming none.
    other = _linker({"bulla": 0.767, "blunted costophrenic angle": 0.752, "pulmonary edema": 0.6})
    assert other.link(query, 0.7, text="fluid buildup in the chest") is None


def test_more_is_not_less():
    assert directions_of(["overinflated lungs"]) == {"more"}
    assert directions_of(["hyperexpansion", "lungs * hyperinflated"]) == {"more"}
    assert directions_of(["hypoinflation", "low lung volumes"]) == {"less"}
    assert directions_of(["under inflated lungs"]) == {"less"}
    assert directions_of(["overlying lead", "hypertension", "fluid overload"]) == frozenset()
    query = np.eye(4, dtype=np.float32)[0]
    linker = _linker({"hyperinflation": 0.77, "hypoinflation": 0.70, "bulla": 0.6})
    assert linker.link(query, 0.5, text="underinflated lungs").concept == "hypoinflation"
    assert linker.link(query, 0.5, text="big lungs").concept == "hyperinflation"
    assert _linker({"hypoinflation": 0.77, "hyperinflation": 0.70}).link(
        query[:3], 0.5, text="overinflated lungs").concept == "hyperinflation"


def test_a_hyphenated_prefix_is_read_as_one_word(index):
    seen = []

    def link(text):
        seen.append(text)
        return None

    reading = read_query("over-inflated lungs", index.labeler, link=link)
    assert seen == ["overinflated lungs"]  # "over inflated lungs" before: "over" a phrase of its own
    assert [f.finding for f in reading.findings] == ["overinflated lungs"]
    seen.clear()
    read_query("no post-operative change", index.labeler, link=link)
    assert seen == ["postoperative change"]  # "post" was lost as a history cue
    seen.clear()
    read_query("well-defined x-ray shadow", index.labeler, link=link)
    assert seen == ["well defined x ray shadow"]  # other hyphens as before


def test_a_link_to_a_normal_statement_states_its_concept_absent(index):
    def link(text):
        return Link("lung opacity", 0.9, "an area of lung that looks less clear than it should")

    def read(query):
        return {f.finding: f.status for f in read_query(query, index.labeler, link=link,
                                                         literal=lambda stems: True).findings}

    assert normal_statement("lungs are clear") and normal_statement("normal heart")
    assert not normal_statement("heart bigger than normal") and not normal_statement("lungs are not clear")
    assert not normal_statement("lungs are clear", "lungs are not clear")  # the text the labeler reads from it
    assert not normal_statement("abnormal lungs")
    assert normal_statement("the lungs look completely normal and clear") and normal_statement("normal heart size")
    assert not normal_statement("a spot on an otherwise normal lung")  # a finding beside the normal word
    assert read("lungs are clear")["lung opacity"] == "absent"  # was present: the opposite of the words
    assert read("no clear lungs")["lung opacity"] == "present"
    assert read("lungs are not clear")["lung opacity"] == "present"
    assert read("shadow on the lungs")["lung opacity"] == "present"
    assert read("a spot on an otherwise normal lung")["lung opacity"] == "present"


# -- the third development batch (issue 35, item 1: description_queries_v3.tsv, dev half) ---------------------
def test_beside_the_lung_is_the_pleura_and_infected_liquid_is_pus():
    assert query_places("infected walled off liquid next to the lung") == ["pleura"]
    assert query_places("blood filled the gap beside my lung") == ["pleura"]
    assert "pus" in substances_of(["infected walled off liquid"])
    assert "pus" not in substances_of(["an infected lung"])
    query = np.eye(4, dtype=np.float32)[0]
    linker = _linker({"lung abscess": 0.70, "pleural effusion": 0.66, "empyema": 0.62})
    assert linker.link(query, 0.6, text="infected walled off liquid next to the lung").concept == "empyema"
    assert linker.link(query, 0.6, text="infected walled off liquid in the lung").concept == "lung abscess"


def test_blood_in_the_vessels_is_no_hemothorax_and_the_belly_is_not_the_chest():
    assert "vessels" in query_places("blood backing up in the vessels of my lungs")
    assert concept_places("pneumoperitoneum", ["free intraperitoneal air"]) == {"belly"}
    assert concept_places("diaphragmatic hernia", ["bochdalek hernia"]) == frozenset()
    query = np.eye(4, dtype=np.float32)[0]
    blood = _linker({"hemothorax": 0.80, "vascular congestion": 0.70, "nodule": 0.3})
    assert blood.link(query, 0.5, text="blood backing up in the vessels of my lungs").concept == "vascular congestion"
    assert blood.link(query, 0.5, text="blood backing up in my chest").concept == "hemothorax"
    belly = _linker({"pneumoperitoneum": 0.73, "diaphragmatic hernia": 0.72, "hiatal hernia": 0.60})
    assert belly.link(query, 0.5, text="gas filled intestine in the left hemithorax").concept == "diaphragmatic hernia"
    assert belly.link(query, 0.5, text="filled intestine") is None  # rivals: no place named, no substance
    flipped = _linker({"diaphragmatic hernia": 0.73, "pneumoperitoneum": 0.72, "hiatal hernia": 0.60})
    assert flipped.link(query, 0.5, text="air escaped into my belly").concept == "pneumoperitoneum"


def test_a_concept_is_made_of_what_its_name_says():
    assert concept_substances("hemothorax", ["hemopneumothorax"]) == {"blood", "fluid"}
    assert concept_substances("subcutaneous emphysema", ["subcutaneous air"]) == {"air"}
    assert concept_substances("pleural thickening", ["pleural scar"]) == frozenset()
    names = ["hemothorax", "pleural effusion", "nodule"]
    synonyms = [["hemopneumothorax"], ["effusion"], []]
    query = np.eye(4, dtype=np.float32)[0]
    linker = _linker(dict(zip(names, (0.75, 0.74, 0.3)))).with_substances(
        [concept_substances(n, syn) for n, syn in zip(names, synonyms)])
    # Blood around the lung is a hemothorax (both substances named), though its synonyms name air too.
    assert linker.link(query, 0.5, text="blood collecting around the right lung").concept == "hemothorax"


def test_the_substances_named_decide_before_a_compound_gives_way_to_its_part():
    query = np.eye(4, dtype=np.float32)[0]
    linker = _linker({"pleural effusion": 0.73, "hydropneumothorax": 0.72, "pneumothorax": 0.6}).with_parts(
        [[], ["pneumothorax", "pleural effusion"], []])
    text = "straight liquid margin in the pleural space with gas above"
    assert linker.link(query, 0.5, text=text).concept == "hydropneumothorax"  # air and fluid: the compound
    assert linker.link(query, 0.5, text="straight margin in the pleural space").concept == "pleural effusion"


def test_small_is_not_large_and_dark_is_not_white():
    assert sizes_of(["a little round shadow"]) == {"small"}
    assert sizes_of(["mass"]) == {"large"} and sizes_of(["cardiomegaly"]) == {"large"}
    assert sizes_of(["a round shadow"]) == frozenset()
    assert tones_of(["large lucent lungs"]) == {"dark"} and tones_of(["a white patch"]) == {"white"}
    assert tones_of(["lung opacity"]) == {"white"} and tones_of(["lucency"]) == {"dark"}
    query = np.eye(4, dtype=np.float32)[0]
    lump = _linker({"mass": 0.73, "nodule": 0.62, "bulla": 0.3})
    assert lump.link(query, 0.5, text="a little round shadow in my lung").concept == "nodule"
    assert lump.link(query, 0.5, text="a round shadow in my lung").concept == "mass"
    assert lump.link(query, 0.5, text="a small lump grown larger").concept == "mass"  # both sizes: neither counts
    film = _linker({"lung opacity": 0.71, "emphysema": 0.62, "lucency": 0.3})
    assert film.link(query, 0.5, text="lucent lungs with sparse markings").concept == "emphysema"
    assert film.link(query, 0.5, text="lungs with sparse markings").concept == "lung opacity"
    white = _linker({"lucency": 0.80, "lung opacity": 0.70, "nodule": 0.3})
    assert white.link(query, 0.5, text="a white patch on my lung").concept == "lung opacity"
