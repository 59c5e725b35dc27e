"""Lay words for normal and subjects sharing a normal statement (issue 35, item 6; queries_v5 dev).

- "lungs look fine", "healthy lungs", "heart is okay" are read as reports write them ("lungs are normal",
  "normal lungs"), so the open-vocabulary reader and the lexicon's normal forms meet the reports' words;
- "fine" and "good" are lay normals only after a verb or closing the query ("fine nodules" stays);
- in "heart and lungs are normal" the heart is called normal too, and in "normal heart and lungs" the lungs:
  a subject joined by "and" or a comma to a normal statement, with nothing said of it, shares its predicate.
"""

from __future__ import annotations

import pytest

from radsift.labels import Labeler
from radsift.search.reading import lay_normals, read_query


@pytest.fixture(scope="module")
def labeler() -> Labeler:
    return Labeler()


@pytest.mark.parametrize("query, read", [
    ("lungs look fine", "lungs are normal"),
    ("the lungs seem to be clear", "the lungs are clear"),
    ("healthy lungs", "normal lungs"),
    ("heart is okay", "heart is normal"),
    ("heart looks ok", "heart are normal"),
    ("normal-looking chest", "normal chest"),
    ("fine nodules in the lungs", "fine nodules in the lungs"),
    ("good inspiration", "good inspiration"),
    # a part of the lung called clear: the lungs stated clear there
    ("retrocardiac region clear", "retrocardiac lungs are clear"),
    ("the apices are clear", "the apices lungs are clear"),
    ("lung bases clear of consolidation", "lung bases clear of consolidation"),
])
def test_lay_normal_words_are_written_as_reports_write_them(query, read) -> None:
    assert lay_normals(query) == read


def phrases(labeler, query: str) -> list[tuple[str, ...]]:
    return [p.stems for p in labeler.query_phrases(query)]


def test_subjects_share_a_normal_predicate(labeler) -> None:
    assert phrases(labeler, "heart and lungs are normal") == [("heart", "normal"), ("lung", "normal")]
    assert phrases(labeler, "heart, lungs and bones are unremarkable") == [
        ("heart", "unremark"), ("lung", "unremark"), ("bone", "unremark")]
    assert phrases(labeler, "normal heart and lungs") == [("normal", "heart"), ("normal", "lung")]


def test_only_joined_bare_subjects_share_it(labeler) -> None:
    # "or" offers alternatives, it does not say the predicate of both
    assert phrases(labeler, "heart or lungs are normal") == [("heart",), ("lung", "normal")]
    # a subject with something said of it keeps its own words
    assert phrases(labeler, "pleural thickening and scarring") == [("pleural", "thicken"), ("scar",)]


def test_a_lay_normal_query_reads_as_a_normal_statement(labeler) -> None:
    reading = read_query("heart and lungs are okay", labeler)
    assert [f.finding for f in reading.findings] == ["heart normal", "lungs are normal"]
    assert [f.finding for f in read_query("the heart looks ok", labeler).findings] == ["cardiomegaly"]
    assert [f.status for f in read_query("the heart looks ok", labeler).findings] == ["absent"]


# -- an organ removed is a surgery done, a device removed is gone -------------------------------------------------
def _links(text: str):
    from radsift.search.concepts import Link

    table = {"part of the lung removed": "lung resection", "part of the lung": "lung resection",
             "gallbladder removed": "cholecystectomy", "chest tube removed": "chest tube", "chest tube": "chest tube"}
    concept = table.get(text.lower())
    exact = {"swollen heart"}  # a concept's own everyday name: the linker's cosine is 1.00
    return Link(concept, 1.0 if text.lower() in exact else 0.9, text) if concept else None


def test_an_organ_removed_is_a_surgery_done(labeler) -> None:
    reading = read_query("part of the lung removed", labeler, link=_links, literal=lambda stems: True)
    assert [(f.finding, f.status, f.source) for f in reading.findings] == [("lung resection", "present", "linked")]
    reading = read_query("gallbladder removed", labeler, link=_links, literal=lambda stems: True)
    assert [(f.finding, f.status) for f in reading.findings] == [("cholecystectomy", "present")]


def test_a_device_removed_is_still_gone(labeler) -> None:
    reading = read_query("chest tube removed", labeler, link=_links, literal=lambda stems: True)
    assert [(f.finding, f.status) for f in reading.findings] == [("chest tube", "absent")]


