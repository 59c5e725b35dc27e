"""A build spread over workers, each writing its own segment; the parent commits them as one generation.

``radsift index build|add --workers N`` (N > 1) cuts the new reports into N contiguous shares of about equal
text (:func:`cut_shares`), and N spawned worker processes each split, encode, label and tokenise their share
and write it as a segment (:func:`write_share`: :func:`radsift.index.segment_data.segment_data` and
:func:`radsift.index.writer.write_segment`, what a one-process build runs for all its reports). ``--ray
ADDRESS`` runs the same function on Ray Data (``map_batches`` over one item a share, one share a batch and a
block, as many tasks at once as shares, never retried: a task that fails fails the build, and a second try
could write a second copy of a segment already named). The parent holds the write lock throughout: it names
the segments beforehand (:func:`radsift.index.writer.segment_names`), checks every file of each against the
checksums its worker recorded, its arrays and small arrays (:mod:`radsift.index.verify`), and the caller
commits them in share order as one generation: a reader sees all of them or none. The shares are contiguous
and their segments listed in order, so the rows are a one-process build's rows and a search gives the same
hits and scores (up to float noise where a text shared by two shares is encoded in two batches).

A worker that dies, a worker that raises or a Ray task that fails stops the build: the other workers
are stopped, the segments written so far and the temp folders are removed (nothing lists them; the
next writer would remove them too, and readers and ``index verify`` read only listed segments), and
the error is one line. A worker's own :class:`~radsift.errors.RadsiftError` reaches the caller as itself.
"""

from __future__ import annotations

import contextlib
import json
import multiprocessing
import pickle
import warnings
from collections.abc import Callable
from concurrent.futures import FIRST_EXCEPTION, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from radsift.errors import IndexDamagedError, RadsiftError
from radsift.index.format import segment_dir
from radsift.index.lifecycle import remove_leftovers
from radsift.index.segment_data import segment_data
from radsift.index.verify import check_segment, check_small_arrays
from radsift.index.writer import segment_names, write_segment
from radsift.models.parallel import (EncodeWorkerError, describe_exits, ignore_interrupts, worker_loader,
                                     worker_threads)
from radsift.models.ray_encode import first_line, ray_data, ray_session, ray_tasks, require_ray, task_error
from radsift.progress import progress_bar
from radsift.records import Report

NOTHING_COMMITTED = "the build stopped and committed nothing; the index is as it was"


@dataclass(frozen=True)
class ShareJob:
    """What every worker of a build needs besides its share (picklable: it travels to each worker)."""

    index_dir: str
    loader: Callable[[], Any]  # loads the encoder in the worker (radsift.models.parallel.worker_loader)
    batch_size: int = 64
    label: bool = True
    lexicon: str | None = None


def write_share(job: ShareJob, name: str, records: list[dict]) -> tuple[dict, int]:
    """Worker side: load the encoder, make the share's segment data and write it as segment ``name``.

    Args:
        job: The build's settings.
        name: The segment's name (chosen by the parent, which holds the write lock).
        records: The share's reports (:meth:`radsift.records.Report.to_dict`, in row order).

    Returns:
        ``(entry, n_encoded)``: the segment's manifest entry and how many distinct texts were encoded.
    """
    encoder = job.loader()
    reports = [Report(r["id"], r["sections"], r["metadata"]) for r in records]
    data, encoded = segment_data(reports, encoder, batch_size=job.batch_size, label=job.label, lexicon=job.lexicon)
    return write_segment(Path(job.index_dir), data, name=name), encoded


def cut_shares(reports: list[Report], count: int) -> list[list[Report]]:
    """``reports`` in at most ``count`` contiguous, non-empty shares of about equal text (encoding costs
    by the text), in order."""
    n = len(reports)
    count = max(1, min(int(count), n))
    if count == 1:
        return [list(reports)]
    weights = np.cumsum([1 + sum(len(t) for t in r.sections.values()) for r in reports], dtype=np.float64)
    cuts = np.searchsorted(weights, weights[-1] * np.arange(1, count) / count, side="right")
    bounds = [0, *sorted({int(c) for c in np.clip(cuts, 1, n - 1)}), n]
    return [reports[a:b] for a, b in zip(bounds, bounds[1:])]


