"""Counts kept while reading a corpus, so nothing is dropped silently."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class ReadStats:
    """What :func:`radsift.corpus.read_corpus` saw.

    Attributes:
        reports: Reports yielded (empty ones included).
        files: Files opened.
        empty: Ids of reports yielded with no non-blank section text.
        skipped: ``(location, reason)`` of rows skipped under ``on_error="skip"``.
    """

    reports: int = 0
    files: int = 0
    empty: list[str] = field(default_factory=list)
    skipped: list[tuple[str, str]] = field(default_factory=list)

    def summary(self) -> str:
        """A one-line account, e.g. ``"3851 reports from 1 file; 0 empty; 0 skipped"``."""
        parts = [
            f"{self.reports} report{'s' if self.reports != 1 else ''} from "
            f"{self.files} file{'s' if self.files != 1 else ''}"
        ]
        empty = f"{len(self.empty)} empty"
        if self.empty:
            shown = ", ".join(self.empty[:3]) + (", ..." if len(self.empty) > 3 else "")
            empty += f" ({shown})"
        parts.append(empty)
        skipped = f"{len(self.skipped)} skipped"
        if self.skipped:
            location, reason = self.skipped[0]
            skipped += f" (first: {location}: {reason})"
        parts.append(skipped)
        return "; ".join(parts)
