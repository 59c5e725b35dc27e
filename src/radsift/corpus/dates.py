"""Exam dates as radsift stores them: ``date`` (``YYYY-MM-DD``, what filters and timelines compare) and,
when the source gives a time, ``datetime`` (ISO 8601).

Accepted: ISO 8601 dates and date-times (``2025-03-07``, ``2025-03-07T14:05``, ``2025-03-07 14:05:09``,
with ``Z`` or an offset) and the compact forms hospital systems write (HL7's ``20250307``,
``202503071405``). Refused, with the reason: anything else, including ``03/07/2025``, which is March 7th
in one country and July 3rd in the next (convert it to ISO first: radsift does not guess).
"""

from __future__ import annotations

import re
from datetime import date, datetime

_COMPACT = re.compile(r"^(\d{4})(\d{2})(\d{2})(?:(\d{2})(\d{2})(\d{2})?)?$")
_SLASHED = re.compile(r"^\d{1,2}[/.]\d{1,2}[/.]\d{2,4}")


def normalise_date(value: str) -> tuple[str, str | None]:
    """``(date, datetime)`` of an exam date: ``("2025-03-07", None)`` or ``("2025-03-07", "2025-03-07T14:05")``.

    Raises:
        ValueError: Not a date radsift accepts (see the module docstring), or not a real day.
    """
    text = str(value).strip()
    m = _COMPACT.match(text)
    try:
        if m:
            y, mo, d, h, mi, s = m.groups()
            day = date(int(y), int(mo), int(d)).isoformat()
            if h is None:
                return day, None
            stamp = datetime(int(y), int(mo), int(d), int(h), int(mi), int(s or 0))
            return day, stamp.isoformat(timespec="seconds" if s else "minutes")
        if len(text) == 10:
            return date.fromisoformat(text).isoformat(), None
        stamp = datetime.fromisoformat(text.replace("Z", "+00:00") if text.endswith("Z") else text)
        clock = re.split(r"[T ]", text, maxsplit=1)[1] if re.search(r"[T ]", text) else ""
        spec = "seconds" if clock.count(":") >= 2 else "minutes"
        return stamp.date().isoformat(), stamp.isoformat(timespec=spec)
    except ValueError as exc:
        hint = (" (day and month order differs between countries: write it as YYYY-MM-DD)"
                if _SLASHED.match(text) else " (expected YYYY-MM-DD, an ISO date-time, or YYYYMMDD[HHMM])")
        raise ValueError(f"{text[:40]!r} is not a date{hint}") from exc
