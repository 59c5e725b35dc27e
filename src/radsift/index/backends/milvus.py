"""Vectors in Milvus (pymilvus; milvus-lite for a local ``.db`` file): the scale-out backend.

The optional backend for sites that outgrow one machine (``pip install 'radsift[milvus]'``). The
radsift index folder stays the source of records, labels, BM25 and ranking; Milvus holds a copy
of the live generation's unit vectors, one collection per unit kind (``sentence``, ``section``)
named after the index and the generation (``radsift_<name>_<hash>_gen_000003_sentence``), so a
new generation never reads stale vectors. :func:`push_generation` (``radsift index build|add
--backend milvus``) writes them and records where in ``INDEX/cache/milvus/<generation>.json``
(:func:`side_file`); collections of generations whose folder is gone are dropped then.

Each entity is one unit row: ``row`` (primary key: the unit's row in the generation), ``report``
(the report row), ``section`` (the section code), one ``m<i>`` VARCHAR field per report metadata
key (ASCII-lower-cased, as SQLite's ``lower()`` folds them) and ``vec`` (float32, inner product).

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

milvus-lite (a ``.db`` path) is served in-process and locks its folder: one process at a time
(a running ``radsift serve`` holds it; an ``index add`` in another process is refused with a
clear error). A Milvus server (``http://host:19530``) has no such limit.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Sequence

import numpy as np

from radsift.errors import ConfigError, IndexDamagedError
from radsift.index.backends.base import VectorBackend
from radsift.index.backends.base import MissingExtraError, extra_module

log = logging.getLogger("radsift.index.milvus")

EXTRA = "pip install 'radsift[milvus]'"
#: Side files (where each generation's vectors live) and the default milvus-lite file, under the index folder.
SIDE_DIR = Path("cache") / "milvus"
DEFAULT_LITE = SIDE_DIR / "vectors.db"
ENV_URI = "RADSIFT_MILVUS_URI"
#: The token of a Milvus server with authentication (``user:password`` or an API key); never written to disk.
ENV_TOKEN = "RADSIFT_MILVUS_TOKEN"
DEFAULT_CANDIDATES = 1000
#: Milvus answers at most this many rows a search (its ``topk`` limit).
MAX_LIMIT = 16_384
#: As :data:`radsift.index.backends.hnsw.FLOOR_GAP`.
FLOOR_GAP = 1e-4
#: As :data:`radsift.index.backends.hnsw.EXACT_RATIO`: a mask that cannot be pushed down and keeps
#: few rows is scored exactly from the local vectors.
EXACT_RATIO = 2
#: Rows inserted per request.
BATCH = 5_000
#: Metadata values longer than this (UTF-8 bytes) leave their key to the mask (not pushed down).
MAX_VALUE_BYTES = 4_096
#: At most this many metadata keys get a field.
MAX_KEYS = 64
INDEX_TYPES = ("HNSW", "FLAT", "IVF_FLAT", "AUTOINDEX")
DEFAULT_INDEX = {"index_type": "HNSW", "params": {"M": 16, "efConstruction": 128}}
#: The collection's vector index when ``index=`` is not given: ``HNSW`` (default), ``FLAT`` (exact: an
#: HNSW graph over many bit-identical vectors loses rows, see :data:`DEFAULT_INDEX`), ``IVF_FLAT``, ``AUTOINDEX``.
ENV_INDEX = "RADSIFT_MILVUS_INDEX"
#: The partition holding the copies of bit-identical vectors (the first of each group stays in ``_default``).
COPIES = "copies"
DISTINCT = "_default"
#: The HNSW search breadth (``ef``), raised to the number of rows asked for.
DEFAULT_EF = 64
FORMAT = 1
_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")


class MilvusUnavailableError(ConfigError):
    """The Milvus URI does not answer (or a milvus-lite file is held by another process)."""


def pymilvus_module():
    """The ``pymilvus`` module, or :class:`MissingExtraError` naming the extra that installs it."""
    return extra_module("pymilvus", "milvus", "pymilvus", EXTRA)


def available() -> bool:
    """True when pymilvus can be imported (milvus-lite is checked when a ``.db`` URI is opened)."""
    try:
        pymilvus_module()
    except MissingExtraError:
        return False
    return True


def ascii_lower(text: str) -> str:
    """Lower-case ASCII letters only, as SQLite's ``lower()`` (the metadata filters' reference)."""
    return text.translate(_ASCII_LOWER)


# -- where the vectors are -------------------------------------------------------------------------
def is_local(uri: str) -> bool:
    """A milvus-lite file (a path ending in ``.db``) rather than a server URI."""
    return "://" not in uri and not uri.startswith("unix:")


def resolve_uri(index_dir: str | Path, uri: str | None) -> str:
    """The URI to use: ``uri``, else ``$RADSIFT_MILVUS_URI``, else ``INDEX/cache/milvus/vectors.db``
    (milvus-lite). A local path is made absolute (relative to the working folder)."""
    uri = (uri or os.environ.get(ENV_URI, "").strip() or str(Path(index_dir) / DEFAULT_LITE)).strip()
    if is_local(uri):
        if not uri.endswith(".db"):
            raise ConfigError(f"--milvus-uri {uri!r}: a milvus-lite file must end in .db; a Milvus server is "
                              "http://HOST:19530 (or https://...)")
        return str(Path(uri).expanduser().resolve())
    return uri


def side_file(index_dir: str | Path, gen_dir: str | Path) -> Path:
    """Where generation ``gen_dir`` records its Milvus collections (``INDEX/cache/milvus/<gen>.json``)."""
    return Path(index_dir) / SIDE_DIR / f"{Path(gen_dir).name}.json"


def read_side(index_dir: str | Path, gen_dir: str | Path) -> dict | None:
    """The side file of a generation, or None when its vectors were never pushed to Milvus."""
    path = side_file(index_dir, gen_dir)
    if not path.exists():
        return None
    try:
        info = json.loads(path.read_text())
        if info.get("format") != FORMAT or not isinstance(info.get("collections"), dict):
            raise ValueError("unknown format")
    except (OSError, ValueError) as exc:
        raise IndexDamagedError(f"{path}: unreadable Milvus side file ({exc}); copy the vectors again with "
                                f"`radsift index push {index_dir}`") from exc
    return info


def pushed_before(index_dir: str | Path) -> dict | None:
    """The newest side file of any generation of this index (an index once pushed to Milvus), or None."""
    folder = Path(index_dir) / SIDE_DIR
    files = sorted(folder.glob("gen-*.json")) if folder.is_dir() else []
    for path in reversed(files):
        try:
            return json.loads(path.read_text())
        except (OSError, ValueError):
            continue
    return None


def collection_prefix(index_dir: str | Path) -> str:
    """``radsift_<folder name>_<hash of its absolute path>_``: one index's collections on a shared server."""
    path = Path(index_dir).resolve()
    slug = re.sub(r"[^A-Za-z0-9]+", "_", path.name).strip("_")[:40] or "index"
    return f"radsift_{slug}_{hashlib.sha1(str(path).encode()).hexdigest()[:8]}_"


