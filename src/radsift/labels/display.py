"""Rich tables for the ``radsift label`` command: mention explanations and label statistics."""

from __future__ import annotations

from typing import Any, Sequence

from rich.table import Table

from radsift.records import Mention
from radsift.text import split_sentences

_STATUS_STYLE = {"present": "green", "absent": "red", "uncertain": "yellow"}


def explain(labeler, text: str) -> list[str]:
    """Split ``text`` into sentences and explain each (spans are offsets in its sentence)."""
    spans = split_sentences(text) or [(0, len(text))]
    lines: list[str] = []
    for start, end in spans:
        sentence = text[start:end]
        lines.extend(explain_lines(sentence, labeler.label(sentence)))
    return lines


def explain_lines(text: str, mentions: Sequence[Mention]) -> list[str]:
    """One plain line per mention: finding, span, matched text, status, and the cue and rule that decided it.

    Plain lines (not a table) so that nothing wraps in a narrow terminal and the output greps well.
    """
    lines = [text]
    if not mentions:
        lines.append("  (no finding of the lexicon)")
    for m in mentions:
        style = _STATUS_STYLE.get(m.status, "")
        status = f"[{style}]{m.status}[/]" if style else m.status
        cue = f"cue {m.cue!r}" if m.cue else "no cue"
        lines.append(
            f"  {m.finding} ({m.category})  {m.start}-{m.end} {m.text!r}  {status}  {cue}  rule {m.rule or '-'}"
        )
    return lines


def stats_tables(stats: dict[str, Any], top: int = 25) -> list[Table]:
    """A summary table and a per-finding table (the ``top`` findings by labeled entries)."""
    summary = Table(title="weak labels", title_justify="left", show_header=False)
    summary.add_column("what")
    summary.add_column("count", justify="right")
    for key in (
        "reports",
        "sentences",
        "unique_sentences",
        "labeled_unique_sentences",
        "labeled_entries",
        "positive_entries",
        "negative_entries",
        "uncertain_entries",
        "queries",
        "positive_queries",
        "negative_queries",
    ):
        summary.add_row(key.replace("_", " "), f"{stats.get(key, 0):,}")
    per = Table(title=f"top {top} findings by labeled sentences", title_justify="left")
    for column in ("finding", "yes", "no", "uncertain", "reports yes", "reports no"):
        per.add_column(column, justify="left" if column == "finding" else "right")
    rows = sorted(stats.get("per_finding", {}).items(), key=lambda kv: -(kv[1]["yes"] + kv[1]["no"]))
    for name, row in rows[:top]:
        per.add_row(
            name,
            *(f"{row[k]:,}" for k in ("yes", "no", "uncertain", "reports_yes", "reports_no")),
        )
    return [summary, per]
