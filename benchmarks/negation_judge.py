"""An independent regex negation judge for the open-vocabulary negation benchmark.

It exists to check radsift's negation reader by a *different* rule, so it imports nothing
from radsift: a shared bug cannot agree with itself. It is deliberately plain (a NegEx-style
window rule), and every rule below is tested in ``tests/test_negation_judge.py``.

Rules:

1. **Sentences.** The text is split into sentences after a period, semicolon or newline that
   is followed by white space and an upper-case letter, or by the end of the text. A comma
   counts as white space there ("No edema.,EKG shows ...": notes scraped without their line
   breaks, such as MTSamples, write a heading break so). It is also split at ", but " and
   " however ".
2. **Mentions.** In each sentence every variant (a regular expression) is searched
   case-insensitively between word boundaries; a plural ``s`` or ``es`` may follow it, so
   ``kidney stone`` also finds "kidney stones". Overlapping variants give one mention
   (the longest variant is tried first).
3. **Clauses.** Cues only count inside the mention's clause: a clause ends at "but",
   "however", "although", "except", ";" or ":". So "no fever but chest pain" negates fever
   only.
4. **Negated.** A mention is negated when, in its clause,

   * a pre-negation cue (:data:`PRE_NEGATION`: "no", "not", "without", "negative for",
     "denies", "denied", "deny", "free of", "absence of", "absent", "ruled out",
     "no evidence of", "no sign(s) of", "unremarkable for", "never had") ends within the
     :data:`PRE_WINDOW` (8) words before it, or
   * a post-negation cue (:data:`POST_NEGATION`: "is/was/are/were not seen", "not identified",
     "not present", "not visualized", "not appreciated", "was/is/were negative",
     "is/are/was absent", "has resolved", "resolved", "ruled out", "were not") starts within
     the :data:`POST_WINDOW` (6) words after it.

   Only "ruled out" negates; "rule out" (no "d") is an uncertainty cue. A negation word
   inside an uncertainty cue ("can not exclude", "not excluded") does not negate.
5. **Uncertain.** Otherwise a mention is uncertain when an uncertainty cue is in the same
   windows: before it (:data:`PRE_UNCERTAIN`: "possible", "possibly", "probable", "probably",
   "questionable", "suspected", "suspicious for", "concern(ing) for", "cannot exclude",
   "may represent", "likely", "unlikely", "rule out", "r/o", "versus", "vs", "differential")
   or after it (:data:`POST_UNCERTAIN`: "is suspected", "cannot be excluded", "not excluded",
   "unlikely", "?"). Negation wins over uncertainty ("no evidence of possible fever":
   negated).
6. **Affirmed.** Any other mention.
7. **Aggregation** over all mentions of the text: an affirmed and a negated mention together
   give ``"mixed"``; otherwise a definite reading outranks an uncertain one (affirmed or
   negated if there is one, ``"uncertain"`` when every mention is uncertain); no mention at
   all gives ``"none"``.

:func:`opposite` says whether a verdict contradicts a query: for a query asking that the
finding is *present*, ``"negated"`` is the opposite; for one asking that it is *absent*,
``"affirmed"`` is. ``"mixed"`` is the opposite of neither (the text says both, so it
contradicts no query outright), nor are ``"uncertain"`` and ``"none"``.

:func:`load_findings` reads the benchmark's query set (``benchmarks/data/open_vocab_findings.tsv``):
findings outside radsift's packaged chest X-ray lexicon (no name or variant holds a phrase of
it, and no variant finds one or a part of one), each with the regular expressions this judge
finds it by. Its counts were measured with this judge over the distinct MTSamples
transcriptions: ``notes_negated`` notes hold a mention read as negated, ``notes_mentioned``
notes mention the finding at all. A finding was kept when at least 3 notes hold a negated
mention and at least 3 notes mention it in a sentence with no negation cue at all.
"""

from __future__ import annotations

import csv
import re
from functools import lru_cache
from pathlib import Path
from typing import Iterable

