"""Poly-encoder codes of an index's section passages, kept beside it in ``INDEX/cache/poly/``.

A poly-encoder (:mod:`radsift.models.poly_encoder`) reads a passage into ``m`` code vectors that
depend on the passage alone, so they are derived data like the HNSW graphs (:mod:`radsift.index.graphs`):
computed once per segment and model (segments never change), so an ``index add`` encodes only its new
segment. Per segment and model::

    INDEX/cache/poly/seg-000003.<fingerprint>.npy          float16 (n_windows, m, dim), unit-length codes
    INDEX/cache/poly/seg-000003.<fingerprint>.windows.npz  owner: int32 (n_windows,), each window's section
                                                           row in the segment; meta: what it was built from

A section is read as the index reads it for its bi-encoder vector: one window, or overlapping windows of
180 words sharing 60 when it is longer (:func:`radsift.text.aspects.section_windows`). Every window
has its codes and a section scores by its best window (as the passages benchmark scores poly-encoder
passages), so the end of a long section counts. Every section of the segment is encoded, deleted ones
included (the segment never changes; the store's live rows are mapped at query time), at ``m x dim x 2``
bytes per window (16 codes of 384 dimensions: 12 KiB).

``<fingerprint>`` is :func:`poly_fingerprint`: the SHA-256 of the poly folder's weight, code and
tokenizer files (hashed in full: about 0.1 s for MiniLM's 90 MB), of the window settings and of
:data:`CACHE_VERSION`. The sidecar records the segment's identity (the SHA-256 of its ``store.sqlite``
that the manifest records: a segment name can come back after a rollback). A cache file that is
missing, unreadable, not finite, of another shape (windows, ``m``, ``dim``) or from another segment or
window setting is encoded again: never read as codes. Files are written beside their place and renamed
into it; the old codes file is removed before a new sidecar is written, so codes never pair with
another build's sidecar. Caches of segments no generation lists any more are removed when new ones are
written. A folder that cannot be written (a read-only index) keeps the codes in memory.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np

from radsift.errors import IndexDamagedError
from radsift.index.lifecycle import referenced_names
from radsift.index.reader import IndexStore
from radsift.index.segment import SegmentReader
from radsift.models.poly_encoder import PolyEncoder
from radsift.ranking import best_per_owner
from radsift.text.aspects import WINDOW_OVERLAP, WINDOW_WORDS, section_windows

POLY_DIR = Path("cache") / "poly"
#: Part of every fingerprint: a new layout or encoding of the codes never reads old files.
CACHE_VERSION = 1
#: Windows encoded per forward batch group (bounds the float32 memory of one step: 1024 x m x dim x 4 bytes).
CHUNK = 1024
#: Windows scored per step at query time (float16 -> float32 copies of this many windows).
SCORE_CHUNK = 4096
#: Files of a poly folder that shape its codes, besides its weights (``*.safetensors``, ``*.bin``).
_SHAPING_FILES = ("poly_encoder.json", "sentence_bert_config.json", "config.json", "tokenizer.json", "vocab.txt")


def _window_settings() -> dict:
    return {"words": WINDOW_WORDS, "overlap": WINDOW_OVERLAP}


def poly_fingerprint(path: str | Path) -> str:
    """16 hex digits naming a poly-encoder folder's codes: SHA-256 of its weights and codes
    (``*.safetensors``, ``*.bin``: every byte), its encoding configs, the window settings and
    :data:`CACHE_VERSION`. A retrained or edited model gets other cache files; a copied one the same."""
    path = Path(path)
    digest = hashlib.sha256(json.dumps({"version": CACHE_VERSION, "windows": _window_settings()}).encode())
    files = sorted(path.glob("*.safetensors")) + sorted(path.glob("*.bin"))
    files += [path / n for n in _SHAPING_FILES if (path / n).is_file()]
    for f in files:
        digest.update(f"\0{f.name}\0".encode())
        with f.open("rb") as fh:
            digest.update(hashlib.file_digest(fh, "sha256").digest())
    return digest.hexdigest()[:16]


def codes_path(index_dir: str | Path, segment: str, fingerprint: str) -> Path:
    """Where the codes of ``segment`` under the model ``fingerprint`` live."""
    return Path(index_dir) / POLY_DIR / f"{segment}.{fingerprint}.npy"


def windows_path(codes: str | Path) -> Path:
    """The sidecar of the codes file ``codes``: each window's section row and what it was built from."""
    codes = Path(codes)
    return codes.with_name(codes.name[:-len(".npy")] + ".windows.npz")


