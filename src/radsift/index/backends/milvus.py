"""Vectors in Milvus (pymilvus; milvus-lite for a local ``.db`` file): the scale-out backend.

The optional backend for sites that outgrow one machine (``pip install 'radsift[milvus]'``). The
radsift index folder stays the source of records, labels, BM25 and ranking; Milvus holds a copy
of the live generation's unit vectors, one collection per unit kind, copied there by
:func:`~radsift.index.backends.milvus_push.push_generation` (``radsift index build|add --backend
milvus``) and found through the generation's side file (:mod:`radsift.index.backends.milvus_client`).

:meth:`MilvusBackend.scores` keeps the contract of :class:`~radsift.index.backends.hnsw.HnswBackend`:
a full-length float32 array where the query's ``candidates`` best rows (as Milvus returns them,
with their inner products: exact cosines) carry their cosine, one anchor row (the least similar,
Milvus's best row for ``-query``) carries its own, and every other row a floor just below the
lowest candidate; the ranking core then fuses with BM25, applies the reading tiers and aggregates
per report exactly as for the other backends. Indexes with no more rows than ``candidates`` are
scored exactly from the local vectors. As in the hnsw backend, every row of a group of bit-identical
vectors found is a candidate (the groups are saved beside the side file when the vectors are pushed).

Filters are pushed down as a Milvus boolean expression (:func:`expression`): the section of
``--target`` as ``section == c`` and each metadata filter as ``m<i> == "v"`` (``key=value``) or
``m<i> like "%v%"`` (``key~value``). The expression selects a superset of the caller's mask
(exact equality is compared case-insensitively), so Milvus's candidates are intersected with the
mask; when fewer than needed survive, the search widens (x4) up to Milvus's limit of
:data:`MAX_LIMIT` rows, then falls back to exact scoring of the masked rows from the local vectors
(as it does at once for selective masks, where that costs about what a filtered graph search
visits, and milvus-lite's filtered HNSW search misses rows). ``stats`` counts these.
"""

from __future__ import annotations

import logging
import os
import re
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import numpy as np

from radsift.errors import ConfigError, IndexDamagedError
from radsift.index.backends.base import VectorBackend
from radsift.index.backends.milvus_client import (DISTINCT, ENV_URI, SIDE_DIR, MilvusUnavailableError, ascii_lower,
                                                  connect, is_local, read_side, row_count, side_file)

log = logging.getLogger("radsift.index.milvus")

DEFAULT_CANDIDATES = 1000
#: Milvus answers at most this many rows a search (its ``topk`` limit).
MAX_LIMIT = 16_384
#: As :data:`radsift.index.backends.hnsw.FLOOR_GAP`.
FLOOR_GAP = 1e-4
#: As :data:`radsift.index.backends.hnsw.EXACT_RATIO`: a mask that cannot be pushed down and keeps
#: few rows is scored exactly from the local vectors.
EXACT_RATIO = 2
#: The HNSW search breadth (``ef``), raised to the number of rows asked for.
DEFAULT_EF = 64


# -- filters ---------------------------------------------------------------------------------------


def expression(target_code: int | None, filters: Sequence, fields: dict[str, str]) -> tuple[str | None, bool]:
    """The Milvus boolean expression for a section and metadata filters (:class:`radsift.search.query.Filter`).

    Filters on different keys must all match, several on one key any (as
    :meth:`~radsift.index.reader.IndexStore.report_rows_where`). Exact filters compare ASCII-lower-cased
    values (a superset: the caller's mask decides); a key without a field, or a value holding a
    character the expression would have to escape (``" \\ % _``), is left to the mask.

    Returns:
        ``(expression or None, complete)``: ``complete`` is False when some filter was left to the mask.
    """
    clauses = [] if target_code is None else [f"section == {int(target_code)}"]
    complete = True
    by_key: dict[str, list] = {}
    for f in filters or ():
        by_key.setdefault(f.key, []).append(f)
    for key, group in by_key.items():
        field = fields.get(key)
        if field is None or any(re.search(r'["\\%_]', f.value) for f in group):
            complete = False
            continue
        ors = [f'{field} like "%{ascii_lower(f.value)}%"' if f.op == "~" else f'{field} == "{ascii_lower(f.value)}"'
               for f in group]
        clauses.append(ors[0] if len(ors) == 1 else "(" + " or ".join(ors) + ")")
    return (" and ".join(clauses) if clauses else None), complete