#: Verdicts of :func:`judge`.
VERDICTS = ("affirmed", "negated", "uncertain", "mixed", "none")
#: Query polarities accepted by :func:`opposite`.
POLARITIES = ("present", "absent")
#: Categories allowed in the findings TSV.
CATEGORIES = ("neuro", "abdominal", "pelvic", "vascular", "musculoskeletal", "ct-mr-us", "sign-symptom", "other")
#: Columns of the findings TSV, in order.
COLUMNS = ("finding", "category", "variants", "notes_negated", "notes_mentioned")

#: Words before a mention in which a pre-cue must end.
PRE_WINDOW = 8
#: Words after a mention in which a post-cue must start.
POST_WINDOW = 6

PRE_NEGATION = (
    "no", "not", "without", "negative for", "denies", "denied", "deny", "free of", "absence of",
    "absent", "ruled out", "no evidence of", "no signs of", "no sign of", "unremarkable for", "never had",
)
POST_NEGATION = (
    "is not seen", "was not seen", "are not seen", "were not seen", "not identified", "not present",
    "not visualized", "not appreciated", "was negative", "is negative", "were negative", "is absent",
    "are absent", "was absent", "has resolved", "resolved", "ruled out", "were not",
)
PRE_UNCERTAIN = (
    "possible", "possibly", "probable", "probably", "questionable", "suspected", "suspicious for",
    "concern for", "concerning for", "cannot exclude", "can not exclude", "may represent", "likely",
    "unlikely", "rule out", "r/o", "versus", "vs", "differential",
)
POST_UNCERTAIN = ("is suspected", "cannot be excluded", "can not be excluded", "not excluded", "unlikely", "?")


def _cue_regex(cues: Iterable[str]) -> re.Pattern[str]:
    # Longest first so "no evidence of" is reported rather than "no"; "?" is not a word, so it
    # gets no word boundaries.
    parts = []
    for cue in sorted(cues, key=len, reverse=True):
        body = r"\s+".join(re.escape(w) for w in cue.split())
        parts.append(body if not cue[-1].isalnum() else rf"(?<![\w/]){body}\b")
    return re.compile("|".join(parts), re.IGNORECASE)


_PRE_NEG = _cue_regex(PRE_NEGATION)
_POST_NEG = _cue_regex(POST_NEGATION)
_PRE_UNC = _cue_regex(PRE_UNCERTAIN)
_POST_UNC = _cue_regex(POST_UNCERTAIN)
_ANY_UNC = _cue_regex(PRE_UNCERTAIN + POST_UNCERTAIN)

# Sentence ends: . ; or newline before white space and an upper-case letter, or before the end
# (case-sensitive: the upper-case letter is the point); ", but " and " however " also split.
# A comma may stand for the white space: MTSamples lost its line breaks when scraped, so
# "No edema.,EKG shows ..." is two sentences.
_SENTENCE_END = re.compile(r"[.;\n]+(?=[\s,]+[A-Z]|[\s,]*$)|\n+(?=[A-Z])")
_SPLIT_WORDS = re.compile(r",\s+but\s+|\s+however\s+", re.IGNORECASE)
# Clause breaks inside a sentence.
_CLAUSE_BREAK = re.compile(r"\b(?:but|however|although|except)\b|[;:]", re.IGNORECASE)
_WORD = re.compile(r"[A-Za-z0-9]+(?:['/-][A-Za-z0-9]+)*")


def split_sentences(text: str) -> list[str]:
    """Sentences of ``text`` by rule 1 (see the module docstring), empty ones dropped."""
    pieces = _SENTENCE_END.split(text)
    out: list[str] = []
    for piece in pieces:
        # Commas left at a cut (the ".," of scraped headings) are no part of a sentence.
        out.extend(p.strip(" ,\t\r\n") for p in _SPLIT_WORDS.split(piece) if p.strip(" ,\t\r\n"))
    return out


