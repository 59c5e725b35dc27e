"""A change said as a predicate, a bone in everyday words, the space between the lungs (queries_v13, spent: "the spot on
my lung is shrinking", "cracked shoulder blade", "metal rod in the upper arm", "growth between the lungs", "big heart,
lungs dry, no effusion").

- The concept linker tries a finding's words without their change ("is shrinking", "getting smaller", "has grown")
  and keeps the link that holds better: a spot getting smaller is a nodule getting better, not a lung's volume loss,
  while "my lung is shrinking" keeps its volume loss.
- "is growing", "growing nodule", "has grown" ask for a finding getting worse; "nothing growing in the lungs" asks none.
- A bone named in everyday words is read as the report word ("shoulder blade": scapula), and where the words link to
  nothing the linker tries them with the bone written "bone" ("cracked shoulder blade": a cracked bone).
- "between the lungs" is the mediastinum; "lungs dry" is no pulmonary edema.
"""

from __future__ import annotations

import pytest

from radsift.labels import Labeler
from radsift.search.concepts import Link
from radsift.search.reading import read_query
from radsift.text import bodyplaces, changes, compartments


@pytest.fixture(scope="module")
def labeler() -> Labeler:
    return Labeler()


#: A stand-in linker: each phrase's concept and cosine, as the packaged model gave them on Open-i.
_TABLE = {
    "the spot on my lung is shrinking": ("volume loss", 0.81), "the spot on my lung": ("nodule", 0.93),
    "my lung is shrinking": ("volume loss", 0.87), "my lung": ("lung opacity", 0.70),
    "cracked the bone": ("fracture", 0.93), "metal rod in the bone": ("orthopedic hardware", 0.85),
}


def table_link(table: dict[str, tuple[str, float]], via: dict[str, str] | None = None):
    """A stand-in linker: a text -> the :class:`Link` of its concept and cosine in ``table`` (case and spaces folded),
    linked from ``via[concept]`` where given (the description's words), else from the text itself."""
    def link(text: str):
        concept, score = table.get(" ".join(text.lower().split()), (None, 0.0))
        return Link(concept, score, (via or {}).get(concept, text)) if concept else None

    return link


def table_reader(table: dict[str, tuple[str, float]]):
    """A function reading a query with :func:`table_link`'s stand-in linker of ``table`` (no phrase held by the index):
    ``(labeler, query) -> ([(finding, status, source)], reading)``."""
    link = table_link(table)

    def read(labeler, query: str):
        reading = read_query(query, labeler, link=link, literal=lambda stems: False)
        return [(f.finding, f.status, f.source) for f in reading.findings], reading

    return read


_link = table_link(_TABLE)


def _read(labeler, query: str):
    reading = read_query(query, labeler, link=_link, literal=lambda stems: False)
    return [(f.finding, f.status) for f in reading.findings], reading


def test_a_finding_is_linked_without_its_change_where_that_holds_better(labeler):
    found, reading = _read(labeler, "the spot on my lung is shrinking")
    assert found == [("nodule", "present")] and reading.change == "better"
    found, reading = _read(labeler, "my lung is shrinking")
    assert found == [("volume loss", "present")] and reading.change == "better"


@pytest.mark.parametrize("query, bit", [
    ("lung nodule is growing", changes.WORSE), ("growing nodule", changes.WORSE), ("the mass has grown", changes.WORSE),
    ("nothing growing in the lungs", 0), ("pneumonia getting better", changes.BETTER),
])
def test_growing_is_a_change_for_the_worse(query, bit):
    assert changes.query_change(query)[1] == bit


def test_a_bone_in_everyday_words_is_its_place_and_a_bone_to_the_linker(labeler):
    assert bodyplaces.query_places("cracked shoulder blade") == ("scapula", bodyplaces.SCAPULA)
    assert bodyplaces.query_places("metal rod in the upper arm")[1] == bodyplaces.HUMERUS
    assert bodyplaces.query_places("broken collarbone")[1] == bodyplaces.CLAVICLE
    found, reading = _read(labeler, "cracked shoulder blade")
    assert found == [("fracture", "present")] and reading.regions & bodyplaces.SCAPULA
    found, reading = _read(labeler, "metal rod in the upper arm")
    assert found == [("orthopedic hardware", "present")] and reading.regions & bodyplaces.HUMERUS


def test_between_the_lungs_is_the_mediastinum():
    assert compartments.mediastinal_place("growth between the lungs") == "mediastinum"
    assert compartments.mediastinal_place("a mass between both lungs") == "mediastinum"
    assert compartments.mediastinal_place("growth in the lungs") is None
    assert compartments.lung_place("growth between the lungs") is None


def test_lungs_dry_is_no_edema(labeler):
    found, _ = _read(labeler, "big heart, lungs dry, no effusion")
    assert ("pulmonary edema", "absent") in found and ("pleural effusion", "absent") in found


def test_a_bone_anchor_is_orthopedic_hardware_and_suture_material_is_not(labeler):
    # "suture anchors in the shoulder": reports write "Right humeral head bone anchor."
    found = [[(m.finding, m.status) for m in ms] for ms in labeler.label_sentences(
        ["Right humeral head bone anchor.", "Suture anchors in the left shoulder.", "Suture material at the left apex."])]
    assert found[0] == [("orthopedic hardware", "present")] and found[1] == [("orthopedic hardware", "present")]
    assert found[2] == [("surgical staples", "present")]


@pytest.mark.parametrize("sentence, found", [
    ("There is mild deformity of the T9 vertebral body.", [("compression fracture", "present")]),
    ("Stable deformities within the midthoracic spine.", [("compression fracture", "present")]),
    ("Vertebral body deformity in the lumbar spine.", [("compression fracture", "present")]),
    ("No vertebral deformity.", [("compression fracture", "absent")]),
    ("Pectus deformity.", [("pectus deformity", "present")]),
])
def test_a_vertebras_deformity_is_its_compression(labeler, sentence, found):
    # "swollen heart and a flattened vertebra" (queries_v12 dev): reports write "deformity of the T9 vertebral body"
    assert [(m.finding, m.status) for m in labeler.label_sentences([sentence])[0]] == found