def write_shares(index_dir: Path, reports: list[Report], encoder, *, workers: int = 2, ray: str | None = None,
                 threads: int | None = None, batch_size: int = 64, label: bool = True,
                 lexicon: str | Path | None = None, progress: bool = False) -> tuple[list[dict], int]:
    """Write ``reports`` as one segment per share, by ``workers`` local processes or Ray tasks at ``ray``;
    nothing is committed (the caller commits the entries as one generation). Caller holds the write lock.

    Args:
        index_dir: The index folder.
        reports: The new reports (at least one), in row order.
        encoder: The loaded encoder; each worker loads its twin (:func:`radsift.models.parallel.worker_loader`).
        workers: Local worker processes (and shares); with ``ray``, Ray tasks when > 1 (else as many as the
            cluster's CPUs allow).
        ray: A Ray cluster's address (checked by the caller), or None for local processes.
        threads: Threads of each worker (None: an equal share of the cores; 1 a Ray task).
        batch_size: Encoding batch size.
        label: Label the sentences.
        lexicon: The labeler's lexicon (None: the packaged one).
        progress: Show a progress bar over the shares.

    Returns:
        ``(entries, n_encoded)``: the verified segments' manifest entries in share order, and the distinct
        texts the workers encoded (a text in two shares counts twice).

    Raises:
        EncodeWorkerError: A worker died or failed (one line); nothing written is left listed.
        IndexDamagedError: A worker's segment does not verify.
    """
    index_dir = Path(index_dir)
    threads = worker_threads(workers, threads) if ray is None else (threads or 1)
    job = ShareJob(str(index_dir.resolve()), worker_loader(encoder, threads), batch_size, label,
                   str(lexicon) if lexicon else None)  # absolute paths: the same on every Ray node
    try:
        if ray is None:
            shares = cut_shares(reports, workers)
            results = _run_local(job, shares, segment_names(index_dir, len(shares)), progress)
        else:
            results = _run_ray(job, reports, ray, workers, threads, progress)
        entries = [entry for entry, _ in results]
        _verify(index_dir, entries, int(encoder.dim))
    except BaseException:
        remove_leftovers(index_dir)  # the segments written so far, and a dead worker's temp folder
        raise
    return entries, sum(n for _, n in results)


def _verify(index_dir: Path, entries: list[dict], dim: int) -> None:
    """Every file of each worker's segment against the checksums it recorded, its arrays' shapes, its vectors
    finite and unit length, and the small arrays a search reads (:mod:`radsift.index.verify`)."""
    for entry in entries:
        problems = check_segment(segment_dir(index_dir, entry["name"]), entry, dim, deep=True)
        problems = problems or check_small_arrays(index_dir, entry)
        if problems:
            raise IndexDamagedError(f"a worker's segment does not verify: {problems[0]}; {NOTHING_COMMITTED}")


def _run_local(job: ShareJob, shares: list[list[Report]], names: list[str], progress: bool) -> list[tuple[dict, int]]:
    """Each share written by its own spawned process (a forked child of a process whose OpenMP pool already
    ran can hang)."""
    results: list[Any] = [None] * len(shares)
    pool = ProcessPoolExecutor(len(shares), mp_context=multiprocessing.get_context("spawn"),
                               initializer=ignore_interrupts)
    procs: dict = {}
    try:
        futures = {pool.submit(write_share, job, names[i], [r.to_dict() for r in share]): i
                   for i, share in enumerate(shares)}
        procs = dict(getattr(pool, "_processes", None) or {})  # to name how one died, and to stop them
        with progress_bar(disable=None if progress else True) as bar:
            task = bar.add_task(f"writing {len(shares)} segments ({len(shares)} workers)",
                                total=sum(map(len, shares)))
            pending = set(futures)
            while pending:
                done, pending = wait(pending, return_when=FIRST_EXCEPTION)
                for fut in done:
                    results[futures[fut]] = fut.result()
                    bar.advance(task, len(shares[futures[fut]]))
    except BrokenProcessPool:
        raise EncodeWorkerError(f"a build worker died ({describe_exits(procs.values())}): {NOTHING_COMMITTED} "
                                "(out of memory? try fewer --workers)") from None
    except RadsiftError:
        raise
    except Exception as exc:  # noqa: BLE001 - whatever a worker raised: one line, not its traceback
        raise EncodeWorkerError(f"a build worker failed ({type(exc).__name__}: {first_line(exc)}): "
                                f"{NOTHING_COMMITTED}") from None
    finally:
        _stop(pool, procs, failed=any(r is None for r in results))
    return results