@dataclass
class SegmentCodes:
    """The codes of one segment's sections.

    Attributes:
        codes: float16 ``(n_windows, m, dim)``, unit length (memory-mapped when read from the cache).
        owner: int64 ``(n_windows,)``: the segment's section row of each window (non-decreasing).
        path: The cache file (None: kept in memory only).
    """

    codes: np.ndarray
    owner: np.ndarray
    path: Path | None = None


def _identity(seg: SegmentReader) -> dict:
    """What the codes of ``seg`` depend on besides the model: the segment's contents and the windows."""
    sha = ((seg.info.get("files") or {}).get("store.sqlite") or {}).get("sha256")
    return {"segment": seg.name, "store_sha256": sha, "sections": int(seg.info["counts"]["sections"]),
            "windows": _window_settings()}


def _valid_owner(owner: np.ndarray, n_sections: int) -> bool:
    """Every section has at least one window, in order: 0, 0, 1, 2, 2, ... n_sections - 1."""
    if owner.ndim != 1:
        return False
    if not n_sections:
        return owner.size == 0
    steps = np.diff(owner)
    return bool(owner.size and owner[0] == 0 and owner[-1] == n_sections - 1 and np.isin(steps, (0, 1)).all())


def read_segment_codes(seg: SegmentReader, fingerprint: str, m: int, dim: int) -> SegmentCodes | None:
    """The cached codes of ``seg``, or None when there are none that can be trusted (missing,
    unreadable, not finite, another shape, another segment by that name, other window settings)."""
    path = codes_path(seg.index_dir, seg.name, fingerprint)
    try:
        with np.load(windows_path(path), allow_pickle=False) as side:
            meta = json.loads(str(side["meta"]))
            owner = np.asarray(side["owner"], dtype=np.int64)
        codes = np.load(path, mmap_mode="r", allow_pickle=False)
    except (OSError, ValueError, KeyError, TypeError, EOFError):
        return None
    ident = _identity(seg)
    if meta != ident or not _valid_owner(owner, ident["sections"]):
        return None
    if codes.dtype != np.float16 or codes.shape != (owner.shape[0], m, dim):
        return None
    for start in range(0, codes.shape[0], SCORE_CHUNK):  # a damaged file (NaN, inf) is never scored
        if not np.isfinite(codes[start:start + SCORE_CHUNK]).all():
            return None
    return SegmentCodes(codes, owner, path)


def encode_segment(seg: SegmentReader, poly) -> SegmentCodes:
    """Encode every section of ``seg`` (its windows; identical windows once) with ``poly``."""
    rows = seg.rows("sections", None)
    if [r[0] for r in rows] != list(range(len(rows))):
        raise IndexDamagedError(f"{seg.path / 'store.sqlite'}: section rows are not numbered 0..{len(rows) - 1}")
    windows, owner = section_windows([r[3] for r in rows])
    uniq: dict[str, int] = {}
    inverse = np.fromiter((uniq.setdefault(w, len(uniq)) for w in windows), dtype=np.int64, count=len(windows))
    texts = list(uniq)
    out = np.zeros((len(texts), poly.m, poly.dim), dtype=np.float16)
    for start in range(0, len(texts), CHUNK):
        part = poly.encode_passages(texts[start:start + CHUNK])
        norms = np.linalg.norm(part, axis=-1, keepdims=True)
        out[start:start + CHUNK] = part / np.where(norms > 0, norms, 1.0)  # unit length: float16 keeps it exact enough
    codes = out if len(texts) == len(windows) else out[inverse]
    return SegmentCodes(codes, np.asarray(owner, dtype=np.int64))


def _save_atomic(path: Path, write: Callable[[object], None]) -> None:
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}-{threading.get_ident()}")
    try:
        with open(tmp, "wb") as fh:
            write(fh)
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def write_segment_codes(seg: SegmentReader, fingerprint: str, found: SegmentCodes) -> Path:
    """Write ``found`` as the cache of ``seg`` (sidecar first, codes last), then remove the caches of
    segments no generation lists any more.

    Raises:
        OSError: The cache folder cannot be written.
    """
    path = codes_path(seg.index_dir, seg.name, fingerprint)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.unlink(missing_ok=True)  # an old build's codes never pair with the new sidecar
    meta = np.array(json.dumps(_identity(seg)))
    _save_atomic(windows_path(path), lambda fh: np.savez(fh, meta=meta, owner=found.owner.astype(np.int32)))
    _save_atomic(path, lambda fh: np.save(fh, np.ascontiguousarray(found.codes, dtype=np.float16)))
    remove_unlisted_codes(seg.index_dir)
    return path


