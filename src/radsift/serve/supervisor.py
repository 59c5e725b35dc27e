"""Serving in forked worker processes under a parent that starts them again after a crash.

``radsift serve`` runs this way by default, with one worker or ``--workers N``: a file of the index
truncated under a worker's memory map is a SIGBUS that no Python code can catch, so the process that
reads the index is not the one that must survive it. The parent (:func:`supervise`) forks the workers,
waits for them and starts one again when a crash signal (:data:`CRASH_SIGNALS`) killed it, with one line
naming the signal; more than :data:`MAX_RESTARTS` in :data:`RESTART_WINDOW` seconds stop the server (a
crash loop). SIGINT and SIGTERM reach every worker, which finish their requests and exit. A worker that
asks for it (:data:`REOPEN_EXIT`) is started again at once, not counted as a crash.

This module knows nothing of uvicorn or the index: what a worker does is the ``run`` function it is
given (:mod:`radsift.serve.server` gives it).
"""

from __future__ import annotations

import ctypes
import os
import pickle
import signal
import sys
import time
from typing import Any, Callable

from radsift.errors import ConfigError

#: Signals that mean a worker crashed while serving (SIGBUS: a memory-mapped file of the index was truncated
#: under it; SIGSEGV, SIGABRT; SIGKILL: the kernel's OOM killer): the worker is started again.
CRASH_SIGNALS = frozenset({signal.SIGBUS, signal.SIGSEGV, signal.SIGABRT, signal.SIGKILL})
#: Restarts allowed in :data:`RESTART_WINDOW` seconds before the server gives up (a crash loop).
MAX_RESTARTS = 5
RESTART_WINDOW = 60.0
#: A worker's exit status asking to be started again (not a crash: the index it could not open can be read
#: again, and a fresh worker serves it; :mod:`radsift.serve.server`).
REOPEN_EXIT = 75
#: Linux's ``prctl`` option that sends a process a signal when its parent dies.
_PR_SET_PDEATHSIG = 1

#: ``run(number, replacement, ready)``, in a worker: serve until told to stop and return the exit status.
#: ``replacement`` is True for a worker started after another stopped; ``ready(info)`` says it is about to
#: serve (``info`` a small picklable dict, handed to ``on_ready`` in the parent).
WorkerRun = Callable[[int, bool, Callable[[dict], None]], int]


def supervise(workers: int, run: WorkerRun, on_ready: Callable[[dict], None] | None = None) -> None:
    """Fork ``workers`` processes that each call ``run``, and wait for them (see the module's docs).

    Args:
        workers: How many worker processes.
        run: What a worker does (:data:`WorkerRun`).
        on_ready: Called in the parent with the first worker's ``info`` once it is ready; the parent waits
            for that before anything else, and an error the worker raises before it is raised here, as it
            would be in one process. None: the workers start on their own (each error is one line).

    Raises:
        ConfigError: A worker stopped on an error (said on a line of its own above) or crashed too often.
        Exception: The error the first worker raised before it was ready (with ``on_ready``).
    """
    parent = os.getpid()
    children: dict[int, int] = {}

    def spawn(number: int, replacement: bool, report: int | None = None) -> None:
        pid = os.fork()
        if pid == 0:
            _child(number, replacement, run, parent, report)
        children[pid] = number

    stopping = False

    def stop(signum=signal.SIGTERM, frame=None) -> None:
        nonlocal stopping
        stopping = True
        for pid in list(children):
            try:
                os.kill(pid, signal.SIGTERM)
            except ProcessLookupError:
                pass

    previous = signal.signal(signal.SIGTERM, stop)
    try:
        if on_ready is not None:
            read, write = os.pipe()
            spawn(0, False, write)
            os.close(write)
            info = _ready_or_raise(read, children, stop)
            if info is None:
                return  # stopped (Ctrl-C, SIGTERM) while it started
            on_ready(info)
        for number in range(len(children), workers):
            spawn(number, False)
        failed = _wait(children, spawn, stop, lambda: stopping)
    finally:
        signal.signal(signal.SIGTERM, previous)
    if failed is not None:
        what = "the server process" if workers == 1 else f"worker {failed} of {workers}"
        raise ConfigError(f"{what} stopped (see its error above); the server stopped")


