"""What an index keeps: garbage collection of old generations and unreferenced segments, and rollback.

A writer keeps the live generation and the one it replaced (for ``radsift index rollback``) and
removes any other generation that no reader holds: it takes the generation's lease
(:func:`~radsift.index.generations.take_lease`) exclusively first, so a reader that opened an
older generation keeps a consistent view until it reloads. Segments are removed only when no
remaining generation lists them.
"""

from __future__ import annotations

import fcntl
import json
import shutil
from pathlib import Path

from radsift.errors import IndexDamagedError, IndexStoreError
from radsift.index.format import GEN_PREFIX, READERS, SEG_PREFIX, SEGMENTS, TMP_PREFIX
from radsift.index.generations import generation_numbers, point_current, read_current, write_lock
from radsift.index.integrity import MANIFEST_SHA, manifest_digest
from radsift.index.manifest import MANIFEST_NAME, Manifest
from radsift.index.verify import check_generation


def remove_unread_generations(index_dir: Path, keep: set[str]) -> list[str]:
    """Delete generations not in ``keep`` that no reader holds (their lease taken exclusively first)."""
    removed = []
    for number in sorted(generation_numbers(index_dir)):
        gen = index_dir / f"{GEN_PREFIX}{number:06d}"
        if gen.name in keep:
            continue
        lease = gen / READERS
        try:
            fh = open(lease, "a")
        except OSError:
            fh = None  # no lease file (an older generation, or an orphan): nobody can hold it
        try:
            if fh is not None:
                fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
            shutil.rmtree(gen, ignore_errors=True)
            removed.append(gen.name)
        except BlockingIOError:
            continue  # a reader still uses it: a later writer removes it
        finally:
            if fh is not None:
                fh.close()
    return removed


def remove_unreferenced_segments(index_dir: Path) -> list[str]:
    """Delete segments that no remaining generation lists (a leased old generation keeps its own).

    Nothing is removed when a generation's manifest cannot be read: what it lists is unknown.
    """
    referenced = referenced_names(index_dir)
    if referenced is None:
        return []
    removed = []
    for p in sorted((index_dir / SEGMENTS).glob(f"{SEG_PREFIX}*")):
        if p.is_dir() and p.name not in referenced:
            shutil.rmtree(p, ignore_errors=True)
            removed.append(p.name)
    return removed


def referenced_names(index_dir: Path) -> set[str] | None:
    """Names of the segments that some generation on disk lists (None: a manifest could not be read)."""
    names: set[str] = set()
    for number in generation_numbers(index_dir):
        path = index_dir / f"{GEN_PREFIX}{number:06d}" / MANIFEST_NAME
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            if MANIFEST_SHA in data and data[MANIFEST_SHA] != manifest_digest(data):
                return None  # a damaged manifest: what it lists is unknown, so nothing may go
            names.update(seg["name"] for seg in data.get("segments", []))
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            return None
    return names


def remove_leftovers(index_dir: Path) -> None:
    """Delete temp folders of writers that crashed or were interrupted, and segments nothing lists."""
    for folder in (index_dir, index_dir / SEGMENTS):
        for p in folder.glob(f"{TMP_PREFIX}*"):
            if p.is_dir():
                shutil.rmtree(p, ignore_errors=True)
            else:
                p.unlink(missing_ok=True)
    remove_unreferenced_segments(index_dir)


def rollback(index_dir: str | Path) -> tuple[str, str]:
    """Make the generation before the live one live again (atomically, under the write lock).

    Returns:
        ``(from, to)`` generation names.

    Raises:
        IndexStoreError: No earlier generation is left, or it is damaged too.
    """
    index_dir = Path(index_dir)
    with write_lock(index_dir):
        live = read_current(index_dir)
        number = int(live.name[len(GEN_PREFIX):])
        earlier = sorted(n for n in generation_numbers(index_dir) if n < number)
        if not earlier:
            raise IndexStoreError(f"{index_dir}: no generation before {live.name} is left to roll back to; "
                                  "rebuild the index with `radsift index build --overwrite`")
        target = index_dir / f"{GEN_PREFIX}{earlier[-1]:06d}"
        problems = check_generation(target, Manifest.read(target / MANIFEST_NAME), deep=True)
        if problems:
            raise IndexDamagedError(f"cannot roll back to {target.name}: {problems[0]}")
        point_current(index_dir, target)
    return live.name, target.name