def remove_unlisted_codes(index_dir: str | Path) -> list[Path]:
    """Remove the cache files of segments that no generation on disk lists (none when a manifest
    cannot be read: what it lists is unknown). Returns the files removed."""
    folder = Path(index_dir) / POLY_DIR
    listed = referenced_names(Path(index_dir))
    if listed is None or not folder.is_dir():
        return []
    removed = []
    for f in folder.iterdir():
        if not f.name.startswith(".") and f.name.split(".", 1)[0] not in listed:
            f.unlink(missing_ok=True)
            removed.append(f)
    return removed


def _say_stderr(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


class PolyCodes:
    """The codes of an index's segments under one poly-encoder: read from the cache, encoded when
    missing (with a line to ``say``), kept in memory per segment; safe to use from several threads.

    Args:
        poly: A loaded :class:`~radsift.models.poly_encoder.PolyEncoder`.
        fingerprint: Its :func:`poly_fingerprint` (computed from ``poly.path`` when None).
        say: Told before a segment is encoded (default: a line on stderr).
    """

    def __init__(self, poly, fingerprint: str | None = None, say: Callable[[str], None] | None = None) -> None:
        if fingerprint is None:
            if poly.path is None:
                raise ValueError("a poly-encoder that was not loaded from a folder needs a fingerprint")
            fingerprint = poly_fingerprint(poly.path)
        self.poly = poly
        self.fingerprint = fingerprint
        self.say = say or _say_stderr
        self._segments: dict[tuple[str, str], SegmentCodes] = {}
        self._lock = threading.Lock()

    def segment(self, seg: SegmentReader) -> SegmentCodes:
        """The codes of ``seg``: kept, cached on disk, or encoded now (and cached)."""
        key = (str(seg.index_dir.resolve()), json.dumps(_identity(seg), sort_keys=True))
        with self._lock:
            found = self._segments.get(key)
            if found is None:
                found = read_segment_codes(seg, self.fingerprint, self.poly.m, self.poly.dim)
            if found is None:
                n, folder = int(seg.info["counts"]["sections"]), seg.index_dir / POLY_DIR
                self.say(f"encoding {n:,} passages of segment {seg.name} with the poly-encoder {self.poly.name} "
                         f"(cached in {folder}) ...")
                found = encode_segment(seg, self.poly)
                try:
                    found.path = write_segment_codes(seg, self.fingerprint, found)
                except OSError as exc:  # a read-only index folder: the codes stay in memory
                    self.say(f"note: the poly-encoder codes of {seg.name} cannot be cached ({exc}); kept in memory")
            self._segments[key] = found
            return found

    def ensure(self, store: IndexStore) -> list[Path]:
        """Read or encode the codes of every segment of ``store``; the cache files (of those cached)."""
        return [p for p in (self.segment(seg).path for seg in store.segments) if p is not None]

    def scores(self, store: IndexStore, query_vector: np.ndarray) -> np.ndarray:
        """The poly-encoder score of every live section of ``store`` (its row order): its best window's."""
        n = store.units("section").report_row.shape[0]
        out = np.full(n, -np.inf, dtype=np.float32)
        q = np.asarray(query_vector, dtype=np.float32).reshape(1, -1)
        for seg in store.segments:
            found = self.segment(seg)
            rows = seg.unit_global("section")[found.owner]  # store row of each window (-1: deleted)
            live = np.flatnonzero(rows >= 0)
            for start in range(0, live.shape[0], SCORE_CHUNK):
                at = live[start:start + SCORE_CHUNK]
                best_per_owner(self.poly.score(q, found.codes[at])[0], rows[at], n, out=out)
        return out


def build_poly_codes(index_dir: str | Path, poly, *, say: Callable[[str], None] | None = None) -> list[Path]:
    """Encode (ahead of the first search) the codes of the live generation's segments that have
    none under ``poly`` (a folder or a loaded poly-encoder): ``radsift index build|add --poly``.

    Returns:
        The cache files of the live generation's segments.

    Raises:
        ConfigError: ``poly`` is not a poly-encoder folder.
    """
    if isinstance(poly, (str, Path)):
        poly = PolyEncoder.load(poly)
    store = IndexStore.open(index_dir)
    try:
        with store.guard():
            return PolyCodes(poly, say=say).ensure(store)
    finally:
        store.close()
