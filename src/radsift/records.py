"""Shared records that flow between radsift's stages.

Every stage speaks in these small frozen dataclasses: readers yield :class:`Report`,
the text stage turns reports into :class:`Sentence` units, the labeler attaches
:class:`Mention` records, and search returns :class:`Hit` records. Keeping them in one
module keeps the data flow easy to see and stops stages from inventing their own shapes.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Mapping


def _frozen_map(value: Mapping[str, Any] | None) -> Mapping[str, Any]:
    return MappingProxyType(dict(value or {}))


@dataclass(frozen=True)
class Report:
    """One report as read from a corpus.

    Attributes:
        id: The identifier given at ingestion (a CSV id column, a file stem, ...).
        sections: Canonical section name (``findings``, ``impression``, ...) to its text,
            in reading order.
        metadata: Every other field of the source record, as strings.
    """

    id: str
    sections: Mapping[str, str] = field(default_factory=dict)
    metadata: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        object.__setattr__(self, "id", str(self.id))
        object.__setattr__(self, "sections", _frozen_map(self.sections))
        object.__setattr__(self, "metadata", _frozen_map(self.metadata))

    @classmethod
    def fresh(cls, report_id: str, sections: dict[str, str], metadata: dict[str, str]) -> "Report":
        """``Report(report_id, sections, metadata)`` for two dicts made for this report alone, wrapped as they are
        instead of copied: the readers' hot path (about 1 µs of a report's ~20 to read). The caller must not keep
        or change the dicts (``tests/test_ingest_fast.py`` compares it with the constructor)."""
        report = object.__new__(cls)
        report.__dict__.update(id=report_id if type(report_id) is str else str(report_id),
                               sections=MappingProxyType(sections), metadata=MappingProxyType(metadata))
        return report

    @property
    def is_empty(self) -> bool:
        """True when no section holds any non-blank text."""
        return not any(text.strip() for text in self.sections.values())

    def text(self, sections: tuple[str, ...] | None = None) -> str:
        """The report's sections joined by blank lines (optionally only some of them)."""
        names = sections or tuple(self.sections)
        return "\n\n".join(self.sections[n] for n in names if self.sections.get(n, "").strip())

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "sections": dict(self.sections), "metadata": dict(self.metadata)}


@dataclass(frozen=True)
class Sentence:
    """A sentence of a report section, with its character offsets in that section's text.

    ``report.sections[section][start:end] == text`` always holds.
    """

    report_id: str
    section: str
    index: int  # position of the sentence within its section, from 0
    start: int
    end: int
    text: str

    @property
    def uid(self) -> str:
        """Stable id of the sentence unit, used as a docid in sentence-level runs and qrels."""
        return sentence_uid(self.report_id, self.section, self.index)


def sentence_uid(report_id: str, section: str, index: int) -> str:
    """The docid of a sentence unit: ``REPORT::SECTION::INDEX``."""
    return f"{report_id}::{section}::{index}"


@dataclass(frozen=True)
class Mention:
    """A lexicon finding spotted in a sentence, with its negation status.

    Attributes:
        finding: Canonical finding name from the lexicon (``pneumothorax``).
        category: Lexicon category (``disease``, ``device``, ...).
        start: Character offset of the mention in the sentence text.
        end: End offset (exclusive) in the sentence text.
        text: The matched surface text.
        status: ``present``, ``absent`` or ``uncertain``.
        cue: The negation/uncertainty cue text that decided the status, if any.
        rule: The name of the rule (ConText category or radsift rule) that decided it.
    """

    finding: str
    category: str
    start: int
    end: int
    text: str
    status: str = "present"
    cue: str | None = None
    rule: str | None = None


