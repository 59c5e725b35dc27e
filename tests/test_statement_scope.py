"""What a statement covers (issue 35, items 3 and 6): a statement about part of an organ is no statement that
the whole organ is normal, and a hedge after "but" is still said of the finding before it.

"Remaining lungs are clear" and "lungs are otherwise clear" say something abnormal lies beside them, so the
open-vocabulary reader does not count them as the query's "lungs are clear". "Infiltrate is less prominent but
not entirely excluded" hedges the infiltrate ("but" alone ends a cue's scope). Sentences written for these
tests (in the style of Open-i); the packaged lexicon and rules, no model.
"""

from __future__ import annotations

import pytest
from test_labels_openvocab import labeler, statuses  # noqa: F401  (the fixture and the reading these tests share)


@pytest.mark.parametrize("text", [
    "Remaining lungs are clear without evidence of focal opacification.",
    "The lungs are otherwise clear.",
    "The remainder of the lungs are clear.",
    "The rest of the lungs are clear.",
    "Lungs are clear except for a calcified granuloma in the left base.",
    "Lungs are clear apart from mild scarring at the right apex.",
])
def test_a_statement_about_part_of_the_organ_is_no_mention(labeler, text) -> None:
    assert statuses(labeler, "lungs are clear", text) == []


@pytest.mark.parametrize("text", [
    "Lungs are clear.",
    "The lungs are clear bilaterally.",
    "Lungs are clear without focal opacification.",
])
def test_a_statement_about_the_whole_organ_is_still_read(labeler, text) -> None:
    assert statuses(labeler, "lungs are clear", text) == ["present"]


def test_the_rule_is_for_normal_statements_only(labeler) -> None:
    # a finding phrase keeps its mentions beside the same words: the remaining nodule is a nodule
    assert statuses(labeler, "pulmonary nodule", "The remaining pulmonary nodule is unchanged.") == ["present"]
    assert statuses(labeler, "heart size normal", "Heart size is otherwise normal.") == []
    assert statuses(labeler, "heart size normal", "Heart size is normal.") == ["present"]


def findings(labeler, text: str) -> list[tuple[str, str]]:
    return [(m.finding, m.status) for m in labeler.label(text)]


@pytest.mark.parametrize("text", [
    "Infiltrate is less prominent but not entirely excluded.",
    "Infiltrate is XXXX less XXXX but not entirely excluded.",
    "Pneumonia is less likely but cannot be excluded.",
    "Edema is improved but not entirely ruled out.",
])
def test_a_hedge_after_but_is_said_of_the_finding_before_it(labeler, text) -> None:
    assert [status for _, status in findings(labeler, text)] == ["uncertain"]


def test_but_still_ends_a_scope_where_the_clause_after_it_has_its_own_finding(labeler) -> None:
    assert findings(labeler, "Atelectasis, but infection cannot be excluded.") == [
        ("atelectasis", "present"), ("pneumonia", "uncertain")]
    assert findings(labeler, "Small effusion but no pneumothorax.") == [
        ("pleural effusion", "present"), ("pneumothorax", "absent")]
