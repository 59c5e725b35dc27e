"""Search settings that belong to a model: the hybrid's dense weight and the concept-link threshold.

Both depend on the encoder: a model trained on a site's reports deserves more weight against BM25
than a general one, and cosine similarities of different models live on different scales. So a
model written by ``radsift train`` carries them in :data:`SETTINGS_FILE` beside its weights, and a
model without one (the packaged all-MiniLM-L6-v2, any other sentence-transformers folder) takes them
from the packaged table ``models/data/search_settings.json``, by model name (``default`` for
others). The figures in that table were measured on development queries only; the measurements
and their commands are in ``docs/measurements.md`` ("Fusion weight of the general model",
"Concept linking").
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from functools import lru_cache
from importlib.resources import files
from pathlib import Path

from radsift.errors import ConfigError
from radsift.models.encoder import DEFAULT_MODEL_NAME, model_display_name

#: Written beside a trained model; read by the index that uses the model.
SETTINGS_FILE = "radsift_search.json"
#: The packaged table's entry that ``radsift train`` writes beside the bi-encoders it trains.
TRAINED = "radsift-trained"
_FIELDS = ("dense_weight", "link_threshold")


@dataclass(frozen=True)
class SearchSettings:
    """How radsift searches with one encoder.

    Attributes:
        dense_weight: Share of the dense side in the ``hybrid`` convex combination (0 to 1).
        link_threshold: Cosine a query needs with a concept's name, synonym or description to be
            linked to it (:mod:`radsift.search.concepts`); above 1 turns linking off.
        source: Where the settings came from (a file, or the packaged table's entry).
    """

    dense_weight: float
    link_threshold: float
    source: str = ""

    def __post_init__(self) -> None:
        if not 0.0 <= float(self.dense_weight) <= 1.0:
            raise ConfigError(f"{self.source or 'search settings'}: dense_weight must be within [0, 1], "
                              f"not {self.dense_weight!r}")
        if not 0.0 < float(self.link_threshold):
            raise ConfigError(f"{self.source or 'search settings'}: link_threshold must be > 0, "
                              f"not {self.link_threshold!r}")

    def to_dict(self) -> dict:
        return {k: v for k, v in asdict(self).items() if k in _FIELDS}


def _parse(data: object, source: str) -> SearchSettings:
    if not isinstance(data, dict) or set(data) - set(_FIELDS) - {"note"} or not set(_FIELDS) <= set(data):
        raise ConfigError(f"{source}: expected {{'dense_weight': ..., 'link_threshold': ...}}")
    try:
        return SearchSettings(float(data["dense_weight"]), float(data["link_threshold"]), source)
    except (TypeError, ValueError):
        raise ConfigError(f"{source}: dense_weight and link_threshold must be numbers") from None


@lru_cache(maxsize=1)
def _table() -> dict:
    return json.loads((files("radsift.models") / "data" / "search_settings.json").read_text(encoding="utf-8"))


def packaged_settings(name: str | None) -> SearchSettings:
    """The packaged table's settings for a model name (``default`` when the name is not in it)."""
    table = _table()
    key = name if name in table else "default"
    return _parse(table[key], f"packaged search settings [{key}]")


def load_search_settings(folder: str | Path | None, name: str | None = None) -> SearchSettings:
    """The settings of the model in ``folder``: its own :data:`SETTINGS_FILE`, else the packaged table.

    Args:
        folder: The model folder (None or a missing folder: the packaged table only).
        name: The model's name, for the packaged table (default: the folder's name).

    Raises:
        ConfigError: The model's settings file is malformed (naming it).
    """
    if folder is not None:
        path = Path(folder) / SETTINGS_FILE
        if path.is_file():
            try:
                data = json.loads(path.read_text(encoding="utf-8"))
            except (OSError, json.JSONDecodeError) as exc:
                raise ConfigError(f"{path}: not readable JSON ({exc})") from None
            return _parse(data, str(path))
        if name is None:
            name = Path(folder).name
    return packaged_settings(name)


def settings_of_model(folder: str | Path | None, name: str | None = None) -> SearchSettings:
    """The settings of the model in ``folder`` (its own file, else the packaged table under its display
    name); without a folder, the packaged table's entry for ``name`` (default: the packaged model)."""
    if folder is None:
        return packaged_settings(name or DEFAULT_MODEL_NAME)
    path = Path(folder)
    return load_search_settings(path, model_display_name(path.resolve()))


def write_search_settings(folder: str | Path, settings: SearchSettings, note: str = "") -> Path:
    """Write ``settings`` beside a model (what :func:`load_search_settings` reads)."""
    path = Path(folder) / SETTINGS_FILE
    data = settings.to_dict() | ({"note": note} if note else {})
    path.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    return path
