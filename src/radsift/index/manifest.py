"""The index manifest: what an index directory holds and how it was built."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, ClassVar

from radsift.errors import IndexStoreError
from radsift.index.integrity import MANIFEST_SHA, check_manifest_data, check_manifest_sha, manifest_digest
from radsift.models.encoder import model_fingerprint
from radsift.ranking.bm25 import BM25_PARAMS

#: 2: segments (``INDEX/segments/``) listed by each generation, BM25 as term statistics (1: one folder per
#: generation holding everything, BM25 as bm25s matrices).
FORMAT_VERSION = 2
MANIFEST_NAME = "manifest.json"


def now_iso() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


@dataclass
class Manifest:
    """Contents of ``manifest.json`` in one index generation."""

    format_version: int
    model_name: str
    model_path: str
    model_fingerprint: str
    dim: int
    counts: dict[str, int] = field(default_factory=dict)
    created: str = field(default_factory=now_iso)
    updated: str = field(default_factory=now_iso)
    generation: int = 1
    bm25: dict[str, Any] = field(default_factory=lambda: dict(BM25_PARAMS))
    tokenizer_version: int = 1
    radsift_version: str = ""
    sections: list[str] = field(default_factory=list)
    metadata_keys: list[str] = field(default_factory=list)
    empty_ids: list[str] = field(default_factory=list)  # stored reports with no searchable text
    findings: list[str] = field(default_factory=list)  # lexicon findings seen in the sentences
    lexicon: str | None = None  # lexicon used to label sentences (None = none)
    files: dict[str, dict] = field(default_factory=dict)  # unused since format 2: each segment records its files
    # How the stored vectors were encoded, in order of use (radsift.models.onnx_encoder.BUILD_ENCODERS):
    # ["torch"], or ["onnx-int8"], or ["torch", "onnx"] after an add with another encoder.
    build_encoders: list[str] = field(default_factory=lambda: ["torch"])
    # The generation's segments, in row order (radsift.index.writer): {"name", "counts" (reports, sentences,
    # sections written), "sections", "findings" (the segment's own code tables), "files" (relative path ->
    # {"size", "sha256"}), "deleted" (the segment's report rows deleted since, ascending)}.
    segments: list[dict] = field(default_factory=list)
    #: Whether the manifest read carried its own checksum (False: written before radsift recorded one).
    checksummed: ClassVar[bool] = True

    def check_model(self, path: Path, index_dir: Path) -> None:
        """Refuse a model folder other than the one that built the index (the one model check).

        Query or report vectors from another model are meaningless against stored vectors.

        Raises:
            IndexStoreError: Naming the index, its model and the folder given.
        """
        if model_fingerprint(Path(path)) != self.model_fingerprint:
            raise IndexStoreError(
                f"{index_dir} was built with model {self.model_name} ({self.model_path}); {path} is a different "
                "model, and vectors from another model are meaningless here: use that model (--model) or rebuild "
                "the index"
            )

    def model_folder(self, index_dir: str | Path | None = None) -> str:
        """Where to load the index's own model from: its folder if still there, else its name.

        A model kept inside the index (``INDEX/models/...``, as ``--adapt`` saves it) is recorded relative to
        the index, so a copied or moved index finds it; an index written before that (an absolute path that
        is gone) still finds its model in its own ``models/`` folder when the fingerprint matches.
        """
        path = Path(self.model_path)
        if index_dir is not None and not path.is_absolute() and (Path(index_dir) / path).is_dir():
            return str(Path(index_dir) / path)
        if path.is_dir():  # absolute, or (written before paths were made portable) relative to the shell
            return str(path)
        if index_dir is not None:
            own = Path(index_dir) / "models" / Path(self.model_path).name
            if own.is_dir() and model_fingerprint(own) == self.model_fingerprint:
                return str(own)
        return self.model_name

    def to_json(self) -> str:
        """The manifest as written, with its own checksum (:func:`~radsift.index.integrity.manifest_digest`)."""
        data = asdict(self)
        data[MANIFEST_SHA] = manifest_digest(data)
        return json.dumps(data, indent=2, sort_keys=True)

    @classmethod
    def read(cls, path: Path) -> "Manifest":
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise IndexStoreError(f"{path.parent}: no {MANIFEST_NAME}: not a radsift index") from None
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise IndexStoreError(f"{path}: corrupt manifest ({exc})") from None
        except OSError as exc:
            raise IndexStoreError(f"{path}: cannot read the manifest ({exc.strerror or exc})") from None
        if not isinstance(data, dict):
            raise IndexStoreError(f"{path}: corrupt manifest (not a JSON object)")
        known = set(cls.__dataclass_fields__) | {MANIFEST_SHA}
        if MANIFEST_SHA in data:  # before any field is trusted (a flipped format_version is damage, not a version)
            check_manifest_sha(data, known, path)
        version = data.get("format_version")
        if version == 1:
            raise IndexStoreError(
                f"{path.parent.parent}: this index was written in format version 1, before radsift stored segments "
                f"(this radsift reads version {FORMAT_VERSION}); convert it in place with `radsift index optimize "
                f"{path.parent.parent}` (nothing is re-encoded), or rebuild it with `radsift index build --overwrite`")
        if version != FORMAT_VERSION:
            raise IndexStoreError(
                f"{path.parent}: index format version {version} is not supported by this radsift "
                f"(it reads version {FORMAT_VERSION}); rebuild the index with `radsift index build`"
            )
        checksummed = MANIFEST_SHA in data or check_manifest_sha(data, known, path)
        check_manifest_data(data, path)
        try:
            manifest = cls(**{k: v for k, v in data.items() if k in known and k != MANIFEST_SHA})
        except TypeError as exc:  # a required field missing: a damaged manifest
            raise IndexStoreError(f"{path}: corrupt manifest ({exc})") from None
        manifest.checksummed = checksummed
        return manifest
