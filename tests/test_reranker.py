"""The cross-encoder reranker: reordering a passage head (rerank_head), loading a trained folder offline."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from radsift.errors import ConfigError
from radsift.models.reranker import DEFAULT_WEIGHT, Reranker, fuse, rerank_head
from radsift.records import Hit, Sentence


class KeywordReranker:
    """Scores a text by how many query words it contains (a stand-in with known scores)."""

    def score(self, query, texts):
        words = set(query.lower().split())
        return np.array([len(words & set(t.lower().rstrip(".").split())) for t in texts], dtype=np.float32)


def _hit(rank: int, text: str, report: str) -> Hit:
    sent = Sentence(report, "findings", 0, 0, len(text), text)
    return Hit(report_id=report, score=1.0 / rank, rank=rank, sentence=sent, section="findings",
               sections={"findings": text})


def _by_position(n: int) -> list[float]:
    return [-float(i) for i in range(n)]


def test_rerank_reorders_texts_within_top():
    texts = ["Heart size normal.", "Left pleural effusion.", "Small left pleural effusion.", "Small left effusion."]
    order, _ = rerank_head("small left effusion", texts, _by_position(4), KeywordReranker(), top=3)
    # the 4th text would score best but lies beyond top=3: it stays last
    assert [texts[i] for i in order] == ["Small left pleural effusion.", "Left pleural effusion.",
                                         "Heart size normal.", "Small left effusion."]
    assert rerank_head("small left effusion", texts, _by_position(4), KeywordReranker(), top=0)[0].tolist() == [0, 1, 2, 3]
    assert rerank_head("x", [], [], KeywordReranker())[0].size == 0


def test_rerank_head_scores_decrease_with_rank():
    hits = [_hit(1, "No pleural effusion.", "a"), _hit(2, "Heart normal.", "b"),
            _hit(3, "Large right pleural effusion.", "c"), _hit(4, "Right pleural effusion again.", "d")]
    order, scores = rerank_head("large right pleural effusion", [h.sentence.text for h in hits],
                                [h.score for h in hits], KeywordReranker(), top=3)
    assert [hits[i].report_id for i in order] == ["c", "a", "b", "d"]
    assert scores[0] == 4.0 and scores[1] == 2.0  # no weight: the reranker's own scores
    assert np.all(np.diff(scores) < 0)  # beyond top: first-stage order, placed below the head


def test_rerank_head_ranks_by_first_stage_before_the_cut():
    # candidates in any order: the head is the best `top` by first-stage score (ties by position)
    texts = ["Small left effusion.", "Heart size normal.", "Left pleural effusion."]
    order, _ = rerank_head("small left effusion", texts, [0.1, 0.9, 0.5], KeywordReranker(), top=2)
    assert order.tolist() == [2, 1, 0]


def test_ties_keep_first_stage_order():
    hits = [_hit(i + 1, "Lungs clear.", f"r{i}") for i in range(5)]
    order, _ = rerank_head("effusion", [h.sentence.text for h in hits], [h.score for h in hits], KeywordReranker())
    assert [hits[i].report_id for i in order] == [f"r{i}" for i in range(5)]


def test_fuse_standardises_and_weights():
    first, cross = [3.0, 2.0, 1.0], [0.1, 0.9, 0.5]
    # weight 0 keeps the first stage's order, weight 1 is the cross-encoder's own scores
    assert list(np.argsort(-fuse(first, cross, 0.0))) == [0, 1, 2]
    assert np.allclose(fuse(first, cross, 1.0), cross)
    z = lambda x: (np.array(x) - np.mean(x)) / np.std(x)  # noqa: E731
    assert np.allclose(fuse(first, cross, 0.3), 0.3 * z(cross) + 0.7 * z(first))
    assert np.allclose(fuse([1.0, 1.0], [0.2, 0.4], 0.5), 0.5 * z([0.2, 0.4]))  # a constant side adds nothing
    with pytest.raises(ConfigError, match="between 0 and 1"):
        fuse(first, cross, 1.5)
    with pytest.raises(ValueError, match="3 first-stage scores but 2"):
        fuse(first, cross[:2])


def test_fused_rerank_head_weighs_the_first_stage():
    # first-stage scores 1, 1/2, 1/3, 1/4; the keyword scores put hit c first
    hits = [_hit(1, "No pleural effusion.", "a"), _hit(2, "Heart normal.", "b"),
            _hit(3, "Large right pleural effusion.", "c"), _hit(4, "Right pleural effusion again.", "d")]
    query, texts, first = "large right pleural effusion", [h.sentence.text for h in hits], [h.score for h in hits]
    order, scores = rerank_head(query, texts, first, KeywordReranker(), weight=DEFAULT_WEIGHT)
    expected = fuse(first, KeywordReranker().score(query, texts), DEFAULT_WEIGHT)
    assert [hits[i].report_id for i in order] == [hits[i].report_id for i in np.argsort(-expected, kind="stable")]
    assert scores.tolist() == sorted(expected.tolist(), reverse=True)
    assert [hits[i].report_id for i in rerank_head(query, texts, first, KeywordReranker(), weight=0.0)[0]] == \
        ["a", "b", "c", "d"]


def test_rerank_head_uses_the_rerankers_weight():
    class Weighted(KeywordReranker):
        weight = DEFAULT_WEIGHT

    texts, first = ["No pleural effusion.", "Heart normal.", "Large right pleural effusion."], [1.0, 0.5, 0.3]
    query = "large right pleural effusion"
    assert rerank_head(query, texts, first, Weighted())[1].tolist() == \
        rerank_head(query, texts, first, KeywordReranker(), weight=DEFAULT_WEIGHT)[1].tolist()
    with pytest.raises(ValueError, match="2 texts but 3"):
        rerank_head(query, texts[:2], first, Weighted())


def test_load_rejects_missing_folder(tmp_path: Path):
    with pytest.raises(ConfigError, match="reranker folder"):
        Reranker.load(tmp_path / "nope")


@pytest.mark.slow
def test_trained_reranker_loads_offline_and_reorders(tmp_path: Path, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    from radsift.demo import generate_reports
    from radsift.models.training import TrainConfig, train

    reports = [d.report for d in generate_reports(n=120, seed=5)]
    cfg = TrainConfig.for_recipe("rerank", max_steps=2, batch_size=8, max_seq_length=32, rerank_negatives=1,
                                 rerank_depth=4, evaluate=False)
    result = train(reports, cfg, tmp_path / "rerank", progress=False)
    assert (result.out / "config.json").exists()
    card = (result.out / "README.md").read_text()
    assert "cross-encoder" in card and "`rerank`" in card

    reranker = Reranker.load(result.out)
    texts = ["No pneumothorax.", "Small right pneumothorax.", "Heart size is normal.", "Left pleural effusion."]
    scores = reranker.score("pneumothorax", texts)
    assert scores.shape == (4,) and np.all((scores > 0) & (scores < 1))
    alone, _ = rerank_head("pneumothorax", texts, _by_position(4), reranker, weight=1.0)
    assert alone.tolist() == sorted(range(4), key=lambda i: (-scores[i], i))
    out, _ = rerank_head("pneumothorax", texts, _by_position(4), reranker)  # the fused default
    fused = fuse([0.0, -1.0, -2.0, -3.0], scores, reranker.weight)
    assert out.tolist() == sorted(range(4), key=lambda i: (-fused[i], i))
