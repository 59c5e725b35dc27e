"""radsift's own progress: a rich bar on a terminal, a plain line at least every interval elsewhere."""

from __future__ import annotations

import io
import time

from rich.progress import Progress

from radsift.progress import LineProgress, progress_bar


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_off_a_terminal_a_line_comes_every_interval_with_count_share_and_time():
    clock, out = FakeClock(), io.StringIO()
    with LineProgress(interval=10, stream=out, clock=clock, thread=False) as bar:
        task = bar.add_task("encoding sentences", total=5000)
        clock.now += 4
        bar.advance(task, 600)
        assert out.getvalue() == ""  # nothing before the first interval
        clock.now += 31
        bar.advance(task, 600)
        assert out.getvalue() == "encoding sentences: 1200/5000 (24%), 35 s\n"
        clock.now += 5
        bar.advance(task, 100)
        assert out.getvalue().count("\n") == 1  # not again within the interval
        clock.now += 10
        bar.update(task, advance=3700)
    lines = out.getvalue().splitlines()
    # The task finished at the last update: its last line says so, and only once.
    assert lines[-1] == "encoding sentences: 5000/5000 (100%), 50 s"
    assert lines.count(lines[-1]) == 1


def test_short_work_prints_nothing():
    clock, out = FakeClock(), io.StringIO()
    with LineProgress(interval=10, stream=out, clock=clock, thread=False) as bar:
        task = bar.add_task("labeling sentences", total=10)
        clock.now += 2
        bar.advance(task, 10)
    assert out.getvalue() == ""


def test_the_thread_reports_work_that_makes_no_progress_call():
    # A step that runs longer than the interval without advancing still gets its lines.
    out = io.StringIO()
    with LineProgress(interval=0.05, stream=out) as bar:
        bar.add_task("building BM25", total=None)
        time.sleep(0.4)
    lines = out.getvalue().splitlines()
    assert len(lines) >= 3 and all(line.startswith("building BM25: 0, ") for line in lines)


def test_progress_bar_picks_lines_off_a_terminal_and_nothing_when_asked(monkeypatch):
    out = io.StringIO()  # not a terminal
    monkeypatch.delenv("RADSIFT_NO_PROGRESS", raising=False)
    assert isinstance(progress_bar(stream=out), LineProgress)
    bar = progress_bar(disable=True)
    assert isinstance(bar, Progress) and not isinstance(bar, LineProgress) and bar.disable
    monkeypatch.setenv("RADSIFT_NO_PROGRESS", "1")
    assert not isinstance(progress_bar(stream=out), LineProgress)
