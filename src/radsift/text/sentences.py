"""Sentence splitting for radiology text, with exact character offsets.

A small regex-driven splitter written for report language rather than a general NLP
pipeline (spaCy is far slower and trips on report conventions). It finds candidate
boundaries (``. ! ?`` followed by space, end of text or a glued capital; line breaks) and
decides each with a few rules:

* decimals and measurements never split (``2.5 cm``, ``1.2 x 3.4 cm``): a period followed
  by a digit is not a candidate;
* known abbreviations do not end a sentence (``Dr.``, ``vs.``, ``approx.``, ``e.g.``,
  ``i.e.``), nor does ``No.`` before a number; sentence-initial ``No`` is a normal word;
* de-identification tokens are words: ``x-XXXX.`` and ``XXXX XXXX.`` end sentences;
* numbered lists: ``1. Bullous emphysema. 2. No pneumothorax.`` gives one sentence per
  item, the item number kept at the start of its sentence; ``1. A 2. B`` splits before
  ``2.`` when it continues the list;
* a missing space after a period splits (``apex.There``) unless the token is dotted
  (``e.g.``, ``U.S.``);
* blank lines and bullet / numbered lines always split; a single line break splits unless
  the line was wrapped mid-sentence (it ends with ``,`` ``;`` ``-`` ... or the next line
  starts lower-case).
"""

from __future__ import annotations

import re
from typing import Iterable

from radsift.records import Report, Sentence

# Abbreviations (lower-case, without their final period) that never end a sentence.
_ABBREVIATIONS = frozenset(
    {
        "dr", "drs", "mr", "mrs", "ms", "prof", "vs", "v", "approx", "e.g", "i.e", "cf", "fig",
        "figs", "viz", "al", "incl", "resp", "jr", "sr", "st", "mt", "ft", "ref", "pp",
    }
)  # fmt: skip
# Dotted abbreviations like "a.m", "p.m", "U.S": a sentence ends there only before a capital.
_DOTTED_RE = re.compile(r"(?:[A-Za-z]{1,3}\.)+[A-Za-z]{1,3}")
# Candidates: sentence punctuation (+ closing quotes/brackets) before space, end or a
# glued capital; or a run of line breaks.
_CANDIDATE_RE = re.compile(r"(?P<punct>[.!?]+)[\"')\]]*(?=\s|$|[A-Z])|(?P<nl>\n(?:[ \t\r\f\v]*\n)*)")
_LIST_MARKER_RE = re.compile(r"(?:[-*+\u2022\u00b7\u2023\u25aa\u25cf]|\d{1,2}[.)]|[a-zA-Z][.)])(?=\s)")
_GLUED_ITEM_RE = re.compile(r"[A-Za-z)]\.(\d{1,2})$")
_WRAP_END_CHARS = frozenset(",;(/-&+")
_ITEM_START_CHARS = frozenset(".!?:;")


def _token_start(text: str, end: int) -> int:
    """Start of the whitespace-free run that ends at ``end``."""
    j = end
    while j > 0 and not text[j - 1].isspace():
        j -= 1
    return j


def _at_item_start(text: str, pos: int) -> bool:
    """True when ``pos`` begins a new item: text start, after a sentence end, colon or line break."""
    k = pos
    while k > 0 and text[k - 1] in " \t":
        k -= 1
    return k == 0 or text[k - 1] in _ITEM_START_CHARS or text[k - 1] in "\r\n"


def _is_label(text: str, pos: int) -> bool:
    """True when the item before ``pos`` is a short capitalized label ("Chest", "Left knee")."""
    k = pos
    while k > 0 and text[k - 1] not in ".!?:\n" and pos - k < 40:
        k -= 1
    if k > 0 and text[k - 1] not in ".!?:\n":
        return False
    words = text[k:pos].split()
    return 0 < len(words) <= 2 and words[0][:1].isupper()


def _asks_next(text: str, pos: int) -> bool:
    """Whether the "?" at ``pos`` stands before the words it asks ("fever, ? pneumonia", "PMH: ? stroke"), not after
    a question: followed by a word, and opening its clause (the text's or a line's start, a comma, colon or
    semicolon before it, spaces aside) or loose before a lower-case word ("cough ? pneumonia"; "Effusion ? Resolved."
    stays two sentences)."""
    k = pos
    while k > 0 and text[k - 1] in " \t":
        k -= 1
    following = _next_char(text, pos + 1)[:1]
    if not following.isalpha():
        return False
    opens = k == 0 or text[k - 1] in ",:;(\n\r"
    return opens or (k < pos and following.islower())


def _next_char(text: str, pos: int) -> str:
    """First non-space character at or after ``pos`` ('' at the end)."""
    n = len(text)
    while pos < n and text[pos].isspace():
        pos += 1
    return text[pos] if pos < n else ""


