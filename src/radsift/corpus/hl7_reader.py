"""HL7 v2 ``ORU^R01`` result messages: a file of messages, plain or MLLP-framed.

What a radiology information system sends an EHR. A file holds messages one after another (each
starting at an ``MSH`` segment; segments end in CR, LF or CRLF) or framed for MLLP (``\\x0b`` message
``\\x1c\\r``). Parsed with ``hl7`` (python-hl7: the header and the escapes; the other segments are split at
the header's separators, see :class:`Message`). Each ``OBR`` of a message and the ``OBX`` segments after it
are one report:

* **id**: ``OBR-3`` (the filler order / accession number), else ``OBR-2`` (placer order), else
  ``MSH-10`` (the message control id; with ``-N`` for the N-th OBR of a message past the first);
* **text**: the ``OBX-5`` values of its ``OBX`` segments in order, one line each (HL7 escapes undone:
  ``\\.br\\`` is a line break), split at their headings like any free text;
* **metadata**: ``patient`` (``PID-3``, first identifier), ``date`` (``YYYY-MM-DD``) and ``datetime``
  (ISO 8601) from ``OBR-7`` (observation time), else ``MSH-7``; ``exam`` (``OBR-4``: its text, else its
  code), ``exam_code``, ``modality`` (read from the exam's name, as for FHIR), ``status`` (``OBR-25``).

A message that does not parse, is not ``ORU^R01``, has no ``OBR`` or no text, or whose time is not an
HL7 timestamp is a problem named by the file, the message's number and its first line. A file with undecodable
bytes is one problem (its first bad byte named), none of its reports read.

A file is read in 64 KiB pieces, as the CSV reader reads line by line: checked first (decodable? MLLP?), then
decoded and split piece by piece (``tests/test_hl7_split.py`` compares it with the split of the whole text).
"""

from __future__ import annotations

import codecs
import re
from functools import lru_cache
from pathlib import Path
from typing import Any, BinaryIO, Iterable, Iterator

import hl7

from radsift.corpus.options import ReaderOptions
from radsift.corpus.rows import Parsed, list_files
from radsift.errors import CorpusError
from radsift.records import Report
from radsift.text import split_sections
from radsift.text.modalities import modality_in

_MLLP_START, _MLLP_END = "\x0b", "\x1c"
_BREAK = re.compile(r"\r\n|\r|\n")
_CHUNK = 1 << 16  # bytes read at a time: under the size from which malloc maps fresh memory (128 KiB)
# encodings read in pieces: their incremental decoding gives the whole decoding's text, and ASCII bytes decode
# as themselves (checked without decoding); files in others are read whole
_STREAMED = frozenset({"utf-8", "utf-8-sig", "ascii", "iso8859-1", "cp1252"})
_TS = re.compile(r"^(\d{4})(\d{2})?(\d{2})?(\d{2})?(\d{2})?(\d{2}(?:\.\d+)?)?([+-]\d{4})?$")


def hl7_time(value: str) -> str | None:
    """An HL7 timestamp (``YYYY[MM[DD[HH[MM[SS]]]]][+ZZZZ]``) as ISO 8601, or None when empty.

    Raises:
        ValueError: Not an HL7 timestamp, or not a real date.
    """
    value = value.strip()
    if not value:
        return None
    if len(value) in (8, 12, 14) and value.isascii() and value.isdigit():  # the usual forms, without the regex
        return _digit_time(value)
    return _regex_time(value)


def _regex_time(value: str) -> str:
    """:func:`hl7_time` of a stripped, non-empty value, read with the timestamp pattern (any form)."""
    m = _TS.match(value)
    if not m:
        raise ValueError(f"{value!r} is not an HL7 timestamp (YYYYMMDDHHMM)")
    year, month, day, hour, minute, second, zone = m.groups()
    if month and not 1 <= int(month) <= 12 or day and not 1 <= int(day) <= 31 or hour and int(hour) > 23 \
            or minute and int(minute) > 59:
        raise ValueError(f"{value!r} is not a real date and time")
    out = "-".join(x for x in (year, month, day) if x)
    if hour:
        out += f"T{hour}:{minute or '00'}" + (f":{second}" if second else "")
        if zone:
            out += f"{zone[:3]}:{zone[3:]}"
    return out