@dataclass(frozen=True)
class ReadFinding:
    """How a query was read for one finding.

    Attributes:
        finding: The lexicon finding ("cardiomegaly") or, outside the lexicon, the phrase
            ("intracranial hemorrhage").
        status: What the query asks for: ``present``, ``absent`` or ``uncertain``.
        source: ``lexicon`` (the query names a phrase of the index's lexicon), ``linked`` (the query
            describes a lexicon concept: :mod:`radsift.search.concepts`), ``symptom`` (the query names a
            complaint: the finding is its first cause, ``any_of`` the others, ``via`` the complaint;
            :mod:`radsift.search.symptoms`) or ``open`` (the open-vocabulary reader).
        cue: The query words that decided the status ("no", "possible"), if any.
        side: The query's side (``left``, ``right``, ``bilateral``) or None.
        via: For ``linked``: the concept's name, synonym or description the query matched.
        score: For ``linked``: the cosine of that match.
        beside: For a link added beside the literal reading (the query's own phrase occurs in the
            index): that reading's finding. The literal reading ranks first, the link only orders
            within it (``also: ...``); None for a link that stands in the literal reading's place.
        any_of: Lexicon concepts a unit may state in its place (the lexicon's ``any_of``: pneumonia's
            consolidation, infiltrate, airspace disease): a unit stating any of them counts as stating it.
    """

    finding: str
    status: str
    source: str
    cue: str | None = None
    side: str | None = None
    via: str | None = None
    score: float | None = None
    beside: str | None = None
    any_of: tuple[str, ...] = ()

    @property
    def labeled(self) -> bool:
        """Whether the stored lexicon labels say which units state it (``lexicon``, ``linked`` or ``symptom``)."""
        return self.source in ("lexicon", "linked", "symptom")

    def to_dict(self) -> dict[str, Any]:
        return {"finding": self.finding, "status": self.status, "source": self.source, "cue": self.cue,
                "side": self.side, "via": self.via,
                "score": None if self.score is None else round(float(self.score), 4), "beside": self.beside,
                "any_of": list(self.any_of)}


@dataclass(frozen=True)
class QueryReading:
    """How a query was read: its findings, its side, and whether the ranking uses them.

    Attributes:
        findings: One entry per finding the query names, in query order.
        side: The side the query names, or None.
        negation: ``aware`` (ranking by the reading) or ``ignore`` (plain similarity).
        note: Why something was left out (too many findings, a query with only a cue word ...).
        location: The lobes, apices or bases the query names, in its words ("left lower lobe"), or None.
        regions: Their regions (:mod:`radsift.text.locations` bit mask; 0 when none), with the bits of the change,
            the degree and the patterns asked (:mod:`radsift.text.changes`, :mod:`radsift.text.degrees`,
            :mod:`radsift.text.patterns`).
        change: The change since the last study the query asks for (``new``, ``worse``, ``better``, ``gone``,
            ``unchanged``), or None.
        degree: The degree the query asks of its finding (``slight``, ``moderate``, ``marked``), or None.
        pattern: The patterns of its look the query asks (``streaky``, ``plate-like``, ``subsegmental`` ...,
            joined by ", "), or None.
        chamber: The side is a heart chamber's ("catheter tip in the right atrium"): asked of the units naming a
            chamber's side, not of the sides of the chest (:func:`radsift.text.sides.names_chamber_side`).
        alone: The query asks for its findings with nothing else wrong ("granuloma, otherwise normal":
            :func:`radsift.text.normality.asks_alone`): the reports stating them rank by how few other findings they
            state (:mod:`radsift.ranking.alone`).
    """

    findings: tuple[ReadFinding, ...] = ()
    side: str | None = None
    negation: str = "aware"
    note: str = ""
    location: str | None = None
    regions: int = 0
    change: str | None = None
    degree: str | None = None
    pattern: str | None = None
    chamber: bool = False
    alone: bool = False

    @property
    def active(self) -> bool:
        """Whether the ranking reads anything (negation aware and a finding, a side, a location or a change; a degree
        comes with a finding)."""
        return self.negation == "aware" and bool(self.findings or self.side or self.regions)

    def describe(self) -> str:
        """One line: ``cardiomegaly: absent (lexicon, cue 'no'); side left``."""
        parts = [f"{'also ' if f.beside else ''}{f.finding}: {f.status} ({f.source}"
                 f"{', cue ' + repr(f.cue) if f.cue else ''}{', or ' + ', '.join(f.any_of) if f.any_of else ''}"
                 f"{', understood from ' + repr(f.via) if f.source == 'linked' else ''}"
                 f"{', causes of ' + repr(f.via) if f.source == 'symptom' else ''})" for f in self.findings]
        if self.side:
            parts.append(f"side {self.side}{' (of a heart chamber)' if self.chamber else ''}")
        if self.location:
            parts.append(f"location {self.location}")
        if self.change:
            parts.append(f"change {self.change}")
        if self.degree:
            parts.append(f"degree {self.degree}")
        if self.pattern:
            parts.append(f"pattern {self.pattern}")
        if self.alone and parts:
            parts.append("nothing else (fewest other findings first)")
        text = "; ".join(parts) or "no finding"
        if self.negation != "aware":
            text += " [negation ignored]"
        return text + (f" ({self.note})" if self.note else "")

    def to_dict(self) -> dict[str, Any]:
        return {"findings": [f.to_dict() for f in self.findings], "side": self.side, "negation": self.negation,
                "note": self.note, "location": self.location, "change": self.change,
                "degree": self.degree, "pattern": self.pattern, "chamber": self.chamber,
                "alone": self.alone}