# -- more lay wording (queries_v6 dev) --------------------------------------------------------------------------
@pytest.mark.parametrize("query, read", [
    ("x-ray came back clean", "normal chest x-ray"),
    ("my chest x-ray was fine", "normal chest x-ray"),
    ("lungs are dry", "no pulmonary edema"),
    ("dry lungs", "no pulmonary edema"),
    ("big heart, lungs dry, no effusion", "big heart, no pulmonary edema, no effusion"),
    ("dry cough", "dry cough"),
])
def test_a_clean_film_and_dry_lungs_are_read_as_reports_say_them(query, read) -> None:
    assert lay_normals(query) == read


def test_a_head_two_modifiers_share_is_written_out_for_each(labeler) -> None:
    from radsift.search.reading import shared_heads

    assert shared_heads("endotracheal and nasogastric tubes", labeler) == "endotracheal tube and nasogastric tube"
    assert shared_heads("right and left pleural effusions", labeler) == "right and left pleural effusions"
    findings = [f.finding for f in read_query("endotracheal and nasogastric tubes", labeler).findings]
    assert findings == ["endotracheal tube", "nasogastric tube"]


@pytest.mark.parametrize("text", ["pneumonia cleared up", "The right effusion has cleared up.", "pneumonia went away"])
def test_what_cleared_up_or_went_away_is_absent(labeler, text) -> None:
    assert {m.status for m in labeler.label(text)} == {"absent"}


def test_the_spleens_granulomas_are_no_lung_granulomas(labeler) -> None:
    assert labeler.label("Multiple calcified splenic granulomas are also noted.") == []
    assert [m.finding for m in labeler.label("Calcified granuloma in the left upper lobe.")] == [
        "calcified granuloma", "granuloma"]


# -- a part of the query in everyday words beside a lexicon finding (queries_v7 dev) -----------------------------
def _part_links(text: str):
    from radsift.search.concepts import Link

    table = {"fluid around the lung": "pleural effusion", "small lungs": "low lung volumes",
             "pneumonia with fluid around the lung": "pneumonia"}
    concept = table.get(text.lower())
    exact = {"swollen heart"}  # a concept's own everyday name: the linker's cosine is 1.00
    return Link(concept, 1.0 if text.lower() in exact else 0.9, text) if concept else None


def test_a_part_in_everyday_words_beside_a_lexicon_finding_is_linked(labeler) -> None:
    reading = read_query("pneumonia with fluid around the lung", labeler, link=_part_links, literal=lambda stems: False)
    assert [(f.finding, f.status, f.source) for f in reading.findings] == [
        ("pneumonia", "present", "lexicon"), ("pleural effusion", "present", "linked")]
    reading = read_query("small lungs and a large heart", labeler, link=_part_links, literal=lambda stems: False)
    assert [(f.finding, f.source) for f in reading.findings] == [("cardiomegaly", "lexicon"), ("low lung volumes", "linked")]
    # the part's own words stay beside the link when the index holds them
    reading = read_query("small lungs and a large heart", labeler, link=_part_links, literal=lambda stems: True)
    assert [(f.finding, f.source, f.beside) for f in reading.findings] == [
        ("cardiomegaly", "lexicon", None), ("small lungs", "open", None), ("low lung volumes", "linked", "small lungs")]


def test_without_is_no_join_and_a_query_in_one_part_links_nothing_more(labeler) -> None:
    reading = read_query("pneumonia without fluid around the lung", labeler, link=_part_links,
                         literal=lambda stems: False)
    assert "pleural effusion" not in [f.finding for f in reading.findings]
    reading = read_query("pneumonia", labeler, link=_part_links, literal=lambda stems: False)
    assert [f.finding for f in reading.findings] == ["pneumonia"]
    # no link function (bm25, or linking off): the lexicon's reading alone
    assert [f.finding for f in read_query("pneumonia with fluid around the lung", labeler).findings] == ["pneumonia"]


