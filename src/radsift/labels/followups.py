"""Follow-up recommendations in report sentences: that one is made, for which exam, and when it is due.

Rule-based, as the rest of the labels: a sentence recommends a follow-up when a recommending cue
("recommend", "suggest", "advise", "should be obtained", "follow-up ... is recommended", "consider",
"repeat") governs an imaging exam or a follow-up, and no negation ("no follow-up is needed", "not
recommended") or history ("on the follow-up CT of March", "compared with the prior follow-up") turns it
into something else. What it extracts:

* **modality**: CT, MR, US, XR, PT (PET), NM, MG as DICOM codes (:mod:`radsift.text.modalities`; the exam named; None when it says only "follow-up");
* **interval**: when the exam is due: "in 3 months", "in 6-12 months" (the earlier bound: the first
  day it is due), "at 12 months", "in 4 to 6 weeks", "in one year", "annual" (a year), "short-interval"
  without a number (None: no date can be computed), "Fleischner" with an interval named beside it.

:func:`find_followup` reads one sentence; :func:`due_date` adds the interval to the exam date.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date, timedelta

from radsift.text.modalities import modality_in

_NUM_WORDS = {"one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8, "nine": 9,
              "ten": 10, "eleven": 11, "twelve": 12, "eighteen": 18, "twenty-four": 24, "a": 1, "an": 1}
_UNIT_DAYS = {"day": 1, "week": 7, "month": 30, "year": 365}
_NUM = r"(\d+(?:\.\d+)?|" + "|".join(sorted(_NUM_WORDS, key=len, reverse=True)) + r")"
_INTERVAL = re.compile(
    r"\b(?:in|within|at|after|for|every)?\s*(?:approximately\s+|about\s+|another\s+)?" + _NUM
    + r"(?:\s*(?:-|to|–|or)\s*" + _NUM + r")?\s*-?\s*(day|week|month|year)s?\b", re.I)
_ANNUAL = re.compile(r"\b(annual(?:ly)?|yearly|in a year)\b", re.I)
_CUE = re.compile(
    r"\b(recommend\w*|suggest\w*|advis\w*|should (?:be|undergo|have|receive)|consider\w*|"
    r"(?:is|are) (?:warranted|indicated|advised|suggested|recommended)|repeat|optional|follow[- ]?up (?:with|by)|"
    r"could be (?:obtained|performed)|may be (?:obtained|performed|helpful)|would be (?:helpful|useful)|"
    r"further (?:evaluation|imaging|characterization|assessment) (?:with|by)|fleischner)\b", re.I)
_FOLLOWUP = re.compile(r"\b(follow[- ]?up|surveillance|reassess\w*|re-?evaluat\w*|repeat|"
                       r"short[- ]interval|further (?:evaluation|imaging|characterization))\b", re.I)
_NEGATED = re.compile(
    r"\b(no (?:further )?(?:imaging |radiologic |radiographic )?(?:follow[- ]?up|further imaging|"
    r"further evaluation)(?: imaging)? (?:is |are )?(?:needed|necessary|required|recommended|indicated|warranted)|"
    r"not (?:recommended|needed|necessary|required|indicated|warranted)|no (?:further )?follow[- ]?up|"
    r"does not (?:require|need)|need not|without need)\b", re.I)
_HISTORY = re.compile(
    r"\b(compared (?:to|with)|comparison|prior|previous(?:ly)?|was (?:recommended|performed|obtained)|"
    r"on the (?:\w+ )?follow[- ]?up|since the|dated|from \d{1,2}/\d{1,2})\b", re.I)


@dataclass(frozen=True)
class FollowUp:
    """A recommended follow-up: the exam's modality (None: not named) and its interval (``amount`` of
    ``unit``: day, week, month or year; None: no interval given)."""

    modality: str | None
    amount: int | None
    unit: str | None
    text: str = ""

    @property
    def interval(self) -> str | None:
        """``"3 month"`` style, or None."""
        return f"{self.amount} {self.unit}" if self.amount is not None else None


def _number(token: str) -> float:
    return float(token) if token[0].isdigit() else float(_NUM_WORDS[token.lower()])


def interval_of(sentence: str) -> tuple[int, str] | None:
    """``(amount, unit)`` until the recommended exam is due: the earlier bound of the first interval named
    ("6-12 months" -> ``(6, "month")``), a year for "annual"; None when none is named."""
    m = _INTERVAL.search(sentence)
    if m:
        return int(_number(m.group(1))), m.group(3).lower()
    if _ANNUAL.search(sentence):
        return 1, "year"
    return None


def find_followup(sentence: str) -> FollowUp | None:
    """The follow-up a sentence recommends, or None (see the module docstring)."""
    text = " ".join(sentence.split())
    if _NEGATED.search(text):
        return None
    # "Follow-up CT in 3 months." (an impression's own words) recommends without a cue word
    nominal = _FOLLOWUP.match(text) is not None and interval_of(text) is not None
    if not nominal and not _CUE.search(text):
        return None
    modality = modality_in(text)
    interval = interval_of(text)
    if modality is None and not _FOLLOWUP.search(text):
        return None  # "recommend clinical correlation": no exam, no follow-up
    cue = _CUE.search(text) or _FOLLOWUP.match(text)
    history = _HISTORY.search(text)
    if history and history.start() < cue.start() and not re.search(r"\b(recommend|suggest|advis)", text, re.I):
        return None  # "compared with the prior CT, repeated ..." : a past exam, not a recommendation
    if re.search(r"\bwas (?:recommended|suggested|advised)\b", text, re.I):
        return None  # reported history of a recommendation
    amount, unit = interval if interval else (None, None)
    return FollowUp(modality, amount, unit, text)


def due_date(exam_date: str, followup: FollowUp) -> str | None:
    """The date a follow-up is due (``YYYY-MM-DD``): the exam date plus the interval in calendar units (a
    month later is the same day of the next month, or its last day); None without an interval or a date."""
    if followup.amount is None or not exam_date:
        return None
    day = date.fromisoformat(exam_date[:10])
    if followup.unit in ("day", "week"):
        return (day + timedelta(days=followup.amount * (7 if followup.unit == "week" else 1))).isoformat()
    months = followup.amount * (12 if followup.unit == "year" else 1)
    year, month = divmod(day.month - 1 + months, 12)
    year, month = day.year + year, month + 1
    last = (date(year + month // 12, month % 12 + 1, 1) - timedelta(days=1)).day
    return date(year, month, min(day.day, last)).isoformat()
