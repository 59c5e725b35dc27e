"""Terminal rendering of hits: the matched part of each sentence highlighted."""

from __future__ import annotations

from typing import Sequence

from rich.console import Console
from rich.text import Text

from radsift.records import Hit, QueryReading

#: Terminal style of each finding status.
STATUS_STYLE = {"present": "bold green", "absent": "bold red", "uncertain": "bold yellow"}


def hit_text(hit: Hit, style: str = "bold black on yellow") -> Text:
    """The hit's sentence as rich Text with its highlight ranges styled."""
    sentence = hit.sentence.text if hit.sentence is not None else ""
    text = Text(sentence)
    for start, end in hit.highlights:
        text.stylize(style, start, end)
    return text


def reading_text(reading: QueryReading) -> Text:
    """``read as: cardiomegaly absent (lexicon, cue 'no') · side left``, statuses coloured; a link beside the
    literal reading follows it as ``; also: pleural effusion present (linked, ...)``."""
    line = Text("read as: ", style="dim")
    if not reading.findings and not reading.side and not reading.location and not reading.change:  # a degree needs a finding
        line.append("no finding (plain similarity)" if not reading.note else reading.note)
        return line
    for i, f in enumerate(reading.findings):
        if f.beside:
            line.append("; also: ", style="dim")
        elif i:
            line.append(" · ", style="dim")
        if f.source in ("linked", "symptom") and not f.beside:
            line.append("understood as ", style="dim")
        line.append(f.finding + " ")
        line.append(f.status, style=STATUS_STYLE.get(f.status, ""))
        via = f", from {f.via!r} {f.score:.2f}" if f.source == "linked" and f.score is not None else \
            f", causes of {f.via!r}" if f.source == "symptom" else ""
        alts = f", or {', '.join(f.any_of)}" if f.any_of else ""
        line.append(f" ({f.source}{', cue ' + repr(f.cue) if f.cue else ''}{via}{alts})", style="dim")
    if reading.side:
        line.append(f"{' · ' if reading.findings else ''}side {reading.side}"
                    f"{' (of a heart chamber)' if reading.chamber else ''}")
    if reading.location:
        line.append(f"{' · ' if reading.findings or reading.side else ''}location {reading.location}")
    if reading.change:
        line.append(f"{' · ' if reading.findings or reading.side or reading.location else ''}change {reading.change}")
    if reading.degree:
        line.append(f" · degree {reading.degree}")
    if reading.pattern:
        line.append(f" · pattern {reading.pattern}")
    if reading.alone and reading.findings:
        line.append(" · nothing else (fewest other findings first)")
    if reading.negation != "aware":
        line.append("  [negation ignored: ranked by similarity only]", style="yellow")
    elif reading.note:
        line.append(f"  ({reading.note})", style="dim")
    return line


#: Terminal style of each relevance band.
BAND_STYLE = {"states": "bold green", "related": "yellow", "unlikely": "dim"}
#: The line drawn where a band ends (where the relevant reports end).
BAND_END = {"states": "the reports stating the query's reading end here",
            "related": "the related reports end here: the rest are unlikely to be relevant"}


def counts_text(hits) -> Text | None:
    """``12 reports state the reading · 3,955 ranked · showing 1-10``, or None for a plain list."""
    total = getattr(hits, "total", None)
    if total is None:
        return None
    line = Text()
    matching = getattr(hits, "matching", None)
    if matching is not None:
        line.append(f"{'at least ' if getattr(hits, 'lower_bound', False) else ''}{matching:,}", style="bold")
        line.append(" state the reading · ")
    line.append(f"{total:,} ranked")
    if hits:
        line.append(f" · showing {hits.offset + 1}-{hits.offset + len(hits)}")
        if hits.more:
            line.append(f" (next page: --offset {hits.offset + len(hits)})", style="dim")
    elif hits.offset:
        line.append(f" · nothing after {hits.offset}", style="dim")
    return line


def print_hits(console: Console, query: str, hits: Sequence[Hit]) -> None:
    """Print how the query was read and the counts, then one block per hit: rank, report id, band,
    score, section, the status of the query's findings in it, highlighted sentence; a line marks
    where a relevance band ends."""
    reading = getattr(hits, "reading", None)
    if reading is not None:
        console.print(reading_text(reading))
    counts = counts_text(hits)
    if counts is not None:
        console.print(counts)
    if not hits:
        if not getattr(hits, "total", 1) and not getattr(hits, "offset", 0):  # nothing was ranked at all
            console.print("no report to rank: the index is empty, or its filters (--where, --target) match no "
                          "report (--where KEY=VALUE matches exactly, KEY~VALUE by substring)", highlight=False)
        else:
            console.print(f"no match for {query!r}", highlight=False)
        return
    previous = None
    for hit in hits:
        if previous is not None and hit.band != previous and previous in BAND_END:
            console.print(Text(f"  ── {BAND_END[previous]} ──", style="bold magenta"))
        previous = hit.band
        head = Text(f"{hit.rank:>3}. ", style="dim")
        head.append(hit.report_id, style="bold cyan")
        if hit.band:
            head.append(f"  [{hit.band}", style=BAND_STYLE.get(hit.band, ""))
            if hit.relevance is not None:
                head.append(f" {hit.relevance:.2f}", style=BAND_STYLE.get(hit.band, ""))
            head.append("]", style=BAND_STYLE.get(hit.band, ""))
        head.append(f"  score {hit.shown_score:.4f}", style="green")  # the fused score: the band tells the tier
        if hit.section:
            head.append(f"  [{hit.section}]", style="magenta")
        for m in hit.reading:
            head.append(f"  {m.finding}: ")
            head.append(m.status, style=STATUS_STYLE.get(m.status, ""))
            if m.cue:
                head.append(f" ({m.cue!r})", style="dim")
        console.print(head)
        line = Text("     ")
        line.append_text(hit_text(hit))
        console.print(line)
