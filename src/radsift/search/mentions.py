"""What a text states about a query's findings: each mention with its status and cue.

The text is read sentence by sentence (a sentence, a section or a whole report may be given), with
the labeler (lexicon findings) or the open-vocabulary reader (the others). A search attaches them
to its hits (``Hit.reading``); the API and exports mark them in whole reports.
"""

from __future__ import annotations

from radsift.records import HitMention, QueryReading
from radsift.text.sentences import split_sentences


def mentions_in(labeler, text: str, reading: QueryReading) -> tuple[HitMention, ...]:
    """What ``text`` states about the reading's findings, in text order (offsets within ``text``)."""
    if not reading.findings:
        return ()
    lexicon = {f.finding for f in reading.findings if f.labeled}
    phrases = [p for f in reading.findings if f.source == "open" for p in labeler.query_phrases(f.finding)[:1]]
    spans = split_sentences(text) or [(0, len(text))]
    # Read together: a sentence may hedge the one before it ("Nodular opacity. This may be artifact.").
    labeled = labeler.label_sentences([text[s:e] for s, e in spans]) if lexicon else [[] for _ in spans]
    out = []
    for (start, end), found in zip(spans, labeled):
        sentence = text[start:end]
        out += [HitMention(m.finding, m.status, m.cue, start + m.start, start + m.end, "lexicon")
                for m in found if m.finding in lexicon]
        for phrase in phrases:
            out += [HitMention(phrase.text.lower(), m.status, m.cue, start + m.start, start + m.end, "open")
                    for m in labeler.read_phrase(phrase, [sentence])[0]]
    return tuple(sorted(out, key=lambda m: (m.start, m.end)))