def _stop(pool: ProcessPoolExecutor, procs: dict, failed: bool) -> None:
    """Stop the pool; a failed build stops the other workers instead of waiting for their shares."""
    if not failed:
        pool.shutdown(wait=True)
        return
    pool.shutdown(wait=False, cancel_futures=True)
    for p in procs.values():
        if p.is_alive():
            p.terminate()
    for p in procs.values():
        p.join(timeout=10)


def _write_batch(batch: dict[str, np.ndarray], job: ShareJob, names: list[str], shares: list) -> dict[str, np.ndarray]:
    """Ray Data worker side (``map_batches``, one share a batch): the share's reports from the object store,
    written as its segment by :func:`write_share`. The entry travels back as JSON; an error as data (pickled,
    hex): raised, Ray Data would add lines of retry advice to its message and wrap it in its own types."""
    i = int(batch["share"][0])
    entry, encoded, error = {}, 0, ""
    try:
        entry, encoded = write_share(job, names[i], require_ray().get(shares[i]))
    except Exception as exc:  # noqa: BLE001 - whatever the share writer raised goes back to the driver
        error = _pickled_error(exc)
    return {"share": np.array([i]), "entry": np.array([json.dumps(entry)]), "encoded": np.array([encoded]),
            "error": np.array([error])}


def _pickled_error(exc: Exception) -> str:
    """A worker's error for the driver: a radsift error as itself, any other as one line of
    :class:`EncodeWorkerError`."""
    if isinstance(exc, RadsiftError):
        with contextlib.suppress(Exception):  # one that does not pickle is said in words below
            return pickle.dumps(exc).hex()
    failed = EncodeWorkerError(f"a Ray build task failed ({type(exc).__name__}: {first_line(exc)}): "
                               f"{NOTHING_COMMITTED}")
    return pickle.dumps(failed).hex()


def _run_ray(job: ShareJob, reports: list[Report], address: str, workers: int, threads: int,
             progress: bool) -> list[tuple[dict, int]]:
    """Each share written by a Ray Data ``map_batches`` task (one share a batch and a block, ``threads`` CPUs
    each, as many at once as shares, never retried: a second try could write a second copy of a segment)."""
    with ray_session(address) as ray:
        shares = cut_shares(reports, ray_tasks(ray, workers, threads))
        names = segment_names(Path(job.index_dir), len(shares))
        refs = [ray.put([r.to_dict() for r in share]) for share in shares]  # each task fetches its own share
        results: list[Any] = [None] * len(shares)
        try:
            with ray_data(ray) as data, progress_bar(disable=None if progress else True) as bar:
                task = bar.add_task(f"writing {len(shares)} segments (Ray {address})", total=len(reports))
                ds = data.from_items([{"share": i} for i in range(len(shares))], override_num_blocks=len(shares))
                with warnings.catch_warnings():  # max_retries has no named parameter (Ray 2.60: the extra pins < 2.64)
                    warnings.filterwarnings("ignore", "`ray_remote_args` is deprecated")
                    ds = ds.map_batches(_write_batch, batch_size=1, batch_format="numpy",
                                        compute=data.TaskPoolStrategy(size=len(shares)), num_cpus=threads,
                                        fn_kwargs={"job": job, "names": names, "shares": refs}, max_retries=0)
                # each block as it comes (iter_rows holds finished blocks back while others run: an error would
                # wait for the slowest share)
                for out in ds.iter_batches(batch_size=None, batch_format="numpy", prefetch_batches=0):
                    for i, entry, encoded, error in zip(out["share"], out["entry"], out["encoded"], out["error"]):
                        if error:  # the first error stops the build (Ray Data cancels the other tasks)
                            raise pickle.loads(bytes.fromhex(str(error)))
                        results[int(i)] = (json.loads(str(entry)), int(encoded))
                        bar.advance(task, len(shares[int(i)]))
        except Exception as exc:  # noqa: BLE001 - Ray wraps a task's error in its own exception types
            cause = task_error(exc)
            if isinstance(cause, RadsiftError):  # one line already, and what the caller knows how to handle
                raise cause from None
            raise EncodeWorkerError(f"a Ray build task failed ({type(cause).__name__}: {first_line(cause)}): "
                                    f"{NOTHING_COMMITTED}") from None
    if any(r is None for r in results):  # cannot happen unless Ray Data dropped a block: never commit a gap
        raise EncodeWorkerError(f"a Ray build task returned no segment: {NOTHING_COMMITTED}")
    return results


__all__ = ["ShareJob", "cut_shares", "write_share", "write_shares"]
