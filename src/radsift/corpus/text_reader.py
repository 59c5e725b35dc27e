"""Plain-text corpora: a folder of ``.txt`` files, or one text file, one report each."""

from __future__ import annotations

from pathlib import Path
from typing import Iterator

from radsift.corpus.options import ReaderOptions
from radsift.corpus.rows import Parsed, assemble, decode_file, list_files
from radsift.errors import CorpusError


def _read_one(path: Path, report_id: str, options: ReaderOptions) -> Parsed:
    text, line, problem = decode_file(path.read_bytes(), options.encoding)
    if problem is not None:
        return Parsed(f"{path} line {line}", problem=problem)
    return Parsed(str(path), assemble(report_id, text, [], []))


def read_text_file(path: Path, options: ReaderOptions) -> Iterator[Parsed]:
    """Yield the single report of a text file: id = file stem, text split at its headings."""
    if path.is_dir():
        raise CorpusError(f"{path}: is a folder; --format text reads one file (use --format txt for a folder)")
    yield _read_one(path, path.stem, options)


def read_txt_folder(path: Path, options: ReaderOptions) -> Iterator[Parsed]:
    """Yield one report per ``*.txt`` file under a folder (recursively, sorted).

    The id is the file's path relative to the folder without ``.txt`` (the file stem for
    files directly in the folder); the text is split at its headings.

    Raises:
        CorpusError: The path is not a folder or holds no ``.txt`` files.
    """
    if not path.is_dir():
        raise CorpusError(f"{path}: not a folder; --format txt reads a folder of .txt files (use --format text)")
    files = list_files(path, "*.txt")
    if not files:
        raise CorpusError(f"{path}: no .txt files in this folder")
    for file in files:
        report_id = file.relative_to(path).with_suffix("").as_posix()
        yield _read_one(file, report_id, options)
