"""The units a search ranks, as the store holds them: their texts, and the section unit of each sentence.

A search ranks ``sentence`` units or whole ``section`` units (``unit=``); both come back as
:class:`~radsift.records.Sentence` records (a section unit is one "sentence" spanning its section's
text, index -1).
"""

from __future__ import annotations

import numpy as np

from radsift.index.reader import IndexStore
from radsift.records import Sentence


def unit_texts(store: IndexStore, unit: str, rows: list[int]) -> dict[int, Sentence]:
    """The units ``rows`` of kind ``unit`` (``sentence`` or ``section``), by row."""
    if unit == "sentence":
        return store.sentences_by_rows(rows)
    return {row: Sentence(rid, sec, -1, 0, len(text), text)
            for row, (rid, sec, text) in store.sections_by_rows(rows).items()}


def section_of_sentence(store: IndexStore) -> np.ndarray:
    """The section-unit row of every sentence row."""
    sent, sec = store.units("sentence"), store.units("section")
    width = int(max(sent.section_code.max(initial=0), sec.section_code.max(initial=0))) + 1
    sec_keys = sec.report_row.astype(np.int64) * width + sec.section_code
    order = np.argsort(sec_keys, kind="stable")
    keys = sent.report_row.astype(np.int64) * width + sent.section_code
    return order[np.searchsorted(sec_keys[order], keys)]
