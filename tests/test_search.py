"""Search modes, levels, targets, filters, highlights, fusion, and the search/run CLI."""

from __future__ import annotations

import json

import numpy as np
import pytest
from typer.testing import CliRunner

from radsift.cli import app
from radsift.errors import ConfigError
from radsift.models.hashing import HashingEncoder
from radsift.records import Report
from radsift.ranking import best_unit_per_report, convex_combination, min_max, reciprocal_rank_fusion
from radsift.search import Index, highlight_spans, parse_where

REPORTS = [
    Report("a", {"findings": "There is a small right pneumothorax. Heart size is normal.",
                 "impression": "Small right pneumothorax."}, {"exam": "XR CHEST 1 VIEW", "site": "north"}),
    Report("b", {"findings": "No pneumothorax or pleural effusion. The lungs are clear.",
                 "impression": "No acute cardiopulmonary abnormality."}, {"exam": "XR CHEST PA", "site": "south"}),
    Report("c", {"findings": "Moderate left pleural effusion with basilar atelectasis. Mild cardiomegaly.",
                 "impression": "Left pleural effusion."}, {"exam": "XR CHEST PA", "site": "north"}),
    Report("d", {"findings": "Endotracheal tube 4 cm above the carina. Lungs are clear.",
                 "impression": "Tube in good position."}, {"exam": "XR CHEST 1 VIEW", "site": "south"}),
]


@pytest.fixture(scope="module")
def index(hashing_index_of):
    return hashing_index_of("search", REPORTS)


@pytest.mark.parametrize("mode", ["dense", "bm25", "hybrid", "hybrid-rrf"])
def test_each_mode_finds_the_effusion_report_first(index, mode):
    hits = index.search("left pleural effusion", k=3, mode=mode)
    assert hits[0].report_id == "c"
    assert [h.rank for h in hits] == list(range(1, len(hits) + 1))
    assert all(hits[i].score >= hits[i + 1].score for i in range(len(hits) - 1))


def test_report_level_gives_one_hit_per_report_scored_by_best_sentence(index):
    # (plain similarity: with the reading, a report is also judged on its other sentences, see test_reading)
    hits = index.search("pneumothorax", k=10, mode="dense", level="report", negation="ignore")
    ids = [h.report_id for h in hits]
    assert len(ids) == len(set(ids)) == 4
    sent_hits = index.search("pneumothorax", k=50, mode="dense", level="sentence", negation="ignore")
    best = {}
    for h in sent_hits:
        best.setdefault(h.report_id, h.score)
    for h in hits:
        assert h.score == pytest.approx(best[h.report_id])


def test_sentence_level_returns_sentences_with_offsets(index):
    hits = index.search("pneumothorax", k=4, mode="bm25", level="sentence")
    assert len(hits) == 3  # only sentences that contain the word are BM25 matches
    for h in hits:
        assert h.sentence.text == h.sections[h.sentence.section][h.sentence.start:h.sentence.end]


def test_bm25_keeps_negation_words(index):
    hits = index.search("no pneumothorax", k=1, mode="bm25", level="sentence")
    assert hits[0].sentence.text == "No pneumothorax or pleural effusion."


def test_target_restricts_sections(index):
    hits = index.search("pleural effusion", k=10, mode="bm25", target="impression")
    assert {h.section for h in hits} == {"impression"}
    assert [h.report_id for h in hits] == ["c"]


def test_where_filters_on_metadata(index):
    hits = index.search("lungs clear", k=10, mode="hybrid", where=["site=south"])
    assert {h.metadata["site"] for h in hits} == {"south"}
    assert {h.report_id for h in hits} <= {"b", "d"}
    both = index.search("lungs", k=10, mode="dense", where={"site": ["south", "north"]})
    assert len(both) == 4
    assert index.search("lungs", k=10, mode="dense", where=["site=east"]) == []


def test_section_units_and_fields(index):
    hits = index.search("small right pneumothorax", k=2, mode="dense", unit="section", fields=["impression"])
    assert hits[0].report_id == "a" and hits[0].sentence.index == -1
    assert set(hits[0].sections) == {"impression"}


def test_highlights_mark_query_words_including_negation():
    text = "No pneumothorax or pleural effusion."
    spans = highlight_spans("no pleural effusions", text)
    assert [text[a:b] for a, b in spans] == ["No", "pleural effusion"]
    assert highlight_spans("the heart", "The heart is normal.") == ((4, 9),)