def test_a_part_that_links_nothing_is_read_in_its_own_words_when_the_index_holds_them(labeler) -> None:
    reading = read_query("hiatal hernia, lungs clear", labeler, link=_part_links, literal=lambda stems: True)
    assert [(f.finding, f.status, f.source) for f in reading.findings] == [
        ("hiatal hernia", "present", "lexicon"), ("lungs clear", "present", "open")]
    # words no unit holds make a reading nothing can state: the lexicon's finding alone
    reading = read_query("hiatal hernia, lungs clear", labeler, link=_part_links, literal=lambda stems: False)
    assert [f.finding for f in reading.findings] == ["hiatal hernia"]


# -- two things asked at once, in everyday words (queries_v10 dev) --------------------------------------------------
def _pair_links(text: str):
    from radsift.search.concepts import Link

    table = {"curved spine": "scoliosis", "a twisted aorta": "aortic tortuosity",
             "curved spine and a twisted aorta": "scoliosis", "heart surgery wires": "sternotomy wires",
             "fluid around the lungs": "pleural effusion", "a pacemaker": "pacemaker",
             "breast removed": "mastectomy", "curved spine a hump": "kyphosis", "congested lungs": "pulmonary edema",
             "fluid around the heart": "pericardial effusion", "thin bones": "osteopenia",
             "vertebral body heights are maintained": "compression fracture", "swollen heart": "cardiomegaly"}
    concept = table.get(text.lower())
    exact = {"swollen heart"}  # a concept's own everyday name: the linker's cosine is 1.00
    return Link(concept, 1.0 if text.lower() in exact else 0.9, text) if concept else None


def test_two_things_asked_in_everyday_words_are_each_linked(labeler) -> None:
    reading = read_query("curved spine and a twisted aorta", labeler, link=_pair_links, literal=lambda stems: False)
    assert [(f.finding, f.source) for f in reading.findings] == [("scoliosis", "linked"), ("aortic tortuosity", "linked")]
    # one part links: the whole words are linked (or read), as before
    reading = read_query("heart surgery wires and fluid at the bottom of the lungs", labeler, link=_pair_links,
                         literal=lambda stems: False)
    assert [f.source for f in reading.findings] == ["open", "open"]
    reading = read_query("curved spine with a hump", labeler, link=_pair_links, literal=lambda stems: False)
    assert [f.finding for f in reading.findings] == ["kyphosis"]


def test_an_organ_removed_in_a_part_is_a_surgery_done(labeler) -> None:
    reading = read_query("breast removed and a port for chemo", labeler, link=_pair_links, literal=lambda stems: True)
    assert [(f.finding, f.status) for f in reading.findings] == [("port", "present"), ("mastectomy", "present")]


def test_an_article_is_no_modifier_sharing_a_head(labeler) -> None:
    from radsift.search.reading import shared_heads

    assert shared_heads("fluid around the lungs and a pacemaker", labeler) == "fluid around the lungs and a pacemaker"
    reading = read_query("fluid around the lungs and a pacemaker", labeler, link=_pair_links, literal=lambda stems: False)
    assert [(f.finding, f.source) for f in reading.findings] == [("pacemaker", "lexicon"), ("pleural effusion", "linked")]


def test_a_pronoun_in_a_part_stands_for_the_thing_the_part_before_named(labeler) -> None:
    # queries_v11 dev "congested lungs with fluid around them": the fluid around the lungs went unread
    from radsift.search.clauses import with_antecedents as _with_antecedents

    assert _with_antecedents(["congested lungs", "fluid around them"]) == ["congested lungs", "fluid around the lungs"]
    assert _with_antecedents(["no effusion", "a spot on it"]) == ["no effusion", "a spot on the effusion"]
    assert _with_antecedents(["a spot on it"]) == ["a spot on it"]  # nothing before it
    assert _with_antecedents(["heart is", "fluid around it"]) == ["heart is", "fluid around it"]  # no thing named
    reading = read_query("congested lungs with fluid around them", labeler, link=_pair_links,
                         literal=lambda stems: False)
    assert [(f.finding, f.source) for f in reading.findings] == [("pulmonary edema", "linked"),
                                                                 ("pleural effusion", "linked")]
    reading = read_query("enlarged heart with fluid around it", labeler, link=_pair_links, literal=lambda stems: False)
    assert [f.finding for f in reading.findings] == ["cardiomegaly", "pericardial effusion"]


