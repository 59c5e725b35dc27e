"""Query reading: which findings a query names, the status it asks for each, and its side.

The reading comes from the labeler that labeled the index: lexicon findings first (the
spotter and ConText rules, :class:`~radsift.labels.Labeler`); when the query names none, the
open-vocabulary reader (:mod:`radsift.labels.openvocab`) reads its finding phrases, and the
concept linker (:mod:`radsift.search.concepts`) may find the lexicon concept the query describes
("a breathing tube in the windpipe"). The user's words stay (``read_as``, :data:`READ_AS`): when
the query's phrases occur in the index, its literal reading is kept and the link is added
beside it (``also``: the literal reading ranks first, the link orders units within it); only a
query with a phrase the index never holds is read as the concept it links to. Side words
(left, right, bilateral) and locations (lobes, lingula, apices, bases: :mod:`radsift.text.locations`;
the lung as a finding's place, against the mediastinum and hila: :mod:`radsift.text.compartments`; a body
place outside the lung, "thoracic spine", "subclavian": :mod:`radsift.text.bodyplaces`)
are read on their own; a one-sided location ("RLL", "lingular") gives the query its side. A reading can be overridden finding by finding
(the page's chips: present / absent / uncertain / ignore).

:func:`reading_tiers` turns a reading into one ranking tier per unit (:mod:`radsift.ranking.tiers`)
from the stored labels (lexicon findings) and from the open-vocabulary reader run over the units
that contain the phrase's words (at most :data:`OPEN_CANDIDATES`, the best BM25 matches of
the phrase first). The search engine and the ``radsift bench`` negation-aware systems both
use it, so what is measured is what users get.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

import numpy as np

from radsift.errors import ConfigError
from radsift.labels.openvocab import query_side
from radsift.ranking import STATUS_CODES, side_tiers, stated_tiers, unit_tiers
from radsift.ranking.places import location_slots, location_tiers, where_tiers
from radsift.ranking.tiers import SIDE_SLOTS, asks_finding, normal_keys, opposite_reports, reading_classes, with_normal
from radsift.records import QueryReading, ReadFinding
from radsift.search.linkwords import normal_statement
from radsift.search import clauses
from radsift.search.lay import LAY_SIZES, lay_normals, link_words
from radsift.search.partlinks import (MAX_FINDINGS, REMOVAL, add_beside, add_reading, link_finding, read_parts,
                                      read_two_things, words_stay)
from radsift.search.symptoms import symptom_reading
from radsift.text import bodyplaces, changes, degrees, locations, patterns
from radsift.text.where import query_location
from radsift.text.normality import NORMAL, asks_alone, sentence_kind
from radsift.text.sides import names_chamber_side

if TYPE_CHECKING:
    from radsift.search.concepts import Link

#: Units read by the open-vocabulary reader per phrase (the best BM25 matches of the phrase).
OPEN_CANDIDATES = 2000
#: Statuses a reading can be set to (``ignore`` drops the finding from the reading).
OVERRIDE_STATUSES = ("present", "absent", "uncertain", "ignore")
#: Prefixes a query may write with a hyphen ("over-inflated"): joined to their word before the query is read,
#: as reports and the lexicon write them ("overinflated"), so the prefix is neither a phrase of its own nor lost.
PREFIXES = re.compile(r"\b(hyper|hypo|over|under|non|post|pre|sub|peri|intra|inter|retro)-(?=[^\W\d_]{3,})",
                      re.IGNORECASE)
#: A head noun shared by two modifiers joined by "and" ("endotracheal and nasogastric tubes"): written out for each
#: ("endotracheal tube and nasogastric tube") when the first modifier with the head names a lexicon phrase.
#: The second modifier is no article or possessive: "fluid around the lungs and a pacemaker" shares no head.
SHARED_HEAD = re.compile(r"\b([a-z][\w-]*)\s+and\s+(?!(?:a|an|the|some|my|his|her|their|its|any)\b)([a-z][\w-]*)\s+"
                         r"([a-z]+?)(s?)\b(?=\W*$|\s)", re.IGNORECASE)
#: A question mark in a query: the user asks whether the finding is there, which is no hedge (in a report "Pneumonia?"
#: and "cough, ? pneumonia" are hypothetical: :mod:`radsift.labels` rules); read once the clinical question is taken.
QUESTION = re.compile(r"\s*\?+\s*")
#: How a query that links to a concept is read: ``both`` (the literal reading, with the link beside it
#: when the query's phrase occurs in the index; the link alone when it occurs nowhere), ``literal`` (never
#: linked) or ``linked`` (the link in the literal reading's place, whatever the index holds).
READ_AS = ("both", "literal", "linked")


def shared_heads(query: str, labeler) -> str:
    """``query`` with a head noun two modifiers share written out for each (:data:`SHARED_HEAD`): "endotracheal and
    nasogastric tubes" -> "endotracheal tube and nasogastric tube", when the first modifier with the head is a finding
    the labeler reads and the modifier alone is none ("right and left effusions" stays: sides are read apart)."""
    label = getattr(labeler, "label_query", None)
    if label is None:
        return query

    def one(m: re.Match) -> str:
        a, b, head = m.group(1), m.group(2), m.group(3)
        if label(a) or not label(f"{a} {head}"):
            return m.group(0)
        return f"{a} {head} and {b} {head}"

    return SHARED_HEAD.sub(one, query)


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
               lexicon: bool = True, link: Callable[[str], "Link | None"] | None = None, read_as: str = "both",
               literal: Callable[[Sequence[str]], bool] | None = None) -> QueryReading:
    """Read a query (see the module docstring). A clinical request ("asthmatic child, ? thick airway walls") is
    read by its question where the question names a finding the labels know (:func:`_question_asked`).

    Args:
        query: The normalized query.
        labeler: The index's :class:`~radsift.labels.Labeler`.
        negation: ``aware`` or ``ignore`` (the reading is still shown, the ranking ignores it).
        override: ``{finding: status or "ignore"}``; ``side`` is the side's key, ``location`` the location's.
        lexicon: Whether the index has lexicon labels (False: the open-vocabulary reader only).
        link: The query's finding text -> the concept it describes, or None (no linking).
        read_as: One of :data:`READ_AS`.
        literal: A phrase's stems -> whether some unit of the index holds them all (None: the phrase
            counts as absent from the index, so ``both`` reads as the link alone, as before).

    Raises:
        ConfigError: The override names a finding the query was not read to name.
    """
    alone = asks_alone(query)  # before the lay words become the lexicon's ("otherwise normal")
    query, context = _question_asked(query, labeler, lexicon=lexicon, link=link, read_as=read_as, literal=literal)
    query = " ".join(QUESTION.sub(" ", PREFIXES.sub(r"\1", query)).split()) or query
    query = shared_heads(lay_normals(query), labeler)
    # what the concept linker compares with descriptions, in the user's own words ("too big"), less the film
    words = link_words(query)
    query = LAY_SIZES.sub("large", query)
    side, own_side, location, regions, implied = _query_where(query, context)
    found: dict[str, ReadFinding] = {}
    if lexicon:
        _read_lexicon(found, query, labeler, read_as, literal, side)
    _read_beyond_lexicon(found, query, words, labeler, lexicon=lexicon, link=link, read_as=read_as, literal=literal,
                         side=side)
    findings = list(found.values())
    if regions & bodyplaces.BODY and not any(f.labeled for f in findings):
        # a body place ranks units beside a lexicon device or finding; beside an open phrase alone ("the long iv
        # line they put in my neck") every unit naming the neck would lead whatever it states
        location, regions, _ = query_location(query, body=False)
    findings, change_bit = _read_change(query, findings)
    # a degree of a lexicon finding read ("small pneumothorax"), in the user's words ("big" is no degree: "big heart");
    # beside an open phrase alone the words may size anything ("i only breathed in a little")
    degree_bit = degrees.query_degree(words)[1] if any(f.labeled for f in findings) and locations.enabled() else 0
    # a pattern of its look ("streaky", "platelike", "subsegmental"), beside a lexicon finding asked present, as a
    # degree is; not beside a denial alone ("no interstitial abnormality": the units saying "interstitial" that lead
    # its unplaced tier state something interstitial)
    pattern_bits = patterns.query_pattern(query)[1] if any(f.labeled and f.status != "absent" for f in findings) \
        and locations.enabled() else 0
    if read_as != "literal":  # the lexicon's alternatives: links it makes itself (no encoder needed)
        findings = _with_any_of(findings, getattr(labeler, "lexicon", None), change_bit)
    note = ""
    if len(findings) > MAX_FINDINGS:
        note = f"read the first {MAX_FINDINGS} of {len(findings)} findings"
        findings = findings[:MAX_FINDINGS]
    if not findings and not side and not regions and not change_bit and any(ch.isalpha() for ch in query):
        note = "the query names no finding: plain similarity"
    if override:
        known = {f.finding for f in findings} | ({"side"} if side else set()) | ({"location"} if regions else set()) \
            | ({"change"} if change_bit else set()) | ({"degree"} if degree_bit else set()) \
            | ({"pattern"} if pattern_bits else set()) | ({"alone"} if alone else set())
        unknown = [k for k in override if k not in known]
        if unknown:
            listed = ", ".join(sorted(known)) or "none"
            raise ConfigError(f"reading: the query was not read to name {unknown[0][:80]!r}; it names: {listed}")
        findings = [f if f.finding not in override else replace(f, status=override[f.finding])
                    for f in findings if override.get(f.finding) != "ignore"]
        if override.get("location") == "ignore":
            location, regions = None, 0
            if side and side == implied and not own_side:  # the side came from the location alone
                override = {**override, "side": "ignore"}
        if override.get("side") == "ignore":
            side = None
            findings = [replace(f, side=None) for f in findings]
        change_bit = 0 if override.get("change") == "ignore" else change_bit
        degree_bit = 0 if override.get("degree") == "ignore" else degree_bit
        pattern_bits = 0 if override.get("pattern") == "ignore" else pattern_bits
        alone = alone and override.get("alone") != "ignore"
    kept = {f.finding for f in findings}
    # A link whose literal reading was taken out (or lies past MAX_FINDINGS) stands in its place.
    findings = [replace(f, beside=None) if f.beside and f.beside not in kept else f for f in findings]
    # the side of a heart chamber ("lead tip in the right ventricle") is asked of the chambers the units name
    chamber = bool(side) and side == own_side and names_chamber_side(query)
    return QueryReading(tuple(findings), side, negation, note, location,
                        regions | change_bit | degree_bit | pattern_bits, changes.NAMES.get(change_bit),
                        degrees.NAMES.get(degree_bit), patterns.pattern_names(pattern_bits), chamber, alone)


def _read_beyond_lexicon(found: dict[str, ReadFinding], query: str, words: str, labeler, *, lexicon: bool,
                         link: Callable[[str], "Link | None"] | None, read_as: str,
                         literal: Callable[[Sequence[str]], bool] | None, side: str | None) -> None:
    """Add to ``found`` (the lexicon's findings of the query) what its other words say: the links of the parts beside
    a lexicon finding; where the lexicon read nothing, two things asked at once, the link of the whole words, a
    complaint read as its causes (:mod:`radsift.search.symptoms`), or else the open-vocabulary phrases."""
    links = lexicon and read_as != "literal"
    if found and links and link is not None:
        read_parts(found, query, labeler, link, read_as, literal, side)
    phrases = labeler.query_phrases(query) if not found else []
    if not found and links and link is not None and read_two_things(found, query, labeler, link, read_as, literal, side):
        phrases = []
    if not found and links and link is not None:
        linked, status, cue, surgery = link_finding(words, labeler, link)
        if surgery:
            phrases = []  # "part of the lung" absent is not what the words say: the surgery stands alone
        if linked is not None:
            add_reading(found, linked, status, cue, side, phrases, words_stay(phrases, read_as, literal))
    # a complaint ("short of breath") is read as what can cause it, the user's words kept where they occur
    cause = symptom_reading(words, labeler, side) if not found and links else None
    if cause is not None:
        add_beside(found, cause, side, phrases, words_stay(phrases, read_as, literal))
    if not found:
        for p in phrases:
            found.setdefault(p.text.lower(), ReadFinding(p.text.lower(), p.status, "open", p.cue, side))


def _query_where(query: str, context: str | None) -> tuple[str | None, str | None, str | None, int, str | None]:
    """``(side, own side, location, regions, implied side)`` of a query (:func:`radsift.text.where.query_location`);
    ``context``: the context of a clinical request whose question ``query`` is (:func:`_question_asked`)."""
    # the query's own side word, before any its location implies ("both gas and liquid" names none)
    side = own_side = query_side(clauses.without_both_matter(query))
    location, regions, implied = query_location(query)
    if context is not None and not side and not regions & (locations.LEFT | locations.RIGHT):
        # a question naming no side, lobe or zone asks where its context says ("dull right base, ? fluid around the
        # lung": the right base); lung places only ("after a jugular line, ? air around the lung" asks of no neck)
        context_side, where = query_side(context), query_location(context, body=False)
        if context_side or where[0]:
            side = own_side = context_side
            location, regions, implied = where
    if side in ("left", "right") and regions & locations.EVERY and regions & locations.LEFT and regions & locations.RIGHT:
        side = "bilateral"  # "right middle lobe and lingula": the side word names one of two lobes on two sides
    return side or implied, own_side, location, regions, implied


def _question_asked(query: str, labeler, *, lexicon: bool, link: Callable[[str], "Link | None"] | None, read_as: str,
                    literal: Callable[[Sequence[str]], bool] | None) -> tuple[str, str | None]:
    """``(question, context)`` of a clinical request ("asthmatic child, ? thick airway walls":
    :func:`radsift.search.clauses.clinical_question`) whose question, read alone, names a lexicon finding or links
    to one: the context is the indication, not what a report must state ("asthmatic" is no airway disease asked).
    ``(query, None)`` otherwise: a question naming nothing the labels know ("? recurrence", "? tip position") asks
    of its context, which is read with it."""
    asked = clauses.clinical_question(query)
    if asked is None:
        return query, None
    alone = read_query(asked, labeler, lexicon=lexicon, link=link, read_as=read_as, literal=literal)
    if not any(f.labeled for f in alone.findings):
        return query, None
    return asked, query[:len(query) - len(asked)]


def _read_lexicon(found: dict[str, ReadFinding], query: str, labeler, read_as: str,
                  literal: Callable[[Sequence[str]], bool] | None, side: str | None) -> None:
    """Add to ``found`` the lexicon's findings of the query (alternatives keep their status), less a past cause
    named in general words (:func:`radsift.search.clauses.generic_cause`); a mention inside a concept's own
    description written out whole is read as that concept (:func:`radsift.search.clauses.named_descriptions`)."""
    causes = [c.span() for c in clauses.CAUSE.finditer(query)]
    mentions = [m for m in getattr(labeler, "label_query", labeler.label)(query) if not clauses.generic_cause(m, causes)]
    named = clauses.named_descriptions(query, mentions, getattr(labeler, "lexicon", None),
                                       lambda words: words_stay(labeler.query_phrases(words), read_as, literal)) \
        if read_as != "literal" else {}
    for m in mentions:
        if id(m) in named:
            concept, phrase = named[id(m)]
            found.setdefault(concept, ReadFinding(concept, m.status, "linked", m.cue, side, phrase, 1.0))
        else:
            found.setdefault(m.finding, ReadFinding(m.finding, m.status, "lexicon", m.cue, side))



def _with_any_of(findings: list[ReadFinding], lexicon, change_bit: int = 0) -> list[ReadFinding]:
    """The findings, a lexicon one asked present or uncertain with what a unit may state in its place (the lexicon's
    ``any_of`` and ``signs``, less the query's other findings); a denial stays literal ("no pneumonia" is not denied
    by "no focal consolidation" alone ... nor contradicted by a consolidation called atelectasis) but for the signs a
    film shows a finding by ("no signs of CHF": "No pulmonary edema." denies them, "Pulmonary edema." states one).
    A finding gone since the last study is no denial: "pneumonia cleared up" is how a report's "resolution of the
    left-sided airspace disease" or "consolidation has cleared" reads, so it keeps the alternatives (``change_bit``
    :data:`~radsift.text.changes.GONE`; the change tier ranks the units saying it gone first)."""
    if lexicon is None:
        return findings
    named = {f.finding for f in findings}
    out = []
    for f in findings:
        concept = lexicon[f.finding] if f.labeled and f.finding in lexicon else None
        gone = f.status == "absent" and change_bit == changes.GONE
        alts = () if concept is None else concept.signs if f.status == "absent" and not gone \
            else concept.any_of + concept.signs
        alts = tuple(a for a in dict.fromkeys((*f.any_of, *alts)) if a not in named)  # a symptom's causes kept
        out.append(replace(f, any_of=alts) if alts else f)
    return out


def _read_change(query: str, findings: list[ReadFinding]) -> tuple[list[ReadFinding], int]:
    """The findings less a phrase of change words alone ("worse than last time"), and the query's change bit
    (:func:`radsift.text.changes.query_change`; 0 for none, or where locations are not read). An organ removed
    ("lung taken out": a surgery, read present) asks for no change."""
    # a past cause ("calcium spots from an old lung infection") says how the finding came, not its change or age
    change, bit = changes.query_change(clauses.CAUSE.sub(" ", query)) if locations.enabled() else (None, 0)
    if bit == changes.GONE and REMOVAL.search(change) and any(f.status == "present" for f in findings):
        return findings, 0
    if bit:
        findings = [f for f in findings if f.source != "open" or not changes.only_change(f.finding, change)]
    return findings, bit



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
        slots: Side and location keys within one reading tier (:func:`radsift.ranking.tiers.stating`).
        literal: The tiers of the literal reading alone when a link beside it or the normal key orders units
            within them (``tiers`` then holds those keys too); None when ``tiers`` are the literal reading's.
    """

    tiers: np.ndarray | None
    stated: np.ndarray | None = None
    statuses: tuple[str, ...] = ()
    capped: bool = False
    slots: int = SIDE_SLOTS
    literal: np.ndarray | None = None

    @property
    def reading(self) -> np.ndarray | None:
        """The tiers of the reading the counts and the kept units follow (the literal one, link or not)."""
        return self.literal if self.literal is not None else self.tiers

    def classes(self, rows: np.ndarray, group_of: np.ndarray | None = None, n_groups: int | None = None):
        """What the units ``rows`` state, and what each report states judged on those units only
        (:func:`~radsift.ranking.tiers.reading_classes`); ``(None, None)`` when no finding is read."""
        if self.stated is None:
            return None, None
        # a report's denial is contradicted by any of its units, counted or not (ranking.tiers.report_readings)
        opposite = None if group_of is None else opposite_reports(self.stated, group_of)
        return reading_classes(self.stated[rows], self.statuses, None if group_of is None else group_of[rows],
                               n_groups, opposite)


