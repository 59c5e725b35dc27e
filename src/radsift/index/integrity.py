"""Checksums over everything that shapes an answer, checked where the data is read.

- **The manifest** carries ``manifest_sha256``: the SHA-256 of the canonical JSON of every other field
  (:func:`manifest_digest`; sorted keys, no spaces), written with it and checked each time it is read
  (:meth:`~radsift.index.manifest.Manifest.read`), and its structure is checked (:func:`check_manifest_data`)
  so a damaged one is one line naming the file, never a ``KeyError``. A manifest written before the
  checksum existed is read (``radsift index verify`` notes it; the next write records one).
- **The small arrays a search reads** (row maps, labels, BM25 lengths, term lists and postings) are
  hashed against the SHA-256 their segment's entry records when a store is opened (:func:`verify_file`;
  a later read of a file with the same stat is not hashed again, any other is: :func:`read_verified`),
  and their values checked against the ranges they index when first read (:func:`check_values`): a
  mismatch or a value out of range is an :class:`~radsift.errors.IndexDamagedError` naming the file.
  Row maps and labels are read into memory; postings are verified, then memory-mapped.
- **Files changing under an open reader** (:class:`FileWatch`): the size, inode and modification time
  of every file an open generation reads are recorded at open and compared before each request, so a
  file truncated or rewritten under a server is an error at the next request (a 503 naming it), not a
  ``SIGBUS`` from a memory map. What remains is the window inside one request.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import re
from pathlib import Path
from typing import Any, Iterable, Mapping

import numpy as np

from radsift.errors import IndexDamagedError, IndexStoreError

#: The manifest's own checksum field.
MANIFEST_SHA = "manifest_sha256"
_CHUNK = 1 << 20
_SEGMENT_NAME = re.compile(r"seg-\d{6,}")
#: Status codes a label may hold (radsift.ranking.tiers.STATUS_CODES: absent, uncertain, present).
STATUS_VALUES = (-1, 0, 1)


def manifest_digest(data: Mapping[str, Any]) -> str:
    """SHA-256 of the canonical JSON of ``data`` without its :data:`MANIFEST_SHA` field."""
    body = {k: v for k, v in data.items() if k != MANIFEST_SHA}
    text = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return hashlib.sha256(text.encode("ascii")).hexdigest()


def check_manifest_sha(data: Mapping[str, Any], known: Iterable[str], path: Path) -> bool:
    """Check the manifest's own checksum; True when it has one (False: written before checksums).

    Raises:
        IndexDamagedError: The checksum differs, or (no checksum) a field name radsift never wrote
            (a damaged ``manifest_sha256`` key, say).
    """
    recorded = data.get(MANIFEST_SHA)
    if recorded is None:
        unknown = sorted(set(data) - set(known))
        if unknown:
            raise IndexDamagedError(f"{path}: damaged manifest: no {MANIFEST_SHA} and unknown field(s) "
                                    f"{', '.join(map(repr, unknown[:3]))}; run `radsift index rollback "
                                    f"{path.parent.parent}` or rebuild the index")
        return False
    if not isinstance(recorded, str) or recorded != manifest_digest(data):
        raise IndexDamagedError(f"{path}: the manifest does not match its checksum ({MANIFEST_SHA}): it was "
                                f"changed or damaged; run `radsift index rollback {path.parent.parent}` or rebuild "
                                "the index")
    return True


def _fail(path: Path, what: str) -> None:
    raise IndexDamagedError(f"{path}: damaged manifest: {what}")


def _int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _strings(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(x, str) for x in value)


def check_manifest_data(data: Mapping[str, Any], path: Path) -> None:
    """The structure a reader relies on: a positive ``dim``, name lists, and per segment a name, counts,
    code tables, recorded files and deleted rows of the right types and ranges.

    Raises:
        IndexDamagedError: The first thing wrong, naming the manifest and the field.
    """
    if not _int(data.get("dim")) or not data["dim"]:
        _fail(path, f"dim {data.get('dim')!r} is not a positive whole number")
    for key in ("sections", "findings", "metadata_keys", "empty_ids", "build_encoders"):
        if key in data and not _strings(data[key]):
            _fail(path, f"{key} is not a list of names")
    if not isinstance(data.get("counts", {}), dict) or not isinstance(data.get("bm25", {}), dict):
        _fail(path, "counts or bm25 is not an object")
    segments = data.get("segments", [])
    if not isinstance(segments, list):
        _fail(path, "segments is not a list")
    seen = set()
    for i, seg in enumerate(segments):
        where = f"segments[{i}]"
        if not isinstance(seg, dict) or not isinstance(seg.get("name"), str) \
                or not _SEGMENT_NAME.fullmatch(seg["name"]) or seg["name"] in seen:
            _fail(path, f"{where} has no valid segment name")
        seen.add(seg["name"])
        counts = seg.get("counts")
        if not isinstance(counts, dict) or not all(_int(counts.get(k)) for k in ("reports", "sentences", "sections")):
            _fail(path, f"{where} ({seg['name']}): counts are not whole numbers")
        if not _strings(seg.get("sections", [])) or not _strings(seg.get("findings", [])):
            _fail(path, f"{where} ({seg['name']}): sections or findings is not a list of names")
        files = seg.get("files", {})
        if not isinstance(files, dict) or not all(
                isinstance(f, dict) and _int(f.get("size")) and isinstance(f.get("sha256"), str)
                and ".." not in rel.split("/") and not rel.startswith("/") for rel, f in files.items()):
            _fail(path, f"{where} ({seg['name']}): recorded files are malformed")
        deleted = seg.get("deleted", [])
        if not isinstance(deleted, list) or not all(_int(d) and d < counts["reports"] for d in deleted):
            _fail(path, f"{where} ({seg['name']}): deleted rows outside 0..{counts['reports'] - 1}")


def sha256_file(path: Path) -> str:
    """SHA-256 of a file, read in 1 MiB chunks."""
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(_CHUNK), b""):
            digest.update(chunk)
    return digest.hexdigest()


def _mismatch(path: Path, index_dir: Path) -> IndexDamagedError:
    return IndexDamagedError(f"{path}: checksum differs from the manifest's (the file was changed or damaged); "
                             f"run `radsift index verify {index_dir}`, then `radsift index rollback` or rebuild")


def file_stat(path: Path) -> tuple[int, int, int]:
    """Size, inode and modification time (ns) of a file: what changes when it is rewritten or replaced."""
    st = os.stat(path)
    return st.st_size, st.st_ino, st.st_mtime_ns


def verify_file(path: Path, recorded: Mapping, index_dir: Path, verified: dict) -> None:
    """Hash ``path`` (in chunks) against ``recorded``; remember its :func:`file_stat` in ``verified`` when it
    did not change while hashed, so a later read with the same stat need not hash it again.

    Raises:
        IndexDamagedError: Missing, unreadable, or another checksum, naming the file.
    """
    try:
        before = file_stat(path)
        digest = sha256_file(path)
        after = file_stat(path)
    except FileNotFoundError:
        raise IndexDamagedError(f"{path}: missing; run `radsift index verify {index_dir}`") from None
    except OSError as exc:
        raise IndexDamagedError(f"{path}: cannot be read ({exc.strerror or exc})") from None
    if digest != recorded.get("sha256"):
        raise _mismatch(path, index_dir)
    if before == after:
        verified[path] = after


def _known(path: Path, verified: dict | None) -> bool:
    """Whether ``path`` is, by its stat, the file hashed before (its bytes need no second hash)."""
    try:
        return verified is not None and verified.get(path) == file_stat(path)
    except OSError:
        return False


def read_verified(path: Path, recorded: Mapping | None, index_dir: Path, verified: dict | None = None) -> bytes:
    """The bytes of ``path``, checked against its ``recorded`` ``{"size", "sha256"}`` (None: unchecked), unless
    ``verified`` holds its stat from a hash when the store was opened and the file still has it after the read."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise IndexDamagedError(f"{path}: missing; run `radsift index verify {index_dir}`") from None
    except OSError as exc:
        raise IndexDamagedError(f"{path}: cannot be read ({exc.strerror or exc})") from None
    if recorded is not None and not _known(path, verified) and hashlib.sha256(data).hexdigest() != recorded.get("sha256"):
        raise _mismatch(path, index_dir)
    return data


