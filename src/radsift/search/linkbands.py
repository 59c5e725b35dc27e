"""The band of a hit that states the concept linked beside the query's words, and not the words: ``related``.

A lay phrasing keeps its literal reading, and the concept it links to stands beside it ("collapsed lung": the words,
and a pneumothorax beside them; :func:`radsift.search.reading.read_query`). The counts and the ``states`` band follow
the literal reading alone (:mod:`.beside`), so a report stating a pneumothorax in other words was banded as one that
says nothing of the query: ``unlikely`` ("Small right pneumothorax." at 0.01 for *collapsed lung*). The newcomer
check's judges found such hits relevant far more often than that: of the top-5 hits of the queries with a link
beside them on the packaged model's Open-i index, those banded ``unlikely`` while stating the link were relevant 25
times of 35 on the development halves (24 of 29 on the test halves; the twenty-seventh session). Such a hit is now
``related``: it may be what the user means, and ``states`` still means the user's own words. Its estimate is that of
a hit stating its query's reading at the same relative score (:meth:`radsift.ranking.bands.BandTable.estimate`,
class ``states``), at most :data:`LINKED_SHARE`, the share the development judgments found. A hit stating the
opposite of the words keeps its band.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from radsift.index.reader import IndexStore
from radsift.ranking.bands import BandTable, band_of, score_kind
from radsift.records import QueryReading
from radsift.search.candidates import ReadingPostings

#: The classes of the literal reading a stated link lifts (not ``states``, not ``opposite``).
LIFTED = ("partial", "none")
#: The share of relevant hits among those stating the link alone (the newcomer check's development halves, packaged
#: model: 25 of 35 top-5 hits); the test halves' share, 24 of 29, was printed beside it and chose nothing.
LINKED_SHARE = 25 / 35


def stating_links(store: IndexStore, unit: str, by_report: bool, reading: QueryReading,
                  page: Sequence[tuple[int, int, float]]) -> list[bool] | None:
    """Whether each page entry (report row, unit row, score) states every concept linked beside the literal
    reading with its wanted status (at report level: anywhere in its report); None when no link stands beside."""
    links = [f for f in reading.findings if f.source == "linked" and f.beside]
    codes = {name: i for i, name in enumerate(store.manifest.findings)}
    if not links or not page or any(f.finding not in codes for f in links):
        return None
    post = ReadingPostings.of(store, unit)
    keys = np.asarray([r if by_report else u for r, u, _ in page], dtype=np.int64)
    ok = np.ones(keys.size, dtype=bool)
    for f in links:
        units, reports = post.view(codes[f.finding], f.status).stating
        ok &= np.isin(keys, reports if by_report else units)
    return ok.tolist()


def lifted(bands: list[tuple[str, float]], classes: Sequence[str], relative: Sequence[float], mode: str,
           stated: Sequence[bool] | None) -> list[tuple[str, float]]:
    """``bands`` with each entry that states the links (``stated``) but not the literal reading banded as a hit
    stating its reading would be estimated, at most ``related`` (see the module)."""
    if stated is None:
        return bands
    table, kind = BandTable.packaged(), score_kind(mode)
    out = list(bands)
    for i, (cls_name, rel, yes) in enumerate(zip(classes, relative, stated)):
        if yes and cls_name in LIFTED:
            estimate = max(min(table.estimate(kind, "states", rel), LINKED_SHARE), out[i][1])
            out[i] = (band_of("partial", estimate), round(estimate, 3))
    return out


__all__ = ["LIFTED", "LINKED_SHARE", "lifted", "stating_links"]
