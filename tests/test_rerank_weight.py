"""The rerank weight chosen on development data: training writes it to the cross-encoder's folder
(``radsift_reranker.json``), loading reads it unless a weight is given, passage search says which it uses."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
import test_entity_aspect

from radsift.errors import ConfigError
from radsift.models import reranker as rr
from radsift.models.reranker import (
    DEFAULT_WEIGHT,
    SETTINGS_FILE,
    WEIGHT_CANDIDATES,
    Reranker,
    choose_weight,
    read_reranker_settings,
    rerank_head,
    write_reranker_settings,
)

note_index = test_entity_aspect.note_index  # the fixture: an index of a few notes, hashing encoder


class FakeCrossEncoder:
    """Stands in for sentence_transformers.CrossEncoder (Reranker.load's model), no weights read."""

    num_labels = 1

    def __init__(self, *a, **kw):
        pass

    def eval(self):
        return self

    def predict(self, pairs, **kw):  # longer passages score higher
        return np.array([len(t) for _, t in pairs], dtype=np.float32)


@pytest.fixture()
def cross_folder(tmp_path, monkeypatch) -> Path:
    import sentence_transformers

    monkeypatch.setattr(sentence_transformers, "CrossEncoder", FakeCrossEncoder)
    folder = tmp_path / "cross"
    folder.mkdir()
    (folder / "config.json").write_text("{}", encoding="utf-8")
    return folder


def _figures(r1: dict, r5: dict | None = None) -> dict:
    return {"R@1": r1, "R@5": r5 or {w: 50.0 for w in r1}, "queries": 30, "chosen_on": "test figures"}


def test_the_best_development_r1_is_chosen():
    assert choose_weight({0.0: 20.1, 0.3: 26.8, 0.5: 40.0, 0.7: 44.0, 1.0: 46.4}) == 1.0
    assert choose_weight({0.0: 49.8, 0.3: 50.8, 1.0: 38.8}) == 0.3
    assert choose_weight({0.0: 30.0, 0.3: 29.0, 1.0: 10.0}) == 0.0     # no weight beats the first stage
    assert choose_weight({0.0: 30.0, 0.3: 30.0, 1.0: 30.0}) == 0.0     # a tie is not a win
    assert choose_weight({0.0: 30.0, 0.3: 30.0}, {0.0: 60.0, 0.3: 61.0}) == 0.3  # R@5 breaks a tie


def test_training_writes_the_choice_with_its_figures(tmp_path):
    from radsift.models.training.entity_aspect import choose_rerank_weight

    said = []
    figures = _figures({0.0: 20.06, 0.3: 26.75, 0.5: 33.0, 0.7: 40.0, 1.0: 46.43})
    settings = choose_rerank_weight(tmp_path, None, [], lambda *a: figures, said.append)
    written = json.loads((tmp_path / SETTINGS_FILE).read_text())
    assert written == settings and written["weight"] == 1.0 and written["helps"] is True
    assert written["weight"] in WEIGHT_CANDIDATES and written["queries"] == 30
    assert written["dev_R@1"] == {"0.0": 20.06, "0.3": 26.75, "0.5": 33.0, "0.7": 40.0, "1.0": 46.43}
    assert "rerank weight 1.0 chosen" in said[0]
    # a cross-encoder that helps nowhere: weight 0, and the log says why not
    said.clear()
    settings = choose_rerank_weight(tmp_path, None, [], lambda *a: _figures({0.0: 30.0, 0.3: 25.0, 1.0: 12.0}),
                                    said.append)
    assert settings["weight"] == 0.0 and not settings["helps"]
    assert "does not help" in said[0] and read_reranker_settings(tmp_path)["weight"] == 0.0


def test_load_reads_the_weight_unless_one_is_given(cross_folder):
    loaded = Reranker.load(cross_folder)
    assert (loaded.weight, loaded.weight_from, loaded.settings) == (DEFAULT_WEIGHT, "default", None)  # no file
    write_reranker_settings(cross_folder, _figures({0.0: 20.0, 0.3: 26.0, 1.0: 46.0}))
    loaded = Reranker.load(cross_folder)
    assert (loaded.weight, loaded.weight_from) == (1.0, "development data")
    assert loaded.settings["dev_R@1"]["1.0"] == 46.0
    given = Reranker.load(cross_folder, weight=0.5)
    assert (given.weight, given.weight_from) == (0.5, "given")
    from radsift.search.passages import load_passage_reranker

    assert load_passage_reranker(cross_folder).weight == 1.0
    assert load_passage_reranker(cross_folder, weight=0.3).weight == 0.3


@pytest.mark.parametrize("content, message", [
    ("{not json", "not a readable JSON file"),
    ("[0.3]", "JSON object"),
    ('{"weight": "high"}', "between 0 and 1"),
    ('{"weight": true}', "between 0 and 1"),
    ('{"weight": 1.5}', "between 0 and 1"),
    ('{"chosen_on": "dev"}', "between 0 and 1"),
])
def test_a_damaged_settings_file_is_a_one_line_error_naming_it(cross_folder, content, message):
    (cross_folder / SETTINGS_FILE).write_text(content, encoding="utf-8")
    with pytest.raises(ConfigError, match=message) as info:
        Reranker.load(cross_folder)
    assert str(cross_folder / SETTINGS_FILE) in str(info.value) and "\n" not in str(info.value)


def test_weight_zero_keeps_the_first_stage_and_never_asks_the_reranker():
    class Refuses:
        weight = 0.0

        def score(self, query, texts):
            raise AssertionError("a weight-0 reranker must not be asked")

    order, scores = rerank_head("q", ["a", "b", "c"], [0.2, 0.9, 0.5], Refuses(), top=2)
    assert order.tolist() == [1, 2, 0] and scores.tolist() == [0.9, 0.5, 0.2]


def test_passage_search_says_how_it_reranked(cross_folder):
    from radsift.search.passages import PolyReranker, rerank_summary

    default = rerank_summary(Reranker.load(cross_folder), 16)
    assert default["weight"] == DEFAULT_WEIGHT and default["weight_from"] == "default"
    assert "at weight 0.3 (default)" in default["note"]
    write_reranker_settings(cross_folder, _figures({0.0: 20.06, 0.3: 26.75, 1.0: 46.43}))
    chosen = rerank_summary(Reranker.load(cross_folder), 16)
    assert chosen["reranked"] and "top 16 reranked by cross at weight 1 (development data: R@1 46.43 against 20.06" \
        in chosen["note"]
    write_reranker_settings(cross_folder, _figures({0.0: 30.0, 0.3: 25.0, 1.0: 12.0}))
    none = rerank_summary(Reranker.load(cross_folder), 16)
    assert not none["reranked"] and none["weight"] == 0.0
    assert none["note"].startswith("not reranked") and "no weight beat the first stage" in none["note"]
    poly = object.__new__(PolyReranker)
    poly.path = cross_folder
    assert rerank_summary(poly, 8)["weight"] == 1.0 and "its order alone" in rerank_summary(poly, 8)["note"]


def test_search_cli_reports_the_weight_it_reranked_at(cross_folder, note_index, monkeypatch):
    from typer.testing import CliRunner

    from radsift.cli import app
    from radsift.models.hashing import HashingEncoder

    monkeypatch.setattr("radsift.models.encoder.Encoder.load",
                        classmethod(lambda cls, model=None, **kw: HashingEncoder(model)))
    args = ["search", str(note_index.path), "gout", "--unit", "passage", "--mode", "bm25", "--rerank", "3",
            "--reranker", str(cross_folder), "--no-audit"]
    write_reranker_settings(cross_folder, _figures({0.0: 20.0, 0.3: 26.0, 0.7: 46.0, 1.0: 40.0}))
    res = CliRunner().invoke(app, [*args, "--json"])
    assert res.exit_code == 0, res.output
    assert json.loads(res.output)["reranker"]["weight"] == 0.7
    assert json.loads(res.output)["reranker"]["weight_from"] == "development data"
    write_reranker_settings(cross_folder, _figures({0.0: 30.0, 0.3: 25.0, 1.0: 12.0}))
    res = CliRunner().invoke(app, args)
    assert res.exit_code == 0, res.output
    assert "not reranked: cross does not help at weight 0" in " ".join(res.output.split())


def _pool():
    """Three queries, each with one gold passage ('note 2') among look-alikes: 12 passages, all among
    the first stage's top 16."""
    from radsift.corpus.medquad_passages import PassageData, PassageQuery

    passages, queries = [], []
    for i in range(3):
        base = len(passages)
        passages += [f"zorbitis type {i} treatment note {j}" for j in range(4)]
        queries.append(PassageQuery(f"q{i}", {"entity-aspect": f"zorbitis type {i} treatment"},
                                    frozenset({base + 2})))
    return PassageData(passages, [f"p{k}" for k in range(len(passages))], queries, source="a test pool")


class KnowsGold:
    """A cross-encoder that finds (or, ``inverted``, avoids) the query's gold passage: its 'note 2'."""

    def __init__(self, inverted: bool = False) -> None:
        self.inverted, self.calls = inverted, 0

    def score(self, query, texts):
        self.calls += 1
        good = np.array([t == f"{query} note 2" for t in texts], dtype=np.float32)
        return 1.0 - good if self.inverted else good


class Flat:
    """A first stage that puts every 'note 0' passage (3 of 12) above the rest, so never the gold first."""

    def encode(self, texts, batch_size=64, progress=False, desc=""):
        return np.asarray([[1.0, float(t.endswith("note 0") or "note" not in t)] for t in texts], dtype=np.float32)


@pytest.mark.parametrize("inverted, chosen", [(False, 0.5), (True, 0.0)])
def test_the_development_sweep_picks_the_weight_that_finds_the_gold(inverted, chosen, tmp_path):
    """The fused score by hand: the gold (cross z 3.32, first z -0.58) loses to the 'note 0' passages (cross z
    -0.30, first z 1.73) at weight 0.3 and wins from 0.5 up, so 0.5 is the smallest weight with the best R@1.
    A reranker that avoids the gold wins nowhere: weight 0. Scored once per query whatever the weights."""
    from radsift.evaluation.heldout import rerank_weights_on_dev

    config = SimpleNamespace(threads=None, base_model=None, dev_max_queries=400, seed=0)
    cross = KnowsGold(inverted)
    figures = rerank_weights_on_dev(tmp_path, config, _pool(), lambda m: None, reranker=cross, first_stage=Flat())
    assert set(figures["R@1"]) == set(WEIGHT_CANDIDATES) and figures["queries"] == 3
    expected = {0.0: 0.0, 0.3: 0.0, 0.5: 100.0, 0.7: 100.0, 1.0: 100.0}
    assert figures["R@1"] == ({w: 0.0 for w in expected} if inverted else expected)
    assert cross.calls == 3
    assert write_reranker_settings(tmp_path, figures)["weight"] == chosen
    capped = rerank_weights_on_dev(tmp_path, config, _pool(), lambda m: None, reranker=KnowsGold(), first_stage=Flat(),
                                   max_queries=2)
    assert capped["queries"] == 2


@pytest.mark.slow
def test_cross_encoder_training_writes_the_weight(monkeypatch, tmp_path):
    """``radsift train --recipe entity-aspect --model-type cross`` ends by choosing the weight on its development
    split: the file, its figures and the model card's table."""
    from test_entity_aspect import _docs, _notes

    from radsift.evaluation import heldout
    from radsift.models import default_model_path
    from radsift.models.training import entity_aspect, load_config

    monkeypatch.setattr(entity_aspect, "load_sources", lambda config, say: (_docs(40), frozenset(), []))
    cfg = load_config(recipe="entity-aspect", model_type="cross", batch_size=2, max_steps=1, dev_max_queries=4,
                      section_max_seq_length=32, dev_fraction=0.25, time_limit_minutes=None, setting="in-collection")
    out = tmp_path / "cross"
    out.mkdir()
    said = []
    result = entity_aspect.train_entity_aspect(_notes(), cfg, out, default_model_path(), progress=False,
                                               evaluator=heldout.HeldOutEvaluator(), log=said.append)
    settings = json.loads((out / SETTINGS_FILE).read_text())
    assert settings["weight"] in WEIGHT_CANDIDATES and settings["queries"] == 4
    assert set(settings["dev_R@1"]) == {str(w) for w in WEIGHT_CANDIDATES}
    assert result.evaluation["rerank_weight"] == settings
    assert "Rerank weight" in (out / "README.md").read_text()
    assert any(SETTINGS_FILE in line for line in said)
    assert rr.read_reranker_settings(out)["weight"] == settings["weight"]
