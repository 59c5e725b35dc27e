"""Encoding spread over worker processes on this machine (``radsift index build|add --workers N``).

:class:`ProcessEncoder` has the encoder interface a build uses (``encode``, ``dim``, ``name``,
``path``) and hands chunks of texts to ``N`` worker processes, each of which loads the model once
(:func:`worker_loader`: the torch model, the ONNX export, or a small encoder object pickled as is)
and encodes its chunks on its share of the cores. The texts are sorted by length and cut into
chunks of ``8 * batch_size`` as the one-process encoder cuts them, and every chunk's rows go back
to their places, so the vectors are the one-process vectors (up to the float noise of padding) in
the same order.

Workers are started with ``spawn`` (a forked child of a process whose OpenMP pool already ran can
hang) and ignore Ctrl-C (the parent stops them). A worker that dies (killed, out of memory) raises
:class:`EncodeWorkerError`, one line; the build that called it has written nothing yet.
"""

from __future__ import annotations

import functools
import multiprocessing
import os
import signal
import time
from concurrent.futures import FIRST_EXCEPTION, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path
from typing import Any, Callable, Iterable, Sequence

import numpy as np

from radsift.errors import ConfigError, RadsiftError
from radsift.models.encoder import Encoder
from radsift.models.onnx_encoder import OnnxEncoder
from radsift.progress import progress_bar

#: Texts per chunk, in batches: as :meth:`radsift.models.encoder.Encoder.encode` cuts them with progress.
CHUNK_BATCHES = 8


class EncodeWorkerError(RadsiftError):
    """A build's worker (an encoding process, a segment writer, a Ray task) died or failed: the build stops
    and commits nothing."""