def _digit_time(value: str) -> str:
    """:func:`hl7_time` of 8, 12 or 14 ASCII digits (``YYYYMMDD[HHMM[SS]]``): the same checks and text."""
    month, day = value[4:6], value[6:8]
    hour, minute = value[8:10], value[10:12]
    # two ASCII digits compare as text as they do as numbers
    if not "01" <= month <= "12" or not "01" <= day <= "31" or hour and (hour > "23" or minute > "59"):
        raise ValueError(f"{value!r} is not a real date and time")
    out = f"{value[:4]}-{month}-{day}"
    if hour:
        out += f"T{hour}:{minute}" + (f":{value[12:]}" if len(value) == 14 else "")
    return out


def split_messages(text: str) -> Iterator[tuple[int, str]]:
    """``(first line, message)`` of each message in a file: MLLP frames, or runs starting at ``MSH``.

    Segments come back separated by CR, as HL7 wants them."""
    for line, segments in _message_segments(text):
        yield line, "\r".join(segments)


def _message_segments(text: str) -> Iterator[tuple[int, list[str]]]:
    """:func:`split_messages` with each message as its list of (non-blank) segments: the reader's form, which
    is not joined to be split again."""
    text = text.lstrip("\ufeff")
    return _segments([text], _MLLP_START in text)


def _segments(pieces: Iterable[str], mllp: bool) -> Iterator[tuple[int, list[str]]]:
    """:func:`_message_segments` of a text given in pieces (their concatenation, its BOMs stripped), framed for
    MLLP or not (whether the whole text holds a frame start): the same messages wherever the pieces are cut."""
    return _mllp_segments(pieces) if mllp else _plain_segments(pieces)


def _mllp_segments(pieces: Iterable[str]) -> Iterator[tuple[int, list[str]]]:
    """:func:`_segments` of MLLP frames: each frame start to its end; what lies outside the frames is skipped,
    but its lines are counted (LF only)."""
    line, framed, carry = 1, False, []  # framed: past the first frame start (the text before it is no message)
    for piece in pieces:
        chunks = piece.split(_MLLP_START)
        carry.append(chunks[0])
        if len(chunks) == 1:  # no frame starts here: the chunk goes on in the next piece
            continue
        chunks[0] = "".join(carry)
        carry = [chunks.pop()]
        lf = "\n" in piece or "\n" in chunks[0]  # (else no chunk has a line to count)
        for chunk in chunks:  # the chunks between two frame starts, whole
            if framed:
                yield line, _frame_segments(chunk)
            framed = True
            if lf:
                line += chunk.count("\n")
    if framed:
        yield line, _frame_segments("".join(carry))


def _frame_segments(chunk: str) -> list[str]:
    """The non-blank segments of a frame (the text from a frame start to the next): up to its end, at CR, LF
    and CRLF."""
    end = chunk.find(_MLLP_END)
    return list(filter(str.strip, _lines(chunk[:end] if end >= 0 else chunk)))  # (those whose strip is not empty)


def _plain_segments(pieces: Iterable[str]) -> Iterator[tuple[int, list[str]]]:
    """:func:`_segments` of messages one after another: lines (at CR, LF or CRLF), a message from each line
    starting ``MSH``, blank lines dropped (but counted)."""
    current: list[str] = []
    start = number = 0
    carry: list[str] = []  # the start of a line that goes on in the next piece
    after_cr = False  # the last piece ended in a CR: an LF starting the next is the same line break
    for piece in pieces:
        if after_cr and piece:
            after_cr = False
            if piece[0] == "\n":
                piece = piece[1:]
        lines = _lines(piece)
        if len(lines) == 1:  # no line break in this piece
            carry.append(piece)
            continue
        if carry:
            carry.append(lines[0])
            lines[0] = "".join(carry)
        tail = lines.pop()  # after the last break: the start of the next piece's first line
        carry = [tail] if tail else []
        after_cr = not tail and piece[-1] == "\r"
        for number, line in enumerate(lines, number + 1):
            if line.startswith("MSH") and current:
                yield start, current
                current = []
            if line.strip():
                if not current:
                    start = number
                current.append(line)
    line = "".join(carry)  # the last line (after the last break; often empty)
    if line.startswith("MSH") and current:
        yield start, current
        current = []
    if line.strip():
        if not current:
            start = number + 1
        current.append(line)
    if current:
        yield start, current