def test_a_part_calling_an_organ_normal_lets_the_other_part_link(labeler) -> None:
    # queries_v8 dev "healthy lungs but thin bones": one part's link alone was refused, and neither was read
    reading = read_query("healthy lungs but thin bones", labeler, link=_pair_links, literal=lambda stems: True)
    assert ("osteopenia", "present", "linked") in [(f.finding, f.status, f.source) for f in reading.findings]
    reading = read_query("heart surgery wires and fluid at the bottom of the lungs", labeler, link=_pair_links,
                         literal=lambda stems: False)
    assert [f.source for f in reading.findings] == ["open", "open"]  # the other part is no normal statement


def test_heights_maintained_is_a_normal_statement(labeler) -> None:
    from radsift.search.linkwords import normal_statement

    assert normal_statement("vertebral body heights are maintained") and normal_statement("disc spaces preserved")
    assert not normal_statement("vertebral body height loss")
    reading = read_query("vertebral body heights are maintained", labeler, link=_pair_links,
                         literal=lambda stems: False)
    assert [(f.finding, f.status) for f in reading.findings] == [("compression fracture", "absent")]


def test_a_past_cause_named_is_not_asked_for(labeler) -> None:
    # queries_v10 dev "calcium spots from an old lung infection" read pneumonia present
    reading = read_query("scarring from an old infection", labeler, link=_pair_links, literal=lambda stems: True)
    assert [f.finding for f in reading.findings] == ["scarring"]
    reading = read_query("calcium spots from an old lung infection", labeler, link=_pair_links,
                         literal=lambda stems: False)
    assert "pneumonia" not in [f.finding for f in reading.findings]
    reading = read_query("scarring with an infection", labeler, link=_pair_links, literal=lambda stems: True)
    assert [f.finding for f in reading.findings] == ["scarring", "pneumonia"]  # no past cause: both asked
    # a cause named specifically stays asked (queries_v12 dev "leftover scarring from an old TB infection")
    reading = read_query("leftover scarring from an old TB infection", labeler, link=_pair_links,
                         literal=lambda stems: True)
    assert [f.finding for f in reading.findings] == ["scarring", "tuberculosis"]


def test_a_concepts_own_description_written_whole_names_it(labeler) -> None:
    # queries_v9 dev "zipper scar on the chest" read scarring, though "zipper scar" is the sternotomy's everyday name
    reading = read_query("zipper scar on the chest", labeler, link=_pair_links, literal=lambda stems: False)
    assert [(f.finding, f.status, f.source, f.via) for f in reading.findings] == [
        ("sternotomy wires", "present", "linked", "zipper scar")]
    assert [(f.finding, f.status) for f in read_query("no zipper scar", labeler, link=_pair_links,
                                                      literal=lambda stems: False).findings] == [
        ("sternotomy wires", "absent")]
    # the index holding the words keeps them (the user's words stay), and a literal reading reads them
    assert [f.finding for f in read_query("zipper scar on the chest", labeler, link=_pair_links,
                                          literal=lambda stems: True).findings] == ["scarring"]
    assert [f.finding for f in read_query("zipper scar on the chest", labeler, link=_pair_links,
                                          literal=lambda stems: False, read_as="literal").findings] == ["scarring"]


def test_a_part_linked_as_near_as_an_everyday_name_is_taken_alone(labeler) -> None:
    # queries_v12 dev "swollen heart and a flattened vertebra": the vertebra links to nothing clearly, the heart at 1.00
    reading = read_query("swollen heart and a flattened vertebra", labeler, link=_pair_links, literal=lambda stems: False)
    assert [(f.finding, f.source) for f in reading.findings] == [("cardiomegaly", "linked")]
    # a part linked loosely (0.9 here) alone is not taken: the words are read as they stand
    reading = read_query("curved spine and a flattened vertebra", labeler, link=_pair_links, literal=lambda stems: False)
    assert "scoliosis" not in [f.finding for f in reading.findings]


def test_a_part_of_the_lung_called_clear_reads_the_lungs_clear_there(labeler) -> None:
    from radsift.search.linkwords import normal_statement

    reading = read_query("retrocardiac region clear", labeler)
    assert [(f.finding, f.status) for f in reading.findings] == [("lungs are clear", "present")]
    assert reading.location == "retrocardiac"
    # where it is clear is no finding beside its normal word: a link to it states the concept absent
    assert normal_statement("left lung base clear") and not normal_statement("left lung base opacity")
