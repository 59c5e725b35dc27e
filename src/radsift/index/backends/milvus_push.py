"""Copying a generation's vectors into Milvus (:func:`push_generation`) and dropping the collections of
generations that are gone (:func:`drop_gone`).

``radsift index build|add --backend milvus`` (and ``radsift index push``) copies the live generation's
unit vectors into one collection per unit kind and records where in the generation's side file
(:func:`~radsift.index.backends.milvus_client.side_file`). Each entity is one unit row: ``row``
(primary key: the unit's row in the generation), ``report`` (the report row), ``section`` (the
section code), one ``m<i>`` VARCHAR field per report metadata key (ASCII-lower-cased, as SQLite's
``lower()`` folds them) and ``vec`` (float32, inner product). The copies of bit-identical vectors
go to their own partition (:data:`~radsift.index.backends.milvus_client.COPIES`), and the groups are
saved beside the side file (:func:`~radsift.index.backends.milvus_client.dups_path`).
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Callable

import numpy as np

from radsift.errors import ConfigError
from radsift.index.backends.duplicates import duplicate_groups
from radsift.index.backends.milvus_client import (COPIES, FORMAT, SIDE_DIR, ascii_lower, collection_name,
                                                  collection_prefix, connect, dups_path, is_local, pushed_before,
                                                  read_side, resolve_uri, row_count, side_file)
from radsift.index.format import UNIT_KINDS
from radsift.index.reader import IndexStore

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
            if client.has_collection(name) and row_count(client, name) == n:
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


def _save_groups(index_dir: Path, gen_dir: Path, kind: str, vectors) -> tuple[str | None, tuple | None]:
    """Save the groups of bit-identical rows (:func:`~radsift.index.backends.duplicates.duplicate_groups`):
    ``(file name, (order, offsets))``, or ``(None, None)`` when every row is distinct."""
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
