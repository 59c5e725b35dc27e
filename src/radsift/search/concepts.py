"""Concept-aware queries: link a query that describes a finding to the lexicon concept it describes.

"A breathing tube in the windpipe" names no lexicon phrase, yet it describes the endotracheal
tube. The linker compares the query's finding text (the query without its negation or
uncertainty cue: "no fluid around the lungs" -> "fluid around the lungs") with every concept's
name, synonyms, plain-language ``descriptions`` (the lexicon YAML; a user's lexicon can add
its own) and ``examples`` (queries written for the concept by people shown only its name: the packaged lexicon's
come from the development halves of the description batches, never a test row), by the cosine of their embeddings under the index's own encoder. The best concept is
linked when its best phrase reaches the model's ``link_threshold`` (:mod:`radsift.models.settings`,
calibrated on development queries: ``docs/measurements.md``, "Concept linking").

A linked concept then acts as if the query had named it: it joins the query's reading (source
``linked``, so the stored labels rank the units that state it first, with the query's cue
deciding the wanted status), its name and short synonyms join the BM25 side of the query, and the
reading shows "understood as: endotracheal tube". A query whose own words name a lexicon finding
is read by the labeler as before; one that links to nothing is searched as before. When the
query's own phrase occurs in the index, the link is added beside the literal reading, never in its
place (:func:`radsift.search.reading.read_query`, ``read_as``).

These rules keep a link from being a guess between neighbours (their word tables live in
:mod:`radsift.search.linkwords`):

- **Where counts.** Words of place in the finding text ("around the lungs", "in the pleural
  space", "around the heart", "in the lungs") restrict the link to the concepts of that place
  (:data:`PLACES`): "fluid around the lungs" is a pleural effusion, "water in the lungs" is not; fluid lies *on* a
  lung outside it ("water on the lungs", the lay name of a pleural effusion), where a spot or a shadow on the lung
  is seen on it (no place);
  a concept's place is read from its own name and synonyms (``pleural ...``, ``pericardial ...``),
  so a user's lexicon gets the same rule.
- **What counts.** Words of substance (air, fluid, blood, pus) do the same: "fluid around the lungs"
  is no hydropneumothorax (air and fluid) and no empyema (pus); blood and pus are fluids
  (:data:`SUBSTANCES`).
- **The spine and the glands are places too.** A finding text naming the spine, a vertebra or a disc links
  only to concepts of the spine ("disc herniation" is no hiatal hernia); one naming glands or nodes only to
  concepts of lymph nodes ("chalky glands in the chest" is no calcified granuloma).
- **A symptom is felt, not seen.** A finding text made only of symptoms, with where, how and when they are
  felt ("chest pain", "shortness of breath when climbing stairs", :func:`symptom_only`), links to nothing: no
  concept of the film is what it says.
- **Off the film is no finding of it.** A finding text placed in a part of the body no chest film shows ("swollen
  glands in the groin", "a clot in my leg", "a cyst in the liver", :func:`off_film`) links to
  nothing; a part named only beside the finding ("ankle swelling, ? big heart", "fall on an outstretched hand") does
  not count.
- **Beside the lung is the pleura; blood in the vessels is in no serous space.** "Infected liquid next to the
  lung" is pleural (and pus); a text naming vessels, arteries or veins links to no pleural or pericardial concept
  ("blood backing up in the vessels of my lungs" is no hemothorax).
- **The belly is not the chest.** A text naming the belly links only to concepts of the belly (pneumoperitoneum,
  cholecystectomy: read from their names and synonyms); one naming the chest cavity ("in the left hemithorax",
  "into my chest") to none of them.
- **A concept is what its name says it is made of.** A concept's substances are those of its name when it names
  one, else those of its synonyms (:func:`concept_substances`): "hemopneumothorax", a synonym of hemothorax, does
  not make blood around the lung less of a hemothorax for want of air.
- **The lungs hold no glands.** "In the lungs" rules out the lymph-node concepts as it rules out the pleura:
  "calcium deposits in the lungs" are calcified granulomas, not calcified hilar nodes.
- **A substance named is a substance meant.** A finding text naming air, fluid, blood or pus links only to
  concepts whose name or synonyms name one of them ("fluid buildup in the chest" is no blunted costophrenic
  angle, whatever its descriptions say).
- **More is not less.** A word made with over- or hyper- ("overinflated") rules out the concepts named with
  under- or hypo- ("hypoinflation"), and the other way round (:data:`DIRECTIONS`): an embedding hears
  "inflated" in both. So do words of size (:data:`SIZES`: "a little round shadow" is no mass, a mass being over
  3 cm) and of tone on a film (:data:`TONES`, read from the concept's name only: "large lucent lungs" are no
  lung opacity, "a white line" no lucency).
- **The substances named decide between close concepts.** Of two concepts within the margin, the one holding more
  of the substances the text names is linked ("liquid ... with gas above" in the pleural space is a
  hydropneumothorax, not its part pleural effusion; "fluid buildup" is a pleural effusion, not a blunted angle).
- **A compound and its part are not rivals.** When the best two concepts are a compound and one of its
  lexicon ``parts`` (hydropneumothorax and pneumothorax for "collapsed lung"), the part is linked (every
  report stating the compound states the part) and the margin is taken over the next concept, unless the text
  names a substance only the compound holds (the rule above).
- **Sideways is not forward.** A spine bent forward or hunched (:data:`BENDS`) is no scoliosis, one bent to one
  side no kyphosis (read from the concept's name only).
- **Metal was put there.** A text naming metal (:data:`METAL`) links only to devices and procedures ("metal
  fixing my collarbone after a break" is orthopedic hardware or nothing, never the fracture).
- **A body's shape is no device.** A text calling something sunken, caved in, hollow, dented, hunched or misshapen
  (:data:`SHAPES`) describes the body's own contour: it links to no concept of the ``device`` category ("a sunken
  chest" is no chest drain for sharing "chest").
- **A clear winner.** The best concept must beat the next one by :data:`LINK_MARGIN` (cosine): a query
  halfway between fracture and acute osseous abnormality links to neither.
- **A name the user typed breaks a tie.** Between rivals within the margin, the concept whose own phrase opens the
  text, followed by where it is ("a breathing tube in the windpipe": the endotracheal tube's "breathing tube"), is
  linked (:meth:`ConceptLinker.placed_name`); the tracheostomy's "breathing tube in the neck" is its own name.
- **An example speaks for its concept, never against another.** A link example (a whole query written for the
  concept, :attr:`~radsift.labels.lexicon.Concept.examples`) may make its concept the best, never a rival of the best;
  a link it makes needs :data:`EXAMPLE_THRESHOLD`, above the model's threshold (whole queries share a writer's words
  as well as the finding's); and where the examples leave no clear winner, the concepts' own words decide as if there
  were none, so an example never takes away a link the lexicon made.
- **Top is not bottom.** A phrase placed at one end of the chest (:data:`HEIGHTS`: "at the top of the lung", "apical")
  links no text placed at the other ("a thin white line at the bottom of the lung"); read per phrase.
- **A concept's own name needs no margin.** A finding text that is word for word one of a concept's phrases ("a lump
  in the lung", the mass's everyday name; case, plurals and a leading article aside) links to it
  (:meth:`ConceptLinker.exact_name`): the lexicon gives each name to one concept.

The phrase vectors are computed once per (model, lexicon) and kept in the index folder under
``cache/`` (outside the generations: a rebuild or an ``index add`` does not touch them); an
index folder that cannot be written keeps them in memory.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Sequence

import numpy as np

from radsift.ranking import best_per_owner
from radsift.search.linkwords import (
    HEIGHTS,
    EXACT_ARTICLES,
    METAL,
    PLACED_CATEGORIES,
    PLACES,
    PLACE_PREPOSITIONS,
    SHAPES,
    bends_of,
    concept_places,
    concept_substances,
    directions_of,
    heights_of,
    normal_statement,
    off_film,
    query_places,
    sizes_of,
    substances_of,
    symptom_only,
    tones_of,
    _OPPOSITE,
)

#: Synonyms longer than this many words do not join the BM25 side of a linked query.
MAX_EXPANSION_WORDS = 3
#: The best concept's cosine must exceed the runner-up's by this much to be linked. Chosen on the
#: development descriptions only (three batches: ``description_queries.tsv`` dev, ``description_queries_dev2.tsv``
#: and the dev half of ``description_queries_v3.tsv``), by the rule of ``docs/measurements.md`` ("Links beside the
#: user's words"): the most right links with pooled development precision >= 0.97 and at most 5% of the outside
#: findings linked. (The earlier bound, 0.98, is met by no margin once the third batch, written after the rules,
#: is pooled: 0.975 at best.) With every rule below, 0.05 wins (pooled 0.972, 210 right of 216 linked; 0.04: 0.960,
#: 214 of 223; 0.07: 0.975, 199 of 204); one outside finding of 141 links at any margin.
LINK_MARGIN = 0.05
#: A link made by one of the lexicon's link examples (a query written for the concept, :attr:`Concept.examples`) must
#: reach this cosine, above the model's ``link_threshold``: whole queries share a writer's words ("on the x-ray", "my
#: lungs") as well as the finding's. Chosen on the development batches, each measured with its own rows out of the
#: examples (``bench_links.py --splits dev``; ``docs/measurements.md``, "Link examples"): 0.72 / 0.75 / 0.78 / 0.80 gave
#: pooled precision 0.938 / 0.949 / 0.949 / 0.949 and recall 0.641 / 0.621 / 0.585 / 0.553 (no examples: 0.951, 0.526).
EXAMPLE_THRESHOLD = 0.75

@dataclass(frozen=True)
class Link:
    """A query linked to a concept.

    Attributes:
        concept: The concept's name.
        score: The cosine of the query's finding text with ``phrase``.
        phrase: The concept's name, synonym or description it matched best.
    """

    concept: str
    score: float
    phrase: str


class ConceptLinker:
    """Links texts to the concepts of a lexicon by embedding similarity.

    Args:
        concepts: Concept names, one per concept.
        phrases: Every phrase (names, synonyms, descriptions).
        owner: Concept index of each phrase.
        vectors: Unit vectors of the phrases, ``(len(phrases), dim)``.
        expansions: Per concept, the words its link adds to the BM25 side.
        places: Per concept, the places of :data:`PLACES` its name or synonyms put it in (None: read
            from ``phrases`` and ``concepts``).
    """

    def __init__(self, concepts: Sequence[str], phrases: Sequence[str], owner: np.ndarray, vectors: np.ndarray,
                 expansions: Sequence[str], places: Sequence[frozenset[str]] | None = None) -> None:
        self.concepts = list(concepts)
        self.phrases = list(phrases)
        self.owner = np.asarray(owner, dtype=np.int64)
        self.vectors = np.asarray(vectors, dtype=np.float32)
        self.expansions = list(expansions)
        self.places = list(places) if places is not None else [frozenset()] * len(self.concepts)
        self.substances = [frozenset()] * len(self.concepts)
        self.directions = [directions_of([c]) for c in self.concepts]  # for_lexicon reads the synonyms too
        self.tones = [tones_of([c]) for c in self.concepts]  # the name only (:data:`TONES`)
        self.sizes = [sizes_of([c]) for c in self.concepts]  # for_lexicon reads the synonyms too
        self.parts: list[frozenset[int]] = [frozenset()] * len(self.concepts)
        self.bends = [bends_of([c]) for c in self.concepts]  # the name only (:data:`BENDS`)
        self.devices = np.zeros(len(self.concepts), dtype=bool)  # for_lexicon reads the categories
        self.placed = np.ones(len(self.concepts), dtype=bool)  # what may be metal; for_lexicon reads the categories
        # a phrase's normalized words -> its index in ``phrases``; for_lexicon fills it (an exact name links)
        self.names: dict[tuple[str, ...], int] = {}
        self.normalize: Callable[[str], tuple[str, ...]] | None = None
        # which phrases are the lexicon's link examples (queries written for the concept), not its own words
        self.example = np.zeros(len(self.phrases), dtype=bool)
        # per end of the chest (:data:`HEIGHTS`), the phrases placed there
        self.heights = {h: np.array([h in heights_of(p) for p in self.phrases], dtype=bool) for h in HEIGHTS}

    def with_devices(self, devices: Sequence[bool]) -> ConceptLinker:
        """This linker with each concept's being a device (the lexicon's ``device`` category) or not."""
        self.devices = np.asarray(devices, dtype=bool)
        return self

    def with_placed(self, placed: Sequence[bool]) -> ConceptLinker:
        """This linker with each concept's being put into a body (:data:`PLACED_CATEGORIES`) or not."""
        self.placed = np.asarray(placed, dtype=bool)
        return self

    def with_parts(self, parts: Sequence[Sequence[str]]) -> ConceptLinker:
        """This linker with each concept's lexicon ``parts`` (names; names outside the lexicon are left out)."""
        index = {c: i for i, c in enumerate(self.concepts)}
        self.parts = [frozenset(index[p] for p in ps if p in index) for ps in parts]
        return self

    def with_substances(self, substances: Sequence[frozenset[str]]) -> ConceptLinker:
        """This linker with each concept's substances (:func:`concept_substances`)."""
        self.substances = list(substances)
        return self

    @classmethod
    def for_lexicon(cls, lexicon, encoder, cache_dir: str | Path | None = None,
                    fingerprint: str | None = None) -> ConceptLinker:
        """Embed the lexicon's phrases with ``encoder`` (read from ``cache_dir`` when there).

        Args:
            lexicon: A :class:`~radsift.labels.lexicon.Lexicon`.
            encoder: Anything with ``encode(texts) -> (n, dim)`` unit vectors.
            cache_dir: Where to keep the vectors (None = no cache).
            fingerprint: The encoder's identity, part of the cache key.
        """
        concepts, phrases, owner, expansions, example = _phrases(lexicon)
        places = [concept_places(c.name, c.synonyms) for c in lexicon]
        key = hashlib.sha256(json.dumps([fingerprint or getattr(encoder, "name", ""), phrases]).encode()).hexdigest()
        cached = _read_cache(cache_dir, key, len(phrases))
        vectors = cached if cached is not None else encoder.encode(phrases, batch_size=128)
        if cached is None:
            _write_cache(cache_dir, key, vectors)
        linker = cls(concepts, phrases, owner, vectors, expansions, places).with_substances(
            [concept_substances(c.name, c.synonyms) for c in lexicon])
        linker.directions = [directions_of([c.name, *c.synonyms]) for c in lexicon]
        linker.sizes = [sizes_of([c.name, *c.synonyms]) for c in lexicon]
        linker.with_devices([c.category == "device" for c in lexicon])
        linker.with_placed([c.category in PLACED_CATEGORIES for c in lexicon])
        linker.normalize = lexicon.normalizer.phrase
        linker.example = example
        linker.names = {}
        for i, phrase in enumerate(phrases):
            linker.names.setdefault(linker.normalize(phrase), i)
        return linker.with_parts([c.parts for c in lexicon])

    def scores(self, query_vector: np.ndarray, text: str | None = None, own_words: bool = False) -> np.ndarray:
        """The best cosine of the query with each concept's phrases (one per concept; ``own_words``: its name,
        synonyms and descriptions only, no link example); with the query's finding ``text``, the concepts its words
        of place rule out score -inf."""
        sims = self.vectors @ np.asarray(query_vector, dtype=np.float32)
        if own_words and self.example.any():
            sims = np.where(self.example, -np.inf, sims).astype(np.float32)
        heights = heights_of(text) if text else frozenset()
        if len(heights) == 1:  # "top" and "bottom" together ("from top to bottom") say neither
            sims = np.where(self.heights[_OPPOSITE[next(iter(heights))]], -np.inf, sims).astype(np.float32)
        out = best_per_owner(sims, self.owner, len(self.concepts))
        if text and (symptom_only(text) or off_film(text)):  # felt, not seen, or off the film: no concept is it
            out[:] = -np.inf
            return out
        allowed = self.allowed(text) if text else None
        if allowed is not None:
            out[~allowed] = -np.inf
        return out

    def allowed(self, text: str) -> np.ndarray | None:
        """The concepts the places, substances and directions named in ``text`` allow (None: it names none, or no
        concept of the lexicon is what and where it says)."""
        named = query_places(text)
        stuff = substances_of([text])
        ways = directions_of([text])
        tones = tones_of([text])
        sizes = sizes_of([text])
        bends = bends_of([text])
        shaped = bool(SHAPES.search(text))
        metal = bool(METAL.search(text))
        if not named and not stuff and not ways and not tones and not sizes and not bends and not shaped and not metal:
            return None
        ok = np.ones(len(self.concepts), dtype=bool)
        if shaped:  # the body's own contour: no device
            ok &= ~self.devices
        if metal:  # metal was put there
            ok &= self.placed
        if len(bends) == 1:  # "sideways" and "forward" together say neither
            ok &= np.array([_OPPOSITE[next(iter(bends))] not in b for b in self.bends], dtype=bool)
        if stuff:  # a concept of another substance is not what the query describes
            ok &= np.array([s <= stuff for s in self.substances], dtype=bool)
        for way in ways:
            ok &= np.array([_OPPOSITE[way] not in d for d in self.directions], dtype=bool)
        for tone in tones:
            ok &= np.array([_OPPOSITE[tone] not in t for t in self.tones], dtype=bool)
        if len(sizes) == 1:  # "small" and "large" together ("a small lump grown larger") say nothing of size
            ok &= np.array([_OPPOSITE[next(iter(sizes))] not in z for z in self.sizes], dtype=bool)
        for place in named:
            _, where, excludes = PLACES[place]
            if where is not None:
                ok &= np.array([place in p for p in self.places], dtype=bool)
            for other in excludes:
                ok &= np.array([other not in p for p in self.places], dtype=bool)
        return ok if ok.any() else None

    def link(self, query_vector: np.ndarray, threshold: float, text: str | None = None,
             margin: float = LINK_MARGIN) -> Link | None:
        """The concept the query describes, or None: no phrase reaches ``threshold``, or the best concept
        beats the next by less than ``margin``. ``text`` (the finding text the vector encodes) lets its
        words of place (:data:`PLACES`) count."""
        if not len(self.phrases):
            return None
        if not self.example.any() or (text and normal_statement(text)):
            # a normal statement links to the concept naming the organ abnormal, as the lexicon names it: examples
            # are queries for a finding present, and a short "lungs are normal" hears "my lungs ... bigger than normal"
            return self._link(query_vector, threshold, text, margin, examples=False)
        got = self._link(query_vector, threshold, text, margin, examples=True)
        if got is None:  # an example never takes away a link the concepts' own words make
            got = self._link(query_vector, threshold, text, margin, examples=False)
        return got

    def _link(self, query_vector: np.ndarray, threshold: float, text: str | None, margin: float,
              examples: bool) -> Link | None:
        """:meth:`link` by every phrase (``examples``) or by the concepts' own words only."""
        named = self.exact_name(query_vector, text, examples)
        if named is not None:
            return named
        best, score, runner_up = self.decide(query_vector, text, margin, examples)
        if score >= threshold and score - runner_up < margin:
            named = self.placed_name(text, examples)  # a tie between close rivals, broken by the name the user typed
            named_score = (float(self.scores(query_vector, text, own_words=not examples)[named])
                           if named is not None and named != best else None)
            if named_score is not None and named_score >= score - margin:
                best, score, runner_up = named, named_score, -np.inf
            elif named == best:
                runner_up = -np.inf
        if not score >= threshold or score - runner_up < margin:
            return None
        sims = self.vectors @ np.asarray(query_vector, dtype=np.float32)
        own = np.flatnonzero((self.owner == best) & (examples | ~self.example))
        phrase = int(own[np.argmax(sims[own])])
        if self.example[phrase] and score < EXAMPLE_THRESHOLD:
            return None
        return Link(self.concepts[best], score, self.phrases[phrase])

    def exact_name(self, query_vector: np.ndarray, text: str | None, examples: bool = True) -> Link | None:
        """The concept whose own phrase ``text`` is, word for word (case, plurals and a leading article aside: "a
        lump in the lung" is the mass's everyday name), where the rules of place and substance allow it; None
        otherwise. No margin: the lexicon gives each name to one concept (the one a layperson most means), so a
        near rival ("small lump in the lung", a nodule) is no doubt."""
        if not text or self.normalize is None:
            return None
        key = self.normalize(EXACT_ARTICLES.sub("", text.strip()))
        phrase = self.names.get(key)
        if phrase is None or (self.example[phrase] and not examples):
            return None
        concept = int(self.owner[phrase])
        if not np.isfinite(self.scores(query_vector, text)[concept]):
            return None  # a word of place, substance or symptom rules the concept out
        score = float(self.vectors[phrase] @ np.asarray(query_vector, dtype=np.float32))
        return Link(self.concepts[concept], score, self.phrases[phrase])

    def placed_name(self, text: str | None, examples: bool = True) -> int | None:
        """The concept whose own phrase opens ``text`` and is followed by where it is ("a breathing tube in the
        windpipe": the endotracheal tube's everyday name "breathing tube", then "in ..."), or None. Used only to break
        a tie between close rivals: the lexicon gives each name to the concept a layperson most means by it."""
        if not text or self.normalize is None:
            return None
        words = EXACT_ARTICLES.sub("", text.strip()).split()
        for k in range(len(words) - 1, 0, -1):
            if words[k].lower() not in PLACE_PREPOSITIONS:
                continue
            phrase = self.names.get(self.normalize(" ".join(words[:k])))
            if phrase is not None and (examples or not self.example[phrase]):
                return int(self.owner[phrase])
        return None

    def decide(self, query_vector: np.ndarray, text: str | None = None, margin: float = LINK_MARGIN,
               examples: bool = True) -> tuple[int, float, float]:
        """The best concept (an index), its score and the runner-up's score (-inf when there is none).

        A compound and its part are not rivals: while the best two are a concept and one of its ``parts``
        within ``margin`` of each other, the part is kept and the compound set aside (a report stating the
        compound states the part); a compound that beats its part by the margin is linked itself. Before that, of
        two concepts within ``margin``, the one holding more of the substances ``text`` names is kept. ``examples``:
        the best concept may be chosen by a link example (:attr:`example`), never a rival; else by own words only."""
        scores = self.scores(query_vector, text, own_words=not examples).copy()
        if examples and self.example.any():
            # a link example speaks for its concept, never against another: rivals score by their own words
            rivals = self.scores(query_vector, text, own_words=True)
            top = int(np.argmax(scores))
            best_score, scores = scores[top], rivals.copy()
            scores[top] = best_score
        stuff = substances_of([text]) if text else frozenset()
        while True:
            order = np.argsort(-scores, kind="stable")
            best = int(order[0])
            if len(order) < 2 or not np.isfinite(scores[order[1]]):
                return best, float(scores[best]), -np.inf
            second = int(order[1])
            if float(scores[best]) - float(scores[second]) >= margin:
                return best, float(scores[best]), float(scores[second])
            more = len(stuff & self.substances[best]) - len(stuff & self.substances[second])
            if more:  # the one holding more of the substances the query names wins ("air and fluid")
                scores[second if more > 0 else best] = -np.inf
            elif second in self.parts[best]:
                scores[best] = -np.inf  # the part is linked, the compound set aside
            elif best in self.parts[second]:
                scores[second] = -np.inf
            else:
                return best, float(scores[best]), float(scores[second])

    def expansion(self, concept: str) -> str:
        """The words a link to ``concept`` adds to the BM25 side of the query."""
        return self.expansions[self.concepts.index(concept)]


