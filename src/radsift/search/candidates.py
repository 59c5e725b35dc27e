"""The candidate engine: a search's ranking, counts and bands from its candidates and postings.

The exact engine (:mod:`.plan`, :mod:`.scoring`, :mod:`.rank`, :mod:`.counts`) computes BM25 scores,
min-max normalisation, reading tiers and counts over every unit of the corpus. This engine
(:func:`radsift.search.shortlist.candidate_page`, ranking with :mod:`radsift.ranking.pool`) computes
the same page from:

- the **BM25 matches** (:class:`radsift.ranking.pool.BM25Side`): ``hybrid`` (a quarter of its dense depth,
  :data:`~radsift.search.shortlist.HYBRID_BM25_SHARE`) and ``bm25`` read their ``depth`` best from each term's
  postings best weight first (a threshold top-k: every term's best, then the term holding the bound up reads
  on; a unit not read scores at most the sum of each term's next weight, and the k-th's ties are read whole),
  every other unit scored on demand from the postings; ``bm25`` adds the units stating the reading that share
  no term (BM25 0) only once every match is taken, and counts from bitmaps (:mod:`.bm25count`: each term's
  reports, those stating the reading, the filter's), never from its matches;
- the **dense candidates**: the ``depth`` best eligible units by the backend's cosine, from the rows (or
  duplicate groups) the backend scored (:meth:`~radsift.index.backends.base.VectorBackend.sparse_scores`:
  every other row holds one fill value, never written out);
- **reading postings** (:class:`ReadingPostings`): each finding's stated mentions, written with each
  segment (:mod:`radsift.index.readings`) and read per finding on its first query, so a query's tiers,
  counts and classes read only its findings' mentions; a single finding's tiers and tier counts are kept
  with its view. That first query merges what is already sorted (mentions by unit, units by report, side and
  location rows: :mod:`.sortedsets`) and counts tiers per value, sorting nothing again. A finding outside the lexicon (an open-vocabulary phrase, :meth:`ReadingPostings.read_open`)
  has its mentions read as the exact engine reads them (:func:`radsift.search.reading.open_mentions`: the
  same reader over the same sentences, those holding the phrase's words, best BM25 match first, at most
  :data:`~radsift.search.reading.OPEN_CANDIDATES`) on its first query, then kept for the last
  :data:`OPEN_KEPT` phrases; where candidates were left unread both engines say ``matching`` is a lower bound.
  Section units (``unit="section"``) hold their sentences' mentions (the exact engine's ``unit_of``), their
  own BM25 postings, sides and locations; a section longer than one window scores by its best window.

The ranking is the exact engine's order ``(tier, score, row)`` over the pool, with every global
quantity the exact engine uses (the min-max ends of both sides, the strict tiers' step, the best
eligible score the bands read) computed exactly: the ends from the backend's scored rows and BM25's
best match, the step and the best score from the pool when its best beats what a unit left out could
reach (else from every match, as before). A unit outside the pool has a cosine no higher than the
``depth``-th eligible one and a BM25 score no higher than the ``depth``-th match, so its fused score is
at most a bound; its tier is at least the lowest tier of the units left out (counted per tier, exact for
the units that state something, hold a side word or name a location; every other unit at its report's tier,
except in a report whose unit in the pool already beats that tier: no unit of it that states nothing can
stand for it). The units stating the whole reading join the ``hybrid`` and ``dense`` pools at once when they
are no more than its depth ("no X" where X is rarely denied: the page past them needs no pool of every unit). When the
last entry of the page scores strictly above what any unit left out could reach, the page is the exact
engine's; otherwise ``depth`` is widened (x4) until the pool holds every eligible unit. So the two
engines differ only where float32 rounding makes the bound's ``>`` differ from the exact order (never
seen: ``benchmarks/bench_candidates.py`` compares pages, scores, bands and counts on every query it
runs). Counts come from the postings and the filter's rows (counted once per filter), never from the pool.

A concept linked beside the literal reading: :mod:`.beside` (the same bound over both readings' tiers). The normal
key of a query asking for a finding (:mod:`.normals`): its tiers times the key's scale plus the key, bounded by the
reading's bound times the scale (a unit left out may say more than all is normal).
Calibrated tier boosts (``gap``: a tier costs ``gap`` times the spread, as :func:`radsift.ranking.apply_tiers`)
keep the bound (it holds for any step), but a lower tier no longer outranks every score: no report is covered.

Pseudo-relevance feedback (``prf``, :func:`radsift.search.shortlist._feedback`): the first pass's ``FB_DOCS`` best
units come from this engine's ranking of units (the exact engine's ``rank(mode, FB_DOCS)``: units at either level, so no
report is covered; ``bm25`` keeps no unit sharing no term, as there); the second pass ranks as above with Rocchio's
moved vector (scored without the filter's mask, as there) and RM3's weighted BM25 query
(:class:`~radsift.ranking.pool.BM25Side` with weights: weight x BM25 per term, float32 in the weights' order as
``weighted_bm25_scores``; a unit not read scores at most the weighted sum of each term's next impact): bit-equal.

Routed to the exact engine (:func:`exact_reason`): ``hybrid-rrf`` (a rank fusion needs every
unit's rank: what it would take, ``docs/measurements.md``), a first stage, a link beside no literal
reading (only links beside: never read so), a backend that pushes filters down, and ``RADSIFT_ENGINE=exact``. What stays linear in the corpus: the ``numpy`` backend's
matrix-vector product (and the scans of its array), section units when some section is longer than one window
(every later window scored, as the exact engine, and the backend's scores made a full array), a metadata filter's mask (one SQLite query and one
pass per new filter; the HNSW backend's masked search), an open-vocabulary phrase's first query (the
sentences holding its words: an intersection of their postings; then the reader over at most 2,000 of them),
a query with a side word (the units holding one), a BM25 query (RM3's, often) whose terms' postings outnumber the units (every match scored),
several findings or a link beside the literal reading (their mentions, on the reading's first query; several findings' ``bm25`` counts, per
query), a ``bm25`` page that reaches units sharing no term (every match read) or, at report level, a
``bm25`` search with a section ``target`` (its counts list the matches), a term's bitmaps on its first
query, popcounts over ``n / 8`` bytes, BM25's top-k where copies tie with the k-th (a corpus repeating its
sentences ten times reads ten times more of the tie), and a page whose reading tier lies deep in the BM25
order (the pool widens until it holds that tier's best).
"""

