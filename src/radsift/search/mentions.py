"""What a text states about a query's findings: each mention with its status and cue.

The text is read sentence by sentence (a sentence, a section or a whole report may be given), with
the labeler (lexicon findings) or the open-vocabulary reader (the others). A search attaches them
to its hits (``Hit.reading``); the API and exports mark them in whole reports, read with
:func:`report_mentions_in` so that the report's impression may doubt what another section describes
(:func:`radsift.labels.observations.doubted_by_impression`, as the index build reads it).
"""

from __future__ import annotations

from collections.abc import Mapping

from radsift.records import HitMention, QueryReading
from radsift.text.sentences import split_sentences


def mentions_in(labeler, text: str, reading: QueryReading) -> tuple[HitMention, ...]:
    """What ``text`` states about the reading's findings, in text order (offsets within ``text``)."""
    if not reading.findings:
        return ()
    lexicon = {name for f in reading.findings if f.labeled for name in (f.finding, *f.any_of)}
    spans = split_sentences(text) or [(0, len(text))]
    # Read together: a sentence may hedge the one before it ("Nodular opacity. This may be artifact.").
    labeled = labeler.label_sentences([text[s:e] for s, e in spans]) if lexicon else [[] for _ in spans]
    return _hit_mentions(labeler, text, spans, labeled, reading, lexicon)


def report_mentions_in(labeler, sections: Mapping[str, str],
                       reading: QueryReading) -> dict[str, tuple[HitMention, ...]]:
    """What each section of one report states about the reading's findings (offsets within its section),
    the sections read together: an impression that names a finding only to doubt it makes its descriptions
    in the other sections uncertain, as the index's labels read them."""
    if not reading.findings:
        return {name: () for name in sections}
    lexicon = {name for f in reading.findings if f.labeled for name in (f.finding, *f.any_of)}
    spans = {name: split_sentences(text) or [(0, len(text))] for name, text in sections.items()}
    labeled: dict[str, list] = {name: [[] for _ in spans[name]] for name in sections}
    if lexicon:
        each = {name: labeler.label_sentences([text[s:e] for s, e in spans[name]]) for name, text in sections.items()}
        names = [name for name in sections for _ in each[name]]
        read = labeler.read_reports([ms for name in sections for ms in each[name]], names)
        at = 0
        for name in sections:
            labeled[name], at = read[at:at + len(each[name])], at + len(each[name])
    return {name: _hit_mentions(labeler, text, spans[name], labeled[name], reading, lexicon)
            for name, text in sections.items()}


def _hit_mentions(labeler, text: str, spans, labeled, reading: QueryReading, lexicon: set) -> tuple[HitMention, ...]:
    """The reading's mentions in ``text``: its sentences' labels (``labeled``, one list per span) for lexicon
    findings, the open-vocabulary reader for the others."""
    phrases = [p for f in reading.findings if f.source == "open" for p in labeler.query_phrases(f.finding)[:1]]
    out = []
    for (start, end), found in zip(spans, labeled):
        sentence = text[start:end]
        out += [HitMention(m.finding, m.status, m.cue, start + m.start, start + m.end, "lexicon")
                for m in found if m.finding in lexicon]
        for phrase in phrases:
            out += [HitMention(phrase.text.lower(), m.status, m.cue, start + m.start, start + m.end, "open")
                    for m in labeler.read_phrase(phrase, [sentence])[0]]
    return tuple(sorted(out, key=lambda m: (m.start, m.end)))
