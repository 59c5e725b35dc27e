"""The notes-only setting of the ``entity-aspect`` recipe, and clinical notes as their own passage test.

CAPR's promise (Grundmann et al.) is to train on a site's own notes with no labels and answer
(entity, aspect) questions. This module builds that setting from the notes alone (no MedQuAD text,
label or name is read: nothing here imports :mod:`radsift.corpus.medquad`):

* **The note split** (:func:`note_side`): each distinct note (its text, white space folded, case
  folded) goes to ``train``, ``dev`` or ``test`` by a hash of the text and a seed, independently
  of the other notes (:data:`DEV_FRACTION` and :data:`TEST_FRACTION` each). Training reads the
  ``train`` notes only.
* **The dictionary** (:func:`radsift.labels.note_entities.notes_entity_dictionary`): the packaged
  lexicon plus the training notes' own heading items and noun phrases.
* **The training data** (:func:`build_notes_only_data`): the recipe's passages and (entity, aspect)
  examples of the training notes (:func:`radsift.models.training.entity_aspect_data.build_entity_aspect_data`
  with no MedQuAD document), and as development split the passages of the ``dev`` notes.
* **The note passages benchmark** (:func:`note_passage_data`): the passages of held-out notes
  (sections of known aspects, windows of :data:`radsift.text.aspects.WINDOW_WORDS` words) as a
  pool; one query per distinct (entity, aspect) pair the dictionary finds in them; its gold
  passages are every pool passage of that aspect that mentions that entity. Pairs with more than
  :data:`MAX_GOLD` gold passages are not asked (with many right answers R@k no longer tells
  systems apart). :mod:`radsift.evaluation.protocols.note_passages` scores it.
"""

from __future__ import annotations

import hashlib
import re
from collections import defaultdict
from typing import Callable, Iterable, Sequence

from radsift.corpus.medquad_passages import PassageData, PassageQuery
from radsift.errors import ConfigError
from radsift.labels.note_entities import notes_entity_dictionary
from radsift.models.training.entity_aspect_data import EAData, build_entity_aspect_data
from radsift.records import Report
from radsift.text.aspects import OTHER, UNSPECIFIED, WINDOW_OVERLAP, WINDOW_WORDS, aspect_map, entity_aspect_text, \
    passage_windows

#: Expected shares of distinct notes held out as the development and the test notes.
DEV_FRACTION = 0.1
TEST_FRACTION = 0.1
#: Seed of the note split.
NOTE_SEED = 0
#: A benchmark query has at most this many gold passages.
MAX_GOLD = 3
SIDES = ("train", "dev", "test")
_WS = re.compile(r"\s+")


def note_key(report: Report) -> str:
    """What identifies a note in the split: its text, runs of white space folded, case folded
    (MTSamples lists one text under several ids: they are one note)."""
    return _WS.sub(" ", report.text()).strip().casefold()


def note_side(key: str, dev_fraction: float = DEV_FRACTION, test_fraction: float = TEST_FRACTION,
              seed: int = NOTE_SEED) -> str:
    """``train``, ``dev`` or ``test``: the side of a note (its :func:`note_key`) by ``sha256(seed, key)``.

    Raises:
        ConfigError: The fractions are negative or sum to 1 or more.
    """
    if dev_fraction < 0 or test_fraction < 0 or dev_fraction + test_fraction >= 1:
        raise ConfigError(f"note split: dev ({dev_fraction}) and test ({test_fraction}) fractions must be >= 0 "
                          "and sum to less than 1")
    digest = hashlib.sha256(f"radsift-note-split:{seed}:{key}".encode("utf-8")).digest()
    u = int.from_bytes(digest[:8], "big") / 2.0**64
    return "test" if u < test_fraction else "dev" if u < test_fraction + dev_fraction else "train"


