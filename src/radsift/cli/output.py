"""Where the commands write: results on stdout (:data:`console`), notes and progress on stderr
(:data:`err_console`, :func:`say`), so that a command's output can be piped."""

from __future__ import annotations

import os
import sys

from rich.console import Console

from radsift.corpus import ReadStats

#: Columns of a line written to a file or a pipe (tables and rules take the width; text is not wrapped).
PIPED_WIDTH = 160


def _console(stderr: bool = False) -> Console:
    """A console that wraps at the terminal's width, and not at 80 columns when the output goes to a file or a pipe
    (a saved log or a grep would cut a hit's label or a heading in two); $COLUMNS still wins."""
    stream = sys.stderr if stderr else sys.stdout
    wide = not stream.isatty() and "COLUMNS" not in os.environ
    return Console(stderr=stderr, width=PIPED_WIDTH if wide else None, soft_wrap=wide)


console = _console()
err_console = _console(stderr=True)


def say(message: str) -> None:
    """A note or a progress line, on stderr (what the library's ``say`` and ``log`` callbacks get)."""
    err_console.print(message, highlight=False)


def report_read_stats(stats: ReadStats) -> None:
    """The reader's summary (skipped rows, empty reports), when there is one."""
    summary = stats.summary()
    if summary:
        err_console.print(summary, highlight=False)
