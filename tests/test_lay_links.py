"""Lay phrasings link to what they mean (issue 35, item 6): the film a finding is seen on says nothing of what
it is, and a word of the body's own contour names no device.

Made from the development halves of the newcomer batches only; the hand-made vectors (no
model) keep the tests fast.
"""

from __future__ import annotations

import numpy as np

from radsift.labels import Labeler
from radsift.labels.lexicon import load_lexicon
from radsift.search.concepts import SHAPES, ConceptLinker
from radsift.search.lay import ON_THE_FILM, link_words
from radsift.search.reading import read_query
from test_literal_reading import _linker as _plain_linker


def _linker(query_near: dict[str, float], devices: set[str]):
    """test_literal_reading's linker (one phrase per concept at the given cosine), some concepts devices."""
    return _plain_linker(query_near).with_devices([n in devices for n in query_near])


def test_where_a_finding_is_seen_is_not_what_it_is():
    assert link_words("shallow breath on the x ray") == "shallow breath"
    assert link_words("shallow breath on the x-ray") == "shallow breath"
    assert link_words("fluid seen on my chest x-ray") == "fluid on my chest"  # the organ says where
    assert link_words("white patch on my lung x-ray") == "white patch on my lung"
    assert link_words("a spot in the film") == "a spot"
    assert link_words("no pneumonia on the cxr") == "no pneumonia"
    # no preposition, no place of seeing: the words stay ("normal chest x-ray" is what the user asks for)
    assert link_words("normal chest x ray") == "normal chest x ray"
    assert link_words("well defined x ray shadow") == "well defined x ray shadow"
    assert link_words("on the x ray") == "on the x ray"  # nothing else: the query as it is
    assert ON_THE_FILM.search("pictures of my lungs") is None


def test_the_linker_reads_the_query_without_the_film():
    seen = []

    def link(text):
        seen.append(text)
        return None

    read_query("shallow breath on the x-ray", Labeler(), link=link)
    assert seen == ["shallow breath"]


def test_a_body_contour_is_no_device():
    assert SHAPES.search("sunken chest") and SHAPES.search("a caved in breastbone")
    assert SHAPES.search("hunched upper back") and not SHAPES.search("chest tube")
    query = np.eye(4, dtype=np.float32)[0]
    linker = _linker({"chest tube": 0.71, "pectus deformity": 0.70, "kyphosis": 0.60}, devices={"chest tube"})
    assert linker.link(query, 0.5, text="chest") is None  # no contour word: within the margin, no link
    assert linker.link(query, 0.5, text="sunken chest").concept == "pectus deformity"
    # a text with no contour word keeps the device among its candidates
    assert _linker({"chest tube": 0.80, "pectus deformity": 0.70}, {"chest tube"}).link(
        query[:3], 0.5, text="drain in the chest").concept == "chest tube"


class _Ones:
    """An encoder stub: every phrase the same unit vector (the test reads the categories, not the vectors)."""

    def encode(self, texts, batch_size=128):
        return np.ones((len(texts), 4), dtype=np.float32) / 2


def test_the_lexicon_linker_knows_its_devices():
    lexicon = load_lexicon()
    linker = ConceptLinker.for_lexicon(lexicon, _Ones())
    devices = {c for c, d in zip(linker.concepts, linker.devices) if d}
    assert {"chest tube", "endotracheal tube", "sternotomy wires"} <= devices
    assert not devices & {"pectus deformity", "kyphosis", "pulmonary edema"}
    assert devices == {c.name for c in lexicon if c.category == "device"}