def test_rrf_matches_the_formula():
    rows, scores = reciprocal_rank_fusion([np.array([1, 2, 3]), np.array([3, 1])])
    assert rows.tolist() == [1, 3, 2]
    assert scores[0] == pytest.approx(1 / 61 + 1 / 62)
    assert scores[1] == pytest.approx(1 / 63 + 1 / 61)


def test_convex_combination_matches_the_formula():
    dense = np.array([[0.2, 0.6, 1.0, 0.6]])
    bm25 = np.array([[0.0, 3.0, 0.0, 1.5]])
    assert min_max(dense)[0].tolist() == pytest.approx([0.0, 0.5, 1.0, 0.5])
    fused = convex_combination(dense, bm25)[0]
    assert fused.tolist() == pytest.approx([0.0, 0.75 * 0.5 + 0.25, 0.75, 0.75 * 0.5 + 0.125])
    assert convex_combination(dense, bm25, alpha=1.0)[0].tolist() == pytest.approx(min_max(dense)[0].tolist())
    assert min_max(np.array([2.0, 2.0])).tolist() == [0.0, 0.0]  # no spread: no preference
    with pytest.raises(ValueError, match="alpha"):
        convex_combination(dense, bm25, alpha=1.5)
    with pytest.raises(ValueError, match="shape|scores"):
        convex_combination(dense, bm25[:, :2])


def test_hybrid_scores_are_the_convex_combination_of_the_two_modes(index):
    def scores(mode):
        return {h.sentence.text: h.score for h in index.search("small pneumothorax", k=100, mode=mode,
                                                                level="sentence", negation="ignore")}
    dense, bm25, hybrid = scores("dense"), scores("bm25"), scores("hybrid")
    assert set(hybrid) == set(dense)  # every unit has a fused score; BM25 misses count as 0
    d = np.array([dense[t] for t in hybrid])
    b = np.array([bm25.get(t, 0.0) for t in hybrid])
    # Written out by hand (not with the function under test): 0.75 x min-max(dense) + 0.25 x min-max(BM25).
    expected = 0.75 * (d - d.min()) / (d.max() - d.min()) + 0.25 * (b - b.min()) / (b.max() - b.min())
    assert [hybrid[t] for t in hybrid] == pytest.approx(expected.tolist(), abs=1e-6)


def test_best_unit_per_report_keeps_first():
    picked = best_unit_per_report(np.array([5, 6, 7]), np.array([0.9, 0.8, 0.7]), np.array([0, 0, 0, 0, 0, 1, 1, 2]),
                                  k=5)
    assert picked == [(1, 5, pytest.approx(0.9)), (2, 7, pytest.approx(0.7))]


def test_bad_options_are_errors(index):
    with pytest.raises(ConfigError, match="mode must be one of"):
        index.search("x", mode="sparse")
    with pytest.raises(ConfigError, match="empty"):
        index.search("   ")
    with pytest.raises(ConfigError, match="not KEY=VALUE"):
        parse_where(["site"])


def test_unknown_filter_keys_and_sections_are_errors_that_list_the_known_ones(index):
    with pytest.raises(ConfigError, match="unknown metadata key 'modality'; known keys: exam, site"):
        index.search("lungs", where=["modality=CT"])
    with pytest.raises(ConfigError, match="target must be one of findings, impression, report, not 'impresion'"):
        index.search("lungs", target="impresion")
    assert index.search("lungs", target="report", mode="bm25")  # the whole report


def test_substring_filters_match_case_insensitively(index):
    hits = index.search("lungs", k=10, mode="dense", where=["exam~1 view"])
    assert {h.report_id for h in hits} == {"a", "d"}
    hits = index.search("lungs", k=10, mode="dense", where=["exam~chest pa"])
    assert {h.report_id for h in hits} == {"b", "c"}
    # an exact filter is exact: case and the whole value count
    assert index.search("lungs", k=10, mode="dense", where=["exam=xr chest pa"]) == []
    # several filters on one key: any; on different keys: all
    hits = index.search("lungs", k=10, mode="dense", where=["exam~1 VIEW", "exam=XR CHEST PA", "site~NORTH"])
    assert {h.report_id for h in hits} == {"a", "c"}
    assert [str(f) for f in parse_where(["exam~pa", "site:north"])] == ["exam~pa", "site=north"]


