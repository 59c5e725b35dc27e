"""System specs of ``radsift bench``: parse ``--systems`` strings and YAML files, check them early."""

from __future__ import annotations

import dataclasses
import importlib.util
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping, Sequence

from radsift.errors import ConfigError
from radsift.models.encoder import resolve_model_path

KINDS = ("bm25", "dense", "hybrid", "hybrid-rrf", "rerank")
# First stages a reranker can re-score; ``hybrid+rerank:...`` names the hybrid one.
FIRST_STAGES = ("dense", "hybrid")
# Candidates a reranker re-scores per query (the first stage's top).
RERANK_DEPTH = 50
RERANKER_MODULE = "radsift.models.reranker"
DEFAULT_MODEL_KEY = "default"
#: Suffix of a kind that ranks negation-aware (``hybrid+negation``): see :mod:`radsift.evaluation.systems`.
NEGATION_SUFFIX = "+negation"


@dataclass(frozen=True)
class SystemSpec:
    """What to build: a kind, its model folders and a display name.

    Attributes:
        kind: ``bm25``, ``dense``, ``hybrid``, ``hybrid-rrf`` or ``rerank``.
        model: Bi-encoder folder (None = the packaged default model); unused by ``bm25``.
        reranker: Cross-encoder folder (``rerank`` only).
        name: Display name (default: derived from the spec, see :attr:`label`).
        source: Where the spec came from (for error messages).
        depth: Candidates the reranker re-scores (``rerank`` only).
        first_stage: ``dense`` or ``hybrid``: the ranking a reranker re-scores (``rerank`` only).
        negation: Rank negation-aware, as ``radsift search`` does by default (``KIND+negation``).
    """

    kind: str
    model: str | None = None
    reranker: str | None = None
    name: str | None = None
    source: str = "--systems"
    depth: int = RERANK_DEPTH
    first_stage: str = "dense"
    negation: bool = False

    @property
    def label(self) -> str:
        """The name shown in tables and plots."""
        if self.name:
            return self.name
        if self.kind == "bm25":
            return self._kind_token()
        if self.kind == "rerank":
            base = f"{self._kind_token()}:{Path(self.reranker or '?').name}"
            return base if self.model is None else f"{base}+{Path(self.model).name}"
        kind = self._kind_token()
        return kind if self.model is None else f"{kind}:{Path(self.model).name}"

    def _kind_token(self) -> str:
        if self.kind == "rerank":
            return "hybrid+rerank" if self.first_stage == "hybrid" else "rerank"
        return self.kind + (NEGATION_SUFFIX if self.negation else "")

    def describe(self) -> str:
        """The spec in ``--systems`` syntax."""
        parts = [self._kind_token()] + [p for p in (self.model, self.reranker) if p]
        return ":".join(parts)


def split_system(text: str) -> tuple[str | None, str, str, str]:
    """``NAME=KIND:REST`` -> ``(NAME or None, kind lower-cased, ":" or "", REST)``: the shape every
    protocol's ``--systems`` entries share (a name holds no ``:``, ``/`` or ``\\``)."""
    raw = str(text).strip()
    name = None
    head, eq, tail = raw.partition("=")
    if eq and head and not any(c in head for c in ":/\\"):
        name, raw = head.strip(), tail.strip()
    kind, colon, rest = raw.partition(":")
    return name, kind.strip().lower(), colon, rest


def parse_system(text: str, source: str = "--systems") -> SystemSpec:
    """Parse ``bm25``, ``dense[:MODEL]``, ``hybrid[:MODEL]``, ``[hybrid+]rerank:[MODEL:]RERANKER``, optionally ``NAME=SPEC``.

    Raises:
        ConfigError: Unknown kind, empty name or path, or a path given to ``bm25``.
    """
    name, kind, colon, rest = split_system(text)
    first_stage = "dense"
    negation = False
    if kind.endswith("+rerank") and kind[: -len("+rerank")] in FIRST_STAGES:
        kind, first_stage = "rerank", kind[: -len("+rerank")]
    elif kind.endswith(NEGATION_SUFFIX) and kind[: -len(NEGATION_SUFFIX)] in KINDS[:4]:
        kind, negation = kind[: -len(NEGATION_SUFFIX)], True
    if kind not in KINDS:
        raise ConfigError(
            f"{source}: unknown system {text!r}: use bm25, dense[:MODEL], hybrid[:MODEL], hybrid-rrf[:MODEL] "
            "(each optionally KIND+negation, e.g. hybrid+negation:MODEL) or [hybrid+]rerank:[MODEL:]RERANKER"
        )
    if colon and not rest.strip():
        raise ConfigError(f"{source}: system {text!r}: empty model path after ':'")
    model = reranker = None
    if kind == "bm25":
        if colon:
            raise ConfigError(f"{source}: system {text!r}: bm25 takes no model")
    elif kind == "rerank":
        if not colon:
            raise ConfigError(f"{source}: system {text!r}: give the reranker folder, rerank:[MODEL:]RERANKER")
        parts = rest.split(":")
        if len(parts) > 2 or not all(p.strip() for p in parts):
            raise ConfigError(f"{source}: system {text!r}: expected rerank:RERANKER or rerank:MODEL:RERANKER")
        reranker = parts[-1].strip()
        model = parts[0].strip() if len(parts) == 2 else None
    elif colon:
        model = rest.strip()
    if model in ("default",):
        model = None
    return SystemSpec(kind=kind, model=model, reranker=reranker, name=name, source=source, first_stage=first_stage,
                      negation=negation)