def reading_tiers(reading: QueryReading, labeler, *, n_units: int, labels: tuple[np.ndarray, np.ndarray, np.ndarray],
                  finding_codes: Mapping[str, int], sentence_texts: Callable[[Sequence[int]], Mapping[int, str]],
                  open_candidates: Callable[[Sequence[str]], np.ndarray],
                  side_flags: Callable[[], tuple[np.ndarray, np.ndarray, np.ndarray]] | None = None,
                  location_flags: Callable[[], np.ndarray] | None = None,
                  unit_of: np.ndarray | None = None, group_of: np.ndarray | None = None,
                  classes: bool = False, said: Callable[[], np.ndarray] | None = None):
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
        side_flags: () -> per-unit (has left, has right, has bilateral) word flags (with the sides
            the units' locations imply: :func:`radsift.ranking.places.with_implied_sides`).
        location_flags: () -> per-unit region masks (:func:`radsift.ranking.places.location_flags`).
        unit_of: Sentence row -> unit row (section units); None when units are sentences.
        group_of: Report of each unit (report level), None at sentence level.
        said: () -> what every sentence states (:data:`radsift.ranking.tiers.SAYS_FINDING` ...): for a reading
            asking for a finding, units (and reports) that say only all is normal rank last within each tier
            (:func:`radsift.ranking.tiers.with_normal`); None: not read.
    """
    if not reading.active:
        return ReadingTiers(None) if classes else None
    own, also = ranked_within(reading)
    flags = location_flags() if reading.regions and location_flags is not None else None
    # a finding gone is stated by its alternatives only where they are said gone ("resolution of the airspace
    # disease"), never by a plain denial of them ("no focal consolidation" says nothing of a pneumonia that cleared)
    gone_units = (flags & changes.GONE) != 0 if flags is not None and reading.change == "gone" else None
    reader = (labeler, labels, finding_codes, sentence_texts, open_candidates, unit_of, n_units)
    raw, capped = _stated(own, *reader, gone_units=gone_units)
    sides = places = None
    if reading.side and side_flags is not None:
        sides = side_tiers(reading.side, *side_flags())
    if flags is not None:
        places = location_tiers(reading.regions, flags)
    statuses = [f.status for f in own]
    slots = SIDE_SLOTS * (location_slots(reading.regions) if places is not None else 1)
    tiers = unit_tiers(raw, statuses, where_tiers(places, sides, reading.regions), group_of, slots)
    base = tiers
    if also and tiers is not None:
        # The link orders units within each tier of the literal reading, never across them.
        linked = unit_tiers(_stated(also, *reader)[0], [f.status for f in also], None, group_of)
        tiers = tiers * (int(linked.max(initial=0)) + 1) + linked
    if said is not None and tiers is not None and asks_for_finding(reading):
        tiers = with_normal(tiers, normal_keys(said(), n_units, unit_of, group_of), group_of is not None)
    if not classes:
        return tiers
    return ReadingTiers(tiers, raw, tuple(statuses), capped, slots, None if base is tiers else base)


def ranked_within(reading: QueryReading) -> tuple[list[ReadFinding], list[ReadFinding]]:
    """``(the literal reading's findings, the findings that order units within its tiers)``: the links beside it,
    and the named finding of each read with alternatives (``any_of``: a unit stating pneumonia before one stating
    consolidation alone, within each tier, where a change or a lobe the query asks for still comes first)."""
    own = [f for f in reading.findings if not f.beside]
    return own, [f for f in reading.findings if f.beside] + [replace(f, any_of=()) for f in own if f.any_of]


def _stated(findings, labeler, labels, finding_codes, sentence_texts, open_candidates, unit_of,
            n_units: int, gone_units: np.ndarray | None = None) -> tuple[np.ndarray | None, bool]:
    """:func:`~radsift.ranking.tiers.stated_tiers` of ``findings`` (None when there are none), and whether
    an open-vocabulary phrase had candidates left unread. With ``gone_units`` (per unit: it says a finding gone),
    a denied finding's alternatives count only in those units."""
    if not findings:
        return None, False
    columns = []
    capped = False
    for f in findings:
        if f.labeled:
            # a unit stating any of the finding's alternatives states it (its best reading of them all)
            codes = [finding_codes.get(name, -1) for name in (f.finding, *f.any_of)]
            row, finding, status = labels
            sel = np.isin(finding, codes)
            if gone_units is not None and f.status == "absent" and f.any_of:
                units = row if unit_of is None else np.asarray(unit_of)[row]
                sel &= (finding == codes[0]) | gone_units[units]
            columns.append((row[sel], status[sel]))
        else:
            rows_, status_, over = open_mentions(f.finding, labeler, sentence_texts, open_candidates)
            columns.append((rows_, status_))
            capped = capped or over
    rows = np.concatenate([c[0] for c in columns]).astype(np.int64)
    codes = np.concatenate([np.full(len(c[0]), j) for j, c in enumerate(columns)]).astype(np.int64)
    status = np.concatenate([c[1] for c in columns]).astype(np.int64)
    if unit_of is not None:
        rows = np.asarray(unit_of)[rows]
    return stated_tiers(n_units, rows, codes, status, [(j, f.status) for j, f in enumerate(findings)]), capped


def normal_key_wanted(reading: QueryReading, query: str | None = None, gap: float | None = None) -> bool:
    """Whether units that say only all is normal rank last for this query (the normal key, ``said`` of
    :func:`reading_tiers`): it asks for a finding (:func:`asks_for_finding`) and no calibrated tier boosts (``gap``)
    are on, whose cost per tier the key would multiply. One rule for both engines and the benchmark systems."""
    return gap is None and asks_for_finding(reading, query)


def asks_for_finding(reading: QueryReading, query: str | None = None) -> bool:
    """Whether the reading asks for some finding to be there (:func:`radsift.ranking.tiers.asks_finding`): then units
    that say only all is normal rank last within each tier (:func:`reading_tiers`, ``said``). Not when the query
    (given) only calls something normal ("heart and lungs are okay", "lungs are well expanded":
    :func:`radsift.text.normality.sentence_kind`), whatever its words were read as, nor for an open phrase that does
    ("lungs are clear", unlinked)."""
    if query is not None and sentence_kind(query) == NORMAL:
        return False
    return asks_finding([f.status for f in reading.findings if not (f.source == "open" and (
        normal_statement(f.finding) or sentence_kind(f.finding) == NORMAL))])


def open_mentions(finding: str, labeler, sentence_texts, open_candidates) -> tuple[np.ndarray, np.ndarray, bool]:
    """Sentence rows and status codes of an open-vocabulary phrase's mentions (the reader run over at most
    :data:`OPEN_CANDIDATES` sentences holding its words), and whether candidates were left unread."""
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