def _lines(text: str) -> list[str]:
    """``text`` split at CR, LF and CRLF: with the pattern where it needs it (it is the slowest), else with the
    split that gives the same lines: at LF (no CR), at CR (no LF), at CRLF (every CR and LF in a CRLF)."""
    if "\r" not in text:
        return text.split("\n")
    if "\n" not in text:
        return text.split("\r")
    crlf = text.count("\r\n")
    if crlf == text.count("\r") and crlf == text.count("\n"):
        return text.split("\r\n")
    return _BREAK.split(text)


def _file_pieces(handle: BinaryIO, encoding: str) -> tuple[Iterator[str], bool] | None:
    """The text of an open file (its start's BOMs stripped) in pieces of at most :data:`_CHUNK` bytes, and
    whether it holds an MLLP frame start; None where it must be read whole (an encoding not streamed, a file
    that cannot be read twice, undecodable bytes: reading it whole names the first one's byte, as always).

    Read twice: first checked (decodable? MLLP?: both change how every message is read, so they are known
    before the first report is given), then decoded piece by piece (the bytes checked, no more: a file rewritten
    between the two readings can raise UnicodeDecodeError, which read_corpus names as a file it cannot read).
    Reading the whole file at once allocates its bytes, its text and all its lines at once: memory fresh from the
    system on every read, whose page faults cost more than the second reading (about 1,700 of them for 3,000
    reports, 5% of the read's time)."""
    if codecs.lookup(encoding).name not in _STREAMED or not handle.seekable():
        return None
    size, mllp, plain = 0, False, True  # plain: ASCII so far (any of these encodings decodes it, as itself)
    decoder = codecs.getincrementaldecoder(encoding)()
    try:
        while chunk := handle.read(_CHUNK):
            size += len(chunk)
            if plain and chunk.isascii():
                mllp = mllp or b"\x0b" in chunk
            else:
                plain = False
                mllp = _MLLP_START in decoder.decode(chunk) or mllp
        mllp = _MLLP_START in decoder.decode(b"", True) or mllp
    except UnicodeDecodeError:
        return None
    handle.seek(0)
    return _decoded_pieces(handle, encoding, size), mllp


def _decoded_pieces(handle: BinaryIO, encoding: str, size: int) -> Iterator[str]:
    """The text of the first ``size`` bytes of a file, decoded piece by piece, its start's BOMs stripped."""
    decoder, start = codecs.getincrementaldecoder(encoding)(), True
    while size > 0 and (chunk := handle.read(min(_CHUNK, size))):
        size -= len(chunk)
        text = decoder.decode(chunk)
        if start:  # (BOMs until the first other character)
            text = text.lstrip("\ufeff")
            start = not text
        yield text
    tail = decoder.decode(b"", True)  # (bytes of an unfinished character at the end: an error the check found)
    yield tail.lstrip("\ufeff") if start else tail


class Message:
    """One message: its segments split at the separators its ``MSH`` header declares (each a list of raw field
    texts, ``[0]`` the segment's name; the ``MSH`` numbered as HL7 numbers it: ``msh[9]`` is MSH-9), and
    python-hl7's unescaping for those separators.

    python-hl7 builds an object for every field, repetition, component and subcomponent of every segment
    (about a hundred per report); the reader reads ten fields, whose raw text the split gives as python-hl7
    gives it (a field whole, or a component of its first repetition with its subcomponents as written;
    ``tests/test_hl7_split.py`` compares them). A header that is not ``MSH`` + five distinct separators is
    read by python-hl7 itself, as it always was.
    """

    __slots__ = ("msh", "unescape", "escape", "component_sep", "repetition_sep", "raw_segments", "fs", "_segments")

    def __init__(self, raw: str, segments: list[str] | None = None) -> None:
        """``raw``: the message, its segments separated by CR; or, with ``segments`` (those after the first,
        none blank), its first segment."""
        if segments is None:
            head, _, rest = raw.partition("\r")
            segments = [s for s in rest.split("\r") if s]
        else:
            head = raw
        unescape = _plain_unescaper(head[:9])  # (None: not a plain header)
        if unescape is not None:
            fs = head[3]
            self.unescape = unescape
            self.msh: Any = ["MSH", fs, *head.split(fs)[1:]]
            self.escape = head[6]
        else:
            parsed = hl7.parse(head)  # python-hl7's own reading of an odd header (it raises on some)
            self.msh, self.unescape, self.escape = parsed.segment("MSH"), parsed.unescape, parsed.esc
        self.component_sep = head[4:5] or "^"
        self.repetition_sep = head[5:6] or "~"
        self.raw_segments = segments  # the segments after the MSH, as written
        self.fs = head[3] if self.raw_segments else "|"  # (a header too short for one: IndexError, as before)
        self._segments: list[list[str]] | None = None

    @property
    def segments(self) -> list[list[str]]:
        """The segments after the ``MSH``, each split into its fields (``[0]`` the name)."""
        if self._segments is None:
            self._segments = [s.split(self.fs) for s in self.raw_segments]
        return self._segments

    def field(self, segment, index: int, component: int | None = None) -> str:
        """A field's text (``component`` 0-based within its first repetition), '' when absent."""
        if type(segment) is not list:  # a python-hl7 segment (a list subclass): an odd header it read
            return _field(segment, index, component)
        value = segment[index] if index < len(segment) else ""
        if component is None or index in (1, 2) and segment is self.msh:  # MSH-1, MSH-2: the separators, whole
            return value.strip() if component in (None, 0) else ""
        parts = value.split(self.repetition_sep, 1)[0].split(self.component_sep)
        return parts[component].strip() if component < len(parts) else ""


