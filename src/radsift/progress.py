"""One progress style for every long step: a rich bar on a terminal, plain lines elsewhere.

On a terminal, :func:`progress_bar` draws rich bars on stderr. With stderr sent to a file or a
pipe (a log, ``nohup``, a CI job) it draws nothing but prints one plain line per running task at
least every 10 seconds, e.g. ``encoding sentences: 1200/5000 (24%), 35 s``, and a last line when a
task that was reported ends, so a long ``radsift index build`` is never silent in a log.
``RADSIFT_NO_PROGRESS=1`` turns both off.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from typing import Callable, TextIO

from rich.progress import (BarColumn, MofNCompleteColumn, Progress, Task, TaskID, TextColumn, TimeElapsedColumn,
                           TimeRemainingColumn)

#: Seconds between two plain progress lines off a terminal.
LINE_INTERVAL = 10.0


def progress_bar(disable: bool | None = None, *, interval: float = LINE_INTERVAL,
                 stream: TextIO | None = None) -> Progress:
    """The progress display for a long step, used as ``with progress_bar() as bar: ...``.

    Args:
        disable: True: show nothing. None (default): a rich bar when stderr is a terminal, plain
            lines every ``interval`` seconds when it is not, nothing when ``$RADSIFT_NO_PROGRESS`` is set.
            False: a rich bar even off a terminal.
        interval: Seconds between plain lines (off a terminal).
        stream: Where plain lines go (default: stderr).

    Returns:
        A :class:`rich.progress.Progress` (``add_task``, ``advance``, ``update`` as usual).
    """
    if disable is None:
        if os.environ.get("RADSIFT_NO_PROGRESS"):
            disable = True
        elif not (stream or sys.stderr).isatty():
            return LineProgress(interval=interval, stream=stream)
        else:
            disable = False
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


def describe(task: Task) -> str:
    """One plain line for a task: ``description: done/total (pct%), elapsed s``."""
    done = int(task.completed)
    if task.total:
        head = f"{done}/{int(task.total)} ({100.0 * task.completed / task.total:.0f}%)"
    else:
        head = f"{done}"
    return f"{task.description}: {head}, {task.elapsed or 0.0:.0f} s"


class LineProgress(Progress):
    """A :class:`~rich.progress.Progress` that draws no bar and prints plain lines instead.

    While it runs (between ``start`` and ``stop``, i.e. inside ``with``), a background thread prints
    every unfinished task's state each ``interval`` seconds; a task that was reported gets a last
    line when it finishes (or when the progress stops). Short tasks print nothing.

    Args:
        interval: Seconds between lines.
        stream: Where lines go (default: ``sys.stderr`` at the time of writing).
        clock: The time source (tests pass a fake one and call :meth:`report`).
        thread: Run the reporting thread (tests turn it off and call :meth:`report`).
    """

    def __init__(self, *, interval: float = LINE_INTERVAL, stream: TextIO | None = None,
                 clock: Callable[[], float] = time.monotonic, thread: bool = True) -> None:
        super().__init__(TextColumn("{task.description}"), disable=True, get_time=clock)
        self.interval = float(interval)
        self._stream = stream
        self._clock = clock
        self._use_thread = thread
        self._stop_event = threading.Event()
        self._thread: threading.Thread | None = None
        self._last_line: float | None = None
        self._reported: set[TaskID] = set()
        self._closed: set[TaskID] = set()
        self._write_lock = threading.Lock()
        self._stopping = False

    # -- output -------------------------------------------------------------------------------
    def _write(self, line: str) -> None:
        stream = self._stream or sys.stderr
        with self._write_lock:
            try:
                stream.write(line + "\n")
                stream.flush()
            except (OSError, ValueError):  # a closed pipe or file must not break the work
                pass

    def report(self, force: bool = False) -> list[str]:
        """Print a line for each running task if ``interval`` has passed since the last lines
        (always with ``force``); returns the lines printed."""
        now = self._clock()
        if self._last_line is None:
            self._last_line = now  # the first lines come one interval after the start
        if not force and now - self._last_line < self.interval:
            return []
        self._last_line = now
        lines = []
        with self._lock:
            tasks = [t for t in self._tasks.values() if t.started and not t.finished and t.id not in self._closed]
        for task in tasks:
            self._reported.add(task.id)
            lines.append(describe(task))
        for line in lines:
            self._write(line)
        return lines

    def _finish_lines(self) -> None:
        """A last line for each finished task that was reported before."""
        with self._lock:
            done = [t for t in self._tasks.values()
                    if t.id in self._reported and t.id not in self._closed and (t.finished or self._stopping)]
            for task in done:
                self._closed.add(task.id)
        for task in done:
            self._write(describe(task))

    def _run(self) -> None:
        step = min(self.interval, 1.0)
        while not self._stop_event.wait(step):
            self.report()
            self._finish_lines()

    # -- Progress -----------------------------------------------------------------------------
    def start(self) -> None:
        self._stopping = False
        self._last_line = self._clock()
        if self._use_thread and self._thread is None:
            self._stop_event.clear()
            self._thread = threading.Thread(target=self._run, name="radsift-progress", daemon=True)
            self._thread.start()

    def stop(self) -> None:
        self._stopping = True
        self._stop_event.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None
        self._finish_lines()

    def update(self, task_id: TaskID, **kwargs) -> None:  # type: ignore[override]
        super().update(task_id, **kwargs)
        self._after_change()

    def advance(self, task_id: TaskID, advance: float = 1) -> None:
        super().advance(task_id, advance)
        self._after_change()

    def _after_change(self) -> None:
        if not self._use_thread:
            self.report()
        self._finish_lines()