from __future__ import annotations

import os
import threading
import weakref
from collections.abc import Sequence
from functools import cached_property

import numpy as np

from radsift.index.reader import IndexStore
from radsift.index.readings import finding_mentions
from radsift.ranking import NEEDS_BM25, NEEDS_DENSE
from radsift.ranking.places import location_slots, location_tiers, placed_mask, placed_rows, unplaced_key, where_tiers
from radsift.ranking.pool import member
from radsift.ranking.tiers import (
    NO_READING,
    OPPOSITE,
    OPPOSITE_TIER,
    PARTIAL,
    SIDE_SLOTS,
    STATES,
    STATUS_CODES,
    TIER_OF,
    UNSTATED,
    combine,
    contradicted,
    own_reading,
    side_tiers,
)
from radsift.records import QueryReading
from radsift.search.bitmaps import TermBitmaps, bits_of
from radsift.search.finding_views import FindingView
from radsift.search.plan import open_candidates, sentence_texts, unit_locations
from radsift.search.reading import open_mentions
from radsift.search.sortedsets import best_by, lookup, union, unique, value_counts
from radsift.search.units import section_of_sentence
from radsift.text import changes, locations

#: Environment variable choosing the engine (``candidates`` or ``exact``), for benchmarks and A/B runs.
ENV = "RADSIFT_ENGINE"
ENGINES = ("candidates", "exact")
DEFAULT_ENGINE = "candidates"


def engine_name() -> str:
    """The engine ``RADSIFT_ENGINE`` names (default :data:`DEFAULT_ENGINE`)."""
    name = os.environ.get(ENV, "").strip().lower() or DEFAULT_ENGINE
    return name if name in ENGINES else DEFAULT_ENGINE