_YAML_KEYS = {"name", "kind", "model", "reranker", "spec", "depth", "first_stage", "negation"}


def load_systems_file(path: str | Path) -> list[SystemSpec]:
    """Read systems from YAML: a list (or ``systems:`` list) of specs or mappings.

    Example::

        systems:
          - bm25
          - dense                       # the packaged default model
          - name: trained
            kind: dense
            model: runs/minilm-radiology   # relative paths: from this file's folder
          - tuned=hybrid:runs/minilm-radiology

    Raises:
        ConfigError: The file is missing, not YAML, or an item is malformed (names the item).
    """
    import yaml

    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"{path}: systems file not found")
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (yaml.YAMLError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: not a valid YAML systems file ({exc})") from None
    if isinstance(data, Mapping):
        data = data.get("systems")
    if not isinstance(data, list) or not data:
        raise ConfigError(f"{path}: expected a non-empty list of systems (or a 'systems:' list)")
    specs = []
    for i, item in enumerate(data, 1):
        where = f"{path}: system #{i}"
        if isinstance(item, str):
            spec = parse_system(item, source=where)
        elif isinstance(item, Mapping):
            unknown = set(item) - _YAML_KEYS
            if unknown:
                raise ConfigError(f"{where}: unknown keys {sorted(unknown)} (known: {sorted(_YAML_KEYS)})")
            if "spec" in item:
                spec = parse_system(str(item["spec"]), source=where)
            elif "kind" in item:
                text = str(item["kind"])
                for key in ("model", "reranker"):
                    if item.get(key):
                        text += f":{item[key]}"
                spec = parse_system(text, source=where)
            else:
                raise ConfigError(f"{where}: give 'kind' (bm25, dense, hybrid, hybrid-rrf, rerank) or 'spec'")
            if item.get("name"):
                spec = dataclasses.replace(spec, name=str(item["name"]))
            if "depth" in item:
                depth = item["depth"]
                if spec.kind != "rerank" or isinstance(depth, bool) or not isinstance(depth, int) or depth < 1:
                    raise ConfigError(f"{where}: 'depth' is a positive integer, for rerank systems only")
                spec = dataclasses.replace(spec, depth=depth)
            if "first_stage" in item:
                stage = item["first_stage"]
                if spec.kind != "rerank" or stage not in FIRST_STAGES:
                    raise ConfigError(f"{where}: 'first_stage' is one of {list(FIRST_STAGES)}, for rerank systems only")
                spec = dataclasses.replace(spec, first_stage=stage)
            if "negation" in item:
                if spec.kind == "rerank" or not isinstance(item["negation"], bool):
                    raise ConfigError(f"{where}: 'negation' is true or false, for bm25, dense and hybrid systems")
                spec = dataclasses.replace(spec, negation=item["negation"])
        else:
            raise ConfigError(f"{where}: expected a string or a mapping, got {type(item).__name__}")
        specs.append(_relative_to(spec, path.parent))
    return specs


def _relative_to(spec: SystemSpec, folder: Path) -> SystemSpec:
    def fix(p: str | None) -> str | None:
        if p is None or Path(p).expanduser().is_absolute():
            return p
        return str(folder / p)

    return dataclasses.replace(spec, model=fix(spec.model), reranker=fix(spec.reranker))


def check_specs(specs: Sequence[SystemSpec], injected: Sequence[str] = ()) -> None:
    """Fail early: unique names, model folders that exist, a reranker module when asked for.

    Args:
        specs: The systems.
        injected: Model keys (paths as written, or ``"default"``) whose encoder or reranker is
            given ready-made: their folders are not checked.

    Raises:
        ConfigError: Naming the system and the path or problem.
    """
    if not specs:
        raise ConfigError("no system to evaluate: give --systems bm25 --systems dense (or --systems-file)")
    seen: dict[str, SystemSpec] = {}
    for spec in specs:
        if spec.label in seen:
            raise ConfigError(
                f"two systems are named {spec.label!r} ({seen[spec.label].describe()} and {spec.describe()}): "
                "name them, e.g. --systems mine=dense:PATH"
            )
        seen[spec.label] = spec
        for path in (spec.model, spec.reranker):
            if path is None or path in injected:
                continue
            if not Path(path).expanduser().exists():
                raise ConfigError(f"{spec.source}: system {spec.label!r}: model path does not exist: {path}")
            if path == spec.model:
                try:
                    resolve_model_path(path)
                except ConfigError as exc:
                    raise ConfigError(f"{spec.source}: system {spec.label!r}: {exc}") from None
        if spec.kind == "rerank":
            if importlib.util.find_spec(RERANKER_MODULE) is None:
                raise ConfigError(
                    f"{spec.source}: system {spec.label!r}: the reranker is not available yet "
                    f"({RERANKER_MODULE} is not installed in this version)"
                )
            if spec.reranker not in injected and not (Path(spec.reranker).expanduser() / "config.json").is_file():
                raise ConfigError(f"{spec.source}: system {spec.label!r}: {spec.reranker} is not a cross-encoder "
                                  "folder (no config.json)")


