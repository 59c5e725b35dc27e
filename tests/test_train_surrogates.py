"""Name swapping: surrogate finding names, swappable spans and swapped batches (no model weights: fast)."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from radsift.demo import generate_reports
from radsift.errors import ConfigError
from radsift.text.tokens import stem
from radsift.labels import Labeler, build_weak_labels
from radsift.models.hashing import HashingEncoder
from radsift.models.training import load_config
from radsift.models.training.batching import LexiconSampler
from radsift.models.training.data import prepare_data
from radsift.models.training.lexicon import LexiconRecipe
from radsift.models.training.surrogates import (NameFinder, excluded_stems, mentions_term, surrogate_terms,
                                                swap_span)
from radsift.records import Report


@pytest.fixture(scope="module")
def labeler():
    return Labeler()


@pytest.fixture(scope="module")
def data(labeler):
    reports = [d.report for d in generate_reports(n=150, seed=7)]
    return prepare_data(reports, load_config(recipe="combined", name_swap=0.5), labeler=labeler, progress=False)


def test_surrogates_are_site_words_outside_the_lexicon_and_cues(labeler):
    texts = ["Mild thoracolumbar rotation.", "Thoracolumbar rotation again noted.", "No pneumothorax.",
             "Sternotomy wires.", "Sternotomy wires.", "XXXX opacity.", "XXXX opacity.", "Possible granuloma.",
             "Possible granuloma, median.", "Periscapular."]
    terms = surrogate_terms(texts, labeler.lexicon, labeler.rules)
    excluded = excluded_stems(labeler.lexicon, labeler.rules)
    assert {"thoracolumbar", "rotation", "thoracolumbar rotation"} <= set(terms)  # twice each, in no lexicon phrase
    assert "pneumothorax" not in terms and "opacity" not in terms and "wires" not in terms  # lexicon words
    assert "possible" not in terms  # an uncertainty cue
    assert "xxxx" not in terms and "again" not in terms  # de-identification token, function word
    assert "median" not in terms and "mild" not in terms and "periscapular" not in terms  # once only (min_count 2)
    assert all(stem(w) not in excluded for t in terms for w in t.split())
    assert "periscapular" in surrogate_terms(texts, labeler.lexicon, labeler.rules, min_count=1)  # in no lexicon
    # phrase ("median" and "mild" are now: "median sternotomy", "heart is mildly large")


def test_names_are_synonyms_named_once(labeler):
    finder = NameFinder(labeler.lexicon)
    reports = [Report("r1", {"findings": "Heart size is normal. No pneumothorax. Small effusion, no left effusion. "
                                          "The lungs remain hypoinflated."})]
    weak = build_weak_labels(reports, labeler, progress=False)
    names = {s.text: finder(s) for s in weak.sentences}
    assert names["Heart size is normal."] == ()  # a normal form names no finding
    assert names["No pneumothorax."] == (("pneumothorax", 3, 15),)
    assert names["Small effusion, no left effusion."] == ()  # named twice: nothing to swap safely


def test_swap_span_keeps_the_sentence_around_the_name():
    assert swap_span("No pneumothorax.", 3, 15, "sarcoidosis") == "No sarcoidosis."
    assert swap_span("Pneumothorax is seen.", 0, 12, "known sarcoidosis") == "Known sarcoidosis is seen."
    assert mentions_term("Sarcoidosis, stable.", "sarcoidosis") and not mentions_term("Sarcoidoses.", "sarcoidosis")


def test_swapped_groups_copy_one_surrogate_into_query_and_sentence(data):
    assert data.lexicon.surrogates
    lexicon_names = set(Labeler().lexicon.names)
    sampler = LexiconSampler(data.lexicon, batch_size=16, alpha=0.5, rng=random.Random(0), name_swap=0.5)
    sentences = data.lexicon.sentences
    swapped = total = 0
    for _ in range(30):
        batch = sampler.next_batch()
        for e in batch:
            total += 1
            if e.text is None:
                continue
            swapped += 1
            term = e.query.finding
            assert term in data.lexicon.surrogates and term not in lexicon_names
            assert term in e.anchor and mentions_term(e.text, term)
            original = sentences[e.positive]
            assert not mentions_term(original.text, term)
            # the polarity is the original label's, only the name changed
            assert any(q.polarity == e.query.polarity for q in original.labels)
            for other in batch:  # no other sentence of the batch contains the surrogate
                if other is not e and other.text != e.text:
                    assert not mentions_term(other.positive_text(sentences), term) or other.query.finding == term
            partners = [o for o in batch if o is not e and o.query.finding == term]
            for p in partners:  # the opposite-negation partner got the same surrogate
                assert p.query.polarity != e.query.polarity and mentions_term(p.text, term)
    assert 0.2 < swapped / total < 0.8


def test_swapped_example_may_take_its_own_original_as_negative(data, tmp_path: Path):
    class Hashing:
        def __init__(self) -> None:
            self.encoder, self.max_seq_length = HashingEncoder(tmp_path / "h", dim=256), 128

        def encode(self, texts, **kwargs):
            return self.encoder.encode(texts)

    cfg = load_config(recipe="combined", name_swap=0.5, batch_size=8, mega_batch_size=32)
    recipe = LexiconRecipe(Hashing(), data.lexicon, cfg, random.Random(3))
    sentences = data.lexicon.sentences
    own = 0
    # A possibility, not a rule: mine mega-batches until one swapped example takes its own original
    # (at most 8 rounds of 8 batches; with the swap forbidden it never does, and the test goes red).
    for _ in range(8):
        for mined in recipe.mine([recipe.sampler.next_batch() for _ in range(8)]):
            for e, neg in zip(mined.examples, mined.negatives):
                if e.text is not None:
                    assert not mentions_term(sentences[neg].text, e.query.finding)
                    own += neg == e.positive  # "No pneumothorax." for "no sarcoidosis"
                else:
                    assert neg != e.positive and not sentences[neg].matches(e.query)
        if own:
            break
    assert own > 0


def test_name_swap_setting_is_checked():
    assert load_config(recipe="combined", name_swap="0.25").name_swap == 0.25
    with pytest.raises(ConfigError, match="name_swap"):
        load_config(recipe="combined", name_swap=1.0)
    assert load_config(recipe="combined").name_swap == 0.25  # the default recipe swaps a quarter
    off = prepare_data([d.report for d in generate_reports(n=40, seed=1)], load_config(recipe="lexicon-mnrl"),
                       progress=False)
    assert off.lexicon.surrogates == [] and all(s.names == () for s in off.lexicon.sentences)