# -- searching -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class MilvusPlace:
    """Where a generation's units of one kind are: what :func:`~radsift.index.backends.create_backend` needs
    to open (or, for ``auto``, to look for) the Milvus backend."""

    index_dir: Path
    gen_dir: Path
    kind: str
    uri: str | None = None  # overrides the side file's URI (the server moved)

    def recorded(self) -> dict | None:
        return read_side(self.index_dir, self.gen_dir)


class MilvusBackend(VectorBackend):
    """Nearest-neighbour search in a Milvus collection, filters pushed down as expressions.

    Attributes:
        candidates: Rows that :meth:`scores` asks Milvus for.
        pushdown: True: :meth:`scores` takes the search's ``target`` and ``filters`` (the engine passes them).
        stats: ``searches`` (Milvus calls), ``pushed`` (scores with a filter expression), ``grown``
            (searches widened x4 because too few masked rows came back), ``exact`` (answered from the
            local vectors over the masked rows), ``overfetch`` (rows Milvus returned that the mask dropped).
    """

    name = "milvus"
    pushdown = True

    def __init__(self, client, collection: str, vectors: np.ndarray, *, fields: dict[str, str] | None = None,
                 sections: Sequence[str] = (), candidates: int = DEFAULT_CANDIDATES, ef: int = DEFAULT_EF,
                 uri: str = "", groups: tuple[np.ndarray, np.ndarray] | None = None,
                 copies_partition: bool = False) -> None:
        if candidates < 1:
            raise ConfigError(f"candidates must be at least 1, not {candidates}")
        self.client = client
        self.collection = collection
        self.vectors = vectors
        self.fields = dict(fields or {})
        self.sections = list(sections)
        self.candidates = int(candidates)
        self.ef = int(ef)
        self.uri = uri
        self.stats = {"searches": 0, "pushed": 0, "grown": 0, "exact": 0, "overfetch": 0}
        self._lock = threading.Lock()
        #: Duplicate groups (``order``, ``offsets`` as in the hnsw backend) and each row's group; None: all distinct.
        self.groups = groups
        #: The copies of each group are in the COPIES partition: unfiltered searches read DISTINCT only.
        self.copies_partition = bool(copies_partition and groups is not None)
        self.group_of = None
        if groups is not None:
            order, offsets = groups
            if len(order) != vectors.shape[0]:
                raise IndexDamagedError(f"{collection}: duplicate groups of {len(order)} rows for {vectors.shape[0]} "
                                        "vectors; copy the vectors again with `radsift index push`")
            self.group_of = np.empty(len(order), dtype=np.int64)
            self.group_of[order] = np.repeat(np.arange(len(offsets) - 1), np.diff(offsets))

    @classmethod
    def open(cls, place: MilvusPlace, vectors: np.ndarray, *, candidates: int = DEFAULT_CANDIDATES,
             ef: int = DEFAULT_EF, client=None) -> "MilvusBackend":
        """Open the collection the side file of ``place``'s generation names, checked against ``vectors``.

        Raises:
            ConfigError: The generation's vectors were never pushed to Milvus (the command that does it named).
            MilvusUnavailableError: The URI does not answer.
            IndexDamagedError: The collection is missing or holds another number of rows.
        """
        info = place.recorded()
        if info is None:
            raise ConfigError(
                f"{place.index_dir}: its live generation ({place.gen_dir.name}) has no vectors in Milvus (it was built "
                f"for another backend); copy them there with `radsift index push {place.index_dir} --milvus-uri URI`, "
                "or search it with --backend numpy|hnsw")
        uri = place.uri or os.environ.get(ENV_URI, "").strip() or info["uri"]
        if is_local(uri) and not Path(uri).is_absolute():
            uri = str(place.index_dir / uri)
        name = info["collections"].get(place.kind)
        client = client if client is not None else connect(uri)
        if name is None or not client.has_collection(name):
            raise IndexDamagedError(f"{side_file(place.index_dir, place.gen_dir)}: names Milvus collection {name!r} at "
                                    f"{uri}, which does not exist there; copy the vectors again with "
                                    f"`radsift index push {place.index_dir} --milvus-uri URI`")
        held = row_count(client, name)
        if held != int(vectors.shape[0]) or int(info.get("dim", vectors.shape[1])) != int(vectors.shape[1]):
            raise IndexDamagedError(f"Milvus collection {name} at {uri} holds {held} rows of dim {info.get('dim')}, the "
                                    f"index's {place.kind} vectors {vectors.shape[0]} of dim {vectors.shape[1]}: copy "
                                    f"them again with `radsift index push {place.index_dir}`")
        client.load_collection(name)
        groups = None
        dups = (info.get("dups") or {}).get(place.kind)
        if dups:
            try:
                with np.load(place.index_dir / SIDE_DIR / dups) as data:
                    groups = (data["order"], data["offsets"])
            except (OSError, ValueError, KeyError) as exc:
                raise IndexDamagedError(f"{place.index_dir / SIDE_DIR / dups}: unreadable duplicate groups ({exc}); "
                                        f"copy the vectors again with `radsift index push {place.index_dir}`") from exc
        return cls(client, name, vectors, fields=info.get("fields"), sections=info.get("sections", ()),
                   candidates=candidates, ef=ef, uri=uri, groups=groups,
                   copies_partition=bool((info.get("copies_partition") or {}).get(place.kind)))

    @property
    def size(self) -> int:
        return int(self.vectors.shape[0])

    def scores(self, query: np.ndarray, mask: np.ndarray | None = None, *, target: str | None = None,
               filters: Sequence = ()) -> np.ndarray:
        """Exact cosines for the query's ``candidates`` best rows (among ``mask``), the floor elsewhere.

        Args:
            query: A unit query vector.
            mask: The rows the caller ranks (its filters and target); candidates come only from them.
            target: The section ``mask`` keeps (pushed down as ``section == code``).
            filters: The metadata filters behind ``mask`` (pushed down, see :func:`expression`).
        """
        q = _query(query, self.vectors.shape[1])
        n = self.size
        if n <= self.candidates:
            return self._exact(q, np.arange(n))
        if mask is not None:
            mask = np.asarray(mask, dtype=bool)
            if mask.shape != (n,):
                raise ConfigError(f"mask has shape {mask.shape}, the backend {n} rows")
        code = None
        if target is not None and target in self.sections:
            code = self.sections.index(target)
        expr, _ = expression(code, filters, self.fields) if mask is not None else (None, True)
        rows, cos = self._candidates(q, self.candidates, mask, expr)
        if not rows.size:
            return np.full(n, -1.0, dtype=np.float32)
        floor = np.float32(float(cos.min()) - FLOOR_GAP)
        out = np.full(n, floor, dtype=np.float32)
        out[rows] = cos
        # The anchor: the row least similar to the query, exactly scored (see the hnsw module).
        arow, acos = self._search(-q, 1, None)
        if arow.size:
            low = np.asarray(self.vectors[arow], dtype=np.float32) @ q
            out[arow[low < floor]] = low[low < floor]
        return out

    def top(self, query: np.ndarray, k: int, mask: np.ndarray | None = None, *, target: str | None = None,
            filters: Sequence = ()) -> tuple[np.ndarray, np.ndarray]:
        """The ``k`` best rows (among ``mask``), best first: int64 rows, float32 cosines."""
        q = _query(query, self.vectors.shape[1])
        if k <= 0 or self.size == 0:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float32)
        code = self.sections.index(target) if target in self.sections else None
        expr = expression(code, filters, self.fields)[0] if mask is not None else None
        rows, cos = self._candidates(q, int(k), None if mask is None else np.asarray(mask, dtype=bool), expr)
        order = np.argsort(-cos, kind="stable")[:k]
        return rows[order], cos[order]

    def _candidates(self, q: np.ndarray, count: int, mask: np.ndarray | None, expr: str | None):
        """``(rows, cosines)``: ``count`` rows from Milvus, or with a mask at least ``min(count, masked)`` masked rows."""
        n = self.size
        count = min(count, n)
        if mask is None:
            return self._expand(*self._search(q, count, None))
        masked = int(np.count_nonzero(mask))
        need = min(count, masked)
        if masked == 0:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float32)
        if masked * masked <= EXACT_RATIO * count * n:
            # Selective: exact over the masked rows costs about what a filtered graph search visits, and
            # a filtered HNSW search (milvus-lite's) misses rows of selective filters.
            return self._exact_masked(q, mask, count)
        if expr is not None:
            with self._lock:
                self.stats["pushed"] += 1
        limit = count
        while True:
            rows, cos = self._search(q, min(limit, MAX_LIMIT, n), expr)
            with self._lock:  # rows Milvus returned that the mask drops (its expression is a superset)
                self.stats["overfetch"] += int(rows.size - np.count_nonzero(mask[rows]))
            rows, cos = self._expand(rows, cos)
            keep = mask[rows]
            rows, cos = rows[keep], cos[keep]
            # Short of rows although the mask has them: the filtered search fell short, or the mask
            # dropped rows the expression let through; widen (x4, search breadth too), then go exact.
            if rows.size >= need:
                return rows, cos
            if limit >= MAX_LIMIT or limit >= n:
                return self._exact_masked(q, mask, count)
            with self._lock:
                self.stats["grown"] += 1
            limit *= 4

    def _expand(self, rows: np.ndarray, cos: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Every row of each duplicate group found (bit-identical vectors: one cosine): a report corpus repeats
        its boilerplate sentences, an HNSW graph reaches only some of their copies, and exact search ranks
        them all (Open-i: 8.4k distinct sentence vectors among 22k)."""
        if self.group_of is None or not rows.size:
            return rows, cos
        order, offsets = self.groups
        found, first = np.unique(self.group_of[rows], return_index=True)
        starts, lens = offsets[found], offsets[found + 1] - offsets[found]
        within = np.arange(int(lens.sum())) - np.repeat(np.cumsum(lens) - lens, lens)
        out = np.asarray(order[np.repeat(starts, lens) + within], dtype=np.int64)
        vals = np.repeat(cos[first], lens)
        at = np.argsort(out, kind="stable")
        return out[at], vals[at]

    def _search(self, q: np.ndarray, limit: int, expr: str | None) -> tuple[np.ndarray, np.ndarray]:
        """One Milvus search: rows (sorted) and their inner products."""
        with self._lock:
            self.stats["searches"] += 1
        params = {"metric_type": "IP", "params": {"ef": max(self.ef, int(limit))}}
        kwargs = {"filter": expr} if expr else {}
        if not expr and self.copies_partition:
            # The distinct rows' graph; the copies of each group found come back by _expand. A filter
            # searches both partitions: a copy may pass where its group's first row does not.
            kwargs["partition_names"] = [DISTINCT]
        try:
            hits = self.client.search(self.collection, data=[q], limit=int(limit), anns_field="vec",
                                      search_params=params, output_fields=["row"], **kwargs)[0]
        except Exception as exc:
            detail = str(getattr(exc, "message", "") or exc).strip() or type(exc).__name__
            raise MilvusUnavailableError(f"Milvus search in {self.collection} at {self.uri} failed: {detail}") from None
        rows = np.fromiter((h["id"] if "id" in h else h["row"] for h in hits), dtype=np.int64, count=len(hits))
        cos = np.fromiter((h["distance"] for h in hits), dtype=np.float32, count=len(hits))
        order = np.argsort(rows, kind="stable")
        return rows[order], cos[order]

    def _exact(self, q: np.ndarray, rows: np.ndarray) -> np.ndarray:
        out = np.empty(rows.size, dtype=np.float32)
        for s in range(0, rows.size, 65_536):
            out[s:s + 65_536] = np.asarray(self.vectors[rows[s:s + 65_536]], dtype=np.float32) @ q
        return out

    def _exact_masked(self, q: np.ndarray, mask: np.ndarray, count: int) -> tuple[np.ndarray, np.ndarray]:
        """The ``count`` best masked rows by exact cosine from the local vectors, sorted by row."""
        with self._lock:
            self.stats["exact"] += 1
        rows = np.flatnonzero(mask)
        cos = self._exact(q, rows)
        if rows.size > count:
            keep = np.sort(np.argpartition(-cos, count - 1)[:count])
            rows, cos = rows[keep], cos[keep]
        return rows.astype(np.int64), cos


def _query(query: np.ndarray, dim: int) -> np.ndarray:
    q = np.ascontiguousarray(np.asarray(query, dtype=np.float32).reshape(-1))
    if q.shape[0] != dim:
        raise ConfigError(f"query vector has dimension {q.shape[0]}, the index {dim}")
    return q
