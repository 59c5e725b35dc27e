"""Denials said plainly, and a mass beside the trachea (queries_v14 dev: "lungs not overexpanded", "clavicle intact",
"nothing abnormal in the heart or lungs", "lungs filling with fluid", "no mass effect on the trachea").

- "not" right after the subject denies the statement as "are not" does: "lungs not overexpanded" asks for lungs
  not hyperinflated, and its link is absent too (it was read "lungs" present, the link hyperinflation present).
- Denying a normal working ("lungs not fully inflated") or the words of a description holding a "not" itself ("heart
  is not pumping well": the linker does not hear the "not") states the finding.
- "intact" calls a bone normal: "clavicle intact" is no clavicle fracture (it was read a fracture present).
- "nothing abnormal in the heart or lungs" calls both normal, as "heart and lungs are okay" does.
- "lungs filling with fluid" is fluid in the lungs (the bare word "fluid" stood alone and stated any pleural fluid).
- "mass effect on the trachea" is the lexicon's tracheal deviation (mediastinal shift), not a mass.
- A change denied ("no increase in the pleural effusion", "no significant change since the prior study") asks for the
  finding the same as before (it was read with no change, and "since" as a finding).
- A mass beside the trachea ("paratracheal density") is a mediastinal mass, not a lung mass (queries_v14,
  spent test: "a lump near the windpipe").
- "around the right hilum" is perihilar, as "around the hila" was; "normal appearance of the lungs" is normal lungs.
"""

from __future__ import annotations

import pytest

from radsift.labels import Labeler
from radsift.search.linkwords import normal_statement
from radsift.search.lay import lay_normals
from radsift.search.reading import read_query
from radsift.text import changes, patterns
from test_lay_predicates import table_link


@pytest.fixture(scope="module")
def labeler() -> Labeler:
    return Labeler()


#: A stand-in linker: each text's concept and cosine, as the packaged model gave them on Open-i.
_TABLE = {
    "lungs overexpanded": ("hyperinflation", 0.97), "lungs blown up": ("hyperinflation", 0.93),
    "clavicle intact": ("fracture", 0.84), "fluid in the lungs": ("pulmonary edema", 1.0),
    "lungs fully inflated": ("atelectasis", 0.79), "heart pumping well": ("congestive heart failure", 0.85),
    "heart is pumping well": ("congestive heart failure", 0.88),
    "one side of the diaphragm working": ("elevated hemidiaphragm", 0.83),
}
#: The description each concept was linked from (the packaged lexicon's words).
_VIA = {"congestive heart failure": "heart not pumping well", "atelectasis": "partly deflated lung"}


_link = table_link(_TABLE, _VIA)


def _read(labeler, query: str):
    reading = read_query(query, labeler, link=_link, literal=lambda stems: True)
    return [(f.finding, f.status, f.source) for f in reading.findings]


@pytest.mark.parametrize("query, concept", [("lungs not overexpanded", "hyperinflation"),
                                            ("lungs not blown up", "hyperinflation")])
def test_not_after_the_subject_denies_the_statement(labeler, query, concept):
    found = _read(labeler, query)
    assert (concept, "absent", "linked") in found
    assert all(status == "absent" for _, status, _ in found), found


@pytest.mark.parametrize("query", ["lungs not hyperinflated", "lungs are not hyperexpanded"])
def test_the_lexicon_reads_the_state_denied_itself(labeler, query):
    # the lexicon names the state by its word alone (the first once needed the link above)
    assert _read(labeler, query) == [("hyperinflation", "absent", "lexicon")]


def test_not_after_a_comma_is_no_statement_of_the_word_before(labeler):
    phrases = labeler.query_phrases("nodule, not effusion")
    assert [(p.text, p.status) for p in phrases] == [("nodule", "present"), ("effusion", "absent")]


@pytest.mark.parametrize("query, concept", [("lungs not fully inflated", "atelectasis"),
                                            ("heart not pumping well", "congestive heart failure"),
                                            ("heart is not pumping well", "congestive heart failure"),
                                            ("one side of the diaphragm not working", "elevated hemidiaphragm")])
