"""Units that say only all is normal: what every sentence states, and the normal key of every unit, per store.

A query asking for a finding ("wet lungs", "pneumonia") ranks units by what they state of it (reading tiers,
:mod:`radsift.ranking.tiers`); within one tier (most often: the units stating nothing of it), units that say
only all is normal ("The lungs are clear.", "No acute cardiopulmonary abnormality.") rank after those that may
state a finding (:func:`radsift.ranking.tiers.with_normal`). The evidence is the index's stored labels of every
finding (a sentence with a present or uncertain label states a finding; one whose labels all deny says normal
things) and, for a sentence the lexicon reads nothing in, its words (:func:`radsift.text.normality.sentence_kind`).

Both engines read the same arrays: the exact engine through :func:`radsift.search.reading.reading_tiers`
(``said``), the candidate engine through :class:`NormalKeyed` (its tiers, and a lower bound of the tier of
every unit left out of a pool: the wrapped reading's bound times the key's scale, as no key is negative).
What every sentence states is read once per store (the texts of the sentences no label holds: a pass over
those, on the first query asking for a finding), each unit's key once per store, unit and level.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from radsift.index.reader import IndexStore
from radsift.ranking.alone import ALONE_SCALE, AloneKeys, own_codes, present_pairs, report_totals
from radsift.ranking.tiers import (NORMAL_SCALE, SAYS_FINDING, SAYS_NORMAL, SAYS_NOTHING, SAYS_OTHER, normal_keys)
from radsift.search.units import section_of_sentence
from radsift.text.normality import EXAM, NORMAL, sentence_kind

#: Sentences whose texts are read at a time (one SQLite read each).
TEXT_BATCH = 4096


def said_by_labels(n_sentences: int, label_row: np.ndarray, label_status: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(what each sentence states by its labels, whether it has any): :data:`SAYS_FINDING` where a label is present
    or uncertain, :data:`SAYS_NORMAL` where its labels all deny, :data:`SAYS_OTHER` (to be read) where none."""
    row = np.asarray(label_row, dtype=np.int64)
    status = np.asarray(label_status, dtype=np.int64)
    said = np.full(n_sentences, SAYS_OTHER, dtype=np.int8)
    labeled = np.zeros(n_sentences, dtype=bool)
    labeled[row] = True
    said[labeled] = SAYS_NORMAL
    said[row[status >= 0]] = SAYS_FINDING  # present (1) or uncertain (0)
    return said, labeled


def said_of_texts(texts: Sequence[str]) -> np.ndarray:
    """What each unlabeled sentence states by its words (:func:`radsift.text.normality.sentence_kind`)."""
    kinds = {NORMAL: SAYS_NORMAL, EXAM: SAYS_NOTHING}
    return np.asarray([kinds.get(sentence_kind(t), SAYS_OTHER) for t in texts], dtype=np.int8)


def sentence_said(store: IndexStore) -> np.ndarray:
    """What every sentence of ``store`` states (``SAYS_*`` of :mod:`radsift.ranking.tiers`), kept per store."""
    def compute() -> np.ndarray:
        n = int(store.units("sentence").report_row.shape[0])
        labels = store.labels()
        said, labeled = said_by_labels(n, labels.row, labels.status)
        unread = np.flatnonzero(~labeled)
        for start in range(0, unread.size, TEXT_BATCH):
            rows = unread[start:start + TEXT_BATCH].tolist()
            got = store.sentences_by_rows(rows)
            said[rows] = said_of_texts([got[r].text if r in got else "" for r in rows])
        said.flags.writeable = False
        return said

    return store.cached(("sentence_said",), compute)


def unit_normal_keys(store: IndexStore, unit: str, by_report: bool) -> np.ndarray:
    """:func:`radsift.ranking.tiers.normal_keys` of every ``unit`` unit of ``store`` (at report level with the
    report's key), kept per store."""
    said = sentence_said(store)  # filled first: the store's cache lock is not reentrant
    unit_of = None if unit == "sentence" else store.cached(("section_of_sentence",), lambda: section_of_sentence(store))

    def compute() -> np.ndarray:
        report_row = store.units(unit).report_row
        keys = normal_keys(said, int(report_row.shape[0]), unit_of, report_row if by_report else None)
        keys.flags.writeable = False
        return keys

    return store.cached(("normal_keys", unit, bool(by_report)), compute)


def unit_alone_keys(store: IndexStore, unit: str, reading, lexicon) -> AloneKeys:
    """:class:`radsift.ranking.alone.AloneKeys` of the ``unit`` units of ``store`` for a reading asking for its
    findings alone ("granuloma, otherwise normal"): computed for the rows asked; the present (report, finding) pairs
    and each report's count of them are read once per store."""
    def pairs():
        labels = store.labels()
        report_of_label = np.asarray(store.units("sentence").report_row, dtype=np.int64)[labels.row]
        pair_reports, offsets = present_pairs(report_of_label, labels.finding, labels.status,
                                              len(store.manifest.findings))
        return pair_reports, offsets, report_totals(pair_reports, store.n_reports)

    pair_reports, offsets, totals = store.cached(("present_pairs",), pairs)
    own = own_codes(lexicon, reading, {f: i for i, f in enumerate(store.manifest.findings)})
    return AloneKeys(pair_reports, offsets, totals, own, store.units(unit).report_row)


def below_keys(store: IndexStore, unit: str, by_report: bool, reading, lexicon) -> tuple[np.ndarray | AloneKeys, int]:
    """The key below every other of a query asking for a finding: the alone key (and its scale) where the reading
    asks for its findings alone, else the normal key (:func:`unit_normal_keys`)."""
    if reading.alone:
        return unit_alone_keys(store, unit, reading, lexicon), ALONE_SCALE
    return unit_normal_keys(store, unit, by_report), NORMAL_SCALE[bool(by_report)]


class NormalKeyed:
    """A candidate engine's query tiers (:class:`~radsift.search.candidates.QueryTiers` or
    :class:`~radsift.search.beside.BesideTiers`) with the normal key or the alone key (``keys`` taking ``scale`` values:
    :func:`below_keys`) below every key, as the exact engine's :func:`radsift.ranking.tiers.with_normal`: what the
    counts, classes and kept units read is the wrapped one's."""

    def __init__(self, inner, keys: np.ndarray | AloneKeys, scale: int) -> None:
        self.inner, self.keys, self.scale = inner, keys, int(scale)

    def __getattr__(self, name: str):
        if name == "inner":  # not set yet: no recursion
            raise AttributeError(name)
        return getattr(self.inner, name)

    def tiers(self, rows: np.ndarray) -> np.ndarray:
        """The tier of each unit of ``rows`` (any order), as the exact engine gives it."""
        rows = np.asarray(rows, dtype=np.int64)
        return np.asarray(self.inner.tiers(rows), dtype=np.int64) * self.scale + self.keys[rows]

    def lowest_outside(self, inside, eligible, strict: bool = True, known: np.ndarray | None = None) -> int:
        """A lower bound of the tier of every eligible unit outside ``inside``: the wrapped reading's, with key 0."""
        known = None if known is None else np.asarray(known, dtype=np.int64) // self.scale
        return int(self.inner.lowest_outside(inside, eligible, strict, known)) * self.scale


__all__ = ["NormalKeyed", "below_keys", "said_by_labels", "said_of_texts", "sentence_said", "unit_alone_keys",
           "unit_normal_keys"]
