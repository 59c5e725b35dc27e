"""Strict YAML reading with line numbers, for the labeler's data files.

PyYAML forgets where a value came from once it is constructed. The lexicon and rules
loaders must name the file *and line* of a bad entry, so this module builds mappings as
:class:`LineDict` and sequences as :class:`LineList`, which remember the line of every key
and item, and rejects duplicate keys (plain PyYAML silently keeps the last one).
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path
from typing import Any

import yaml

from radsift.errors import LexiconError


class LineDict(dict):
    """A mapping that knows its own line and the line of each key (1-based)."""

    line: int = 0
    key_lines: dict[Any, int]

    def line_of(self, key: Any) -> int:
        return self.key_lines.get(key, self.line)


class LineList(list):
    """A sequence that knows its own line and the line of each item (1-based)."""

    line: int = 0
    item_lines: list[int]

    def line_of(self, index: int) -> int:
        return self.item_lines[index] if 0 <= index < len(self.item_lines) else self.line


class _DuplicateKey(Exception):
    def __init__(self, key: Any, line: int) -> None:
        super().__init__(key, line)
        self.key, self.line = key, line


class _LineLoader(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):  # libyaml: about 10x faster
    """A SafeLoader (libyaml's when PyYAML has it) that records line numbers and refuses duplicate keys."""


def _construct_mapping(loader: _LineLoader, node: yaml.MappingNode) -> LineDict:
    result = LineDict()
    result.line = node.start_mark.line + 1
    result.key_lines = {}
    for key_node, value_node in node.value:
        key = loader.construct_object(key_node, deep=True)
        if key in result:
            raise _DuplicateKey(key, key_node.start_mark.line + 1)
        result[key] = loader.construct_object(value_node, deep=True)
        result.key_lines[key] = key_node.start_mark.line + 1
    return result


def _construct_sequence(loader: _LineLoader, node: yaml.SequenceNode) -> LineList:
    result = LineList(loader.construct_object(child, deep=True) for child in node.value)
    result.line = node.start_mark.line + 1
    result.item_lines = [child.start_mark.line + 1 for child in node.value]
    return result


_LineLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)
_LineLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_SEQUENCE_TAG, _construct_sequence)


def read_text(path: str | Path | None, packaged: str, what: str) -> tuple[str, str]:
    """Read a user file, or the packaged ``radsift/labels/data/<packaged>`` when ``path`` is None.

    Returns:
        ``(source, text)`` where ``source`` names the file in error messages.
    """
    if path is None:
        source = f"radsift/labels/data/{packaged}"
        return source, resources.files("radsift.labels").joinpath("data", packaged).read_text(encoding="utf-8")
    source = str(path)
    try:
        return source, Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise LexiconError(f"{source}: cannot read {what}: {exc}") from exc


def load_yaml(text: str, source: str) -> Any:
    """Parse YAML text into :class:`LineDict` / :class:`LineList` values.

    Raises:
        LexiconError: The text is not valid YAML or repeats a key; names ``source`` and the line.
    """
    try:
        return yaml.load(text, Loader=_LineLoader)  # noqa: S506 - a SafeLoader subclass
    except _DuplicateKey as exc:
        raise LexiconError(f"{source}:{exc.line}: duplicate key {exc.key!r}") from None
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        where = f"{source}:{mark.line + 1}" if mark is not None else source
        raise LexiconError(f"{where}: invalid YAML: {exc.problem or exc}") from None
    except yaml.YAMLError as exc:
        raise LexiconError(f"{source}: invalid YAML: {exc}") from None


def check_keys(node: Any, allowed: set[str], required: set[str], source: str, what: str) -> None:
    """Require ``node`` to be a mapping with only ``allowed`` keys and every ``required`` one."""
    if not isinstance(node, LineDict):
        line = getattr(node, "line", None)
        raise LexiconError(f"{source}{f':{line}' if line else ''}: {what} must be a mapping")
    for key in node:
        if key not in allowed:
            raise LexiconError(
                f"{source}:{node.line_of(key)}: unknown key {key!r} in {what} (allowed: {', '.join(sorted(allowed))})"
            )
    missing = sorted(required - set(node))
    if missing:
        raise LexiconError(f"{source}:{node.line}: {what} lacks required key {missing[0]!r}")


def string_list(node: LineDict, key: str, source: str, what: str) -> list[tuple[str, int]]:
    """The ``key`` entry of ``node`` as ``[(string, line), ...]``; a missing key gives ``[]``."""
    if key not in node or node[key] is None:
        return []
    value = node[key]
    line = node.line_of(key)
    if isinstance(value, str):
        value_list = LineList([value])
        value_list.line, value_list.item_lines = line, [line]
        value = value_list
    if not isinstance(value, LineList):
        raise LexiconError(f"{source}:{line}: {what}: {key!r} must be a list of strings")
    out = []
    for i, item in enumerate(value):
        if not isinstance(item, str) or not item.strip():
            raise LexiconError(f"{source}:{value.line_of(i)}: {what}: {key!r} items must be non-empty strings, not {item!r} (quote YAML words like no, yes, on, off)")
        out.append((item.strip(), value.line_of(i)))
    return out
