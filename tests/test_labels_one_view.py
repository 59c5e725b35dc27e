"""One view, a parenthesis, a device's family, ectasia is not tortuosity (issue 35, item 6, queries_v4 dev).

Rules made from the errors of the newcomer's check (the v4 batch's dev half), each for a class of reports:

- a finding "not evident on the lateral exam" is one the other view shows: not denied;
- a parenthesis is a statement of its own: a negation before it does not reach into it;
- an enteric tube through the nose or mouth (feeding, Dobhoff, nasoenteric) is a nasogastric-route tube, a
  gastrostomy is not;
- an ectatic aorta is widened, a tortuous one winds: "aortic ectasia/tortuosity" names two alternatives and
  states neither, while an ectatic aorta is still counted tortuous.

Sentences in the style of Open-i written for these tests; the packaged lexicon and rules, no model.
"""

from __future__ import annotations

import pytest

from radsift.labels import Labeler
from radsift.search.reading import read_query


@pytest.fixture(scope="module")
def labeler() -> Labeler:
    return Labeler()


def stated(labeler, text: str) -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for m in labeler.label(text):
        out.setdefault(m.finding, set()).add(m.status)
    return out


@pytest.mark.parametrize("text, finding", [
    ("There is mild right basilar opacity with right costophrenic XXXX blunting which is not evident on the "
     "lateral exam.", "blunted costophrenic angle"),
    ("Right basilar nodular density seen on the frontal view, not identified on the lateral view.", "nodule"),
    ("Small calcified granuloma, not visualized on lateral projection.", "calcified granuloma"),
])
def test_not_seen_on_one_view_is_not_denied(labeler, text, finding) -> None:
    assert stated(labeler, text)[finding] == {"present"}


@pytest.mark.parametrize("text", ["No pneumothorax is seen on the lateral view.", "Pneumothorax is not seen.",
                                  "The nodule seen on CT is not seen on this study."])
def test_a_denial_naming_no_single_view_still_denies(labeler, text) -> None:
    assert set().union(*stated(labeler, text).values()) == {"absent"}


def test_a_negation_does_not_reach_into_a_later_parenthesis(labeler) -> None:
    got = stated(labeler, "No focal consolidation or large pleural effusion identified (blunting of costophrenic "
                          "recesses bilaterally, unchanged).")
    assert got["consolidation"] == {"absent"} and got["pleural effusion"] == {"absent"}
    assert got["blunted costophrenic angle"] == {"present"}
    # a parenthesis closed before the finding leaves the negation's reach as it was
    got = stated(labeler, "No pneumothorax (2 views) or pleural effusion.")
    assert got == {"pneumothorax": {"absent"}, "pleural effusion": {"absent"}}
    # a negation inside the parenthesis still denies what follows it there
    assert stated(labeler, "Clear lungs (no pneumonia).")["pneumonia"] == {"absent"}


@pytest.mark.parametrize("text", ["Feeding tube passes below the left hemidiaphragm.",
                                  "Enteric tube tip in the stomach.", "Dobhoff tube tip in the duodenum."])
def test_an_enteric_tube_is_a_nasogastric_route_tube(labeler, text) -> None:
    got = stated(labeler, text)
    assert got["feeding tube"] == {"present"} and got["nasogastric tube"] == {"present"}


@pytest.mark.parametrize("text", ["Gastrostomy tube in the left upper quadrant.", "PEG tube in place."])
def test_a_gastrostomy_is_no_nasogastric_tube(labeler, text) -> None:
    assert set(stated(labeler, text)) == {"feeding tube"}


def test_ectasia_or_tortuosity_states_neither(labeler) -> None:
    got = stated(labeler, "Mild aortic ectasia/tortuosity.")
    assert got == {"aortic ectasia": {"uncertain"}, "aortic tortuosity": {"uncertain"}}


@pytest.mark.parametrize("text", ["Ectatic thoracic aorta.", "The aorta is tortuous and ectatic.",
                                  "Mild ectasia of the aorta."])
def test_an_ectatic_aorta_is_ectatic_and_still_tortuous(labeler, text) -> None:
    assert stated(labeler, text) == {"aortic ectasia": {"present"}, "aortic tortuosity": {"present"}}


def test_a_tortuous_aorta_is_not_ectatic(labeler) -> None:
    assert stated(labeler, "Tortuous thoracic aorta.") == {"aortic tortuosity": {"present"}}
    # the query names the ectasia first (its part, tortuosity, is read beside it as reports state it)
    assert [(f.finding, f.status) for f in read_query("aortic ectasia", labeler).findings][0] == \
        ("aortic ectasia", "present")
