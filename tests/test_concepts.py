"""Search by meaning (issue 17): model search settings, concept linking, pseudo-relevance feedback, --alpha.

Reports and lexicon written for these tests; the hashing encoder (bag of hashed words, no model)
makes similarities predictable: texts that share words are close.
"""

from __future__ import annotations

import json
import textwrap

import numpy as np
import pytest

from radsift.errors import ConfigError
from radsift.index import build_index
from radsift.models.hashing import HashingEncoder
from radsift.models.settings import (SETTINGS_FILE, SearchSettings, load_search_settings, packaged_settings,
                                     write_search_settings)
from radsift.records import Report
from radsift.search.concepts import ConceptLinker

LEXICON = """
concepts:
  - name: endotracheal tube
    category: device
    synonyms: [ETT, ET tube]
    descriptions: [breathing tube through the mouth into the windpipe]
  - name: pleural effusion
    category: finding
    synonyms: [effusion]
    descriptions: [water collecting around the lungs]
  - name: pneumothorax
    category: finding
    descriptions: [air leaking around a collapsed lung]
"""

R = [
    Report("ett", {"findings": "Endotracheal tube tip 4 cm above the carina."}),
    Report("ett-2", {"findings": "The ET tube is in good position."}),
    Report("eff", {"findings": "Small right pleural effusion."}),
    Report("eff-no", {"findings": "No pleural effusion."}),
    Report("ptx", {"findings": "Large left pneumothorax."}),
    Report("windpipe", {"findings": "The trachea is midline."}),
    Report("lungs", {"findings": "The lungs are clear."}),
]


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    root = tmp_path_factory.mktemp("concepts")
    lexicon = root / "lex.yaml"
    lexicon.write_text(textwrap.dedent(LEXICON), encoding="utf-8")
    enc = HashingEncoder(root / "model")
    build_index(root / "idx", R, encoder=enc, progress=False, lexicon=lexicon)
    return root, enc


@pytest.fixture()
def index(built):
    from radsift.search import Index

    root, enc = built
    idx = Index.open(root / "idx", encoder=enc)
    idx.settings = SearchSettings(0.75, 0.5, "test")
    return idx


def ids(hits):
    return [h.report_id for h in hits]


# -- settings ----------------------------------------------------------------------------------
def test_the_packaged_model_has_measured_settings_and_unknown_models_link_nothing():
    general = packaged_settings("all-MiniLM-L6-v2")
    assert 0.0 <= general.dense_weight <= 1.0 and general.link_threshold <= 1.0
    unknown = packaged_settings("some-other-model")
    assert unknown.link_threshold > 1.0  # off: no calibration for it


def test_a_trained_model_carries_its_settings(tmp_path):
    write_search_settings(tmp_path, SearchSettings(0.6, 0.55), note="measured")
    got = load_search_settings(tmp_path)
    assert (got.dense_weight, got.link_threshold) == (0.6, 0.55)
    (tmp_path / SETTINGS_FILE).write_text(json.dumps({"dense_weight": 1.5, "link_threshold": 0.5}))
    with pytest.raises(ConfigError, match="dense_weight must be within"):
        load_search_settings(tmp_path)
    (tmp_path / SETTINGS_FILE).write_text("{not json")
    with pytest.raises(ConfigError, match=SETTINGS_FILE):
        load_search_settings(tmp_path)


def test_the_index_reads_the_dense_weight_of_its_model(built, tmp_path):
    from radsift.search import Index

    root, enc = built
    idx = Index.open(root / "idx", encoder=enc)
    assert idx.settings.source.startswith("packaged")  # the hashing model has no settings file
    model = HashingEncoder(tmp_path / "model")
    write_search_settings(model.path, SearchSettings(0.2, 0.5))
    assert Index.open(root / "idx", encoder=model).settings.dense_weight == 0.2


@pytest.mark.parametrize("alpha", [-0.1, 1.5, float("nan"), "lots"])
def test_alpha_outside_0_1_is_an_error(index, alpha):
    with pytest.raises(ConfigError, match="alpha"):
        index.search("pleural effusion", alpha=alpha)


def test_alpha_moves_the_hybrid_between_bm25_and_dense(index):
    q = "tube"
    bm25 = ids(index.search(q, k=7, mode="bm25", negation="ignore"))
    dense = ids(index.search(q, k=7, mode="dense", negation="ignore", concepts=False))
    assert ids(index.search(q, k=7, mode="hybrid", alpha=0.0, negation="ignore", concepts=False))[:len(bm25)] == bm25
    assert ids(index.search(q, k=7, mode="hybrid", alpha=1.0, negation="ignore", concepts=False)) == dense


# -- concept linking -------------------------------------------------------------------------------
def test_a_description_links_to_its_concept_and_shows_it(index):
    hits = index.search("a breathing tube in the windpipe", k=3, mode="hybrid")
    (f,) = hits.reading.findings
    assert (f.finding, f.source, f.status) == ("endotracheal tube", "linked", "present")
    assert f.via == "breathing tube through the mouth into the windpipe" and f.score >= 0.5
    assert set(ids(hits)[:2]) == {"ett", "ett-2"}  # "ET tube" found through the concept's synonyms
    assert "understood from" in hits.reading.describe()
    plain = index.search("a breathing tube in the windpipe", k=3, mode="hybrid", concepts=False)
    assert not any(f.source == "linked" for f in plain.reading.findings)
    # Words the reports never use: only the link finds the report.
    linked = index.search("air leaking around a collapsed lung", k=3, mode="hybrid")
    assert [f.finding for f in linked.reading.findings] == ["pneumothorax"] and ids(linked)[0] == "ptx"
    assert ids(index.search("air leaking around a collapsed lung", k=3, mode="hybrid", concepts=False))[0] != "ptx"