def split_notes(reports: Iterable[Report], dev_fraction: float = DEV_FRACTION, test_fraction: float = TEST_FRACTION,
                seed: int = NOTE_SEED) -> dict[str, list[Report]]:
    """The distinct notes (first id of each text; empty ones dropped) by side (:func:`note_side`)."""
    out: dict[str, list[Report]] = {s: [] for s in SIDES}
    seen: set[str] = set()
    for r in reports:
        key = note_key(r)
        if not key or key in seen:
            continue
        seen.add(key)
        out[note_side(key, dev_fraction, test_fraction, seed)].append(r)
    return out


def note_pool(notes: Sequence[Report], dictionary) -> tuple[list[str], list[str], list[str], list[list]]:
    """The passages of ``notes``: texts, ids (``note#section#window``), aspects, and the entity mentions
    the dictionary finds in each (sections of known aspects only, windows of 180 words)."""
    amap = aspect_map()
    texts, ids, aspects = [], [], []
    for r in notes:
        for heading, body in r.sections.items():
            aspect = amap.aspect_of(heading)
            if aspect in (OTHER, UNSPECIFIED) or not body.strip():
                continue
            for w, window in enumerate(passage_windows(body, WINDOW_WORDS, WINDOW_OVERLAP)):
                texts.append(window)
                ids.append(f"{r.id}#{heading}#{w}")
                aspects.append(aspect)
    return texts, ids, aspects, dictionary.find_many(texts)


def note_passage_data(notes: Sequence[Report], dictionary, *, max_gold: int = MAX_GOLD, source: str = "",
                      ) -> PassageData:
    """Held-out notes as a passages benchmark (see the module docstring): one query per distinct
    (entity, aspect) with 1 to ``max_gold`` gold passages, asked as ``entity_aspect_text``."""
    texts, ids, aspects, mentions = note_pool(notes, dictionary)
    gold: dict[tuple[str, str], set[int]] = defaultdict(set)
    name: dict[tuple[str, str], str] = {}
    for row, (aspect, found) in enumerate(zip(aspects, mentions)):
        for m in found:
            key = (_WS.sub(" ", m.entity).strip().casefold(), aspect)
            gold[key].add(row)
            name.setdefault(key, m.entity)
    queries = [PassageQuery(f"n{i + 1}", {"entity-aspect": entity_aspect_text(name[key], key[1])}, frozenset(rows))
               for i, (key, rows) in enumerate(sorted(gold.items(), key=lambda kv: (kv[0][1], kv[0][0])))
               if len(rows) <= max_gold]
    asked = len(queries)
    notes_text = [f"{len(notes)} held-out notes, {len(texts)} passages; {len(gold)} distinct (entity, aspect) pairs, "
                  f"{asked} asked (those with at most {max_gold} gold passages)"]
    return PassageData(texts, ids, queries, source=source or "held-out MTSamples notes", notes=notes_text)


def build_notes_only_data(reports: Iterable[Report], *, dev_fraction: float = DEV_FRACTION,
                          test_fraction: float = TEST_FRACTION, seed: int = NOTE_SEED,
                          log: Callable[[str], None] | None = None) -> EAData:
    """The notes-only setting: training passages and examples of the ``train`` notes, the entity
    dictionary of those notes (:func:`radsift.labels.note_entities.notes_entity_dictionary`), and as
    development split (``dev_docs``) the :func:`note_passage_data` of the ``dev`` notes.

    Nothing but the notes and the packaged lexicon is read.
    """
    say = log or (lambda m: None)
    sides = split_notes(reports, dev_fraction, test_fraction, seed)
    say(f"notes-only: {len(sides['train'])} training notes, {len(sides['dev'])} development and "
        f"{len(sides['test'])} test notes held out (hash of the note, seed {seed})")
    dictionary = notes_entity_dictionary(sides["train"])
    data = build_entity_aspect_data(sides["train"], dictionary=dictionary, dev_fraction=0.0, log=say)
    data.dev_docs = note_passage_data(sides["dev"], dictionary, source="development notes (held-out MTSamples)")
    data.stats = {**data.stats, "setting": "notes-only", "dev_notes": len(sides["dev"]),
                  "test_notes": len(sides["test"]), "dev_queries": len(data.dev_docs.queries)}
    return data