def load_array(path: Path, recorded: Mapping | None, index_dir: Path, mmap: bool = False,
               verified: dict | None = None) -> np.ndarray:
    """A ``.npy`` array checked against its recorded checksum (see :func:`read_verified`): read into memory,
    or (``mmap``) hashed in chunks unless already verified, then memory-mapped (a large file not held twice)."""
    try:
        if not mmap:
            return np.load(io.BytesIO(read_verified(path, recorded, index_dir, verified)), allow_pickle=False)
        if recorded is not None and not _known(path, verified):
            verify_file(path, recorded, index_dir, {} if verified is None else verified)
        return np.load(path, mmap_mode="r", allow_pickle=False)
    except FileNotFoundError:
        raise IndexDamagedError(f"{path}: missing; run `radsift index verify {index_dir}`") from None
    except (ValueError, OSError, EOFError) as exc:
        raise IndexDamagedError(f"{path}: not a readable array ({exc})") from None


def check_values(path: Path, arr: np.ndarray, low: int, high: int, chunk: int = 1 << 22) -> np.ndarray:
    """``arr`` when every value is in ``low..high - 1`` (read ``chunk`` values at a time), else an error."""
    for start in range(0, arr.shape[0], chunk):
        block = np.asarray(arr[start:start + chunk])
        if block.size and (int(block.min()) < low or int(block.max()) >= high):
            bad = int(np.flatnonzero((block < low) | (block >= high))[0])
            raise IndexDamagedError(f"{path}: value {int(block[bad])} at position {start + bad} is outside "
                                    f"{low}..{high - 1}: the file is damaged")
    return arr


