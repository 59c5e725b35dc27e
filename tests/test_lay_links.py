"""Lay phrasings link to what they mean (issue 35, items 1 and 6): the film a finding is seen on says nothing of
what it is, a word of the body's own contour names no device, a bend forward is no scoliosis, and metal was put
there.

Made from the development halves of the newcomer batches only; the hand-made vectors (no
model) keep the tests fast.
"""

from __future__ import annotations

import numpy as np

from radsift.labels import Labeler
from radsift.labels.lexicon import load_lexicon
from radsift.search.concepts import ConceptLinker
from radsift.search.linkwords import METAL, SHAPES, bends_of, substances_of
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


def test_what_displaced_a_thing_is_not_what_moved():
    assert link_words("my heart has been pushed over to the other side by the fluid") == \
        "my heart has been pushed over to the other side"
    assert link_words("trachea displaced to the left by a large right collection, ? tension") == \
        "trachea displaced to the left, ? tension"
    assert link_words("fluid caused by heart failure") == "fluid caused by heart failure"  # no displacement
    assert link_words("shifted by") == "shifted by"  # nothing after "by": the words stay


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


def test_sideways_is_not_forward():
    assert bends_of(["increased forward curvature of the thoracic spine"]) == {"forward"}
    assert bends_of(["hunched upper back"]) == {"forward"} and bends_of(["kyphosis"]) == {"forward"}
    assert bends_of(["the backbone bends to one side"]) == {"sideways"} and bends_of(["scoliosis"]) == {"sideways"}
    assert bends_of(["lateral s shaped bend"]) == {"sideways"} == bends_of(["laterally curved spine"])
    assert bends_of(["lateral view"]) == frozenset()
    assert bends_of(["curvature of the spine", "thoracic curvature"]) == frozenset()
    query = np.eye(4, dtype=np.float32)[0]
    spine = _linker({"scoliosis": 0.80, "kyphosis": 0.70, "bulla": 0.3}, devices=set())
    assert spine.link(query, 0.5, text="increased forward curvature of the thoracic spine").concept == "kyphosis"
    assert spine.link(query, 0.5, text="curvature of the thoracic spine").concept == "scoliosis"  # no bend named
    assert spine.link(query, 0.5, text="spine bent sideways and forward").concept == "scoliosis"  # both: neither
    other = _linker({"kyphosis": 0.80, "scoliosis": 0.70, "bulla": 0.3}, devices=set())
    assert other.link(query, 0.5, text="spine curving to one side").concept == "scoliosis"


def test_metal_was_put_there():
    assert METAL.search("metal fixing my collarbone") and METAL.search("metallic plate")
    assert not METAL.search("metastatic disease") and not METAL.search("metabolic bone disease")
    query = np.eye(4, dtype=np.float32)[0]
    names = {"fracture": 0.78, "orthopedic hardware": 0.70, "bulla": 0.3}
    bones = _linker(names, devices={"orthopedic hardware"}).with_placed([n == "orthopedic hardware" for n in names])
    assert bones.link(query, 0.5, text="metal fixing my left collarbone after a break").concept == \
        "orthopedic hardware"
    assert bones.link(query, 0.5, text="my left collarbone after a break").concept == "fracture"  # no metal named
    # the lexicon's devices and procedures may be metal; its findings and diseases may not
    linker = ConceptLinker.for_lexicon(load_lexicon(), _Ones())
    placed = {c for c, p in zip(linker.concepts, linker.placed) if p}
    assert {"orthopedic hardware", "spinal fusion", "foreign body", "cholecystectomy"} <= placed
    assert not placed & {"fracture", "calcified granuloma", "metastatic disease"}


def test_a_lung_cyst_names_its_air():
    # "an air-filled space" was airspace disease's (its "air space" synonyms hold air) until the cyst named its air
    linker = ConceptLinker.for_lexicon(load_lexicon(), _Ones())
    made_of = dict(zip(linker.concepts, linker.substances))
    assert made_of["lung cyst"] == substances_of(["air-filled cyst"]) == {"air"}


def test_a_concepts_own_name_links_without_a_margin():
    # every phrase the same vector: no concept is clear of the next, so only an exact name links
    linker = ConceptLinker.for_lexicon(load_lexicon(), _Ones())
    query = np.ones(4, dtype=np.float32) / 2
    assert linker.link(query, 0.5, text="a lump in the lung").concept == "mass"  # the mass's everyday name
    assert linker.link(query, 0.5, text="Spots on the lung").concept == "nodule"  # case and plural aside
    assert linker.link(query, 0.5, text="small lump in the lung").concept == "nodule"
    assert linker.link(query, 0.5, text="a lump deep in the lung") is None  # not word for word: the margin decides
    # ablation: without the names the exact phrase is one more text within the margin
    linker.names = {}
    assert linker.link(query, 0.5, text="a lump in the lung") is None


def test_a_lone_modifier_borrows_the_head_of_the_part_after_it():
    from radsift.search import clauses
    from radsift.search.concepts import Link

    assert clauses.with_next_head("a twisted", "hardened aorta") == "twisted aorta"
    assert clauses.with_next_head("big heart", "hardened aorta") is None  # two words: a thing of its own
    assert clauses.with_next_head("a twisted", "aorta") is None  # no modifier after: nothing shared
    table = {"twisted aorta": "aortic tortuosity", "hardened aorta": "atherosclerotic calcification"}

    def link(text):
        concept = table.get(text.lower())
        return Link(concept, 0.99, text) if concept else None

    reading = read_query("big heart with a twisted, hardened aorta", Labeler(), link=link)
    assert [f.finding for f in reading.findings] == ["cardiomegaly", "aortic tortuosity", "atherosclerotic calcification"]


def test_a_name_the_user_typed_followed_by_where_breaks_a_tie():
    linker = ConceptLinker.for_lexicon(load_lexicon(), _Ones())  # every concept tied
    query = np.ones(4, dtype=np.float32) / 2
    assert linker.placed_name("a breathing tube in the windpipe") == linker.concepts.index("endotracheal tube")
    assert linker.link(query, 0.5, text="a breathing tube in the windpipe").concept == "endotracheal tube"
    assert linker.link(query, 0.5, text="breathing tube in the neck").concept == "tracheostomy tube"  # its own name
    assert linker.placed_name("a breathing tube for the windpipe") is None  # "for" says no place
    assert linker.link(query, 0.5, text="a tube for breathing") is None
    linker.names = {}  # ablation: no names, no tie broken
    assert linker.link(query, 0.5, text="a breathing tube in the windpipe") is None