def test_the_query_cue_decides_the_linked_status(index):
    hits = index.search("no water collecting around the lungs", k=3, mode="hybrid")
    (f,) = hits.reading.findings
    assert (f.finding, f.status, f.cue) == ("pleural effusion", "absent", "no")
    assert ids(hits)[0] == "eff-no"


def test_below_the_threshold_nothing_links(index):
    from dataclasses import replace

    index.settings = replace(index.settings, link_threshold=0.99)
    hits = index.search("a breathing tube in the windpipe", k=3, mode="hybrid")
    assert not any(f.source == "linked" for f in hits.reading.findings)


def test_a_query_naming_a_lexicon_phrase_is_read_by_the_labeler_not_linked(index):
    (f,) = index.search("pleural effusion", k=1).reading.findings
    assert f.source == "lexicon"


def test_bm25_mode_never_links(index):
    hits = index.search("a breathing tube in the windpipe", k=3, mode="bm25")
    assert not any(f.source == "linked" for f in hits.reading.findings)
    assert index._linker is None and index._encoder is not None  # nothing was built for it


def test_the_linked_finding_can_be_ignored_like_any_reading(index):
    hits = index.search("a breathing tube in the windpipe", k=3, mode="hybrid",
                        reading={"endotracheal tube": "ignore"})
    assert not hits.reading.findings


def test_user_lexicon_descriptions_link_and_vectors_are_cached(built, tmp_path):
    root, enc = built
    from radsift.labels.lexicon import load_lexicon

    lexicon = load_lexicon(root / "lex.yaml")
    calls = []

    class Counting:
        name = "counting"

        def encode(self, texts, batch_size=64):
            calls.append(len(texts))
            return enc.encode(texts)

    first = ConceptLinker.for_lexicon(lexicon, Counting(), cache_dir=tmp_path, fingerprint="f1")
    again = ConceptLinker.for_lexicon(lexicon, Counting(), cache_dir=tmp_path, fingerprint="f1")
    assert len(calls) == 1 and np.array_equal(first.vectors, again.vectors)  # read back, not re-encoded
    ConceptLinker.for_lexicon(lexicon, Counting(), cache_dir=tmp_path, fingerprint="other model")
    assert len(calls) == 2  # another model: its own vectors
    link = first.link(enc.encode_query("water collecting around the lungs"), 0.5)
    assert link.concept == "pleural effusion" and link.phrase == "water collecting around the lungs"
    assert first.expansion("endotracheal tube") == "endotracheal tube ETT ET tube"


def test_a_damaged_cache_is_recomputed(built, tmp_path):
    root, enc = built
    from radsift.labels.lexicon import load_lexicon

    lexicon = load_lexicon(root / "lex.yaml")
    first = ConceptLinker.for_lexicon(lexicon, enc, cache_dir=tmp_path, fingerprint="f")
    (cached,) = tmp_path.glob("concepts-*.npy")
    np.save(cached, np.full((2, 3), np.nan, dtype=np.float32))
    again = ConceptLinker.for_lexicon(lexicon, enc, cache_dir=tmp_path, fingerprint="f")
    assert np.array_equal(first.vectors, again.vectors)


# -- pseudo-relevance feedback -------------------------------------------------------------------
def test_rm3_weights_interpolate_the_query_with_feedback_terms():
    from radsift.ranking.prf import rm3_weights

    w = rm3_weights(["tube"], [["tube", "carina"], ["tube", "carina", "tip"], ["lung"]], [3.0, 2.0, 0.0],
                    n_terms=2, original_weight=0.5)
    assert set(w) == {"tube", "carina"}
    assert w["tube"] > 0.5 and w["carina"] > 0.0
    assert abs(sum(w.values()) - 1.0) < 1e-9


def test_rocchio_moves_towards_the_feedback_and_stays_unit_length():
    from radsift.ranking.prf import rocchio

    q = np.array([1.0, 0.0], dtype=np.float32)
    moved = rocchio(q, np.array([[0.0, 1.0], [0.0, 1.0]], dtype=np.float32), beta=1.0)
    assert np.isclose(np.linalg.norm(moved), 1.0) and moved[1] > 0 and np.isclose(moved[0], moved[1])


def test_prf_in_bm25_finds_units_the_query_words_miss(index):
    # Only "ett" says "carina"; feedback from it adds "tube" and finds "The ET tube ..." too.
    plain = ids(index.search("carina", k=7, mode="bm25", negation="ignore"))
    assert plain == ["ett"]
    expanded = index.search("carina", k=7, mode="bm25", negation="ignore", prf=True)
    assert ids(expanded)[0] == "ett" and "ett-2" in ids(expanded)


@pytest.mark.parametrize("mode", ["dense", "hybrid", "hybrid-rrf"])
def test_prf_keeps_the_best_hit_and_scores_decreasing(index, mode):
    hits = index.search("endotracheal tube tip above the carina", k=7, mode=mode, prf=True, negation="ignore",
                        concepts=False)
    scores = [h.score for h in hits]
    assert scores == sorted(scores, reverse=True)
    assert ids(hits)[0] == "ett"