def split_sentences(text: str) -> list[tuple[int, int]]:
    """Split report text into sentences.

    Args:
        text: Any report text (a section, a whole report).

    Returns:
        ``(start, end)`` offsets into ``text``, in order, non-overlapping. Each span is
        stripped of surrounding whitespace and holds at least one letter or digit (stray
        punctuation such as a lone ``.`` is dropped).
    """
    cuts: list[int] = []
    last_item: int | None = None  # number of the last list marker seen ("2." -> 2)
    n = len(text)
    for m in _CANDIDATE_RE.finditer(text):
        if m.group("nl") is not None:
            if _newline_splits(text, m.start(), m.end()):
                cuts.append(m.end())
            continue
        punct = m.group("punct")
        if punct == "?" and _asks_next(text, m.start()):
            continue  # "cough and fever, ? pneumonia": a clinician's mark asking the words after it
        if punct != ".":
            cuts.append(m.end())  # "?", "!", "..." and mixtures end a sentence
            continue
        dot = m.start()
        j = _token_start(text, dot)
        token = text[j:dot].lstrip("([\"'")
        glued = m.end() < n and not text[m.end()].isspace()
        after = text[m.end()] if glued else _next_char(text, m.end())

        glued_item = _GLUED_ITEM_RE.search(token)
        if glued_item:  # "effusion.2.No": an item number glued to the previous sentence
            cuts.append(dot - len(glued_item.group(1)))
            last_item = int(glued_item.group(1))
            continue
        if token.isdigit() and len(token) <= 2:
            number = int(token)
            if _at_item_start(text, j):
                last_item = number  # list marker "2." at an item start: not an end
                continue
            if number == 1 and after[:1].isupper() and _is_label(text, j):
                last_item = 1  # "Chest 1. No acute disease.": a list under a short label
                continue
            if last_item is not None and number == last_item + 1 and after[:1].isupper():
                cuts.append(j)  # "1. A 2. B": the list goes on, cut before "2."
                last_item = number
                continue
            cuts.append(m.end())
            continue
        lower = token.lower()
        if lower in _ABBREVIATIONS:
            continue
        if lower == "etc" and not after[:1].isupper():
            continue
        if lower == "no" and after[:1].isdigit():
            continue  # "No. 5": a number, not the word "no"
        if "." in token and _DOTTED_RE.fullmatch(token) and (glued or not after[:1].isupper()):
            continue  # "e.g.", "a.m. today"; "U.S.A" glued to a capital is one token
        if glued and len(token) < 2:
            continue  # "U.S.": a single letter glued to a capital is an initialism
        cuts.append(m.end())

    spans: list[tuple[int, int]] = []
    start = 0
    for cut in sorted(set(cuts)) + [n]:
        if cut <= start:
            continue
        span = _strip_span(text, start, cut)
        if span is not None:
            spans.append(span)
        start = cut
    return spans


def _newline_splits(text: str, start: int, end: int) -> bool:
    """Whether the line break(s) in ``text[start:end]`` end a sentence."""
    if text.count("\n", start, end) > 1:
        return True  # blank line: paragraph break
    if _LIST_MARKER_RE.match(text, _skip_blanks(text, end)):
        return True  # the next line is a bullet or numbered item
    k = start
    while k > 0 and text[k - 1] in " \t\r":
        k -= 1
    prev = text[k - 1] if k > 0 else ""
    nxt = _next_char(text, end)
    if not prev or not nxt:
        return True
    if prev in _WRAP_END_CHARS:
        return False  # the line was wrapped mid-sentence
    return not (nxt.islower() and prev not in ".!?:")


def _skip_blanks(text: str, pos: int) -> int:
    while pos < len(text) and text[pos] in " \t":
        pos += 1
    return pos


def _strip_span(text: str, start: int, end: int) -> tuple[int, int] | None:
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    if start == end or not any(c.isalnum() for c in text[start:end]):
        return None
    return start, end


def report_sentences(report: Report, sections: Iterable[str] | None = None) -> list[Sentence]:
    """Split a report's sections into sentences.

    Args:
        report: The report.
        sections: Section names to split (others are skipped; names the report lacks are
            ignored). ``None`` splits every section.

    Returns:
        Sentences in the report's section order, numbered from 0 within each section, with
        offsets into that section's text: ``report.sections[s.section][s.start:s.end] ==
        s.text``.
    """
    wanted = None if sections is None else set(sections)
    out: list[Sentence] = []
    for name, text in report.sections.items():
        if wanted is not None and name not in wanted:
            continue
        for index, (start, end) in enumerate(split_sentences(text)):
            out.append(Sentence(report.id, name, index, start, end, text[start:end]))
    return out