def check_status(path: Path, arr: np.ndarray) -> np.ndarray:
    """Label status codes: each one of :data:`STATUS_VALUES`."""
    bad = np.flatnonzero(~np.isin(arr, STATUS_VALUES))
    if bad.size:
        raise IndexDamagedError(f"{path}: status code {int(arr[bad[0]])} at position {int(bad[0])} is not a "
                                "label status: the file is damaged")
    return arr


def check_indptr(path: Path, indptr: np.ndarray, terms: int, nnz: int) -> np.ndarray:
    """BM25 column pointers: ``terms + 1`` of them, from 0 to ``nnz``, never decreasing."""
    if indptr.shape != (terms + 1,) or (indptr.size and (int(indptr[0]) != 0 or int(indptr[-1]) != nnz)) \
            or np.any(np.diff(indptr) < 0):
        raise IndexDamagedError(f"{path}: term pointers inconsistent with {terms} terms and {nnz} postings: "
                                "the file is damaged")
    return indptr


def check_terms(path: Path, data: bytes) -> list[str]:
    """A BM25 term list (``terms.json``): a JSON list of strings."""
    try:
        terms = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise IndexDamagedError(f"{path}: not a term list ({exc})") from None
    if not _strings(terms):
        raise IndexDamagedError(f"{path}: not a list of terms")
    return terms


