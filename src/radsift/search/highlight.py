"""Highlight the parts of a matched sentence that carry the query's words (negation included)."""

from __future__ import annotations

from radsift.text.tokens import stem, token_spans, tokenize

# Function words that would light up every sentence; negation words are deliberately absent.
_QUIET = {stem(w) for w in "a an the of in on at to and or is are was were be there this that with for as by".split()}


def highlight_spans(query: str, text: str) -> tuple[tuple[int, int], ...]:
    """``(start, end)`` ranges of ``text`` whose tokens share a stem with the query's tokens.

    Adjacent matched tokens separated only by spaces or hyphens merge into one range.
    """
    wanted = {t for t in tokenize(query) if t not in _QUIET}
    spans: list[list[int]] = []
    for start, end, tok in token_spans(text):
        if tok not in wanted:
            continue
        if spans and text[spans[-1][1]:start].strip(" -") == "":
            spans[-1][1] = end
        else:
            spans.append([start, end])
    return tuple((a, b) for a, b in spans)
