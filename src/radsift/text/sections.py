"""Report sections: canonical section names and splitting free text at its headings.

Radiology reports and clinical notes carry upper-case headings (``FINDINGS:``,
``IMPRESSION:``, ``CLINICAL HISTORY:``) whose wording varies between sites. This module
maps headings to a small set of canonical names from a packaged table
(``data/section_titles.yaml``) and splits free text into ``(canonical name, text)`` pairs.

It also reads the scraped MTSamples form, where line breaks became commas
(``"EXAM: ,CT chest.,FINDINGS: ,There is ...,IMPRESSION: ,1. ..."``): stray commas around
headings are dropped, and commas that stood for line breaks inside a section become
newlines again.
"""

from __future__ import annotations

import re
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any

import yaml

from radsift.errors import ConfigError

#: Section name of text that comes before the first heading.
PREAMBLE = "text"

_TABLE_RESOURCE = "section_titles.yaml"
_CANONICAL_NAME_RE = re.compile(r"[a-z][a-z_]*")

# A heading word: letters with inner ' & / - ("ASSESSMENT/PLAN", "X-RAY"); no digits, so
# spine levels ("L5-S1:") and times never qualify.
_WORD = r"[A-Za-z][A-Za-z'&/-]*"
# A heading follows a line break, a sentence end or a comma (the MTSamples form); it is
# 1-5 words followed by ':' (not a time "10:30", not "http://"). The pattern consumes the
# boundary character, which lets the regex engine scan fast; split_sections prepends a
# line break so that a heading at the very start is found too.
_HEADING_RE = re.compile(
    r"(?P<pre>[\n.!?,;][\"')\]]?)"
    r"\s*"
    rf"(?P<head>{_WORD}(?:[ \t]+{_WORD}){{0,4}})[ \t]*:(?![\d/])"
)
# Every character a heading match holds between its boundary character and its colon. Run over the
# reversed text from a colon, it bounds where a match ending at that colon can start (_heading_matches).
_HEAD_RUN_RE = re.compile(r"[A-Za-z'&/\-\"')\]\s]*")
_XXXX_RE = re.compile(r"X{2,}")  # de-identification placeholders are never headings
# MTSamples: commas that stood for line breaks: one after a sentence end ("torsion.,2. Large")
# or one glued between a word and a capital ("1 day,HC = 28 cm"). The pattern starts at
# the comma (fast to scan for); _unwrap_commas checks what precedes it.
_BREAK_COMMA_RE = re.compile(r",(?P<space>[ \t]*)(?=[A-Z0-9(\[\"'])")
_SENTENCE_END_CHARS = frozenset(".;:!?)]")
_EDGE_CHARS = " \t\r\n,"


class _UniqueKeyLoader(yaml.SafeLoader):
    """A safe YAML loader that rejects duplicate mapping keys instead of keeping the last."""


def _construct_unique_mapping(loader: _UniqueKeyLoader, node: yaml.MappingNode, deep: bool = False) -> Any:
    seen: set[Any] = set()
    for key_node, _ in node.value:
        key = loader.construct_object(key_node, deep=deep)
        if key in seen:
            raise yaml.constructor.ConstructorError(
                None, None, f"duplicate key {key!r}", key_node.start_mark
            )
        seen.add(key)
    return loader.construct_mapping(node, deep=deep)


_UniqueKeyLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_unique_mapping)


def read_heading_map(path: str | Path | None, resource: str, what: str, key: str) -> tuple[dict, str]:
    """A YAML mapping of ``key`` -> list of headings (the packaged ``data/RESOURCE`` when ``path`` is
    None), and where it came from; duplicate keys, unreadable files and other shapes are errors.

    Raises:
        ConfigError: Naming the file and what was wrong.
    """
    if path is None:
        source = f"radsift/text/data/{resource}"
        text = resources.files("radsift.text").joinpath("data", resource).read_text(encoding="utf-8")
    else:
        source = str(path)
        try:
            text = Path(path).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise ConfigError(f"{source}: cannot read {what}: {exc}") from exc
    try:
        data = yaml.load(text, Loader=_UniqueKeyLoader)  # noqa: S506 - a SafeLoader subclass
    except yaml.YAMLError as exc:
        raise ConfigError(f"{source}: invalid YAML: {exc}") from exc
    if not isinstance(data, dict) or not data:
        raise ConfigError(f"{source}: expected a mapping of {key} -> list of headings")
    return data, source