def collection_name(index_dir: str | Path, gen_dir: str | Path, kind: str) -> str:
    return f"{collection_prefix(index_dir)}{Path(gen_dir).name.replace('-', '_')}_{kind}"


def connect(uri: str, *, token: str | None = None, timeout: float = 10.0):
    """A ``MilvusClient`` on ``uri`` (a milvus-lite ``.db`` path or a server URI).

    Raises:
        MissingExtraError: pymilvus (or, for a ``.db`` path, milvus-lite) is not installed.
        MilvusUnavailableError: The server does not answer, or the milvus-lite file is held by
            another process.
    """
    pymilvus = pymilvus_module()
    token = token if token is not None else os.environ.get(ENV_TOKEN, "")
    if is_local(uri):
        try:
            import milvus_lite  # noqa: F401
        except ImportError as exc:
            raise MissingExtraError(f"--milvus-uri {uri}: a local .db file needs milvus-lite, which is not "
                                    f"installed ({exc}); install it with: {EXTRA}") from exc
        if not Path(uri).parent.is_dir():
            raise MilvusUnavailableError(f"--milvus-uri {uri}: the folder {Path(uri).parent} does not exist")
        held = _lite_lock_holder(Path(uri))
        if held:
            raise MilvusUnavailableError(
                f"--milvus-uri {uri}: the milvus-lite file is open in another process ({held}); milvus-lite serves "
                "one process at a time: stop that process (a running `radsift serve`?) or use a Milvus server "
                "(http://HOST:19530)")
    try:
        return pymilvus.MilvusClient(uri=uri, token=token, timeout=timeout)
    except Exception as exc:  # pymilvus raises its own MilvusException / ConnectionConfigException
        detail = str(getattr(exc, "message", "") or exc).strip() or type(exc).__name__
        raise MilvusUnavailableError(f"--milvus-uri {uri}: Milvus does not answer ({detail}); check the address "
                                     "and that the server is up (`docker compose ps`)") from None


