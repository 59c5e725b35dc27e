"""Terminal rendering of hits: the matched part of each sentence highlighted."""

from __future__ import annotations

from typing import Sequence

from rich.console import Console
from rich.text import Text

from radsift.records import Hit


def hit_text(hit: Hit, style: str = "bold black on yellow") -> Text:
    """The hit's sentence as rich Text with its highlight ranges styled."""
    sentence = hit.sentence.text if hit.sentence is not None else ""
    text = Text(sentence)
    for start, end in hit.highlights:
        text.stylize(style, start, end)
    return text


def print_hits(console: Console, query: str, hits: Sequence[Hit]) -> None:
    """Print one block per hit: rank, report id, score, section, highlighted sentence."""
    if not hits:
        console.print(f"no match for {query!r}", highlight=False)
        return
    for hit in hits:
        head = Text(f"{hit.rank:>3}. ", style="dim")
        head.append(hit.report_id, style="bold cyan")
        head.append(f"  score {hit.score:.4f}", style="green")
        if hit.section:
            head.append(f"  [{hit.section}]", style="magenta")
        console.print(head)
        line = Text("     ")
        line.append_text(hit_text(hit))
        console.print(line)
