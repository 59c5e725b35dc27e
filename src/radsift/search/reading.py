"""Query reading: which findings a query names, the status it asks for each, and its side.

The reading comes from the labeler that labeled the index: lexicon findings first (the
spotter and ConText rules, :class:`~radsift.labels.Labeler`); when the query names none, the
concept linker (:mod:`radsift.search.concepts`) may find the lexicon concept it describes
("a breathing tube in the windpipe"); failing that, the open-vocabulary reader
(:mod:`radsift.labels.openvocab`) reads its finding phrases. Side words
(left, right, bilateral) are read on their own. A reading can be overridden finding by finding
(the page's chips: present / absent / uncertain / ignore).

:func:`reading_tiers` turns a reading into one ranking tier per unit (:mod:`radsift.ranking.tiers`)
from the stored labels (lexicon findings) and from the open-vocabulary reader run over the units
that contain the phrase's words (at most :data:`OPEN_CANDIDATES`, the best BM25 matches of
the phrase first). The search engine and the ``radsift bench`` negation-aware systems both
use it, so what is measured is what users get.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Callable, Iterable, Mapping, Sequence

import numpy as np

from radsift.errors import ConfigError
from radsift.labels.openvocab import query_side
from radsift.ranking import STATUS_CODES, side_tiers, stated_tiers, unit_tiers
from radsift.ranking.tiers import reading_classes
from radsift.records import QueryReading, ReadFinding

if TYPE_CHECKING:
    from radsift.search.concepts import Link

#: At most this many findings of one query are read (the rest are named in the reading's note).
MAX_FINDINGS = 10
#: Units read by the open-vocabulary reader per phrase (the best BM25 matches of the phrase).
OPEN_CANDIDATES = 2000
#: Statuses a reading can be set to (``ignore`` drops the finding from the reading).
OVERRIDE_STATUSES = ("present", "absent", "uncertain", "ignore")


def parse_override(items: Iterable[str] | Mapping[str, str] | None) -> dict[str, str]:
    """``["cardiomegaly=absent", "left:ignore"]`` or a mapping -> ``{finding: status}``.

    Raises:
        ConfigError: An item is not FINDING=STATUS or the status is not one of :data:`OVERRIDE_STATUSES`.
    """
    if not items:
        return {}
    pairs = items.items() if isinstance(items, Mapping) else []
    if not isinstance(items, Mapping):
        for item in items:
            item = str(item)
            cut = max(item.rfind("="), item.rfind(":"))
            if cut <= 0:
                raise ConfigError(f"reading: {item[:80]!r} is not FINDING=STATUS (e.g. reading=cardiomegaly=absent)")
            pairs.append((item[:cut].strip(), item[cut + 1:].strip()))
    out = {}
    for finding, status in pairs:
        status = str(status).lower()
        if status not in OVERRIDE_STATUSES:
            raise ConfigError(f"reading: status of {str(finding)[:80]!r} must be one of "
                              f"{', '.join(OVERRIDE_STATUSES)}, not {status[:40]!r}")
        out[str(finding)] = status
    return out


def read_query(query: str, labeler, *, negation: str = "aware", override: Mapping[str, str] | None = None,
               lexicon: bool = True, link: Callable[[str], "Link | None"] | None = None) -> QueryReading:
    """Read a query (see the module docstring).

    Args:
        query: The normalized query.
        labeler: The index's :class:`~radsift.labels.Labeler`.
        negation: ``aware`` or ``ignore`` (the reading is still shown, the ranking ignores it).
        override: ``{finding: status or "ignore"}``; ``side`` is the side's key.
        lexicon: Whether the index has lexicon labels (False: the open-vocabulary reader only).
        link: The query's finding text -> the concept it describes, or None (no linking).

    Raises:
        ConfigError: The override names a finding the query was not read to name.
    """
    side = query_side(query)
    found: dict[str, ReadFinding] = {}
    if lexicon:
        for m in getattr(labeler, "label_query", labeler.label)(query):  # alternatives keep their status
            found.setdefault(m.finding, ReadFinding(m.finding, m.status, "lexicon", m.cue, side))
    if not found and lexicon and link is not None:
        text, status, cue = labeler.query_finding_text(query)
        linked = link(text) if text else None
        if linked is not None:
            found[linked.concept] = ReadFinding(linked.concept, status, "linked", cue, side, linked.phrase,
                                                linked.score)
    if not found:
        for p in labeler.query_phrases(query):
            found.setdefault(p.text.lower(), ReadFinding(p.text.lower(), p.status, "open", p.cue, side))
    findings = list(found.values())
    note = ""
    if len(findings) > MAX_FINDINGS:
        note = f"read the first {MAX_FINDINGS} of {len(findings)} findings"
        findings = findings[:MAX_FINDINGS]
    if not findings and not side and any(ch.isalpha() for ch in query):
        note = "the query names no finding: plain similarity"
    if override:
        known = {f.finding for f in findings} | ({"side"} if side else set())
        unknown = [k for k in override if k not in known]
        if unknown:
            listed = ", ".join(sorted(known)) or "none"
            raise ConfigError(f"reading: the query was not read to name {unknown[0][:80]!r}; it names: {listed}")
        findings = [f if f.finding not in override else replace(f, status=override[f.finding])
                    for f in findings if override.get(f.finding) != "ignore"]
        if override.get("side") == "ignore":
            side = None
            findings = [replace(f, side=None) for f in findings]
    return QueryReading(tuple(findings), side, negation, note)


@dataclass(frozen=True)
class ReadingTiers:
    """A reading applied to every unit (:func:`reading_tiers` with ``classes=True``).

    Attributes:
        tiers: The ranking tier of every unit (None when the ranking reads nothing).
        stated: What every unit states of each finding (:func:`~radsift.ranking.tiers.stated_tiers`),
            or None when the query names no finding.
        statuses: The wanted status of each finding.
        capped: True when an open-vocabulary phrase had more candidate sentences than were read
            (:data:`OPEN_CANDIDATES`): counts from it are then lower bounds.
    """

    tiers: np.ndarray | None
    stated: np.ndarray | None = None
    statuses: tuple[str, ...] = ()
    capped: bool = False

    def classes(self, rows: np.ndarray, group_of: np.ndarray | None = None, n_groups: int | None = None):
        """What the units ``rows`` state, and what each report states judged on those units only
        (:func:`~radsift.ranking.tiers.reading_classes`); ``(None, None)`` when no finding is read."""
        if self.stated is None:
            return None, None
        return reading_classes(self.stated[rows], self.statuses, None if group_of is None else group_of[rows],
                               n_groups)


def reading_tiers(reading: QueryReading, labeler, *, n_units: int, labels: tuple[np.ndarray, np.ndarray, np.ndarray],
                  finding_codes: Mapping[str, int], sentence_texts: Callable[[Sequence[int]], Mapping[int, str]],
                  open_candidates: Callable[[Sequence[str]], np.ndarray],
                  side_flags: Callable[[], tuple[np.ndarray, np.ndarray, np.ndarray]] | None = None,
                  unit_of: np.ndarray | None = None, group_of: np.ndarray | None = None,
                  classes: bool = False):
    """The ranking tier of every unit for a reading (None when the ranking reads nothing).

    With ``classes``, a :class:`ReadingTiers` instead: the tiers and what every unit states
    of each finding, for counts and relevance bands.

    Args:
        reading: From :func:`read_query`.
        labeler: Reads open-vocabulary phrases in candidate sentences.
        n_units: Number of units ranked.
        labels: Stored sentence mentions ``(sentence row, finding code, status code)``.
        finding_codes: Lexicon finding name -> code in ``labels``.
        sentence_texts: Sentence rows -> their texts (for the open-vocabulary reader).
        open_candidates: Stems -> sentence rows containing all of them, best matches first.
        side_flags: () -> per-unit (has left, has right, has bilateral) word flags.
        unit_of: Sentence row -> unit row (section units); None when units are sentences.
        group_of: Report of each unit (report level), None at sentence level.
    """
    if not reading.active:
        return ReadingTiers(None) if classes else None
    raw = None
    capped = False
    if reading.findings:
        columns = []
        for f in reading.findings:
            if f.labeled:
                code = finding_codes.get(f.finding, -1)
                row, finding, status = labels
                sel = finding == code
                columns.append((row[sel], status[sel]))
            else:
                rows_, status_, over = _open_mentions(f.finding, labeler, sentence_texts, open_candidates)
                columns.append((rows_, status_))
                capped = capped or over
        rows = np.concatenate([c[0] for c in columns]).astype(np.int64) if columns else np.zeros(0, np.int64)
        codes = np.concatenate([np.full(len(c[0]), j) for j, c in enumerate(columns)]).astype(np.int64)
        status = np.concatenate([c[1] for c in columns]).astype(np.int64)
        if unit_of is not None:
            rows = np.asarray(unit_of)[rows]
        raw = stated_tiers(n_units, rows, codes, status, [(j, f.status) for j, f in enumerate(reading.findings)])
    sides = None
    if reading.side and side_flags is not None:
        sides = side_tiers(reading.side, *side_flags())
    statuses = [f.status for f in reading.findings]
    tiers = unit_tiers(raw, statuses, sides, group_of)
    return ReadingTiers(tiers, raw, tuple(statuses), capped) if classes else tiers


def _open_mentions(finding: str, labeler, sentence_texts, open_candidates) -> tuple[np.ndarray, np.ndarray, bool]:
    """Sentence rows and statuses of the phrase's mentions, and whether candidates were left unread."""
    phrases = labeler.query_phrases(finding)
    if not phrases:
        return np.zeros(0, np.int64), np.zeros(0, np.int64), False
    phrase = phrases[0]
    rows = np.asarray(open_candidates(phrase.stems), dtype=np.int64)
    capped = rows.size > OPEN_CANDIDATES
    rows = rows[:OPEN_CANDIDATES]
    texts = sentence_texts(rows.tolist())
    out_rows, out_status = [], []
    order = [r for r in rows.tolist() if r in texts]
    for row, mentions in zip(order, labeler.read_phrase(phrase, [texts[r] for r in order])):
        for m in mentions:
            out_rows.append(row)
            out_status.append(STATUS_CODES[m.status])
    return np.asarray(out_rows, np.int64), np.asarray(out_status, np.int64), capped
