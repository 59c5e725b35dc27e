"""The answer of a search: its page of hits cut from the ranked list, with counts and bands.

:func:`result_page` cuts the page (``offset``, ``k``) from the ranked list, counts the whole list
(:class:`~radsift.search.counts.Counts`) and turns each entry of the page into a
:class:`~radsift.records.Hit` (the matched unit, its highlights, the report's sections and
metadata, what it states of the query's findings, its relevance band); :class:`SearchResult` is the
list of hits with the reading and the counts.
"""

from __future__ import annotations

from typing import Callable, Iterable, Sequence

from radsift.index.reader import IndexStore
from radsift.ranking.core import base_scores
from radsift.records import Hit, HitMention, QueryReading
from radsift.search.counts import Counts
from radsift.search.highlight import highlight_spans
from radsift.search.linkbands import stating_links
from radsift.search.options import SearchRequest
from radsift.search.plan import Plan

#: A text and a reading -> what the text states of the reading's findings (:func:`radsift.search.mentions.mentions_in`).
Mentions = Callable[[str, QueryReading], tuple[HitMention, ...]]


class SearchResult(list):
    """The hits of a search (a list, best first), how the query was read and what the whole list holds.

    Attributes:
        reading: How the query was read.
        offset: Hits of the ranked list skipped before this page.
        k: The page size asked for.
        total: Reports (sentences at sentence level) in the whole ranked list: every eligible one for
            the dense and hybrid modes, those sharing a term with the query (or stating its reading)
            for ``bm25``.
        matching: How many of them state the query's reading (the ``states`` band); None when the
            ranking reads nothing (no finding named, or ``negation="ignore"``).
        lower_bound: True when ``matching`` may be short: an open-vocabulary phrase had more
            candidate sentences than the reader reads (:data:`~radsift.search.reading.OPEN_CANDIDATES`).
    """

    def __init__(self, hits: Iterable[Hit], reading: QueryReading, *, offset: int = 0, k: int | None = None,
                 total: int | None = None, matching: int | None = None, lower_bound: bool = False) -> None:
        super().__init__(hits)
        self.reading = reading
        self.offset = offset
        self.k = len(self) if k is None else k
        self.total = len(self) if total is None else total
        self.matching = matching
        self.lower_bound = lower_bound

    @property
    def more(self) -> bool:
        """Whether the ranked list goes on after this page."""
        return self.offset + len(self) < self.total

    def page_dict(self) -> dict:
        """The counts and paging of this result, as the CLI's ``--json`` and the API give them."""
        return {"offset": self.offset, "k": self.k, "total": self.total, "matching": self.matching,
                "matching_is_lower_bound": self.lower_bound, "more": self.more}


def result_page(store: IndexStore, request: SearchRequest, picked: list, units: dict, scores: dict, plan: Plan,
                reading: QueryReading, mentions: Mentions) -> SearchResult:
    """The page ``offset``, ``k`` of the ranked list ``picked`` as hits, with the whole list's counts.

    Args:
        store: The store searched.
        request: The checked request.
        picked: The ranked list: (report row, unit row, score), best first.
        units: The units of ``picked`` by row (:func:`~radsift.search.units.unit_texts`).
        scores: The ranking's scores (:func:`~radsift.search.scoring.first_pass`, with ``keep``).
        plan: The search's plan (the reading tiers give the counts and bands their classes).
        reading: How the query was read.
        mentions: Reads what a hit's unit states of the reading (used when ``options.mentions``).
    """
    opts = request.options
    page = picked[opts.offset:opts.offset + opts.k]
    counts = Counts.of(store, opts, scores, plan.reading)
    base = base_scores(opts.mode, dense=scores.get("dense"), bm25=scores.get("bm25"), alpha=scores["alpha"])
    hits = hits_of(store, request.query, page, units, opts.fields, opts.include_report,
                   reading if opts.mentions else QueryReading(), mentions, first_rank=opts.offset + 1,
                   bands=counts.bands(opts, scores, page, stating_links(store, opts.unit, opts.level == "report",
                                                                       reading, page)),
                   fused=[float(base[u]) for _, u, _ in page])
    return SearchResult(hits, reading, offset=opts.offset, k=opts.k, total=counts.total,
                        matching=counts.matching, lower_bound=counts.lower_bound)


def hits_of(store: IndexStore, query: str, picked: list, units: dict, fields: Sequence[str] | None,
            include_report: bool, reading: QueryReading, mentions: Mentions, first_rank: int = 1,
            bands: Sequence[tuple[str, float]] = (), fused: Sequence[float] = ()) -> list[Hit]:
    """A :class:`~radsift.records.Hit` for each entry of ``picked``, ranked from ``first_rank``; ``fused``
    holds each entry's score before tiers and rerank (:attr:`~radsift.records.Hit.fused`), when known."""
    reports = store.reports_by_rows([r for r, _, _ in picked]) if include_report else {}
    hits = []
    for i, (rep_row, unit_row, score) in enumerate(picked):
        band, relevance = bands[i] if bands else (None, None)
        sent = units[unit_row]
        report = reports.get(rep_row)
        sections = {}
        if report is not None:
            sections = {k: v for k, v in report.sections.items() if fields is None or k in fields}
        hits.append(Hit(
            report_id=sent.report_id, score=score, rank=first_rank + i, sentence=sent,
            highlights=highlight_spans(query, sent.text), section=sent.section, sections=sections,
            metadata=report.metadata if report is not None else {},
            reading=mentions(sent.text, reading), band=band, relevance=relevance,
            fused=float(fused[i]) if fused else None,
        ))
    return hits