def _normalize_heading(heading: str) -> str:
    """Upper-case, ``_`` as space, whitespace collapsed, trailing colon dropped."""
    text = heading.replace("_", " ").strip().rstrip(":").strip()
    return " ".join(text.split()).upper()


def load_section_titles(path: str | Path | None = None) -> dict[str, str]:
    """Load a heading table: normalized heading -> canonical section name.

    Args:
        path: A YAML file shaped like the packaged ``data/section_titles.yaml``
            (canonical name -> list of headings). ``None`` loads the packaged table.

    Returns:
        A dict from normalized (upper-case, single-spaced) heading to canonical name.
        Every canonical name also maps to itself.

    Raises:
        ConfigError: The file is not valid YAML, not shaped as described, uses a bad
            canonical name, or lists one heading twice; the message names the file and key.
    """
    data, source = read_heading_map(path, _TABLE_RESOURCE, "section titles", "canonical section name")
    table: dict[str, str] = {}
    for name, headings in data.items():
        if not isinstance(name, str) or not _CANONICAL_NAME_RE.fullmatch(name):
            raise ConfigError(f"{source}: canonical name {name!r} must be lower-case letters and '_'")
        if not isinstance(headings, list) or not headings:
            raise ConfigError(f"{source}: {name}: expected a non-empty list of headings")
        for heading in [name, *headings]:
            if not isinstance(heading, str) or not _normalize_heading(heading):
                raise ConfigError(f"{source}: {name}: heading {heading!r} must be a non-empty string")
            key = _normalize_heading(heading)
            if table.get(key, name) != name:
                raise ConfigError(f"{source}: {name}: heading {heading!r} is already listed under {table[key]!r}")
            table[key] = name
    return table


@lru_cache(maxsize=1)
def _titles() -> dict[str, str]:
    return load_section_titles()


def is_known_heading(heading: str) -> bool:
    """True when ``heading`` is listed in the packaged section table."""
    return _normalize_heading(heading) in _titles()


def canonical_section(heading: str) -> str:
    """Map a section heading to its canonical name.

    Known headings (see ``data/section_titles.yaml``) map to ``findings``, ``impression``,
    ``indication``, ``history``, ``comparison``, ``technique``, ``exam`` (the name of the
    examination), ``recommendations`` or ``addendum``; matching ignores case, a trailing
    colon and extra spaces. Unknown headings are kept as written, lower-cased with runs of
    other characters turned into ``_``: ``"PHYSICAL EXAMINATION:"`` ->
    ``"physical_examination"``. A blank heading gives ``"text"``.

    Args:
        heading: The heading as written, with or without its colon.

    Returns:
        The canonical section name.
    """
    key = _normalize_heading(heading)
    known = _titles().get(key)
    if known is not None:
        return known
    slug = re.sub(r"[^a-z0-9]+", "_", key.lower()).strip("_")
    return slug or PREAMBLE


def _is_heading(match: re.Match[str]) -> bool:
    return _heading_name(match.group("head"), match.group("pre") == ",") is not None


@lru_cache(maxsize=4096)
def _heading_name(head: str, after_comma: bool) -> str | None:
    """The canonical name of a heading match's words (``head``; ``after_comma``: its boundary is a comma), or
    None when they are not a heading. Remembered: a corpus writes the same few headings on every report."""
    if len(head) < 2 or _XXXX_RE.search(head):
        return None
    # Mixed-case headings ("Impression:") count only when known and not after a comma,
    # so a sentence like "Heart: normal." or ", Fetal presentation: cephalic" stays text.
    if head.upper() != head and (after_comma or not is_known_heading(head)):
        return None
    return canonical_section(head)


