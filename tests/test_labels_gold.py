"""Labeler accuracy on the hand-written gold set, and the strict gold loader."""

from __future__ import annotations

from pathlib import Path

import pytest

from radsift.errors import LexiconError
from radsift.labels import Labeler, load_gold, score

GOLD = Path(__file__).parent / "data" / "gold_sentences.tsv"
FORMS = [  # every form the labeler must get right appears in the gold set
    "No pneumothorax or pleural effusion", "without overt", "negative for", "free of", "clear of",
    "no evidence of", "resolved", "has been removed", "Heart size is normal", "Normal heart size",
    "heart is not enlarged", "cannot be excluded", "Possible", "may represent", "No change in the small",
    "Not only", "but there is", "however", "; there is",
]


@pytest.fixture(scope="module")
def labeler() -> Labeler:
    return Labeler()


def test_gold_set_is_large_and_covers_the_forms(labeler) -> None:
    gold = load_gold(GOLD, labeler.lexicon)  # every finding name exists in the lexicon
    assert len(gold) >= 200
    assert sum(1 for g in gold if not g.labels) >= 10  # sentences with no finding
    assert {s for g in gold for _, s in g.labels} == {"present", "absent", "uncertain"}
    texts = " ".join(g.text for g in gold).casefold()
    missing = [form for form in FORMS if form.casefold() not in texts]
    assert not missing


def test_gold_precision_and_recall(labeler, capsys) -> None:
    gold = load_gold(GOLD, labeler.lexicon)
    result = score(labeler, gold)
    with capsys.disabled():
        print(
            f"\ngold: {len(gold)} sentences, {result.tp + result.fn} (finding, status) pairs: "
            f"precision {result.precision:.3f}, recall {result.recall:.3f}, F1 {result.f1:.3f} "
            f"(tp {result.tp}, fp {result.fp}, fn {result.fn})"
        )
        for g, predicted, expected in result.errors:
            print(f"  line {g.line}: {g.text!r} extra {sorted(predicted - expected)} missing {sorted(expected - predicted)}")
    # docs/measurements.md states 0.997 for both (300 of 301 pairs). The margin allows two more
    # errors each way (0.990) and no more: dropping the negation ends alone falls to 0.970.
    assert result.precision >= 0.99
    assert result.recall >= 0.99


def test_gold_loader_is_strict(tmp_path) -> None:
    path = tmp_path / "gold.tsv"
    path.write_text("sentence\tlabels\nNo effusion.\tpleural effusion=absent\nMaybe PTX.\tpneumothorax=maybe\n")
    with pytest.raises(LexiconError, match=r"gold\.tsv:3: unknown status 'maybe'"):
        load_gold(path)
    path.write_text("# comment\nNo effusion.\n")
    with pytest.raises(LexiconError, match=r"gold\.tsv:2: expected 'sentence<TAB>labels'"):
        load_gold(path)
    path.write_text("No effusion.\tpleural effusion absent\n")
    with pytest.raises(LexiconError, match=r"gold\.tsv:1: label 'pleural effusion absent' is not 'finding=status'"):
        load_gold(path)


def test_gold_loader_checks_findings_against_the_lexicon(tmp_path, labeler) -> None:
    path = tmp_path / "gold.tsv"
    path.write_text("No effusion.\tpleural effusions=absent\n")
    with pytest.raises(LexiconError, match=r"gold\.tsv:1: unknown finding 'pleural effusions'"):
        load_gold(path, labeler.lexicon)
    assert load_gold(path)[0].labels == {("pleural effusions", "absent")}


def test_score_counts() -> None:
    class Fixed:
        def label_many(self, texts):
            from radsift.records import Mention

            return [[Mention("pneumothorax", "finding", 0, 1, "x", "absent")] for _ in texts]

    from radsift.labels.gold import GoldSentence

    gold = [
        GoldSentence("a", frozenset({("pneumothorax", "absent")}), 1),
        GoldSentence("b", frozenset({("pneumothorax", "present"), ("pleural effusion", "absent")}), 2),
    ]
    result = score(Fixed(), gold)
    assert (result.tp, result.fp, result.fn) == (1, 1, 2)
    assert result.precision == 0.5 and result.recall == pytest.approx(1 / 3)
