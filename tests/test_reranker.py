"""The cross-encoder reranker: reordering hits and texts, loading a trained folder offline."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from radsift.errors import ConfigError
from radsift.models.reranker import DEFAULT_WEIGHT, Reranker, fuse, item_text, rerank
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


def test_rerank_reorders_texts_within_top():
    texts = ["Heart size normal.", "Left pleural effusion.", "Small left pleural effusion.", "Small left effusion."]
    out = rerank("small left effusion", texts, KeywordReranker(), top=3)
    # the 4th text would score best but lies beyond top=3: it stays last
    assert out == ["Small left pleural effusion.", "Left pleural effusion.", "Heart size normal.", "Small left effusion."]
    assert rerank("small left effusion", texts, KeywordReranker(), top=0) == texts
    assert rerank("x", [], KeywordReranker()) == []


def test_rerank_reorders_hits_and_renumbers():
    hits = [_hit(1, "No pleural effusion.", "a"), _hit(2, "Heart normal.", "b"),
            _hit(3, "Large right pleural effusion.", "c"), _hit(4, "Right pleural effusion again.", "d")]
    out = rerank("large right pleural effusion", hits, KeywordReranker(), top=3)
    assert [h.report_id for h in out] == ["c", "a", "b", "d"]
    assert [h.rank for h in out] == [1, 2, 3, 4]
    assert out[0].score == 4.0 and out[1].score == 2.0  # reranked hits carry the cross-encoder score
    assert out[3].score == hits[3].score  # beyond top: first-stage score kept
    assert out[0].sentence == hits[2].sentence and out[0].sections == hits[2].sections


def test_ties_keep_first_stage_order():
    hits = [_hit(i + 1, "Lungs clear.", f"r{i}") for i in range(5)]
    assert [h.report_id for h in rerank("effusion", hits, KeywordReranker())] == [f"r{i}" for i in range(5)]


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


def test_fused_rerank_of_hits_weighs_the_first_stage():
    # first-stage scores 1, 1/2, 1/3, 1/4; the keyword scores put hit c first
    hits = [_hit(1, "No pleural effusion.", "a"), _hit(2, "Heart normal.", "b"),
            _hit(3, "Large right pleural effusion.", "c"), _hit(4, "Right pleural effusion again.", "d")]
    query = "large right pleural effusion"
    out = rerank(query, hits, KeywordReranker(), weight=DEFAULT_WEIGHT)
    expected = fuse([h.score for h in hits], KeywordReranker().score(query, [h.sentence.text for h in hits]),
                    DEFAULT_WEIGHT)
    assert [h.report_id for h in out] == [hits[i].report_id for i in np.argsort(-expected, kind="stable")]
    assert [h.score for h in out] == sorted(expected.tolist(), reverse=True)
    assert [h.report_id for h in rerank(query, hits, KeywordReranker(), weight=0.0)] == ["a", "b", "c", "d"]


def test_item_text_of_section_hit():
    hit = Hit(report_id="a", score=1.0, rank=1, sentence=None, section="impression",
              sections={"findings": "F.", "impression": "No acute disease."})
    assert item_text(hit) == "No acute disease."
    assert item_text("plain") == "plain"


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
    alone = rerank("pneumothorax", texts, reranker, weight=1.0)
    assert alone == [texts[i] for i in sorted(range(4), key=lambda i: (-scores[i], i))]
    out = rerank("pneumothorax", texts, reranker)  # the fused default: strings count by position
    fused = fuse([0.0, -1.0, -2.0, -3.0], scores, reranker.weight)
    assert out == [texts[i] for i in sorted(range(4), key=lambda i: (-fused[i], i))]