@dataclass(frozen=True)
class HitMention:
    """A query finding as a hit's unit states it: status, the cue that decided it, and where."""

    finding: str
    status: str
    cue: str | None
    start: int
    end: int
    source: str = "lexicon"

    def to_dict(self) -> dict[str, Any]:
        return {"finding": self.finding, "status": self.status, "cue": self.cue, "start": self.start,
                "end": self.end, "source": self.source}


@dataclass(frozen=True)
class Hit:
    """One search result.

    Attributes:
        report_id: The report's id as given at ingestion.
        score: The key the list is ordered by (higher ranks first; comparable within one query only): the
            fused score lowered by the unit's reading tier (so that every unit of a better tier ranks first),
            or a reranked score. For ordering and evaluation runs, not for reading: users are shown
            :attr:`shown_score`.
        rank: 1-based rank within the result list.
        sentence: The best-matching sentence, or ``None`` for section-level units.
        highlights: ``(start, end)`` offsets of matched parts within ``sentence.text``.
        section: The section the best unit came from.
        sections: The report's sections (may be empty when fields were not requested).
        metadata: The report's metadata.
        reading: What the unit states about each of the query's findings (negation-aware search).
        band: ``states``, ``related`` or ``unlikely``: where the hit lies against the end of the
            relevant reports (:mod:`radsift.ranking.bands`); None where not computed.
        relevance: The calibrated estimate the band comes from (probability that the report states
            what the query asks for), or None.
        fused: The unit's own score before any reading tier or rerank: the cosine (``dense``), BM25
            (``bm25``) or their convex combination (the hybrids), the scale its band reads; None where not
            computed. The tier shows as the band, never as a shift of this score.
    """

    report_id: str
    score: float
    rank: int
    sentence: Sentence | None = None
    highlights: tuple[tuple[int, int], ...] = ()
    section: str | None = None
    sections: Mapping[str, str] = field(default_factory=dict)
    metadata: Mapping[str, str] = field(default_factory=dict)
    reading: tuple[HitMention, ...] = ()
    band: str | None = None
    relevance: float | None = None
    fused: float | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "sections", _frozen_map(self.sections))
        object.__setattr__(self, "metadata", _frozen_map(self.metadata))

    @property
    def shown_score(self) -> float:
        """The score users see (terminal, JSON, the page, exports): :attr:`fused` where known, else :attr:`score`."""
        return float(self.score if self.fused is None else self.fused)

    def to_dict(self) -> dict[str, Any]:
        sent = None
        if self.sentence is not None:
            s = self.sentence
            sent = {"section": s.section, "index": s.index, "start": s.start, "end": s.end, "text": s.text}
        return {
            "report_id": self.report_id,
            "score": self.shown_score,  # the fused score: never shifted by a reading tier (the band says that)
            "rank": self.rank,
            "section": self.section,
            "sentence": sent,
            "highlights": [list(h) for h in self.highlights],
            "sections": dict(self.sections),
            "metadata": dict(self.metadata),
            "reading": [m.to_dict() for m in self.reading],
            "band": self.band,
            "relevance": self.relevance,
        }
