"""Training data and batch construction (no model weights: fast); the configuration: test_train_config.py."""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import pytest

from radsift.demo import generate_reports
from radsift.labels import opposite
from radsift.models.hashing import HashingEncoder
from radsift.models.training import load_config
from radsift.models.training.batching import LexiconSampler, PairBatchSampler, mine_negatives
from radsift.models.training.combined import is_pair_step
from radsift.models.training.data import SectionPair, prepare_data, text_key
from radsift.models.training.lexicon import LexiconRecipe
from radsift.splits import heldout_ids


@pytest.fixture(scope="module")
def reports():
    return [d.report for d in generate_reports(n=150, seed=7)]


@pytest.fixture(scope="module")
def data(reports):
    return prepare_data(reports, load_config(), progress=False)


# ------------------------------------------------------------------------------ data and split
def test_heldout_split_is_by_report_and_stable(reports, data):
    ids = [r.id for r in reports]
    held = heldout_ids(ids, 0.2, 0)
    assert held == heldout_ids(list(reversed(ids)), 0.2, 0)  # order does not matter
    assert held == data.heldout_ids and not (data.train_ids & data.heldout_ids)
    assert 0.05 < len(held) / len(ids) < 0.4
    assert heldout_ids(ids, 0.2, 1) != held
    # no training sentence comes only from held-out reports; pairs stay on their side
    by_id = {s.id: s for s in data.weak.sentences}
    for s in data.lexicon.sentences:
        assert set(by_id[s.id].report_ids) & data.train_ids
    assert {p.report_id for p in data.pairs} <= data.train_ids
    assert {p.report_id for p in data.heldout_pairs} <= data.heldout_ids


def test_split_by_finding_removes_test_findings(reports):
    cfg = load_config(recipe="lexicon-triplet", split_by_finding=0)
    d = prepare_data(reports, cfg, progress=False)
    assert d.test_findings
    assert all(q.finding not in d.test_findings for q in d.lexicon.by_query)
    assert all(q.finding not in d.test_findings for s in d.lexicon.sentences for q in s.labels)


def test_text_key_folds_boilerplate_variants():
    assert text_key("1. No acute cardiopulmonary abnormality.") == text_key("no acute cardiopulmonary abnormality")
    assert text_key("No acute  disease .") == text_key("NO ACUTE DISEASE")
    assert text_key("No pneumothorax.") != text_key("Pneumothorax.")


# ------------------------------------------------------------------------------ lexicon batches
def test_lexicon_batches_hold_opposite_negatives_and_no_false_negatives(data):
    sampler = LexiconSampler(data.lexicon, batch_size=16, alpha=0.5, rng=random.Random(0))
    sentences = data.lexicon.sentences
    with_opposite = 0
    for _ in range(20):
        batch = sampler.next_batch()
        assert 2 <= len(batch) <= 16
        for a in batch:
            assert a.query in sentences[a.positive].labels
            for b in batch:
                if a is not b:  # every other sentence in the batch is a true negative for a's query
                    assert not sentences[b.positive].matches(a.query)
            opp = data.lexicon.opposite_of(a.query)
            if opp is not None:
                with_opposite += 1
                assert any(opp in sentences[b.positive].labels for b in batch), a.query
    assert with_opposite > 0  # the demo corpus has yes/no pairs (pneumothorax, effusion ...)


def test_mine_negatives_hardest_and_random():
    anchors = np.array([[1.0, 0.0], [0.0, 1.0]])
    cands = np.array([[0.9, 0.1], [0.8, 0.6], [0.1, 0.9], [1.0, 0.0]])
    allowed = np.array([[True, True, True, False], [True, True, False, False]])
    assert mine_negatives(anchors, cands, allowed, "hardest", random.Random(0)) == [0, 1]
    picks = [mine_negatives(anchors, cands, allowed, "random", random.Random(s)) for s in range(30)]
    assert all(allowed[i, p[i]] for p in picks for i in range(2))
    assert len({p[0] for p in picks}) > 1  # random really varies
    none_allowed = np.zeros((2, 4), dtype=bool)
    assert mine_negatives(anchors, cands, none_allowed, "hardest", random.Random(0)) == [None, None]


class _HashingModel:
    """Stands in for a SentenceTransformer in mining (encode only)."""

    def __init__(self, folder: Path) -> None:
        self.encoder = HashingEncoder(folder, dim=512)
        self.max_seq_length = 128

    def encode(self, texts, **kwargs):
        return self.encoder.encode(texts)