def _unwrap_commas(body: str) -> str:
    def replace(m: re.Match[str]) -> str:
        k = m.start()
        while k > 0 and body[k - 1] in " \t":
            k -= 1
        if k > 0 and body[k - 1] in _SENTENCE_END_CHARS:
            return "\n"
        prev = body[m.start() - 1] if m.start() > 0 else ""
        glued = not m.group("space") and (prev.isalnum() or prev == "%") and body[m.end()].isupper()
        return "\n" if glued else m.group()

    return _BREAK_COMMA_RE.sub(replace, body)


def _heading_matches(padded: str) -> list[re.Match[str]]:
    """``_HEADING_RE.finditer(padded)``'s matches, found from the colons.

    The regex alone tries a heading at every sentence end and comma and reads the words after it (most of
    a report's time in split_sections). Every match ends at a colon, and everything between its boundary
    character and that colon is a character of ``_HEAD_RUN_RE``; so for each colon the regex is run only
    from the start of that run (at the earliest where the last match ended) to the colon, with the
    character after the colon in view for its lookahead. The same matches, in the same order
    (``tests/test_text.py`` compares them with ``finditer``'s).
    """
    matches: list[re.Match[str]] = []
    colon = padded.find(":")
    if colon < 0:
        return matches
    reverse, size, pos = padded[::-1], len(padded), 0
    while colon >= 0:
        run = _HEAD_RUN_RE.match(reverse, size - colon).end() - (size - colon)
        m = _HEADING_RE.search(padded, max(pos, colon - run - 1), colon + 2)
        if m is not None:
            matches.append(m)
        pos = colon + 1  # a match ends just after its colon: the next starts after it
        colon = padded.find(":", pos)
    return matches


def split_sections(text: str) -> list[tuple[str, str]]:
    """Split free text into canonical sections at its headings.

    A heading is 1-5 upper-case words followed by ``:`` (``FINDINGS:``, ``REASON FOR
    EXAM:``) at the start of the text, of a line, after a sentence end or after a comma
    (MTSamples). Mixed-case headings (``Impression:``) count only when the section table
    knows them. Digits never appear in a heading (``L5-S1:`` is text), nor do ``XXXX``
    placeholders.

    Args:
        text: The report text.

    Returns:
        ``(canonical name, section text)`` pairs in reading order. Text before the first
        heading goes to section ``"text"``; a heading seen twice has its texts joined by a
        space; sections with no text are left out. Section text is stripped of whitespace
        and stray commas; in the MTSamples form commas that stood for line breaks become
        newlines.
    """
    padded = "\n" + text  # offsets in `padded` are one more than in `text`
    heads = []  # (match, canonical name) of each heading
    for m in _heading_matches(padded):
        name = _heading_name(m.group("head"), m.group("pre") == ",")
        if name is not None:
            heads.append((m, name))
    if not heads:  # no heading: the whole text is the preamble (what the steps below give, in one)
        body = text.strip(_EDGE_CHARS)
        return [(PREAMBLE, body)] if body else []
    # MTSamples form: headings glued to commas ("...,FINDINGS: ,There is ...").
    comma_form = False
    for m, _ in heads:
        end = m.end()
        if m.group("pre") == "," or padded[end : end + 3].lstrip(" \t").startswith(","):
            comma_form = True
            break
    merged: dict[str, list[str]] = {}
    cursor, name = 1, PREAMBLE
    for m, next_name in heads + [(None, None)]:
        body = padded[cursor : m.end("pre")] if m is not None else padded[cursor:]  # the sentence end stays
        body = body.strip(_EDGE_CHARS)
        if comma_form:
            body = _unwrap_commas(body).strip(_EDGE_CHARS)
        if body:
            if name in merged:
                merged[name].append(body)
            else:
                merged[name] = [body]
        if m is not None:
            name, cursor = next_name, m.end()
    return [(part_name, bodies[0] if len(bodies) == 1 else " ".join(bodies)) for part_name, bodies in merged.items()]
