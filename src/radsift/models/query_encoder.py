"""The encoder a search encodes its queries with: ONNX Runtime when it can, torch otherwise.

Loading torch and sentence-transformers takes seconds (about 10 s on a 2-core machine under load),
most of a dense search run from a cold shell; ONNX Runtime runs the same model, exported once, in
about a second (:mod:`radsift.models.onnx_encoder`, the ``fp32`` export: the same arithmetic, query
vectors within 1e-6 in cosine of torch's, checked by ``tests/test_query_encoder.py``).

:func:`load_query_encoder` chooses by ``$RADSIFT_QUERY_ENCODER``:

- ``auto`` (the default): the ONNX export of the model when ``onnxruntime`` is installed and an export
  is found, in the index's ``cache/onnx/`` (an index may carry one) or the user's cache
  (:func:`~radsift.models.onnx_encoder.default_cache_dir`, where ``radsift index build --encoder onnx``
  puts it). With none, and ``onnx`` installed, the model is exported once into the user's cache (the
  index's ``cache/onnx/`` when that is not writable), written to a temporary folder and renamed into
  place; a note says so. Anything that fails on the way (no onnxruntime, a model ONNX cannot export,
  no writable cache) falls back to torch;
- ``onnx``: the ONNX export, or an error saying why not;
- ``torch``: sentence-transformers, as before.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Callable

from radsift.errors import ConfigError
from radsift.models.encoder import Encoder
from radsift.models.onnx_encoder import (OnnxEncoder, cache_folder, default_cache_dir, fast_encoding_available,
                                         read_marker, require_runtime)

#: The environment variable that chooses the query encoder.
QUERY_ENCODER_ENV = "RADSIFT_QUERY_ENCODER"
QUERY_ENCODERS = ("auto", "onnx", "torch")
#: Where, below an index's folder, an index may carry ONNX exports of its model.
INDEX_ONNX_DIR = Path("cache") / "onnx"


def query_encoder_choice() -> str:
    """``$RADSIFT_QUERY_ENCODER`` (``auto`` when unset), checked."""
    choice = (os.environ.get(QUERY_ENCODER_ENV) or "auto").strip().lower()
    if choice not in QUERY_ENCODERS:
        raise ConfigError(f"{QUERY_ENCODER_ENV}={choice!r}: choose one of {', '.join(QUERY_ENCODERS)}")
    return choice


def load_query_encoder(model: Path, *, threads: int | None = None, index_dir: Path | None = None,
                       log: Callable[[str], None] | None = None):
    """The query encoder of ``model`` (a model folder): its ONNX export or torch (see the module).

    Args:
        model: The model folder the index was built with.
        threads: torch threads, or ONNX Runtime intra-op threads.
        index_dir: The index's folder (its ``cache/onnx/`` is searched, and written when the user's
            cache is not writable).
        log: Receives a line when an export starts (it takes a while, once).

    Raises:
        ConfigError: A bad ``$RADSIFT_QUERY_ENCODER``; with ``onnx``, why the ONNX encoder cannot be used.
    """
    choice = query_encoder_choice()
    if choice != "torch" and _is_sentence_transformer(model):
        try:
            return _onnx_encoder(model, threads, index_dir, log)
        except Exception as exc:  # noqa: BLE001 - any failure of the fast path falls back to torch
            if choice == "onnx":
                if isinstance(exc, ConfigError):
                    raise
                raise ConfigError(f"{QUERY_ENCODER_ENV}=onnx: the ONNX encoder of {model} failed "
                                  f"({type(exc).__name__}: {str(exc)[:200]})") from None
    elif choice == "onnx":
        raise ConfigError(f"{QUERY_ENCODER_ENV}=onnx: {model} is not a sentence-transformers model folder")
    return Encoder.load(model, threads=threads)


def _is_sentence_transformer(model: Path) -> bool:
    """Whether ``model`` has a sentence-transformers ``modules.json`` (a list of modules; radsift's
    hashing test encoder marks its folder with a dict instead)."""
    try:
        return (Path(model) / "modules.json").read_text(encoding="utf-8").lstrip().startswith("[")
    except OSError:
        return False


def export_dirs(index_dir: Path | None) -> list[Path]:
    """Where exports are looked for, in order: the index's ``cache/onnx/``, then the user's cache."""
    dirs = [Path(index_dir) / INDEX_ONNX_DIR] if index_dir is not None else []
    return dirs + [default_cache_dir()]


def find_export(model: Path, index_dir: Path | None) -> Path | None:
    """The cache folder (of :func:`export_dirs`) holding a finished fp32 export of ``model``, or None."""
    for folder in export_dirs(index_dir):
        if read_marker(cache_folder(model, "fp32", folder)) is not None:
            return folder
    return None


def _onnx_encoder(model: Path, threads: int | None, index_dir: Path | None, log) -> OnnxEncoder:
    require_runtime()
    found = find_export(model, index_dir)
    if found is None:
        if not fast_encoding_available():
            raise ConfigError("no ONNX export of the model, and the onnx package to write one is not installed")
        found = _writable(export_dirs(index_dir)[::-1])  # the user's cache first: one export per model
        if found is None:
            raise ConfigError("no ONNX export of the model, and no writable folder to export it into")
        if log is not None:
            log(f"exporting the model to ONNX once ({found}), so that later searches start in about a second")
    return OnnxEncoder.load(model, variant="fp32", threads=threads, cache_dir=found)


def _writable(folders: list[Path]) -> Path | None:
    """The first of ``folders`` that exists or can be made, and can be written."""
    for folder in folders:
        try:
            folder.mkdir(parents=True, exist_ok=True)
        except OSError:
            continue
        if os.access(folder, os.W_OK | os.X_OK):
            return folder
    return None
