"""One progress-bar style for every long step (rich), quiet when output is not a terminal or in CI."""

from __future__ import annotations

import os
import sys

from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn


def progress_bar(disable: bool | None = None) -> Progress:
    """A rich Progress with bar, count, elapsed and remaining time, written to stderr."""
    if disable is None:
        disable = bool(os.environ.get("RADSIFT_NO_PROGRESS")) or not sys.stderr.isatty()
    from rich.console import Console

    return Progress(
        TextColumn("[progress.description]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
        console=Console(stderr=True),
        disable=disable,
        transient=False,
    )
