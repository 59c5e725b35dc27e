"""Watch a drop folder: new report files are added to an index as they arrive, each exactly once.

``radsift index add INDEX --watch DIR``: every ``interval`` seconds the folder is scanned for report files
(``.csv``, ``.jsonl``, ``.ndjson``, ``.json``, ``.hl7``, ``.mllp``; hidden files and names ending in
``.part``/``.tmp`` are skipped) that have not changed for ``settle`` seconds (a file still being copied is
left for the next scan). Each new file is one ``add`` (one generation, atomic).

**Exactly once.** A ledger, ``INDEX/ingest/ledger.jsonl``, records each file by its path and the SHA-256
of its bytes: ``adding`` before the add, ``added`` (with its report count) after the commit, ``failed``
(with the one-line error) when the file cannot be read or added. A restart after a crash finds a file
left ``adding`` and asks the index whether its reports are there (an add commits all or nothing): if so
it is marked ``added``, else it is added again. A file whose bytes change is a new file. A failed file is
not retried until its bytes change.

After each batch the saved searches named with ``--saved`` re-run with "new since" (their results
printed and appended to ``INDEX/ingest/saved-NAME.jsonl``, then marked delivered). Ctrl-C stops between
files: an add in progress finishes or leaves nothing (adds are atomic).
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterator, Sequence

from radsift.corpus import read_corpus
from radsift.corpus.options import ReaderOptions
from radsift.errors import ConfigError, RadsiftError
from radsift.index import add_to_index
from radsift.index.integrity import sha256_file
from radsift.index.reader import IndexStore
from radsift.search import Index
from radsift.search.saved import SavedSearches

SUFFIXES = (".csv", ".jsonl", ".ndjson", ".json", ".hl7", ".mllp")
LEDGER = Path("ingest") / "ledger.jsonl"


@dataclass
class WatchBatch:
    """What one scan did: files added (with their report counts), files that failed, saved-search news."""

    added: dict[str, int] = field(default_factory=dict)
    failed: dict[str, str] = field(default_factory=dict)
    recovered: list[str] = field(default_factory=list)  # left "adding" by a crash, found committed
    saved: dict[str, list[str]] = field(default_factory=dict)  # saved search -> new report ids
    seconds: float = 0.0


def sha256_of(path: Path) -> str:
    """The SHA-256 of a dropped file (the ledger's identity of it)."""
    return sha256_file(path)


class Ledger:
    """The drop folder's ledger: the last state of each (file, sha256), kept through restarts."""

    def __init__(self, index_dir: Path) -> None:
        self.path = Path(index_dir) / LEDGER
        self.state: dict[tuple[str, str], dict] = {}
        lines = self.path.read_text(encoding="utf-8").splitlines() if self.path.is_file() else []
        for number, line in enumerate(lines, 1):
            if not line.strip():
                continue
            try:
                entry = json.loads(line)
                self.state[(entry["file"], entry["sha256"])] = entry
            except (ValueError, KeyError, TypeError):
                if number == len(lines):
                    continue  # a last line cut by a crash: its file is simply seen again
                raise ConfigError(f"{self.path} line {number}: not a ledger entry; move the file away to "
                                  "start over (files would then be added again)") from None

    def record(self, file: str, digest: str, state: str, **extra) -> None:
        """Append one entry and make it durable before going on."""
        entry = {"file": file, "sha256": digest, "state": state, "time": time.strftime("%Y-%m-%dT%H:%M:%S"), **extra}
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self.path.open("a", encoding="utf-8") as out:
            out.write(json.dumps(entry, ensure_ascii=False) + "\n")
            out.flush()
            os.fsync(out.fileno())
        self.state[(file, digest)] = entry

    def last(self, file: str, digest: str) -> str | None:
        entry = self.state.get((file, digest))
        return entry["state"] if entry else None


def ready_files(folder: Path, settle: float) -> list[Path]:
    """Report files of the folder not changed for ``settle`` seconds, oldest first."""
    now = time.time()
    out = []
    for path in sorted(Path(folder).rglob("*")):
        rel = path.relative_to(folder)
        if (not path.is_file() or any(p.startswith(".") for p in rel.parts)
                or path.suffix.lower() not in SUFFIXES or path.name.endswith((".part", ".tmp"))):
            continue
        if now - path.stat().st_mtime >= settle:
            out.append(path)
    return sorted(out, key=lambda p: (p.stat().st_mtime, str(p)))


def _committed(index_dir: Path, ids: Sequence[str]) -> bool:
    store = IndexStore.open(index_dir)
    try:
        return bool(ids) and all(store.report_row(i) is not None for i in ids)
    finally:
        store.close()


def scan_once(index_dir: str | Path, folder: str | Path, reader: ReaderOptions, *, settle: float = 1.0,
              saved: Sequence[str] = (), add_options: dict | None = None,
              say: Callable[[str], None] = lambda _: None) -> WatchBatch:
    """One scan of the drop folder (see the module docstring): add what is new, once."""
    index_dir, folder = Path(index_dir), Path(folder)
    if not folder.is_dir():
        raise ConfigError(f"--watch {folder}: no such folder")
    t0 = time.perf_counter()
    ledger = Ledger(index_dir)
    batch = WatchBatch()
    for path in ready_files(folder, settle):
        name, digest = str(path.relative_to(folder)), sha256_of(path)
        state = ledger.last(name, digest)
        if state in ("added", "failed"):
            continue
        try:
            reports = list(read_corpus([path], reader))
            if state == "adding" and _committed(index_dir, [r.id for r in reports]):
                ledger.record(name, digest, "added", reports=len(reports), recovered=True)
                batch.recovered.append(name)
                continue
            ledger.record(name, digest, "adding", reports=len(reports))
            add_to_index(index_dir, reports, progress=False, **(add_options or {}))
        except RadsiftError as exc:
            ledger.record(name, digest, "failed", error=str(exc))
            batch.failed[name] = str(exc)
            say(f"failed: {name}: {exc}")
            continue
        ledger.record(name, digest, "added", reports=len(reports))
        batch.added[name] = len(reports)
        say(f"added {len(reports)} reports from {name}")
    if batch.added and saved:
        batch.saved = rerun_saved(index_dir, saved, say)
    batch.seconds = time.perf_counter() - t0
    return batch


def rerun_saved(index_dir: Path, names: Sequence[str], say: Callable[[str], None]) -> dict[str, list[str]]:
    """Re-run saved searches with "new since": their new report ids, appended to ``INDEX/ingest/saved-NAME.jsonl``
    before the run is marked delivered."""
    index = Index.open(index_dir)
    searches = SavedSearches.of_index(index_dir)
    out = {}
    for name in names:
        run = searches.run(index, name, new=True, mark=False)
        ids = [r.hit.report_id for r in run.rows]
        path = Path(index_dir) / "ingest" / f"saved-{name}.jsonl"
        with path.open("a", encoding="utf-8") as handle:
            handle.write(json.dumps({"time": time.strftime("%Y-%m-%dT%H:%M:%S"), "new": ids}) + "\n")
            handle.flush()
            os.fsync(handle.fileno())
        searches.record(run)  # delivered: the next "new" starts here
        out[name] = ids
        say(f"saved search {name}: {len(ids)} new")
    return out


def watch_folder(index_dir: str | Path, folder: str | Path, reader: ReaderOptions, *, interval: float = 2.0,
                 settle: float = 1.0, saved: Sequence[str] = (), add_options: dict | None = None,
                 say: Callable[[str], None] = lambda _: None, scans: int | None = None) -> Iterator[WatchBatch]:
    """Scan the folder every ``interval`` seconds (``scans`` times; None: until interrupted), yielding each batch
    that added or failed something. Names of ``saved`` searches are checked before the first scan."""
    if saved:
        known = set(SavedSearches.of_index(index_dir).names())
        missing = [n for n in saved if n not in known]
        if missing:
            raise ConfigError(f"--saved {missing[0]!r}: no such saved search of {index_dir}")
    done = 0
    while scans is None or done < scans:
        batch = scan_once(index_dir, folder, reader, settle=settle, saved=saved, add_options=add_options, say=say)
        done += 1
        if batch.added or batch.failed or batch.recovered:
            yield batch
        if scans is None or done < scans:
            time.sleep(interval)


def run_watch(index_dir: str | Path, folder: str | Path, reader: ReaderOptions, *, interval: float = 2.0,
              settle: float = 1.0, saved: Sequence[str] = (), add_options: dict | None = None,
              scans: int | None = None, say: Callable[[str], None] = lambda _: None) -> dict[str, int]:
    """``radsift index add --watch``: :func:`watch_folder` until Ctrl-C (or ``scans`` scans); the totals."""
    totals = {"files": 0, "reports": 0, "failed": 0}
    say(f"watching {folder} for report files ({', '.join(SUFFIXES)}); Ctrl-C stops")
    try:
        for batch in watch_folder(index_dir, folder, reader, interval=interval, settle=settle, saved=saved,
                                  add_options=add_options, say=say, scans=scans):
            totals["files"] += len(batch.added)
            totals["reports"] += sum(batch.added.values())
            totals["failed"] += len(batch.failed)
    except KeyboardInterrupt:
        say("stopped")
    say(f"added {totals['reports']} reports from {totals['files']} files ({totals['failed']} failed)")
    return totals
