"""Open-i / Indiana University chest X-ray XML reports.

Each report is an ``<eCitation>`` element (usually one per file)::

    <eCitation>
      <uId id="CXR1"/> <pmcId id="1"/>
      <MedlineCitation><Article><Abstract>
        <AbstractText Label="FINDINGS">...</AbstractText>
        <AbstractText Label="IMPRESSION">...</AbstractText>
      </Abstract></Article></MedlineCitation>
      <MeSH><major>...</major><automatic>...</automatic></MeSH>
      <parentImage id="CXR1_1_IM-0001-3001">...</parentImage>
    </eCitation>

Parsed with :mod:`xml.etree.ElementTree` (``iterparse``, so a file holding many
citations is streamed). The standard library parser does not fetch external entities.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Iterator

from radsift.corpus.options import ReaderOptions
from radsift.corpus.rows import Parsed, assemble, list_files
from radsift.errors import CorpusError
from radsift.records import Report
from radsift.text import canonical_section

_CITATION = "eCitation"


def _attr(elem: ET.Element, tag: str) -> str | None:
    found = elem.find(f".//{tag}")
    if found is None:
        return None
    value = (found.get("id") or "").strip()
    return value or None


def _texts(elem: ET.Element, path: str) -> list[str]:
    return [text for node in elem.iterfind(path) if (text := "".join(node.itertext()).strip())]


def _citation_report(elem: ET.Element, fallback_id: str, options: ReaderOptions) -> Report:
    uid, pmc_id = _attr(elem, "uId"), _attr(elem, "pmcId")
    wanted = {label.strip().upper(): name for name, label in options.sections.items()}
    sections: list[tuple[str, str]] = []
    metadata: list[tuple[str, str | None]] = [("uid", uid), ("pmc_id", pmc_id)]
    for node in elem.iter("AbstractText"):
        label = (node.get("Label") or node.get("NlmCategory") or "text").strip()
        text = "".join(node.itertext()).strip()
        if not wanted:
            sections.append((canonical_section(label), text))
        elif label.upper() in wanted:
            sections.append((wanted[label.upper()], text))
        else:
            metadata.append((canonical_section(label), text))
    metadata += [
        ("mesh_major", "; ".join(_texts(elem, ".//MeSH/major")) or None),
        ("mesh_automatic", "; ".join(_texts(elem, ".//MeSH/automatic")) or None),
        ("images", " ".join(i for n in elem.iter("parentImage") if (i := (n.get("id") or "").strip())) or None),
    ]
    return assemble(uid or pmc_id or fallback_id, None, sections, metadata)


def _read_file(path: Path, options: ReaderOptions) -> Iterator[Parsed]:
    count = 0
    root: ET.Element | None = None
    try:
        for event, elem in ET.iterparse(path, events=("start", "end")):
            if root is None:
                root = elem
            if event == "end" and elem.tag == _CITATION:
                fallback = path.stem if count == 0 else f"{path.stem}_{count + 1}"
                location = str(path) if count == 0 else f"{path} record {count + 1}"
                yield Parsed(location, _citation_report(elem, fallback, options))
                count += 1
                elem.clear()  # keep memory flat on files with many citations
    except ET.ParseError as exc:
        line = exc.position[0] if getattr(exc, "position", None) else "?"
        yield Parsed(f"{path} line {line}", problem=f"invalid XML: {exc}")
        return
    if count == 0:
        if root is not None and root.find(".//AbstractText") is not None:
            yield Parsed(str(path), _citation_report(root, path.stem, options))  # no eCitation wrapper
        else:
            yield Parsed(str(path), problem="no Open-i report in this file (no <eCitation> or <AbstractText>)")


def read_openi_xml(path: Path, options: ReaderOptions) -> Iterator[Parsed]:
    """Yield the reports of an Open-i XML file, or of every ``*.xml`` file under a folder.

    The id is ``<uId id>``, else ``<pmcId id>``, else the file stem. Each
    ``<AbstractText Label=...>`` becomes a section named by ``canonical_section(label)``;
    when ``options.sections`` is given (name -> label) only those labels become sections and
    the others go to metadata. Metadata also holds ``uid``, ``pmc_id``, ``mesh_major``,
    ``mesh_automatic`` (``; ``-joined) and ``images`` (parent image ids, space-joined).
    """
    if path.is_dir():
        files = list_files(path, "*.xml")
        if not files:
            raise CorpusError(f"{path}: no .xml files in this folder")
    else:
        files = [path]
    for file in files:
        yield from _read_file(file, options)