def test_search_cli_json_and_text(index, tmp_path, monkeypatch):
    runner = CliRunner()
    # The CLI opens the index with the model recorded in it: the hashing "model" folder.
    monkeypatch.setattr("radsift.models.encoder.Encoder.load",
                        classmethod(lambda cls, model=None, **kw: HashingEncoder(model)))
    res = runner.invoke(app, ["search", str(index.path), "pleural effusion", "-k", "2", "--mode", "bm25", "--json"])
    assert res.exit_code == 0, res.output
    data = json.loads(res.output)
    assert data["hits"][0]["report_id"] == "c" and data["hits"][0]["highlights"]
    assert data["reading"]["findings"] == [{"finding": "pleural effusion", "status": "present", "source": "lexicon",
                                            "cue": None, "side": None, "via": None, "score": None,
                                            "beside": None, "any_of": []}]
    assert data["hits"][0]["reading"][0]["status"] == "present"
    res = runner.invoke(app, ["search", str(index.path), "pleural effusion", "--mode", "dense"])
    assert res.exit_code == 0 and "pleural effusion" in res.output
    assert "read as: pleural effusion present (lexicon)" in res.output
    res = runner.invoke(app, ["search", str(index.path), "pleural effusion", "-k", "1", "--mode", "bm25",
                              "--reading", "pleural effusion=absent", "--json"])
    data = json.loads(res.output)
    assert data["reading"]["findings"][0]["status"] == "absent" and data["hits"][0]["report_id"] == "b"
    res = runner.invoke(app, ["search", str(index.path), "pleural effusion", "--reading", "effusion=absent"])
    assert res.exit_code == 2 and "not read to name 'effusion'" in res.output
    res = runner.invoke(app, ["search", str(tmp_path / "nope"), "x"])
    assert res.exit_code != 0


def test_run_writes_trec_and_eval_reads_it(index, tmp_path, monkeypatch):
    monkeypatch.setattr("radsift.models.encoder.Encoder.load",
                        classmethod(lambda cls, model=None, **kw: HashingEncoder(model)))
    queries = tmp_path / "q.tsv"
    queries.write_text("q1\tleft pleural effusion\textra column\nq2\tendotracheal tube\n")
    out = tmp_path / "run.trec"
    res = CliRunner().invoke(app, ["run", str(index.path), "--queries", str(queries), "--out", str(out),
                                   "--mode", "hybrid", "-k", "3"])
    assert res.exit_code == 0, res.output
    lines = [line.split() for line in out.read_text().splitlines()]
    assert lines[0][:4] == ["q1", "Q0", "c", "1"] and lines[0][5] == "radsift-hybrid"
    assert {line[0] for line in lines} == {"q1", "q2"}
    assert max(int(line[3]) for line in lines) <= 3
    out_s = tmp_path / "run.sent.trec"
    res = CliRunner().invoke(app, ["run", str(index.path), "--queries", str(queries), "--out", str(out_s),
                                   "--mode", "bm25", "--level", "sentence", "-k", "2"])
    assert res.exit_code == 0, res.output
    assert out_s.read_text().splitlines()[0].split()[2] == "c::impression::0"  # the short sentence wins BM25
    qrels = tmp_path / "qrels.trec"
    qrels.write_text("q1 0 c 1\nq2 0 d 1\n")
    res = CliRunner().invoke(app, ["eval", "--qrels", str(qrels), "--run", str(out), "--json"])
    assert res.exit_code == 0, res.output
    assert '"map"' in res.output.lower()


@pytest.mark.parametrize("mode", ["dense", "bm25", "hybrid", "hybrid-rrf"])
def test_negation_aware_ranking_puts_opposite_statements_last(index, mode):
    hits = index.search("pneumothorax", k=50, mode=mode, level="sentence")
    texts = [h.sentence.text for h in hits]
    negated = texts.index("No pneumothorax or pleural effusion.")
    affirmed = [i for i, t in enumerate(texts) if "pneumothorax" in t.lower() and not t.startswith("No")]
    assert affirmed and max(affirmed) < negated
    # Below every other unit, unrelated ones included (a demotion is not a nudge).
    assert negated == len(texts) - 1
    assert all(hits[i].score > hits[negated].score for i in range(negated))
    # The opposite query puts the affirmed sentences last.
    hits = index.search("no pneumothorax", k=50, mode=mode, level="sentence")
    texts = [h.sentence.text for h in hits]
    assert texts[0] == "No pneumothorax or pleural effusion."
    assert texts.index("There is a small right pneumothorax.") > texts.index("No pneumothorax or pleural effusion.")


