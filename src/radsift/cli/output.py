"""Where the commands write: results on stdout (:data:`console`), notes and progress on stderr
(:data:`err_console`, :func:`say`), so that a command's output can be piped."""

from __future__ import annotations

from rich.console import Console

from radsift.corpus import ReadStats

console = Console()
err_console = Console(stderr=True)


def say(message: str) -> None:
    """A note or a progress line, on stderr (what the library's ``say`` and ``log`` callbacks get)."""
    err_console.print(message, highlight=False)


def report_read_stats(stats: ReadStats) -> None:
    """The reader's summary (skipped rows, empty reports), when there is one."""
    summary = stats.summary()
    if summary:
        err_console.print(summary, highlight=False)