def _wait(children: dict[int, int], spawn, stop, stopping: Callable[[], bool]) -> int | None:
    """Wait until every child has exited, starting crashed ones again; the number of the one that failed."""
    failed, restarts = None, []
    while children:
        try:
            pid, status = os.wait()
        except KeyboardInterrupt:  # Ctrl-C reached the workers too; wait for them to finish
            stop()
            continue
        number = children.pop(pid, None)
        code = os.waitstatus_to_exitcode(status)
        if number is None or code in (0, -signal.SIGTERM, -signal.SIGINT):
            continue
        if code == REOPEN_EXIT and not stopping():
            print(f"worker {number + 1}: the index can be read again; starting a worker to serve it",
                  file=sys.stderr, flush=True)
            spawn(number, True)
            continue
        now = time.monotonic()
        restarts = [t for t in restarts if now - t < RESTART_WINDOW]
        crashed = code < 0 and -code in CRASH_SIGNALS
        if crashed and not stopping() and len(restarts) < MAX_RESTARTS:
            restarts.append(now)
            print(f"error: worker {number + 1} was killed by {signal.Signals(-code).name} (a file of the index "
                  "changed under it?); starting it again", file=sys.stderr, flush=True)
            spawn(number, True)
            continue
        if crashed and not stopping():
            print(f"error: worker {number + 1} was killed by {signal.Signals(-code).name}, {len(restarts) + 1} "
                  f"times in {RESTART_WINDOW:g} s; not starting it again", file=sys.stderr, flush=True)
        failed = failed or number + 1
        stop()
    return failed


def _ready_or_raise(read: int, children: dict[int, int], stop) -> dict | None:
    """The first worker's ``info`` once it is ready; its error raised here if it failed to start; None if
    it stopped on a signal before it was ready."""
    chunks = []
    while True:
        try:
            chunk = os.read(read, 1 << 16)
        except KeyboardInterrupt:  # the worker got Ctrl-C too: it stops, and the pipe ends
            stop()
            continue
        if not chunk:
            break
        chunks.append(chunk)
    os.close(read)
    message = _unpickle(b"".join(chunks))
    if message is not None and message[0] == "ready":
        return message[1]
    (pid,) = children
    _, status = os.waitpid(pid, 0)
    del children[pid]
    if message is not None:
        raise message[1]
    code = os.waitstatus_to_exitcode(status)
    if code in (0, -signal.SIGTERM, -signal.SIGINT):
        return None
    how = f"killed by {signal.Signals(-code).name}" if code < 0 else f"exit status {code}"
    raise ConfigError(f"the server process stopped while it started ({how}); the server stopped")


def _unpickle(data: bytes) -> tuple[str, Any] | None:
    try:
        message = pickle.loads(data) if data else None  # written by our own child, over a pipe
    except Exception:  # noqa: BLE001 - a half-written message: the worker died while it wrote it
        return None
    return message if isinstance(message, tuple) and len(message) == 2 else None


def _child(number: int, replacement: bool, run: WorkerRun, parent: int, report: int | None) -> None:
    """A forked worker: run, then exit with its status; never returns."""
    code = 0

    def ready(info: dict) -> None:
        nonlocal report
        if report is not None:
            _send(report, ("ready", info))
            report = None

    try:
        _exit_with_parent(parent)
        signal.signal(signal.SIGTERM, signal.default_int_handler)
        code = run(number, replacement, ready)
    except KeyboardInterrupt:
        pass
    except BaseException as exc:  # noqa: BLE001 - to the parent (raised there) or one line on stderr
        if report is not None:
            _send(report, ("error", exc))
        else:
            print(f"error: worker {number + 1}: {exc}", file=sys.stderr, flush=True)
        code = 1
    os._exit(code)


def _send(fd: int, message: tuple[str, Any]) -> None:
    """Write ``message`` to the parent and close the pipe (an error that does not pickle goes as its text)."""
    try:
        data = pickle.dumps(message)
        pickle.loads(data)  # an exception class that cannot be rebuilt would fail in the parent
    except Exception:  # noqa: BLE001
        data = pickle.dumps((message[0], ConfigError(str(message[1]))))
    try:
        os.write(fd, data)
    finally:
        os.close(fd)


def _exit_with_parent(parent: int) -> None:
    """Have the kernel send SIGTERM to this worker when the parent dies (Linux), so a supervisor that is
    killed (``kill -9``) leaves no worker holding the port and the index's lease."""
    if sys.platform.startswith("linux"):
        try:
            ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, int(signal.SIGTERM), 0, 0, 0)
        except (OSError, AttributeError):
            pass
    if os.getppid() != parent:  # it died before prctl took effect
        raise KeyboardInterrupt