def test_negation_can_be_ignored(index):
    aware = index.search("no pneumothorax", k=10, mode="bm25", level="sentence")
    plain = index.search("no pneumothorax", k=10, mode="bm25", level="sentence", negation="ignore")
    assert {h.sentence.text for h in aware} == {h.sentence.text for h in plain}
    def read(q):
        return {f.finding: f.status for f in index.read(q).findings}

    assert read("no pleural effusion") == {"pleural effusion": "absent"}
    assert read("enlarged heart") == {"cardiomegaly": "present"}
    assert plain.reading.negation == "ignore" and not plain.reading.active
    assert [f.finding for f in plain.reading.findings] == ["pneumothorax"]  # read, shown, not used
    with pytest.raises(ConfigError, match="negation must be one of"):
        index.search("x", negation="maybe")


class LengthReranker:
    """A stand-in cross-encoder with known scores: shorter texts score higher."""

    def score(self, query, texts):
        return np.array([-len(t) for t in texts], dtype=np.float32)


@pytest.fixture(scope="module")
def reranked(index):
    return Index(index.store, encoder=index._encoder, reranker=LengthReranker())


def test_rerank_reorders_the_first_stage_top(reranked):
    plain = reranked.search("lungs", k=6, mode="bm25", level="sentence", negation="ignore")
    out = reranked.search("lungs", k=6, mode="bm25", level="sentence", negation="ignore", rerank=6)
    assert sorted(h.sentence.uid for h in out) == sorted(h.sentence.uid for h in plain)
    assert [len(h.sentence.text) for h in out] == sorted(len(h.sentence.text) for h in plain)
    assert [h.rank for h in out] == list(range(1, len(out) + 1))
    # only the top 2 are reranked: the rest keep their first-stage order and score
    two = reranked.search("lungs", k=6, mode="bm25", level="sentence", negation="ignore", rerank=2)
    assert [h.sentence.uid for h in two[2:]] == [h.sentence.uid for h in plain[2:]]
    # a deeper rerank than k still returns k hits
    assert len(reranked.search("lungs", k=2, mode="bm25", level="sentence", negation="ignore", rerank=6)) == 2


@pytest.mark.parametrize("level", ["sentence", "report"])
@pytest.mark.parametrize("negation", ["aware", "ignore"])
def test_reranked_scores_decrease_with_rank(reranked, level, negation):
    # The reranked head gets fused (standardised, often negative) scores; the hits after it must
    # still score below it, or a consumer that sorts by score (trec_eval) scrambles the ranking.
    hits = reranked.search("pneumothorax", k=50, mode="hybrid", level=level, negation=negation, rerank=3)
    assert len(hits) > 3
    scores = [h.score for h in hits]
    assert all(a >= b for a, b in zip(scores, scores[1:])), scores


def test_rerank_keeps_negation_aware_order(reranked):
    # "No pneumothorax or pleural effusion." is short (the stand-in reranker would put it first) but
    # states the opposite of the query: it stays below the sentences that affirm a pneumothorax.
    hits = reranked.search("pneumothorax", k=50, mode="dense", level="sentence", rerank=50)
    texts = [h.sentence.text for h in hits]
    assert "No pneumothorax or pleural effusion." in texts
    assert texts[-1] == "No pneumothorax or pleural effusion."
    # the sentences stating a pneumothorax come first; within each tier the reranker orders by length
    states = [any(m.status == "present" for m in h.reading) for h in hits[:-1]]
    assert states == sorted(states, reverse=True) and states[0]
    first, rest = [t for t, s in zip(texts, states) if s], [t for t, s in zip(texts, states) if not s]
    assert [len(t) for t in first] == sorted(len(t) for t in first)
    # the rest in two runs at most: those that may state a finding, then those saying only all is normal (the
    # normal key, radsift.ranking.tiers.with_normal), each ordered by the reranker
    lengths = [len(t) for t in rest]
    assert sum(b < a for a, b in zip(lengths, lengths[1:])) <= 1
    assert max(len(t) for t in texts[:-1]) > len(texts[-1])


def test_rerank_without_reranker_is_a_clear_error(index):
    with pytest.raises(ConfigError, match="--reranker"):
        index.search("pneumothorax", k=3, rerank=10)


def test_search_cli_rerank_needs_a_reranker(index, monkeypatch):
    monkeypatch.delenv("RADSIFT_RERANKER", raising=False)
    result = CliRunner().invoke(app, ["search", str(index.path), "pneumothorax", "--rerank", "5"])
    assert result.exit_code != 0
    assert "reranker" in str(result.exception) + result.output