def exact_reason(request, reading: QueryReading, gap, backend=None, store: IndexStore | None = None) -> str | None:
    """Why this search goes to the exact engine (None: the candidate engine answers it). ``gap`` (calibrated tier
    boosts) no longer routes: both engines answer it."""
    opts = request.options
    if opts.mode not in ("hybrid", "dense", "bm25"):
        return f"mode {opts.mode}"
    if opts.first_stage is not None:
        return "first stage"
    if reading.active and reading.findings and all(f.beside for f in reading.findings):
        return "a link beside no literal reading"
    if backend is not None and getattr(backend, "pushdown", False):
        return "filter pushdown backend"
    if store is not None and not store.units(opts.unit).report_row.shape[0]:
        return "no units"
    if store is not None and NEEDS_BM25[opts.mode] and not hasattr(store.bm25(opts.unit), "postings"):
        return "BM25 without postings"
    return None


#: Readings of several findings, or with a side word or a location, whose derived tiers are kept per store.
READINGS_KEPT = 64
#: Open-vocabulary phrases whose mentions (and views) are kept per store.
OPEN_KEPT = 256


#: What :func:`.sortedsets.lookup` gives a unit outside the special ones (no tier is negative).
NOT_SPECIAL = -1


def _key(code):
    """A finding's key in the postings: its lexicon code (int), ``("any", codes)`` or ``("open", phrase)``."""
    return code if isinstance(code, tuple) else int(code)


def _code(codes: dict, f, gone: bool = False) -> int | tuple:
    """A lexicon finding's key: its code, or with alternatives (``any_of``) ``("any", its code and theirs)``; a
    denied one asked gone (``gone``) ``("gone", ...)``: its alternatives count only where a unit says them gone, as
    :func:`radsift.search.reading.reading_tiers` reads them."""
    own = codes.get(f.finding, -1)
    if not f.any_of:
        return own
    return ("gone" if gone and f.status == "absent" else "any", (own, *(codes.get(a, -1) for a in f.any_of)))