def test_denying_a_normal_working_or_a_description_that_denies_it_states_the_finding(labeler, query, concept):
    # "not fully inflated" denies a normal statement; "heart not pumping well" is the description's own "not"
    assert (concept, "present", "linked") in _read(labeler, query)


def test_a_bone_called_intact_is_no_fracture(labeler):
    assert normal_statement("clavicle intact") and normal_statement("the ribs are intact")
    assert not normal_statement("clavicle not intact") and not normal_statement("clavicle fracture")
    assert ("fracture", "absent", "linked") in _read(labeler, "clavicle intact")


def test_nothing_abnormal_in_the_heart_or_lungs_calls_both_normal():
    assert lay_normals("nothing abnormal in the heart or lungs") == "heart and lungs are normal"
    assert lay_normals("no abnormality of the lungs") == "lungs are normal"
    assert lay_normals("nothing wrong with my heart") == "heart is normal"
    assert lay_normals("abnormal heart") == "abnormal heart"


def test_lungs_filling_with_fluid_is_fluid_in_the_lungs(labeler):
    assert lay_normals("lungs filling with fluid") == "fluid in the lungs"
    assert lay_normals("lungs are full of water") == "water in the lungs"
    found = _read(labeler, "lungs filling with fluid")
    assert ("pulmonary edema", "present", "linked") in found
    assert not any(finding == "fluid" for finding, _, _ in found)


def test_mass_effect_on_the_trachea_is_its_deviation(labeler):
    found = [(m.finding, m.status) for m in labeler.label("No mass effect on the trachea.")]
    assert found == [("mediastinal shift", "absent")]


@pytest.mark.parametrize("query, change", [
    ("no increase in the pleural effusion", "no increase"), ("no significant change since the prior study",
                                                             "no significant change"),
    ("pleural effusion not increased", "not increased"), ("no interval change", "no interval change")])
def test_a_change_denied_is_the_same_as_before(query, change):
    assert changes.query_change(query) == (change, changes.SAME)


def test_a_size_denied_is_no_change():
    assert changes.query_change("heart not enlarged") == (None, 0)
    assert changes.query_change("no enlargement of the heart") == (None, 0)


@pytest.mark.parametrize("sentence, found, mass", [
    ("Right paratracheal mass, possibly lymphadenopathy.", ("mediastinal mass", "present"), True),
    ("Stable right upper mediastinal opacity.", ("mediastinal mass", "present"), False),
    ("Stable paratracheal soft tissue density.", ("mediastinal mass", "present"), False),
    ("No mediastinal mass.", ("mediastinal mass", "absent"), False),
])
def test_a_mass_beside_the_trachea_is_a_mediastinal_mass(labeler, sentence, found, mass):
    # "a lump near the windpipe" (queries_v14, spent test): reports write "paratracheal density"; a phrase
    # naming a mass still states one (a lung mass query found "Right paratracheal mass" before)
    said = [(m.finding, m.status) for m in labeler.label(sentence)]
    assert found in said
    assert (("mass", "present") in said) == mass


def test_around_a_hilum_with_its_side_is_perihilar():
    # "hazy opacity around the right hilum" (queries_v14, spent test): reports write "right perihilar", "juxtahilar"
    assert patterns.query_pattern("hazy opacity around the right hilum")[1] & patterns.PERIHILAR
    assert patterns.query_pattern("opacity near the left hilum")[1] & patterns.PERIHILAR
    assert not patterns.query_pattern("right hilar mass")[1] & patterns.PERIHILAR
    assert (("juxtahilar",), patterns.PERIHILAR) in patterns.UNIT_WORDS


def test_normal_appearance_is_normal():
    assert lay_normals("normal appearance of the lungs") == "normal lungs"
    assert lay_normals("normal-appearing heart") == "normal heart"
    assert lay_normals("abnormal appearance of the lungs") == "abnormal appearance of the lungs"
