"""What follows a change of an index's live generation, decided here once for the CLI and Python.

Each write (:func:`~radsift.index.build_index`, :func:`~radsift.index.add_to_index`,
:func:`~radsift.index.delete_from_index`, :func:`~radsift.index.optimize_index`) given a vector
``backend`` ends with :func:`derive`, which derives from the new generation:

- the data of its vector backend: its HNSW graphs (:mod:`radsift.index.graphs`, ``INDEX/cache/hnsw/``)
  when the backend calls for them, or its vectors pushed to Milvus (``milvus``, or ``auto`` on an index
  pushed there before: :mod:`radsift.index.backends.milvus`);
- with ``poly``, the poly-encoder codes of its sections (:mod:`radsift.index.poly_codes`,
  ``INDEX/cache/poly/``), so that the first passage search with that poly-encoder encodes nothing.

:func:`check_options` runs before anything is written (``--backend milvus`` needs its extra and a Milvus that
answers; ``--poly`` must name a poly-encoder folder); :func:`push_index` is ``radsift index push``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from radsift.errors import ConfigError
from radsift.index import graphs  # the module: tests replace graphs.build_graphs
from radsift.index.backends import milvus_client, milvus_push
from radsift.index.poly_codes import build_poly_codes
from radsift.models.poly_encoder import CONFIG_FILE, is_poly_encoder


@dataclass
class Derived:
    """What :func:`derive` derived from a new generation.

    Attributes:
        graphs: The HNSW graph files built (or kept) for it.
        milvus: The side file of its push to Milvus (None when it was not pushed).
        poly_codes: The poly-encoder code files of its segments (None without ``poly``).
        poly_dir: Where those live (``INDEX/cache/poly``).
    """

    graphs: list[Path] = field(default_factory=list)
    milvus: Path | None = None
    poly_codes: list[Path] | None = None
    poly_dir: Path | None = None

    def lines(self) -> list[str]:
        """One line per thing derived, as ``radsift index build|add|...`` prints them."""
        out = []
        if self.milvus is not None:
            out.append(f"Milvus: {', '.join(json.loads(self.milvus.read_text())['collections'].values())} "
                       f"({self.milvus})")
        out.extend(f"HNSW graph: {path}" for path in self.graphs)
        if self.poly_codes is not None:
            out.append(f"poly-encoder codes: {len(self.poly_codes)} segment(s) in {self.poly_dir}")
        return out


def check_first_stage(path: str | Path) -> Path:
    """``path`` as a passage first stage: a poly-encoder folder, else a ConfigError saying what it is."""
    path = Path(path).expanduser()
    if is_poly_encoder(path):
        return path.resolve()
    if not path.is_dir():
        raise ConfigError(f"--first-stage {path}: no such folder (expected a poly-encoder from "
                          "'radsift train --recipe entity-aspect --model-type poly')")
    if (path / "modules.json").is_file():
        raise ConfigError(f"--first-stage {path}: a bi-encoder (sentence-transformers) folder, not a poly-encoder: "
                          "the index's own model already is the bi-encoder first stage (build the index with "
                          f"--model {path} to search with this one)")
    try:
        arch = " ".join(json.loads((path / "config.json").read_text(encoding="utf-8")).get("architectures") or [])
    except (OSError, ValueError, AttributeError):
        arch = ""
    if "SequenceClassification" in arch:
        raise ConfigError(f"--first-stage {path}: a cross-encoder folder, which re-scores a first stage's passages: "
                          f"use it as --rerank N --reranker {path}")
    raise ConfigError(f"--first-stage {path}: not a poly-encoder folder (no {CONFIG_FILE}); train one with "
                      "'radsift train --recipe entity-aspect --model-type poly'")


def check_options(index_dir: str | Path, backend: str | None, milvus_uri: str | None = None,
                  poly: str | Path | None = None) -> None:
    """Before anything is written: ``milvus`` needs its extra and a Milvus server that answers (a
    milvus-lite file is created on the push), and ``poly`` must be a poly-encoder folder.

    Raises:
        ConfigError: The milvus extra is missing, the server does not answer, or ``poly`` is no poly-encoder.
    """
    if backend == "milvus":
        milvus_client.pymilvus_module()
        uri = milvus_client.resolve_uri(index_dir, milvus_uri or (milvus_client.pushed_before(index_dir) or {}).get("uri"))
        if not milvus_client.is_local(uri):
            milvus_client.connect(uri).close()
    if isinstance(poly, (str, Path)):  # a loaded poly-encoder is one already
        check_first_stage(poly)


def derive(index_dir: str | Path, backend: str | None, milvus_uri: str | None = None, poly: str | Path | None = None,
           *, extend: bool = True, say: Callable[[str], None] | None = None) -> Derived:
    """Derive the live generation's backend data and poly-encoder codes (see the module docstring).

    Args:
        index_dir: The index directory.
        backend: ``auto``, ``numpy``, ``hnsw`` or ``milvus`` (see ``radsift index build --backend``); None
            leaves the backend's data alone. ``auto`` pushes to Milvus when the index was pushed there
            before (and pymilvus is installed), else builds the graphs from the size threshold on.
        milvus_uri: Where to push (default: the URI the index was pushed to, else its milvus-lite file).
        poly: A poly-encoder folder (or a loaded one) whose codes to write; None writes none.
        extend: False builds every graph from scratch (after ``optimize``: no node left empty by deletions).
        say: Told each step of the work (graphs, push, codes).

    Returns:
        What was derived.
    """
    index_dir = Path(index_dir)
    derived = Derived()
    if backend == "milvus" or (backend == "auto" and milvus_client.pushed_before(index_dir) is not None
                               and milvus_client.available()):
        derived.milvus = milvus_push.push_generation(index_dir, milvus_uri, say=say)
    elif backend is not None:
        derived.graphs = graphs.build_graphs(index_dir, backend, say=say, extend=extend)
    if poly is not None:
        derived.poly_codes = build_poly_codes(index_dir, poly, say=say)
        derived.poly_dir = index_dir / "cache" / "poly"
    return derived


def push_index(index_dir: str | Path, milvus_uri: str | None = None, *,
               say: Callable[[str], None] | None = None) -> Derived:
    """Copy the live generation's vectors into Milvus (``radsift index push``): converts an index built for
    numpy/hnsw, and finishes a push that was interrupted.

    Raises:
        ConfigError: The milvus extra is missing or the server does not answer.
    """
    check_options(index_dir, "milvus", milvus_uri)
    return derive(index_dir, "milvus", milvus_uri, say=say)


__all__ = ["Derived", "check_first_stage", "check_options", "derive", "push_index"]