def worker_threads(workers: int, threads: int | None = None) -> int:
    """Threads of each of ``workers`` processes: ``threads`` when given, else an equal share of the cores."""
    if threads:
        return max(1, int(threads))
    return max(1, (os.cpu_count() or 1) // max(1, workers))


def worker_loader(encoder: Any, threads: int | None = None) -> Callable[[], Any]:
    """A picklable function that loads ``encoder``'s twin in a worker process (the model read once there).

    Args:
        encoder: A loaded :class:`~radsift.models.encoder.Encoder`, :class:`~radsift.models.onnx_encoder.OnnxEncoder`,
            or any picklable object with the encoder interface (sent to the worker as is).
        threads: The worker's torch or ONNX Runtime threads.
    """
    if isinstance(encoder, OnnxEncoder):  # the parent exported the model already: the worker only loads it
        return functools.partial(OnnxEncoder.load, encoder.path, variant=encoder.variant, threads=threads,
                                 cache_dir=encoder.onnx_path.parent, export=False)
    if isinstance(encoder, Encoder):
        seq = getattr(encoder.model, "max_seq_length", None)
        return functools.partial(Encoder.load, encoder.path, threads=threads, max_seq_length=seq,
                                 device=encoder.device)
    return functools.partial(_itself, encoder)


def _itself(encoder: Any) -> Any:
    return encoder


def length_chunks(texts: Sequence[str], batch_size: int, workers: int = 1) -> list[np.ndarray]:
    """Row numbers of ``texts`` in chunks of whole batches, longest texts first: ``CHUNK_BATCHES`` batches
    a chunk, fewer when that would leave ``workers`` fewer than 4 chunks each (the last chunks then
    finish together instead of one worker encoding alone at the end)."""
    order = np.argsort([len(t) for t in texts], kind="stable")[::-1]
    batch = max(1, int(batch_size))
    per_worker = -(-len(texts) // (4 * max(1, workers)))  # ceil
    size = batch * max(1, min(CHUNK_BATCHES, -(-per_worker // batch)))
    return [order[i:i + size] for i in range(0, len(order), size)]


# The worker process's encoder (one per process, loaded by its first chunk).
_WORKER: dict[str, Any] = {}


def _init_worker(loader: Callable[[], Any], threads: int) -> None:
    ignore_interrupts()
    _WORKER["loader"], _WORKER["threads"] = loader, threads


def _encode_chunk(texts: list[str], batch_size: int) -> np.ndarray:
    if "encoder" not in _WORKER:  # loaded here, not in the initializer: an error reaches the parent as itself
        from radsift.models.encoder import set_threads

        set_threads(_WORKER["threads"])
        _WORKER["encoder"] = _WORKER["loader"]()
    return _WORKER["encoder"].encode(texts, batch_size=batch_size, progress=False)


class ProcessEncoder:
    """``encoder``'s work spread over ``workers`` processes (use as a context manager: it starts and stops them).

    Args:
        encoder: The loaded encoder (its ``dim``, ``name`` and ``path`` are this one's; see :func:`worker_loader`).
        workers: Worker processes (>= 1).
        threads: Threads per worker (None = an equal share of the cores).
    """

    def __init__(self, encoder: Any, workers: int, threads: int | None = None) -> None:
        if int(workers) < 1:
            raise ConfigError(f"--workers: must be 1 or more, not {workers}")
        self.encoder, self.workers = encoder, int(workers)
        self.threads = worker_threads(self.workers, threads)
        self.name, self.path, self.dim = encoder.name, Path(encoder.path), int(encoder.dim)
        self._pool: ProcessPoolExecutor | None = None
        self._procs: dict[int, Any] = {}

    def __enter__(self) -> "ProcessEncoder":
        loader = worker_loader(self.encoder, self.threads)
        self._pool = ProcessPoolExecutor(self.workers, mp_context=multiprocessing.get_context("spawn"),
                                         initializer=_init_worker, initargs=(loader, self.threads))
        return self

    def __exit__(self, *exc: object) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None

    def encode(self, texts: Sequence[str], *, batch_size: int = 64, progress: bool = False,
               desc: str = "encoding") -> np.ndarray:
        """Encode texts into an ``(n, dim)`` float32 matrix of unit vectors, in the order given."""
        if self._pool is None:
            raise RuntimeError("ProcessEncoder.encode outside its `with` block")
        texts = list(texts)
        out = np.empty((len(texts), self.dim), dtype=np.float32)
        if not texts:
            return out
        chunks = length_chunks(texts, batch_size, self.workers)
        with progress_bar(disable=None if progress else True) as bar:
            task = bar.add_task(f"{desc} ({self.workers} workers)", total=len(texts))
            try:
                futures: dict[Future, np.ndarray] = {
                    self._pool.submit(_encode_chunk, [texts[i] for i in idx], batch_size): idx for idx in chunks}
                self._procs = dict(getattr(self._pool, "_processes", None) or {})  # to name how one died
                pending = set(futures)
                while pending:
                    done, pending = wait(pending, return_when=FIRST_EXCEPTION)
                    for fut in done:
                        out[futures[fut]] = fut.result()
                        bar.advance(task, len(futures[fut]))
            except BrokenProcessPool:
                raise EncodeWorkerError(f"an encoding worker died ({self._exit_codes()}): the build stopped and "
                                        "wrote nothing; the index is as it was (out of memory? try fewer --workers)"
                                        ) from None
        return out

    def _exit_codes(self) -> str:
        return describe_exits(self._procs.values())


def describe_exits(procs: Iterable[Any]) -> str:
    """How a pool's worker processes ended (``killed by signal 9``), to name how one died.

    The processes are a :class:`ProcessPoolExecutor`'s (its private ``_processes``, read only for this); once
    one dies the pool terminates the others (SIGTERM), so the first death is the status that is not SIGTERM.
    """
    procs = list(procs)
    codes = sorted({code for code in map(_exit_code, procs) if code not in (None, 0)})
    codes = [c for c in codes if c != -signal.SIGTERM] or codes
    if not codes:
        return "exit status unknown"
    return ", ".join(f"killed by signal {-c}" if c < 0 else f"exit status {c}" for c in codes)


def _exit_code(proc: Any, settle: float = 2.0) -> int | None:
    """``proc``'s exit code once it has ended. The pool's own thread reaps its dead workers at the same moment
    (both wake on the process's sentinel): when it wins the ``waitpid``, our join sees no child and the code
    appears on the shared process object a moment later, so it is awaited briefly rather than read as
    unknown (a SIGKILLed worker was once reported by the other worker's SIGTERM alone)."""
    proc.join(timeout=5)
    deadline = time.monotonic() + settle
    while proc.exitcode is None and time.monotonic() < deadline:
        time.sleep(0.01)
    return proc.exitcode


def ignore_interrupts() -> None:
    """A worker's initializer: Ctrl-C is the parent's to handle (it stops the pool); one model-loading bar."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")


__all__ = ["CHUNK_BATCHES", "EncodeWorkerError", "ProcessEncoder", "describe_exits", "ignore_interrupts",
           "length_chunks", "worker_loader", "worker_threads"]