@lru_cache(maxsize=4096)
def _mention_regex(variants: tuple[str, ...]) -> re.Pattern[str]:
    if not variants or any(not v.strip() for v in variants):
        raise ValueError(f"variants must be non-empty regular expressions, got {list(variants)!r}")
    ordered = sorted(variants, key=len, reverse=True)  # the longest variant wins an overlap
    body = "|".join(f"(?:{v})" for v in ordered)
    return re.compile(rf"\b(?:{body})(?:s|es)?\b", re.IGNORECASE)


def _clause_bounds(sentence: str, start: int, end: int) -> tuple[int, int]:
    """Start and end offsets of the clause that holds the mention ``[start, end)``."""
    lo, hi = 0, len(sentence)
    for brk in _CLAUSE_BREAK.finditer(sentence):
        if brk.end() <= start:
            lo = brk.end()
        elif brk.start() >= end:
            hi = brk.start()
            break
    return lo, hi


def _cues(text: str, pattern: re.Pattern[str], mask: re.Pattern[str] | None) -> list[re.Match[str]]:
    """Matches of ``pattern`` in ``text``, less those inside a match of ``mask``."""
    spans = [m.span() for m in mask.finditer(text)] if mask is not None else []
    return [m for m in pattern.finditer(text) if not any(a <= m.start() and m.end() <= b for a, b in spans)]


def _pre_cue(before: str, pattern: re.Pattern[str], mask: re.Pattern[str] | None = None) -> bool:
    """A pre-cue that *ends* within the last :data:`PRE_WINDOW` words of ``before``."""
    words = list(_WORD.finditer(before))
    window_start = words[max(0, len(words) - PRE_WINDOW)].start() if words else 0
    return any(m.end() > window_start for m in _cues(before, pattern, mask))


def _post_cue(after: str, pattern: re.Pattern[str], mask: re.Pattern[str] | None = None) -> bool:
    """A post-cue that *starts* within the first :data:`POST_WINDOW` words after the mention."""
    words = list(_WORD.finditer(after))
    limit = words[POST_WINDOW - 1].end() if len(words) >= POST_WINDOW else len(after)
    return any(m.start() < limit for m in _cues(after, pattern, mask))


def mention_status(sentence: str, start: int, end: int) -> str:
    """``"negated"``, ``"uncertain"`` or ``"affirmed"`` for the mention ``sentence[start:end]``."""
    lo, hi = _clause_bounds(sentence, start, end)
    # Both windows see the whole clause so that a multi-word cue crossing a window edge
    # ("no evidence of", "is not seen") is read whole; the helpers apply the word limits.
    before, after = sentence[lo:start], sentence[end:hi]
    # The "not" of "can not exclude" / "not excluded" is no negation: uncertainty cues mask it.
    if _pre_cue(before, _PRE_NEG, _ANY_UNC) or _post_cue(after, _POST_NEG, _ANY_UNC):
        return "negated"
    if _pre_cue(before, _PRE_UNC) or _post_cue(after, _POST_UNC):
        return "uncertain"
    return "affirmed"


def mentions(text: str, variants: list[str]) -> list[tuple[str, str, str]]:
    """Every mention of the finding: ``(sentence, matched text, status)`` in reading order."""
    pattern = _mention_regex(tuple(variants))
    out = []
    for sentence in split_sentences(text):
        for m in pattern.finditer(sentence):
            out.append((sentence, m.group(), mention_status(sentence, m.start(), m.end())))
    return out


def judge(text: str, variants: list[str]) -> str:
    """What ``text`` says about the finding named by ``variants``.

    Args:
        text: A note or report.
        variants: Regular-expression alternatives naming the finding (no ``s``/``es`` needed).

    Returns:
        ``"affirmed"``, ``"negated"``, ``"uncertain"``, ``"mixed"`` (affirmed and negated
        mentions both) or ``"none"`` (no mention), by the rules of the module docstring.

    Raises:
        ValueError: ``variants`` is empty or holds an empty string.
    """
    kinds = {status for _, _, status in mentions(text, variants)}
    if not kinds:
        return "none"
    if {"affirmed", "negated"} <= kinds:
        return "mixed"
    for kind in ("affirmed", "negated"):  # a definite reading outranks an uncertain one
        if kind in kinds:
            return kind
    return "uncertain"