@lru_cache(maxsize=64)
def _plain_unescaper(start: str):
    """python-hl7's unescaping of a plain header's separators (:func:`_unescaper`) from the header's first nine
    characters (all that :func:`_plain_header` reads), or None when the header is not plain."""
    return _unescaper(start[:8]) if _plain_header(start) else None


def _plain_header(head: str) -> bool:
    """``MSH``, a field separator and four encoding characters, all five distinct, then a field or the end."""
    return (len(head) >= 8 and head.startswith("MSH") and len(set(head[3:8])) == 5 and not head[3].isalnum()
            and (len(head) == 8 or head[8] == head[3]))


@lru_cache(maxsize=64)
def _unescaper(separators: str):
    """python-hl7's unescaping for a header's separators (``MSH|^~\\&``): it depends on nothing else."""
    return hl7.parse(separators + separators[3]).unescape


def _field(segment, index: int, component: int | None = None) -> str:
    """A field's text (``component`` 0-based within its first repetition), '' when absent (a python-hl7
    segment)."""
    try:
        value = segment[index]
    except IndexError:
        return ""
    if component is None or isinstance(value, str):  # python-hl7 keeps a field without separators a str
        return str(value).strip() if component in (None, 0) else ""
    try:
        first = value[0]  # the first repetition (or the field's one value)
        if isinstance(first, str):
            return first.strip() if component == 0 else ""
        return str(first[component]).strip()
    except (IndexError, TypeError):
        return str(value).strip() if component == 0 else ""


def _report(rid: str, text: str, metadata: dict[str, str]) -> Report:
    """``assemble(rid, text, [], metadata.items())`` for what :func:`message_reports` gives it, in one pass: its
    text holds no CR (the segments were split at them, unescaped CRs became line breaks), its metadata is made
    for this report, its values stripped, none empty, and split_sections gives each name once; so what assemble
    would still do is strip the sections and drop the empty ones (``tests/test_feeds_fast.py`` compares the
    reports with assemble's)."""
    sections = {name: body for name, text in split_sections(text) if (body := text.strip())}
    return Report.fresh(rid, sections, metadata)  # (fresh dicts)