class FileWatch:
    """Size, inode and modification time of the files an open generation reads, recorded at open.

    :meth:`check` (before each request) raises naming the first file that changed since: a file
    truncated, replaced or rewritten in place under a reader. A file that is gone is only an error for
    files that must stay (segment files); a derived file a writer removed (an old generation's graph)
    keeps its mapping valid and is skipped.
    """

    def __init__(self, index_dir: Path) -> None:
        self.index_dir = Path(index_dir)
        self._stats: dict[Path, tuple[tuple[int, int, int], bool]] = {}

    def add(self, paths: Iterable[Path], required: bool = True) -> None:
        """Start watching ``paths`` (those that exist now)."""
        for path in paths:
            try:
                self._stats[Path(path)] = (file_stat(path), required)
            except OSError:
                continue

    def check(self) -> None:
        """Raise on the first watched file that changed since it was recorded.

        Raises:
            IndexDamagedError: Naming the file and what changed.
        """
        for path, (before, required) in self._stats.items():
            try:
                now = file_stat(path)
            except OSError:
                if not required:
                    continue
                raise IndexDamagedError(f"{path}: removed while the index was open; run `radsift index verify "
                                        f"{self.index_dir}`") from None
            if now != before:
                what = (f"its size changed from {before[0]} to {now[0]} bytes" if now[0] != before[0]
                        else "it was replaced or rewritten")
                raise IndexDamagedError(f"{path}: changed while the index was open ({what}); run `radsift index "
                                        f"verify {self.index_dir}`, then restore it or `radsift index rollback`")


def verified_for_merge(problems: list, index_dir: Path, action: str) -> None:
    """Refuse to build on damaged files: ``problems`` (a deep check of the segments a write reads).

    Raises:
        IndexDamagedError: Naming the first damaged file; nothing was written.
    """
    if problems:
        raise IndexDamagedError(f"cannot {action} {index_dir}: {problems[0]}; nothing was written: restore the file, "
                                f"or `radsift index rollback {index_dir}`, or rebuild the index")


def file_and_reason(exc: Exception) -> tuple[str, str]:
    """``(file, reason)`` of an index error whose message reads "FILE: REASON" (as ``index verify`` lists it)."""
    text = str(exc)
    return text.split(": ", 1)[0], text.split(": ", 1)[-1]


def unknown_store_error(path: Path, exc: Exception) -> IndexStoreError:
    """An unexpected error reading a derived file, as one line naming it."""
    return IndexDamagedError(f"{path}: cannot be read ({type(exc).__name__}: {exc})")


def sidecar_of(graph: Path) -> Path:
    """Where the checksums of a derived cache file and its companions are recorded."""
    return graph.with_name(graph.name + ".files.json")


def record_cache(graph: Path, companions: Iterable[Path]) -> Path:
    """Record the size and SHA-256 of ``graph`` and its existing ``companions`` beside it (written to a temp
    file, then renamed: the record appears whole, after the files it describes)."""
    files = {p.name: {"size": p.stat().st_size, "sha256": sha256_file(p)} for p in [graph, *companions] if p.exists()}
    side = sidecar_of(graph)
    tmp = side.with_name(f".{side.name}.tmp-{os.getpid()}")
    tmp.write_text(json.dumps(files, sort_keys=True), encoding="utf-8")
    os.replace(tmp, side)
    return side


def cache_problems(graph: Path, deep: bool = False, only: Iterable[str] | None = None) -> list[tuple[Path, str]]:
    """``(file, reason)`` for each file recorded beside ``graph`` that is missing, of another size or
    (``deep``, or named in ``only``) of another checksum; an unreadable record is a problem of its own."""
    side = sidecar_of(graph)
    try:
        files = json.loads(side.read_text(encoding="utf-8"))
        if not isinstance(files, dict) or not all(isinstance(v, dict) for v in files.values()):
            raise ValueError("not a record of files")
    except FileNotFoundError:
        return []
    except (OSError, ValueError) as exc:
        return [(side, f"unreadable checksum record ({exc})")]
    out = []
    for name, info in files.items():
        path = graph.with_name(str(name))
        try:
            size = path.stat().st_size
        except OSError:
            out.append((path, "missing"))
            continue
        if size != info.get("size"):
            out.append((path, f"{size} bytes, {side.name} recorded {info.get('size')}"))
        elif (deep or (only is not None and name in only)) and sha256_file(path) != info.get("sha256"):
            out.append((path, f"checksum differs from {side.name}'s (the file was changed or damaged)"))
    return out