def opposite(query_polarity: str, verdict: str) -> bool:
    """Whether ``verdict`` contradicts a query that asks for the finding ``query_polarity``.

    Args:
        query_polarity: ``"present"`` or ``"absent"``.
        verdict: One of :data:`VERDICTS`.

    Returns:
        True for (present, negated) and (absent, affirmed) only; ``"mixed"``, ``"uncertain"``
        and ``"none"`` are the opposite of no query.

    Raises:
        ValueError: An unknown polarity or verdict.
    """
    if query_polarity not in POLARITIES:
        raise ValueError(f"query polarity must be one of {POLARITIES}, got {query_polarity!r}")
    if verdict not in VERDICTS:
        raise ValueError(f"verdict must be one of {VERDICTS}, got {verdict!r}")
    return verdict == ("negated" if query_polarity == "present" else "affirmed")


def load_findings(path: str | Path) -> list[dict]:
    """Read the findings TSV (header ``finding, category, variants, notes_negated, notes_mentioned``).

    Args:
        path: The TSV file.

    Returns:
        One dict per row: ``finding`` (str), ``category`` (str), ``variants`` (list of str),
        ``notes_negated`` and ``notes_mentioned`` (int), ``line`` (its line in the file).

    Raises:
        ValueError: A missing or unknown column, a row with the wrong number of fields, an
            empty finding or variants list, a variant that is not a valid regular expression,
            an unknown category, a count that is not a whole number, or a repeated finding;
            the message names the file and line.
    """
    path = Path(path)
    rows: list[dict] = []
    seen: dict[str, int] = {}
    with path.open(encoding="utf-8", newline="") as handle:
        reader = csv.reader(handle, delimiter="\t", quoting=csv.QUOTE_NONE)
        header = next(reader, None)
        if header is None:
            raise ValueError(f"{path}:1: empty file, expected the header {list(COLUMNS)}")
        header = [h.strip() for h in header]
        missing = [c for c in COLUMNS if c not in header]
        unknown = [c for c in header if c not in COLUMNS]
        if missing or unknown:
            raise ValueError(f"{path}:1: header must be {list(COLUMNS)}; missing {missing}, unknown {unknown}")
        for fields in reader:
            line = reader.line_num
            if not any(f.strip() for f in fields):
                continue  # a blank line
            if len(fields) != len(header):
                raise ValueError(f"{path}:{line}: expected {len(header)} tab-separated fields, got {len(fields)}")
            row = {name: value.strip() for name, value in zip(header, fields)}
            finding = row["finding"]
            if not finding:
                raise ValueError(f"{path}:{line}: empty finding")
            if finding in seen:
                raise ValueError(f"{path}:{line}: finding {finding!r} repeats line {seen[finding]}")
            seen[finding] = line
            if row["category"] not in CATEGORIES:
                raise ValueError(f"{path}:{line}: category {row['category']!r} is not one of {CATEGORIES}")
            variants = [v.strip() for v in row["variants"].split("|")]
            if not row["variants"] or any(not v for v in variants):
                raise ValueError(f"{path}:{line}: empty variants for {finding!r}")
            for variant in variants:
                try:
                    re.compile(variant)
                except re.error as exc:
                    raise ValueError(f"{path}:{line}: variant {variant!r} is not a regular expression: {exc}") from None
            counts = {}
            for key in ("notes_negated", "notes_mentioned"):
                if not row[key].isdigit():
                    raise ValueError(f"{path}:{line}: {key} must be a whole number, got {row[key]!r}")
                counts[key] = int(row[key])
            rows.append({"finding": finding, "category": row["category"], "variants": variants, **counts, "line": line})
    return rows