def message_reports(message: Message, where: str) -> list[Parsed]:
    """The reports of one parsed ``ORU^R01`` message (one per ``OBR`` with the ``OBX`` after it), or its
    problem (a list: no generator per message)."""
    msh, _field = message.msh, message.field
    if type(msh) is list and len(msh) > 10:  # the split header: MSH-9 and MSH-10 whole, as _field reads them
        kind, control = msh[9].strip().replace(" ", ""), msh[10].strip()
    else:
        kind, control = _field(msh, 9).replace(" ", ""), _field(msh, 10)
    if not kind.startswith("ORU^R01"):
        return [Parsed(where, problem=f"message type {kind or '(none)'} is not ORU^R01 (an observation result)")]
    patient = ""
    groups: list[list] = []  # per OBR: its fields, then each OBX's OBX-5 (stripped)
    fs, rep, comp = message.fs, message.repetition_sep, message.component_sep
    obx, obr = "OBX" + fs, "OBR" + fs  # the usual segments' names, as written, without the partition
    for raw in message.raw_segments:  # each split as far as the fields read
        tag = raw[:4]
        name = "OBX" if tag == obx else "OBR" if tag == obr else raw.partition(fs)[0].strip()
        if name == "OBX":
            if groups:
                fields = raw.split(fs, 6)  # fields 0 to 5 whole, the rest in one
                groups[-1].append(fields[5].strip() if len(fields) > 5 else "")
        elif name == "OBR":
            groups.append([raw.split(fs)])
        elif name == "PID":
            fields = raw.split(fs, 4)  # PID-3's first component of its first repetition
            patient = fields[3].partition(rep)[0].partition(comp)[0].strip() if len(fields) > 3 else ""
    if not groups:
        return [Parsed(where, problem="an ORU^R01 message with no OBR segment (no report in it)")]
    escape, unescape = message.escape, message.unescape
    out: list[Parsed] = []
    for n, (obr, *values) in enumerate(groups):
        if len(obr) < 26:  # an absent field reads as empty (as Message.field reads it)
            obr += [""] * (26 - len(obr))
        # a field's first component of its first repetition: Message.field(obr, i, 0) without the call
        rid = (obr[3].partition(rep)[0].partition(comp)[0].strip() or obr[2].partition(rep)[0].partition(comp)[0]
               .strip() or (control + (f"-{n + 1}" if n else "")))
        here = where if len(groups) == 1 else f"{where} OBR {n + 1}"
        if not rid:
            out.append(Parsed(here, problem="no report id (OBR-3, OBR-2 and MSH-10 are empty)"))
            continue
        text = "\n".join(values)
        if escape in text or "" in values:  # (the values are stripped: as they are, they are the lines)
            # python-hl7's unescape returns a value without its escape character as it is: called only for the
            # rest (and only its text can hold a CR: the segments were split at them)
            text = "\n".join([line for v in values
                              if (line := unescape(v).replace("\r", "\n") if escape in v else v).strip()])
        if not text:  # (its lines are not blank: a text is blank only when it has none)
            out.append(Parsed(here, problem=f"report {rid}: no text (no OBX-5 value)"))
            continue
        try:
            when = hl7_time(obr[7].partition(rep)[0].partition(comp)[0]) or hl7_time(_field(msh, 7, 0))
        except ValueError as exc:
            out.append(Parsed(here, problem=f"report {rid}: OBR-7 {exc}"))
            continue
        exam_parts = obr[4].partition(rep)[0].split(comp)
        code = exam_parts[0].strip()
        exam = (exam_parts[1].strip() if len(exam_parts) > 1 else "") or code
        metadata = {"patient": patient} if patient else {}  # (its values stripped, none empty)
        if when:
            metadata["date"], metadata["datetime"] = when[:10], when
        if exam:
            metadata["exam"] = exam
            if code:
                metadata["exam_code"] = code
            if modality := modality_in(exam):
                metadata["modality"] = modality
        if status := obr[25].strip():
            metadata["status"] = status
        out.append(Parsed(here, _report(rid, text, metadata)))
    return out


def read_hl7(path: Path, options: ReaderOptions) -> Iterator[Parsed]:
    """Yield the reports of a file of HL7 v2 ``ORU^R01`` messages, or of every ``.hl7`` file under a folder
    (see the module docstring)."""
    if path.is_dir():
        files = list_files(path, "*.hl7")
        if not files:
            raise CorpusError(f"{path}: no .hl7 files in this folder")
    else:
        files = [path]
    for file in files:
        yield from _file_reports(file, options.encoding)


def _file_reports(file: Path, encoding: str) -> Iterator[Parsed]:
    """The reports of one file, or its problems."""
    name = str(file)
    with file.open("rb", buffering=0) as handle:
        streamed = _file_pieces(handle, encoding)
        if streamed is None:
            if handle.seekable():
                handle.seek(0)
            try:
                text = handle.readall().decode(encoding)
            except UnicodeDecodeError as exc:
                yield Parsed(name, problem=f"undecodable bytes at byte {exc.start} (not valid {encoding})")
                return
            text = text.lstrip("\ufeff")
            streamed = iter([text]), _MLLP_START in text
        for number, (line, segments) in enumerate(_segments(*streamed), 1):
            where = f"{name} message {number} (line {line})"
            if not segments or not segments[0].startswith("MSH"):
                yield Parsed(where, problem="not an HL7 v2 message (it does not start with an MSH segment)")
                continue
            try:
                message = Message(segments[0], segments[1:])
            except Exception as exc:  # python-hl7 raises several kinds on malformed input
                yield Parsed(where, problem=f"unparsable HL7 message ({type(exc).__name__}: {exc})")
                continue
            yield from message_reports(message, where)