def _lite_lock_holder(path: Path) -> str:
    """Non-empty when another process holds the milvus-lite folder's lock (milvus-lite's ``LOCK`` flock)."""
    lock = path / "LOCK"
    if not lock.exists():
        return ""
    try:
        import fcntl
    except ImportError:  # Windows: milvus-lite's own error stands
        return ""
    from milvus_lite.server_manager import server_manager_instance

    if os.path.abspath(path) in getattr(server_manager_instance, "_servers", {}):
        return ""  # held by this process: the client shares its server
    fd = os.open(lock, os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        fcntl.flock(fd, fcntl.LOCK_UN)
        return ""
    except OSError as exc:
        return f"lock {lock}: {exc.strerror}"
    finally:
        os.close(fd)


# -- writing ---------------------------------------------------------------------------------------
def push_generation(index_dir: str | Path, uri: str | None = None, *, index: dict | None = None,
                    say: Callable[[str], None] | None = None, client=None) -> Path:
    """Copy the live generation's unit vectors into Milvus and record where (the side file).

    Skips a kind whose collection already holds the generation's rows (a re-run after a failure
    pushes only what is missing). Then drops the collections (and side files) of this index's
    generations whose folder is gone.

    Args:
        index_dir: The radsift index folder.
        uri: Milvus URI (see :func:`resolve_uri`; default the index's own milvus-lite file).
        index: Milvus vector index: ``{"index_type": "HNSW", "params": {...}}`` (default
            :data:`DEFAULT_INDEX`; ``FLAT`` is exact, ``AUTOINDEX`` lets a server pick).
        say: Progress messages.
        client: An already connected ``MilvusClient`` (else :func:`connect`).

    Returns:
        The side file written.
    """
    from radsift.index.format import UNIT_KINDS
    from radsift.index.reader import IndexStore

    index_dir = Path(index_dir)
    if index is None and os.environ.get(ENV_INDEX, "").strip():
        kind = os.environ[ENV_INDEX].strip().upper()
        index = DEFAULT_INDEX if kind == "HNSW" else {"index_type": kind, "params": {"nlist": 1024} if kind == "IVF_FLAT" else {}}
    spec = dict(DEFAULT_INDEX if index is None else index)
    if spec.get("index_type") not in INDEX_TYPES:
        raise ConfigError(f"Milvus index type {spec.get('index_type')!r} (${ENV_INDEX}): use one of {', '.join(INDEX_TYPES)}")
    store = IndexStore.open(index_dir)
    try:
        gen = store.gen_dir
        recorded = read_side(index_dir, gen)
        uri = resolve_uri(index_dir, uri or (recorded or {}).get("uri") or (pushed_before(index_dir) or {}).get("uri"))
        if is_local(uri):
            Path(uri).parent.mkdir(parents=True, exist_ok=True)
        client = client if client is not None else connect(uri)
        fields, lowered = _metadata_fields(store)
        collections, rows, dups = {}, {}, {}
        for kind in UNIT_KINDS:
            units = store.units(kind)
            name = collection_name(index_dir, gen, kind)
            n = int(units.vectors.shape[0])
            # Copies of a bit-identical vector go to their own partition: an HNSW graph over many copies of
            # one point breaks apart (see the hnsw module); unfiltered searches read the distinct rows only.
            dups[kind], groups = _save_groups(index_dir, gen, kind, units.vectors)
            copy = np.zeros(n, dtype=bool)
            if groups is not None:
                copy[groups[0]] = True
                copy[groups[0][groups[1][:-1]]] = False  # the first row of each group stays
            if client.has_collection(name) and _row_count(client, name) == n:
                collections[kind], rows[kind] = name, n
                continue
            if client.has_collection(name):
                client.drop_collection(name)  # a push interrupted before: start that kind again
            t0 = time.time()
            _create(client, name, int(units.vectors.shape[1]), fields, spec, copies=groups is not None)
            for start in range(0, n, BATCH):
                stop = min(n, start + BATCH)
                reps = units.report_row[start:stop]
                vecs = np.asarray(units.vectors[start:stop], dtype=np.float32)
                batch = [{"row": start + i, "report": int(r), "section": int(c), "vec": vecs[i],
                          **{f: lowered[f][r] for f in fields.values()}}
                         for i, (r, c) in enumerate(zip(reps.tolist(), units.section_code[start:stop].tolist()))]
                is_copy = copy[start:stop].tolist()
                distinct = [e for e, c in zip(batch, is_copy) if not c]
                copies = [e for e, c in zip(batch, is_copy) if c]
                if distinct:
                    client.insert(name, distinct)
                if copies:
                    client.insert(name, copies, partition_name=COPIES)
                if say is not None and (stop == n or (stop // BATCH) % 40 == 0):
                    say(f"Milvus: {stop:,}/{n:,} {kind} vectors into {name} ({time.time() - t0:.0f}s)")
            client.flush(name)
            collections[kind], rows[kind] = name, n
        info = {"format": FORMAT, "uri": _stored_uri(index_dir, uri), "generation": gen.name,
                "collections": collections, "rows": rows, "dim": int(store.manifest.dim),
                "fields": fields, "sections": list(store.manifest.sections), "index": spec, "dups": dups,
                "copies_partition": {kind: dups[kind] is not None for kind in UNIT_KINDS}}
    finally:
        store.close()
    path = side_file(index_dir, gen)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    tmp.write_text(json.dumps(info, indent=1))
    os.replace(tmp, path)
    drop_gone(index_dir, client)
    return path


def dups_path(index_dir: str | Path, gen_dir: str | Path, kind: str) -> Path:
    """The duplicate groups of a generation's ``kind`` vectors (``INDEX/cache/milvus/<gen>.<kind>.dups.npz``)."""
    return Path(index_dir) / SIDE_DIR / f"{Path(gen_dir).name}.{kind}.dups.npz"


def _save_groups(index_dir: Path, gen_dir: Path, kind: str, vectors) -> tuple[str | None, tuple | None]:
    """Save the groups of bit-identical rows (:func:`~radsift.index.backends.hnsw.duplicate_groups`):
    ``(file name, (order, offsets))``, or ``(None, None)`` when every row is distinct."""
    from radsift.index.backends.hnsw import duplicate_groups

    path = dups_path(index_dir, gen_dir, kind)
    if path.exists():
        with np.load(path) as data:
            return path.name, (data["order"], data["offsets"])
    groups = duplicate_groups(vectors) if vectors.shape[0] else None
    if groups is None:
        return None, None
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.stem}.tmp-{os.getpid()}.npz")
    np.savez(tmp, order=groups[0], offsets=groups[1])
    os.replace(tmp, path)
    return path.name, groups


def drop_gone(index_dir: str | Path, client) -> list[str]:
    """Drop this index's collections (and side files) of generations whose folder is gone; the
    generations kept for ``radsift index rollback`` keep theirs. Returns the collections dropped."""
    index_dir = Path(index_dir)
    prefix = collection_prefix(index_dir)
    alive = {p.name.replace("-", "_") for p in index_dir.glob("gen-*") if p.is_dir()}
    dropped = []
    for name in client.list_collections():
        if not name.startswith(prefix):
            continue
        gen = name[len(prefix):].rsplit("_", 1)[0]
        if gen not in alive:
            client.drop_collection(name)
            dropped.append(name)
    folder = index_dir / SIDE_DIR
    for side in folder.glob("gen-*") if folder.is_dir() else ():
        if side.name.split(".", 1)[0].replace("-", "_") not in alive:
            side.unlink(missing_ok=True)
    return dropped


def _stored_uri(index_dir: Path, uri: str) -> str:
    """A milvus-lite file inside the index folder is recorded relative to it (the folder may move)."""
    if is_local(uri):
        try:
            return str(Path(uri).relative_to(index_dir.resolve()))
        except ValueError:
            return uri
    return uri


def _row_count(client, name: str) -> int:
    try:
        return int(client.get_collection_stats(name).get("row_count", -1))
    except Exception:
        return -1


def _metadata_fields(store) -> tuple[dict[str, str], dict[str, list[str]]]:
    """``{metadata key: field}`` for the keys that can be pushed down, and each field's ASCII-lower-cased
    value per report row ("" where a report lacks the key)."""
    keys = list(store.manifest.metadata_keys)[:MAX_KEYS]
    n_reports = len(store.report_ids)
    values = {k: [""] * n_reports for k in keys}
    too_long = set()
    for row, report in store.iter_reports():
        for k in keys:
            v = report.metadata.get(k)
            if v is None:
                continue
            v = ascii_lower(str(v))
            if len(v.encode()) > MAX_VALUE_BYTES:
                too_long.add(k)
            values[k][row] = v
    fields = {k: f"m{i}" for i, k in enumerate(keys) if k not in too_long}
    return fields, {fields[k]: values[k] for k in fields}


def _create(client, name: str, dim: int, fields: dict[str, str], spec: dict, copies: bool = False) -> None:
    from pymilvus import DataType, MilvusClient

    schema = MilvusClient.create_schema(auto_id=False, enable_dynamic_field=False)
    schema.add_field("row", DataType.INT64, is_primary=True)
    schema.add_field("report", DataType.INT64)
    schema.add_field("section", DataType.INT32)
    for field in fields.values():
        schema.add_field(field, DataType.VARCHAR, max_length=MAX_VALUE_BYTES)
    schema.add_field("vec", DataType.FLOAT_VECTOR, dim=dim)
    params = client.prepare_index_params()
    params.add_index(field_name="vec", index_type=spec["index_type"], metric_type="IP",
                     params=dict(spec.get("params") or {}))
    client.create_collection(name, schema=schema, index_params=params)
    if copies:
        client.create_partition(name, COPIES)


# -- filters ---------------------------------------------------------------------------------------
def expression(target_code: int | None, filters: Sequence, fields: dict[str, str]) -> tuple[str | None, bool]:
    """The Milvus boolean expression for a section and metadata filters (:class:`radsift.search.query.Filter`).

    Filters on different keys must all match, several on one key any (as
    :meth:`~radsift.index.store.IndexStore.report_rows_where`). Exact filters compare ASCII-lower-cased
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
        held = _row_count(client, name)
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