# -- reading postings -----------------------------------------------------------------------------------
class ReadingPostings:
    """A store's reading postings (each finding's stated mentions, :mod:`radsift.index.readings`: written with
    each segment, read per finding on its first query) and its units' reports (kept once per store)."""

    def __init__(self, store: IndexStore, unit: str) -> None:
        self.store, self.unit = store, unit
        report_row = np.asarray(store.units(unit).report_row, dtype=np.int64)
        self.report_row = report_row
        self.n_units = int(report_row.shape[0])
        self._views: dict = {}
        self._mentions: dict = {}
        self._eligible: dict = {}
        self._readings: dict = {}
        self._open: dict = {}  # open-vocabulary phrase -> (rows, status codes, capped), least recently used first
        self._labeler = None
        self._lock = threading.Lock()
        self.n_reports = int(report_row.max(initial=-1)) + 1
        #: Each report's units (whether a report holds a unit that states nothing: :func:`.beside.max_tier`).
        self.report_units = np.bincount(report_row, minlength=self.n_reports)
        self.reports_with_units = int(np.count_nonzero(self.report_units))
        #: Each BM25 term's units and reports as bitmaps (a ``bm25`` search's counts).
        self.terms = TermBitmaps(report_row, self.n_reports)

    def view(self, code: int, wanted: str) -> FindingView:
        """The units and reports that state something of finding ``code``, each with its best tier for a query
        wanting ``wanted`` (built on the first query that asks, then kept)."""
        key = (_key(code), wanted)
        with self._lock:
            hit = self._views.get(key)
        if hit is None:
            rows, status = self.mentions(code)
            names = {v: k for k, v in STATUS_CODES.items()}
            table = np.array([TIER_OF[wanted][names[c]] for c in (-1, 0, 1)], dtype=np.int8)
            urows, best = best_by(rows, table[status + 1])
            reports, report_best = best_by(self.report_row[rows], table[status + 1])
            # a denial another unit of its report contradicts is no denial of the report (ranking.tiers)
            # (its units' own best readings, as ranking.tiers.stated_tiers takes them)
            opposite = self.report_row[urows][best == OPPOSITE_TIER] if wanted == "absent" else None
            report_best = contradicted(reports, report_best, opposite if opposite is not None else reports[:0], wanted)
            hit = FindingView(urows, best, reports, report_best, row_reports=self.report_row[urows],
                              opposite=opposite)
            with self._lock:
                self._views[key] = hit
        return hit

    def eligible(self, mask: np.ndarray) -> tuple[int, int]:
        """(units, reports with a unit) of a filter's mask: counted once per mask (a filter's masks are kept,
        read-only: :func:`radsift.search.plan.eligible_mask`), so a repeated filter costs no pass."""
        with self._lock:
            hit = self._eligible.get(id(mask))
        if hit is None or hit[0]() is not mask:
            rows = np.flatnonzero(mask)
            hit = (weakref.ref(mask), int(rows.size), int(unique(self.report_row[rows]).size), {})
            with self._lock:
                self._eligible = {k: v for k, v in self._eligible.items() if v[0]() is not None}
                self._eligible[id(mask)] = hit
        return hit[1], hit[2]

    def mask_bits(self, mask: np.ndarray, by_report: bool) -> np.ndarray:
        """The packed bitmap (:mod:`.bitmaps`) of a filter's units, or of the reports holding one (made once per
        mask, as :meth:`eligible`'s counts)."""
        self.eligible(mask)
        with self._lock:
            kept = self._eligible[id(mask)][3]
            hit = kept.get(by_report)
        if hit is None:
            hit = bits_of(self.terms.keys(np.flatnonzero(mask), by_report), self.terms.size(by_report))
            with self._lock:
                kept[by_report] = hit
        return hit

    def memo(self, reading_key) -> dict:
        """What queries of one reading (findings and statuses, side word, regions) derive from the postings
        (:class:`QueryTiers`), kept for the last :data:`READINGS_KEPT` readings."""
        with self._lock:
            hit = self._readings.pop(reading_key, None)
            hit = {} if hit is None else hit
            self._readings[reading_key] = hit
            while len(self._readings) > READINGS_KEPT:
                self._readings.pop(next(iter(self._readings)))
        return hit

    @classmethod
    def of(cls, store: IndexStore, unit: str) -> ReadingPostings:
        return store.cached(("reading_postings", unit), lambda: cls(store, unit))

    def mentions(self, code) -> tuple[np.ndarray, np.ndarray]:
        """(unit rows, status codes) of the stored mentions of finding ``code`` (kept once read), or of an
        open-vocabulary phrase (``code`` a key of :meth:`read_open`)."""
        key = _key(code)
        if isinstance(key, tuple) and key[0] == "gone":  # the finding's own mentions, its alternatives' said gone
            rows, status = self.mentions(("any", key[1][1:]))
            keep = self.gone_units[rows]
            own = self.mentions(key[1][0])
            return np.concatenate([own[0], rows[keep]]), np.concatenate([own[1], status[keep]])
        if isinstance(key, tuple):  # any of several findings: their mentions together, each unit's best read by view
            return tuple(map(np.concatenate, zip(*(self.mentions(c) for c in key[1])))) if key[0] == "any" \
                else self._read_open(key[1])[:2]
        with self._lock:
            hit = self._mentions.get(key)
        if hit is None:
            hit = finding_mentions(self.store, key) if key >= 0 else (np.zeros(0, np.int64), np.zeros(0, np.int64))
            hit = self._units(*hit)
            with self._lock:
                self._mentions[key] = hit
        return hit

    @cached_property
    def gone_units(self) -> np.ndarray:
        """Per unit: it says a finding gone (:data:`radsift.text.changes.GONE` among its words' regions)."""
        return (unit_locations(self.store, self.unit)[0] & changes.GONE) != 0

    @cached_property
    def unit_of(self) -> np.ndarray | None:
        """The unit row of every sentence row (None: units are sentences), as the exact engine's ``unit_of``
        (first asked outside the store's cache lock: it is not reentrant)."""
        store = self.store
        return None if self.unit == "sentence" else store.cached(("section_of_sentence",),
                                                                  lambda: section_of_sentence(store))

    def _units(self, rows: np.ndarray, status: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Mentions by sentence row -> by unit row (a section holds its sentences' mentions)."""
        return (rows, status) if self.unit_of is None else (np.asarray(self.unit_of)[rows].astype(np.int64), status)

    def read_open(self, finding: str, labeler) -> tuple[tuple, bool]:
        """(key, capped) of an open-vocabulary phrase: its mentions read as the exact engine reads them
        (:func:`radsift.search.reading.open_mentions`: the sentences holding its words, from their postings,
        at most :data:`~radsift.search.reading.OPEN_CANDIDATES` of them read) on its first query, then kept for
        the last :data:`OPEN_KEPT` phrases; ``capped``: candidates were left unread (``matching`` a lower bound)."""
        self._labeler = labeler
        return ("open", finding), self._read_open(finding)[2]

    def _read_open(self, finding: str) -> tuple[np.ndarray, np.ndarray, bool]:
        with self._lock:
            hit = self._open.pop(finding, None)
            if hit is not None:
                self._open[finding] = hit
        if hit is None:
            rows, status, capped = open_mentions(finding, self._labeler, sentence_texts(self.store),
                                                 open_candidates(self.store))
            hit = (*self._units(rows.astype(np.int64), status.astype(np.int64)), capped)
            with self._lock:
                self._open[finding] = hit
                while len(self._open) > OPEN_KEPT:
                    gone = next(iter(self._open))
                    self._open.pop(gone)
                    for wanted in TIER_OF:  # its views go with it
                        self._views.pop((("open", gone), wanted), None)
        return hit


class QueryTiers:
    """The exact engine's tiers (:func:`radsift.ranking.unit_tiers`) for any set of units, read from postings.

    Attributes:
        special: Sorted rows that state something of the query's findings, hold a side word or name a
            location (their tiers, :attr:`special_tiers`, are read from the postings); every other unit's
            tier is the default one (at report level, on top of its report's tier).
        default: The tier of a unit with no mention, no side word and no location in a report with no mention.
        slots: Side and location keys within one reading tier (:func:`radsift.ranking.tiers.stating`).
    """

    def __init__(self, store: IndexStore, reading: QueryReading, post: ReadingPostings, codes: dict,
                 by_report: bool, sides, places=None, labeler=None) -> None:
        self.post, self.statuses = post, [f.status for f in reading.findings]
        gone = places is not None and reading.change == "gone"
        keys = [(_code(codes, f, gone), False) if f.labeled else post.read_open(f.finding, labeler)
                for f in reading.findings]
        #: An open-vocabulary phrase had more candidate sentences than were read: ``matching`` is a lower bound.
        self.capped = any(capped for _, capped in keys)
        self.side, self._findings = reading.side, [(k, f.status) for (k, _), f in zip(keys, reading.findings)]
        self.chamber = reading.chamber  # the side is a heart chamber's: other flags, kept apart
        self.views = [post.view(code, status) for code, status in self._findings]
        self._mentions: list | None = None
        self.sides = sides  # (left, right, bilateral) flags of every unit, or None
        side_rows = np.zeros(0, dtype=np.int64)
        if self.side and sides is not None:
            side_rows = store.cached(("side_rows", post.unit, locations.enabled(), self.chamber),
                                     lambda: np.flatnonzero(sides[0] | sides[1] | sides[2]))
        self.regions = reading.regions if places is not None else 0
        self.places = places  # regions named by every unit, or None
        # One finding, no side word, no location: the special units' tiers depend on the finding's view alone
        # (kept there); else on the findings, the side word and the regions (kept per reading by the postings).
        single = len(self.views) == 1 and not side_rows.size and not self.regions
        self._memo = self.views[0].memo if single else post.memo(
            (tuple(self._findings), self.side if sides is not None else None, self.chamber, self.regions,
             locations.enabled()))
        if "special" not in self._memo:
            mentioned = (self.views[0].rows if len(self.views) == 1 else
                         union([v.rows for v in self.views] + [np.zeros(0, np.int64)]))
            special = union([mentioned, side_rows]) if side_rows.size else mentioned
            if self.regions:  # the units naming a place, or saying a change or a degree asked
                key = ("location_rows", post.unit, placed_mask(self.regions))
                special = union([special, store.cached(key, lambda: placed_rows(places, self.regions))])
            self._memo["special"] = special
        self.special = self._memo["special"]
        self.slots = SIDE_SLOTS * (location_slots(self.regions) if self.regions else 1)
        no_reading = np.array([[NO_READING[s] for s in self.statuses]], dtype=np.int8)
        self.rep_default = int(combine(no_reading, self.statuses)[0]) if self.statuses else 0
        side_default = 1 if self.side and sides is not None else 0
        self.default_unit = self.rep_default * self.slots + side_default + unplaced_key(self.regions)
        self.by_report = by_report and bool(self.statuses) and post.n_units > 0
        self._key = (self.by_report, self.default_unit)
        if ("tiers",) + self._key not in self._memo:
            self._memo[("tiers",) + self._key] = self._special_tiers()
        self.unit_max, self.rep_rows, self.rep_tier, self.special_tiers, self.default = \
            self._memo[("tiers",) + self._key]

    def _special_tiers(self) -> tuple:
        """(unit_max, report rows, their tiers, the special units' tiers, the default tier)."""
        unit_t = self._unit_tiers(self.special)
        # the exact engine's highest unit tier over every unit: a unit outside the special ones holds the default
        self.unit_max = int(max(unit_t.max(initial=-1), self.default_unit if self.special.size < self.post.n_units
                                else -1))
        self.rep_rows, self.rep_tier, default = np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64), \
            self.default_unit
        if self.by_report:
            self.rep_rows = (self.views[0].reports if len(self.views) == 1 else
                             union([v.reports for v in self.views]))
            self.rep_tier = self._report_tiers(self.rep_rows)
            default = self.rep_default * (self.unit_max + 1) + self.default_unit
        return self.unit_max, self.rep_rows, self.rep_tier, self._with_report(self.special, unit_t), default

    @property
    def mentions(self) -> list[tuple[np.ndarray, np.ndarray]]:
        """(unit rows, tier) of each finding's mentions (for a filter's eligible units; built when first asked)."""
        if self._mentions is None:
            names = {v: k for k, v in STATUS_CODES.items()}
            self._mentions = []
            for code, status in self._findings:
                rows, codes = self.post.mentions(code)
                table = np.array([TIER_OF[status][names[c]] for c in (-1, 0, 1)], dtype=np.int8)
                self._mentions.append((rows, table[codes + 1]))
        return self._mentions

    def _with_report(self, rows: np.ndarray, unit_t: np.ndarray) -> np.ndarray:
        if not self.by_report:
            return unit_t
        return self._report_tier(self.post.report_row[rows]) * (self.unit_max + 1) + unit_t

    def _report_tier(self, reps: np.ndarray) -> np.ndarray:
        """The report tier of each of ``reps`` (the default one where no unit of it states anything)."""
        return lookup(self.rep_rows, self.rep_tier, reps, self.rep_default, self.post.n_reports, np.int64)

    def tiers(self, rows: np.ndarray) -> np.ndarray:
        """The tier of each unit of ``rows`` (any order), as the exact engine gives it."""
        rows = np.asarray(rows, dtype=np.int64)
        got = lookup(self.special, self.special_tiers, rows, NOT_SPECIAL, self.post.n_units, np.int64)
        out = self._with_report(rows, np.full(rows.size, self.default_unit, dtype=np.int64))
        found = got != NOT_SPECIAL
        out[found] = got[found]
        return out

    def lowest_outside(self, inside: Sequence[np.ndarray], eligible, strict: bool = True,
                       known: np.ndarray | None = None) -> int:
        """A lower bound of the tier of every eligible unit outside ``inside`` (disjoint sorted row arrays; exact
        on the special units; every other unit counts at its report's tier, whether or not one is left).
        ``eligible`` None: every unit (the special units counted by tier once, then only ``inside`` is read).
        ``strict`` False (calibrated tier boosts: a lower tier no longer outranks any score): no report is covered.
        ``known``: the tiers of ``inside``'s rows, concatenated (already computed by the caller)."""
        low = [self.default]
        if eligible is None:
            if ("counts",) + self._key not in self._memo:
                self._memo[("counts",) + self._key] = value_counts(self.special_tiers)
            uniq, inverse, counts = self._memo[("counts",) + self._key]
            taken = np.zeros(uniq.size, dtype=np.int64)
            for rows in inside:  # one search of the pool's rows in the special ones
                if rows.size and self.special.size:
                    pos = np.minimum(np.searchsorted(self.special, rows), self.special.size - 1)
                    taken += np.bincount(inverse[pos[self.special[pos] == rows]], minlength=uniq.size)
            left = uniq[counts > taken]
            low += [int(left[0])] if left.size else []
        else:
            out = eligible(self.special).copy()
            for rows in inside:  # the pool's rows searched in the special ones (the fewer)
                if rows.size and self.special.size:
                    pos = np.minimum(np.searchsorted(self.special, rows), self.special.size - 1)
                    out[pos[self.special[pos] == rows]] = False
            if out.any():
                low.append(int(self.special_tiers[out].min()))
        if self.by_report and self.rep_rows.size:
            low.append(self._uncovered_low(inside, known) if strict else self._uncovered_low(()))
        return min(low)

    def _uncovered_low(self, inside: Sequence[np.ndarray], known: np.ndarray | None = None) -> int:
        """The lowest :meth:`plain` tier of the reports with a mention whose plain units left out could still
        stand for them: a report with a unit inside whose tier beats its plain tier is covered (every plain unit
        of it left out ranks below that unit). ``known``: the tiers of ``inside``'s rows; the reports' plain tiers
        are counted per tier once, so a call reads the pool only."""
        rows = np.concatenate([np.asarray(r, dtype=np.int64) for r in inside] + [np.zeros(0, np.int64)])
        reps = self.post.report_row[rows]
        plain = self.plain(reps)
        covered = np.unique(reps[(self.tiers(rows) if known is None else known) < plain])
        covered = covered[member(self.rep_rows, covered)]
        key = ("plain",) + self._key
        if key not in self._memo:
            self._memo[key] = value_counts(self.plain(self.rep_rows))[::2]
        values, counts = self._memo[key]
        taken = np.bincount(np.searchsorted(values, self.plain(covered)), minlength=values.size)
        left = values[counts > taken]
        return int(left[0]) if left.size else self.default  # none: the default bounds

    def plain(self, reports: np.ndarray) -> np.ndarray:
        """The tier of a plain unit (stating nothing, no side word, no location) of each of ``reports``."""
        reports = np.asarray(reports, dtype=np.int64)
        if not self.by_report:
            return np.full(reports.size, self.default_unit, dtype=np.int64)
        return self._report_tier(reports) * (self.unit_max + 1) + self.default_unit

    def states(self, rows: np.ndarray) -> np.ndarray:
        """Whether each unit of ``rows`` states the query's whole reading (as :meth:`keep_rows`)."""
        return self.tiers(rows) < self.slots

    def stated(self, rows: np.ndarray, eligible=None) -> np.ndarray:
        """What units ``rows`` (sorted) state of each finding (``(len(rows), F)``, :data:`UNSTATED` where nothing)."""
        if eligible is None:
            return np.stack([lookup(v.rows, v.best, rows, UNSTATED, self.post.n_units) for v in self.views], axis=1) \
                if self.views else np.full((rows.size, 0), UNSTATED, dtype=np.int8)
        out = np.full((rows.size, len(self.mentions)), UNSTATED, dtype=np.int8)
        for j, (mrows, mtier) in enumerate(self.mentions):
            pos = np.searchsorted(rows, mrows)
            pos = np.minimum(pos, max(rows.size - 1, 0))
            hit = (rows[pos] == mrows) if rows.size else np.zeros(mrows.size, dtype=bool)
            if eligible is not None:
                hit &= eligible(mrows)
            col = out[:, j].copy()
            np.minimum.at(col, pos[hit], mtier[hit])
            out[:, j] = col
        return out

    def _resolve(self, stated: np.ndarray) -> np.ndarray:
        out = stated.copy()
        for j, status in enumerate(self.statuses):
            col = out[:, j]
            col[col == UNSTATED] = NO_READING[status]
        return out

    def _unit_tiers(self, rows: np.ndarray) -> np.ndarray:
        reading = (combine(self._resolve(own_reading(self.stated(rows), self.statuses, self.by_report)), self.statuses)
                   if self.statuses else np.zeros(rows.size, dtype=np.int64))
        sides = places = None
        if self.side and self.sides is not None:
            sides = side_tiers(self.side, self.sides[0][rows], self.sides[1][rows], self.sides[2][rows])
        if self.regions:
            places = location_tiers(self.regions, self.places[rows])
        where = where_tiers(places, sides, self.regions)
        return reading * self.slots + (0 if where is None else where)

    def report_best(self, reports: np.ndarray, eligible=None) -> np.ndarray:
        """Per finding, the best tier any (eligible) unit of ``reports`` (sorted) states (UNSTATED: none)."""
        if eligible is None:
            return np.stack([lookup(v.reports, v.report_best, reports, UNSTATED, self.post.n_reports)
                             for v in self.views], axis=1)
        out = np.full((reports.size, len(self.mentions)), UNSTATED, dtype=np.int8)
        for j, (mrows, mtier) in enumerate(self.mentions):
            keep = eligible(mrows)
            mrep = self.post.report_row[mrows[keep]]
            pos = np.minimum(np.searchsorted(reports, mrep), max(reports.size - 1, 0))
            hit = (reports[pos] == mrep) if reports.size else np.zeros(mrep.size, dtype=bool)
            col = out[:, j].copy()
            np.minimum.at(col, pos[hit], mtier[keep][hit])
            out[:, j] = self._contradicted(j, reports, col)
        return out

    def keep_rows(self) -> np.ndarray:
        """The units that state the query's whole reading (sorted): what ``bm25`` ranks even when they share no
        term with the query (the exact engine's ``keep``; kept with a single finding's view)."""
        key = ("keep",) + self._key
        if key not in self._memo:
            self._memo[key] = self.special[self.special_tiers < self.slots]
        return self._memo[key]

    def page_report_best(self, reports: np.ndarray, eligible) -> np.ndarray:
        """:meth:`report_best` of a few sorted ``reports`` over the units ``eligible`` accepts (a function of
        rows), reading only those reports' units from the findings' views."""
        out = np.full((reports.size, len(self.views)), UNSTATED, dtype=np.int8)
        for j, view in enumerate(self.views):
            at, rows, best = view.in_reports(reports)
            ok = eligible(rows)
            col = out[:, j].copy()
            np.minimum.at(col, at[ok], best[ok])
            out[:, j] = self._contradicted(j, reports, col)
        return out

    def _contradicted(self, j: int, reports: np.ndarray, best: np.ndarray) -> np.ndarray:
        """``best`` of finding ``j`` for ``reports`` with a denial any unit of its report contradicts (counted or
        not: :func:`radsift.ranking.tiers.report_readings`) moved to the uncertain tier."""
        opposite = self.views[j].opposite
        return best if opposite is None else contradicted(reports, best, opposite, self.statuses[j])

    def not_contradicted(self, j: int, reports: np.ndarray) -> np.ndarray:
        """The sorted ``reports`` stating finding ``j`` as wanted without any unit contradicting the denial."""
        opposite = self.views[j].opposite
        return reports if opposite is None or not opposite.size else reports[~np.isin(reports, opposite)]

    def _report_tiers(self, reports: np.ndarray) -> np.ndarray:
        return combine(self._resolve(self.report_best(reports)), self.statuses)

    def classes(self, best: np.ndarray) -> np.ndarray:
        """:func:`radsift.ranking.tiers.reading_classes` of per-finding best tiers."""
        per = self._resolve(best)
        out = np.full(per.shape[0], PARTIAL, dtype=np.int8)
        out[(per == OPPOSITE_TIER).any(axis=1)] = OPPOSITE
        out[(per == 0).all(axis=1)] = STATES
        return out


__all__ = [
    "DEFAULT_ENGINE",
    "ENGINES",
    "ENV",
    "NEEDS_DENSE",
    "QueryTiers",
    "ReadingPostings",
    "engine_name",
    "exact_reason",
]