@pytest.mark.parametrize("loss", ["triplet", "mnrl"])
def test_hard_negative_is_most_similar_unmatched_sentence(data, tmp_path: Path, loss: str):
    cfg = load_config(recipe="lexicon-triplet", loss=loss, batch_size=8, mega_batch_size=32)
    model = _HashingModel(tmp_path / "hash")
    recipe = LexiconRecipe(model, data.lexicon, cfg, random.Random(1))
    batches = [recipe.sampler.next_batch() for _ in range(4)]
    mined = recipe.mine(batches)
    sentences = data.lexicon.sentences
    pool = sorted({e.positive for b in batches for e in b})
    pool_vecs = model.encode([sentences[c].text for c in pool])
    opposite_picked = checked = 0
    for mb in mined:
        positives = {e.positive for e in mb.examples}
        for e, neg in zip(mb.examples, mb.negatives):
            assert not sentences[neg].matches(e.query)  # a true negative
            allowed = [j for j, c in enumerate(pool)
                       if c != e.positive and not sentences[c].matches(e.query)
                       and (loss == "triplet" or (c not in positives
                                                  and not any(sentences[c].matches(o.query) for o in mb.examples)))]
            if not allowed:
                continue
            sims = pool_vecs[allowed] @ model.encode([e.anchor])[0]
            assert np.isclose(sims.max(), pool_vecs[pool.index(neg)] @ model.encode([e.anchor])[0]), e
            checked += 1
            opposite_picked += opposite(e.query) in sentences[neg].labels
    assert checked > 10
    if loss == "triplet":  # "no pneumothorax" sentences are the nearest unmatched ones for "pneumothorax"
        assert opposite_picked > 0


# ------------------------------------------------------------------------------ pair batches
def test_pair_batches_never_repeat_an_impression(data):
    sampler = PairBatchSampler(data.pairs, batch_size=16, rng=random.Random(0))
    seen_reports = set()
    for _, batch in zip(range(30), sampler):
        keys = [p.impression_key for p in batch]
        assert len(batch) == 16
        assert len(set(keys)) == len(keys)
        seen_reports.update(p.report_id for p in batch)
    assert len(seen_reports) > len(data.pairs) // 2
    # the demo corpus does repeat impressions: the sampler had something to avoid
    assert len({p.impression_key for p in data.pairs}) < len(data.pairs)


def test_pair_sampler_with_few_distinct_impressions():
    pairs = [SectionPair(f"r{i}", f"findings {i}", "No acute disease." if i % 2 else "1. no acute disease",
                         text_key(f"findings {i}"), text_key("No acute disease.")) for i in range(6)]
    pairs.append(SectionPair("x", "effusion", "Small effusion.", "effus", text_key("Small effusion.")))
    batch = next(iter(PairBatchSampler(pairs, batch_size=8, rng=random.Random(0))))
    assert len(batch) == 2 and len({p.impression_key for p in batch}) == 2


def test_combined_schedule_share():
    steps = [is_pair_step(i, 0.25) for i in range(100)]
    assert sum(steps) == 25
    assert not any(steps[i] and steps[i + 1] for i in range(99))  # spread, not bunched
    assert not any(is_pair_step(i, 0.0) for i in range(10)) and all(is_pair_step(i, 1.0) for i in range(10))


def test_description_share_uses_lexicon_descriptions_as_queries():
    import random

    from radsift.labels.weak import NO, YES, Query
    from radsift.models.training.batching import LexiconSampler
    from radsift.models.training.data import LabeledSentence, LexiconData

    yes, no = Query(YES, "pneumothorax"), Query(NO, "pneumothorax")
    sentences = [LabeledSentence("s1", "Small pneumothorax.", frozenset({yes}), frozenset({yes}), frozenset()),
                 LabeledSentence("s2", "No pneumothorax.", frozenset({no}), frozenset({no}), frozenset())]
    data = LexiconData(sentences, {yes: [0], no: [1]},
                       descriptions={"pneumothorax": ("air around a collapsed lung",)})
    always = LexiconSampler(data, 2, 0.5, random.Random(0), description_share=1.0)
    anchors = {(e.query.polarity, e.anchor) for _ in range(20) for e in always.group()}
    assert anchors == {(YES, "air around a collapsed lung"), (NO, "no air around a collapsed lung")}
    never = LexiconSampler(data, 2, 0.5, random.Random(0), description_share=0.0)
    assert not any("collapsed" in e.anchor for _ in range(20) for e in never.group())