def _phrases(lexicon) -> tuple[list[str], list[str], np.ndarray, list[str], np.ndarray]:
    concepts, phrases, owner, expansions, example = [], [], [], [], []
    for i, c in enumerate(lexicon):
        concepts.append(c.name)
        own = [p for p in dict.fromkeys((*c.synonyms, *c.descriptions)) if "*" not in p]
        written = [p for p in dict.fromkeys(c.examples) if p not in own]
        phrases += own + written
        owner += [i] * (len(own) + len(written))
        example += [False] * len(own) + [True] * len(written)
        short = [p for p in c.synonyms if "*" not in p and len(p.split()) <= MAX_EXPANSION_WORDS]
        expansions.append(" ".join(dict.fromkeys(short)))
    return concepts, phrases, np.asarray(owner, dtype=np.int64), expansions, np.asarray(example, dtype=bool)


def _read_cache(cache_dir, key: str, n: int) -> np.ndarray | None:
    if cache_dir is None:
        return None
    path = Path(cache_dir) / f"concepts-{key[:24]}.npy"
    try:
        vectors = np.load(path)
    except (OSError, ValueError):
        return None
    if vectors.ndim != 2 or vectors.shape[0] != n or not np.isfinite(vectors).all():
        return None  # a stale or damaged cache is recomputed, never trusted
    return vectors.astype(np.float32, copy=False)


def _write_cache(cache_dir, key: str, vectors: np.ndarray) -> None:
    if cache_dir is None:
        return
    folder = Path(cache_dir)
    try:
        folder.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=folder, suffix=".tmp")
        with os.fdopen(fd, "wb") as fh:
            np.save(fh, np.asarray(vectors, dtype=np.float32))
        os.replace(tmp, folder / f"concepts-{key[:24]}.npy")
    except OSError:
        pass  # a read-only index folder: the vectors stay in memory
