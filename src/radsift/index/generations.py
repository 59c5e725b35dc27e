"""Which generation is live, who may write, and who reads: ``CURRENT``, the write lock and the reader leases.

``CURRENT`` names the live generation; a writer replaces it atomically (write to a temp file,
fsync, ``os.replace``: :func:`point_current`), one writer at a time (:func:`write_lock`; readers
never block). Readers hold a **lease** on the generation they read (:func:`take_lease`): a shared
``flock`` on its ``.readers`` file, held while the :class:`~radsift.index.reader.IndexStore` is
open; :mod:`radsift.index.lifecycle` removes an old generation only when it can take that lock
exclusively.
"""

from __future__ import annotations

import fcntl
import os
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from radsift.errors import IndexDamagedError, IndexStoreError
from radsift.index.format import CURRENT, GEN_PREFIX, LOCK_NAME, MARKER, READERS, TMP_PREFIX


def fsync_dir(path: Path) -> None:
    """fsync a folder, so that a rename into it is on disk."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def read_current(index_dir: Path) -> Path:
    """The live generation folder of an index directory."""
    index_dir = Path(index_dir)
    if not index_dir.exists():
        raise IndexStoreError(f"index not found: {index_dir} (build one with `radsift index build {index_dir} CORPUS`)")
    if not index_dir.is_dir():
        raise IndexStoreError(f"{index_dir} is a file, not an index folder")
    try:
        name = (index_dir / CURRENT).read_text(encoding="utf-8").strip()
    except FileNotFoundError:
        if (index_dir / MARKER).exists():  # radsift made the folder; the first build died or was stopped
            raise IndexStoreError(f"{index_dir}: a build into it never finished, so it holds no index yet: run "
                                  f"`radsift index build {index_dir} CORPUS` again") from None
        raise IndexStoreError(f"{index_dir} is not a radsift index (no {CURRENT} file)") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise IndexDamagedError(f"{index_dir / CURRENT}: cannot be read ({exc})") from None
    gen = index_dir / name
    if not name.startswith(GEN_PREFIX) or not gen.is_dir():
        raise IndexStoreError(f"{index_dir}: {CURRENT} names a missing generation {name!r}: the index is corrupt")
    return gen


@contextmanager
def write_lock(index_dir: Path) -> Iterator[None]:
    """One writer at a time per index directory (readers never block)."""
    index_dir.mkdir(parents=True, exist_ok=True)
    with open(index_dir / LOCK_NAME, "w") as fh:
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise IndexStoreError(f"{index_dir}: another radsift process is writing this index") from None
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def mark_index_dir(index_dir: Path) -> None:
    """Create the index folder with its marker first, so a build that dies early is recognised as radsift's."""
    index_dir.mkdir(parents=True, exist_ok=True)
    (index_dir / MARKER).touch()


def live_generation(index_dir: Path) -> Path | None:
    """The live generation, or None when ``CURRENT`` is missing or names nothing usable."""
    try:
        return read_current(index_dir)
    except IndexStoreError:
        return None


def point_current(index_dir: Path, gen: Path) -> None:
    """Replace ``CURRENT`` atomically (temp file, fsync, rename, fsync of the folder)."""
    pointer = index_dir / f"{TMP_PREFIX}{CURRENT}"
    with open(pointer, "w", encoding="utf-8") as fh:
        fh.write(gen.name + "\n")
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(pointer, index_dir / CURRENT)
    fsync_dir(index_dir)


def generation_numbers(index_dir: Path) -> list[int]:
    """The numbers of the generation folders on disk (live or not)."""
    out = []
    for p in index_dir.glob(f"{GEN_PREFIX}*"):
        try:
            out.append(int(p.name[len(GEN_PREFIX):]))
        except ValueError:
            continue
    return out


def take_lease(gen_dir: Path):
    """A shared lock on the generation's ``.readers`` (None where it cannot be had: read-only media)."""
    try:
        fh = open(gen_dir / READERS, "a")
    except FileNotFoundError:
        raise
    except OSError:
        return None
    fcntl.flock(fh, fcntl.LOCK_SH)
    return fh
