"""The benchmark systems rank as ``radsift search`` does: for a query asking for a finding, a candidate that says only
that all is normal ranks after one that says something else, within the same reading tier (the normal-only key of
:func:`radsift.ranking.tiers.with_normal`); a query that itself calls something normal reads no key."""

from __future__ import annotations

from radsift.evaluation.systems.systems import BM25System

CANDIDATES = ["Lungs are clear.", "The lungs are hyperexpanded."]  # normal only; something else (no label)


def order(system, query: str) -> list[int]:
    return [i for i, _ in system.rank([query], CANDIDATES)[0]]


def test_a_normal_only_candidate_ranks_after_the_others():
    assert order(BM25System(negation=False), "wet lungs") == [0, 1]  # by its words alone, the normal one leads
    assert order(BM25System(negation=True), "wet lungs") == [1, 0]


def test_a_query_calling_something_normal_reads_no_key():
    assert order(BM25System(negation=True), "lungs are clear") == [0, 1]


def test_a_finding_asked_alone_ranks_the_candidates_stating_fewest_other_findings_first():
    # as radsift search does (tests/test_alone.py): the candidates are reports here (no groups)
    candidates = ["Tortuous aorta, cardiomegaly, effusion.",
                  "Tortuous aorta. The lungs are clear. No pleural effusion or pneumothorax. Heart size is normal.",
                  "Tortuous aorta and cardiomegaly."]
    ranked = [i for i, _ in BM25System(negation=True).rank(["tortuous aorta, otherwise normal"], candidates)[0]]
    assert ranked == [1, 2, 0]
    plain = [i for i, _ in BM25System(negation=True).rank(["tortuous aorta"], candidates)[0]]
    assert plain != [1, 2, 0]  # by the words alone the order differs: the key makes it
