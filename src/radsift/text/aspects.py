"""Aspects: section headings normalised to what a passage says about an entity.

CAPR (Grundmann, Arnold & Löser, "Self-supervised answer retrieval on clinical notes") queries a
note by an *(entity, aspect)* pair, the aspect being the passage's section heading normalised:
``HISTORY OF PRESENT ILLNESS`` -> ``history``, ``ASSESSMENT`` / ``IMPRESSION`` -> ``assessment``,
``PLAN`` -> ``treatment``. The map ships as ``data/aspects.yaml`` (aspect -> headings) and can be
extended by a user file (``RADSIFT_ASPECTS=FILE`` or :func:`load_aspect_map`).

A passage is a section of a note with its heading (:func:`note_passages`, built on
:func:`radsift.text.split_sections`); text under no heading is one passage of aspect
:data:`UNSPECIFIED`, a heading the map does not know gives :data:`OTHER`. A passage longer than
a model reads is split into overlapping windows of words (:func:`passage_windows`).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from radsift.errors import ConfigError
from radsift.text.sections import PREAMBLE, _normalize_heading, read_heading_map, split_sections

#: Aspect of text under no heading (a note without headings is one such passage).
UNSPECIFIED = "unspecified"
#: Aspect of a heading the map does not list.
OTHER = "other"
#: Environment variable naming a user aspect file merged over the packaged one.
ASPECTS_ENV = "RADSIFT_ASPECTS"
_RESOURCE = "aspects.yaml"
_NAME_RE = re.compile(r"[a-z][a-z_]*")
#: Window size and overlap (words) of :func:`passage_windows`: about 256 word pieces of clinical text.
WINDOW_WORDS = 180
WINDOW_OVERLAP = 60


class AspectError(ConfigError):
    """An aspect name that the map does not know (the message lists the known ones)."""


@dataclass(frozen=True)
class AspectMap:
    """Normalised heading -> aspect.

    Attributes:
        table: Normalised heading (upper case, single spaces) -> aspect name.
        names: The aspect names, in file order.
        source: Where the map came from (for messages).
    """

    table: dict[str, str]
    names: tuple[str, ...]
    source: str = "packaged"

    def aspect_of(self, heading: str | None) -> str:
        """The aspect of a section heading or canonical section name.

        ``None``, a blank heading and radsift's preamble section (``"text"``) give
        :data:`UNSPECIFIED`; a heading not in the map gives :data:`OTHER`.
        """
        if heading is None:
            return UNSPECIFIED
        key = _normalize_heading(heading)
        if not key or key == PREAMBLE.upper():
            return UNSPECIFIED
        return self.table.get(key, OTHER)

    def resolve(self, name: str) -> str:
        """The aspect a query names (an aspect name or any heading of the map).

        Raises:
            AspectError: ``name`` is not known; the message lists the known aspects.
        """
        key = _normalize_heading(name)
        if key == UNSPECIFIED.upper():
            return UNSPECIFIED
        found = self.table.get(key)
        if found is None:
            raise AspectError(f"unknown aspect {name!r}; known aspects: {', '.join(self.names)} "
                              f"(or a heading listed under one of them in {self.source}; "
                              f"extend the map with {ASPECTS_ENV}=FILE)")
        return found


def _read_yaml(path: str | Path | None) -> tuple[dict, str]:
    return read_heading_map(path, _RESOURCE, "the aspect map", "aspect name")


def _add(table: dict[str, str], names: list[str], data: dict, source: str, override: bool) -> None:
    local: dict[str, str] = {}
    for name, headings in data.items():
        if not isinstance(name, str) or not _NAME_RE.fullmatch(name):
            raise ConfigError(f"{source}: aspect name {name!r} must be lower-case letters and '_'")
        if name in (UNSPECIFIED, OTHER):
            raise ConfigError(f"{source}: {name!r} is reserved (text under no heading / an unlisted heading)")
        if headings is None:
            headings = []
        if not isinstance(headings, list):
            raise ConfigError(f"{source}: {name}: expected a list of headings")
        if name not in names:
            names.append(name)
        for heading in [name, *headings]:
            if not isinstance(heading, str) or not _normalize_heading(heading):
                raise ConfigError(f"{source}: {name}: heading {heading!r} must be a non-empty string")
            key = _normalize_heading(heading)
            if local.get(key, name) != name:
                raise ConfigError(f"{source}: {name}: heading {heading!r} is already listed under {local[key]!r}")
            local[key] = name
            if not override and table.get(key, name) != name:
                raise ConfigError(f"{source}: {name}: heading {heading!r} is already listed under {table[key]!r}")
            table[key] = name


def load_aspect_map(path: str | Path | None = None, *, packaged: bool = True) -> AspectMap:
    """Load the aspect map: the packaged one, extended by ``path`` when given.

    Args:
        path: A user YAML file shaped like ``data/aspects.yaml`` (aspect -> list of headings).
            Its aspects are added; a heading it lists moves to its aspect.
        packaged: Start from the packaged map (False: ``path`` alone).

    Raises:
        ConfigError: Unreadable or malformed file, a bad or reserved aspect name, or one heading
            listed twice in one file; the message names the file and aspect.
    """
    table: dict[str, str] = {}
    names: list[str] = []
    sources = []
    if packaged or path is None:
        data, source = _read_yaml(None)
        _add(table, names, data, source, override=False)
        sources.append(source)
    if path is not None:
        data, source = _read_yaml(path)
        _add(table, names, data, source, override=True)
        sources.append(source)
    return AspectMap(table=table, names=tuple(names), source=" + ".join(sources))


@lru_cache(maxsize=4)
def _cached(path: str | None) -> AspectMap:
    return load_aspect_map(path)


def aspect_map() -> AspectMap:
    """The map in use: the packaged one, extended by the file of ``$RADSIFT_ASPECTS`` when set."""
    return _cached(os.environ.get(ASPECTS_ENV) or None)


def aspect_of(heading: str | None) -> str:
    """:meth:`AspectMap.aspect_of` with the map in use."""
    return aspect_map().aspect_of(heading)


def resolve_aspect(name: str) -> str:
    """:meth:`AspectMap.resolve` with the map in use (raises :class:`AspectError`)."""
    return aspect_map().resolve(name)


def aspect_words(aspect: str) -> str:
    """The aspect as query words: ``risk_factors`` -> ``risk factors``."""
    return aspect.replace("_", " ")


def entity_aspect_text(entity: str, aspect: str) -> str:
    """The text a model reads for an (entity, aspect) query, in training, search and bench alike.

    ``("pneumonia", "treatment")`` -> ``"pneumonia treatment"``: the entity then the aspect's words,
    as CAPR concatenates them.
    """
    return f"{' '.join(entity.split())} {aspect_words(aspect)}".strip()


@dataclass(frozen=True)
class Passage:
    """One passage of a note: a section with its heading and aspect.

    Attributes:
        heading: The canonical section name (:func:`radsift.text.canonical_section`; ``"text"``
            for text under no heading).
        aspect: Its aspect (:data:`UNSPECIFIED` under no heading, :data:`OTHER` when unlisted).
        text: The section text.
        index: Position in the note.
        window: Window number within the section (0 unless the section was split).
    """

    heading: str
    aspect: str
    text: str
    index: int
    window: int = 0


def note_passages(text: str, *, max_words: int | None = None, overlap: int = WINDOW_OVERLAP,
                  amap: AspectMap | None = None) -> list[Passage]:
    """Split a note into passages at its headings, with their aspects.

    A note without headings is one passage of aspect :data:`UNSPECIFIED`; a heading with no
    text gives no passage (:func:`radsift.text.split_sections` drops it). With ``max_words`` a
    longer passage becomes overlapping windows (:func:`passage_windows`), each keeping its
    heading and aspect.
    """
    amap = amap or aspect_map()
    out: list[Passage] = []
    for i, (heading, body) in enumerate(split_sections(text)):
        aspect = amap.aspect_of(heading)
        windows = passage_windows(body, max_words, overlap) if max_words else [body]
        for w, chunk in enumerate(windows):
            out.append(Passage(heading=heading, aspect=aspect, text=chunk, index=i, window=w))
    return out


def passage_windows(text: str, max_words: int | None = WINDOW_WORDS, overlap: int = WINDOW_OVERLAP) -> list[str]:
    """Overlapping windows of at most ``max_words`` words (a text that fits is one window).

    Consecutive windows share ``overlap`` words, so a sentence cut at one window's end is whole
    in the next. MiniLM reads 256 word pieces; 180 words of clinical text are about that many.

    Raises:
        ValueError: ``overlap`` is not below ``max_words``.
    """
    words = text.split()
    if max_words is None or len(words) <= max_words:
        return [text]
    if not 0 <= overlap < max_words:
        raise ValueError(f"overlap ({overlap}) must lie in [0, max_words={max_words})")
    step = max_words - overlap
    out = []
    for start in range(0, len(words), step):
        out.append(" ".join(words[start:start + max_words]))
        if start + max_words >= len(words):
            break
    return out


def section_windows(texts: list[str]) -> tuple[list[str], list[int]]:
    """The windows of every text (:func:`passage_windows` with the defaults), and the text each
    window comes from: how the index reads its section units (bi-encoder vectors, poly-encoder codes)."""
    windows: list[str] = []
    owner: list[int] = []
    for row, text in enumerate(texts):
        for window in passage_windows(text):
            windows.append(window)
            owner.append(row)
    return windows, owner
