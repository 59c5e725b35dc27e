"""The HL7 reader's split of a message's segments (:class:`radsift.corpus.hl7_reader.Message`) reads every
field and component as python-hl7's full parse does, on the demo's messages and on awkward ones; and its split
of a file into messages, read in pieces, gives the messages, reports and problems of the file read whole."""

from __future__ import annotations

import random
import re
import tracemalloc

import hl7

import radsift.corpus.hl7_reader as hl7_reader
from radsift.corpus import read_corpus
from radsift.corpus.hl7_reader import Message, _field, split_messages
from radsift.corpus.options import ReaderOptions
from radsift.corpus.stats import ReadStats
from radsift.demo import generate_reports
from radsift.demo.feeds import write_feeds

AWKWARD = "\r".join([
    "MSH|^~\\&|RIS|SITE|EHR|SITE|202501021030||ORU^R01^ORU_R01|C1|P|2.5",
    "PID|1||MRN1^^^SITE^MR~OLD9^^^SITE^PI||DOE^JANE||19500101|F",
    "OBR|1|PL1^RIS|ACC1&sub^FILL||||202501021015|||||||||||||||||F",
    "OBR|2||ACC2|^CT CHEST W CONTRAST|||20250102",
    "OBX|1|TX|||line with \\T\\ and \\S\\ escaped \\.br\\next||||||F",
    "OBX|2|FT|||rep one~rep two^comp||",
    "OBX|3",
    "NTE|1||a note",
])


def _messages(tmp_path):
    paths = write_feeds([d.report for d in generate_reports(n=30, seed=2)], tmp_path)
    return [raw for _, raw in split_messages(paths["reports.hl7"].read_text())] + [AWKWARD]


def test_every_field_and_component_reads_as_python_hl7_reads_it(tmp_path):
    compared = 0
    for raw in _messages(tmp_path):
        full = hl7.parse(raw)
        light = Message(raw)
        segments = [s for s in full if str(s[0]) != "MSH"]
        assert [s[0] for s in light.segments] == [str(s[0]) for s in segments]
        for ours, theirs in zip(light.segments, segments):
            for index in range(0, 30):
                for component in (None, 0, 1, 2, 3):
                    assert light.field(ours, index, component) == _field(theirs, index, component), (ours[0], index,
                                                                                                     component)
                    compared += 1
        msh = full.segment("MSH")
        for index in range(0, 14):
            for component in (None, 0, 1, 2):
                assert light.field(light.msh, index, component) == _field(msh, index, component), ("MSH", index)
        assert light.field(light.msh, 9).startswith("ORU^R01") and type(light.msh) is list
        assert light.unescape("a\\T\\b\\.br\\c") == full.unescape("a\\T\\b\\.br\\c")
    assert compared > 10000
    light, full = Message(AWKWARD), hl7.parse(AWKWARD)
    obx = light.segments[3]
    assert light.unescape(light.field(obx, 5)) == full.unescape(_field(full[4], 5))
    assert light.unescape(light.field(obx, 5)).startswith("line with & and ^ escaped")  # \\T\\ and \\S\\
    assert light.field(light.segments[0], 3, 0) == "MRN1" and light.field(light.segments[1], 3, 0) == "ACC1&sub"


def test_an_odd_header_is_read_by_python_hl7_as_before():
    raw = "MSH|^|A|B|C|D|2025||ORU^R01|X\rOBR|1||ACC"
    light, full = Message(raw), hl7.parse(raw)
    assert type(light.msh) is not list  # not five distinct separators: python-hl7's reading
    assert [light.field(light.msh, i) for i in range(12)] == [_field(full.segment("MSH"), i) for i in range(12)]


# The split of a file into messages, read in pieces (a file is decoded 64 KiB at a time): the same messages,
# lines and problems as the split of the whole text, wherever the pieces are cut.

def _whole_split(text):
    """The split of a file's whole text as the reader did it before it read files in pieces (the reference)."""
    text = text.lstrip("\ufeff")
    if "\x0b" in text:
        line = 1
        for n, chunk in enumerate(text.split("\x0b")):
            if n:
                body = chunk.split("\x1c", 1)[0]
                yield line, [s for s in re.split(r"\r\n|\r|\n", body) if s.strip()]
            line += chunk.count("\n")
        return
    current, start = [], 1
    for number, line in enumerate(re.split(r"\r\n|\r|\n", text), 1):
        if line.startswith("MSH") and current:
            yield start, current
            current = []
        if line.strip():
            if not current:
                start = number
            current.append(line)
    if current:
        yield start, current


def _random_text(rng):
    pieces = ["MSH|^~\\&|A", "PID|1", "OBX|1|TX|||x", "", " ", "\t", "  MSH|x", "MSHX", "xMSH|", "\ufeff", "M", "SH|"]
    seps = ["\n", "\r", "\r\n", "\n\n", "\r\r\n", "\n\r"]
    text = "".join(rng.choice(pieces) + (rng.choice(seps) if rng.random() < 0.8 else "")
                   for _ in range(rng.randrange(14)))
    if rng.random() < 0.3:  # MLLP frames, with what may lie around them
        text = "".join(rng.choice(["", "\n", "junk\r\n"]) + f"\x0b{m}" + rng.choice(["\x1c\r", "\x1c", ""])
                       for m in text.split("MSH"))
    return rng.choice(["", "\ufeff", "\ufeff\ufeff"]) + text


def _cut(text, rng):
    """``text`` in random pieces: empty ones, single characters, cuts inside CRLF."""
    cuts = sorted(rng.sample(range(len(text) + 1), min(len(text) + 1, rng.randrange(8))))
    pieces = [text[a:b] for a, b in zip([0, *cuts], [*cuts, len(text)])]
    return [p for piece in pieces for p in ([piece, ""] if rng.random() < 0.2 else [piece])]


def test_lines_are_split_as_the_pattern_splits_them():
    rng = random.Random(3)
    used = set()
    for _ in range(5000):
        parts = rng.choice([["a", "\r\n"], ["a", "\r"], ["a", "\n"], ["a", "\r\n", "\r"], ["a", "\r\n", "\n"],
                            ["a", "\r", "\n", "\r\n", ""]])
        text = "".join(rng.choice(parts) for _ in range(rng.randrange(10)))
        assert hl7_reader._lines(text) == re.split(r"\r\n|\r|\n", text), repr(text)
        used.add(tuple(sorted(parts)))
    assert len(used) == 6


def test_a_text_in_pieces_splits_into_the_whole_texts_messages():
    rng = random.Random(5)
    kinds, cut_crlf = set(), 0
    for _ in range(6000):
        text = _random_text(rng)
        whole = list(_whole_split(text))
        assert list(hl7_reader._message_segments(text)) == whole, repr(text)
        stripped = text.lstrip("\ufeff")
        pieces = _cut(stripped, rng)
        assert list(hl7_reader._segments(pieces, "\x0b" in stripped)) == whole, (repr(text), pieces)
        cut_crlf += any(a.endswith("\r") and b.startswith("\n") for a, b in zip(pieces, pieces[1:]))
        kinds.add((len(whole), "\x0b" in text))
    assert len(kinds) > 10 and cut_crlf > 50


BAD = "\n".join([
    "MSH|^~\\&|RIS|SITE|EHR|SITE|202501021030||ADT^A01|C1|P|2.5",
    "MSH|^~\\&|RIS|SITE|EHR|SITE|202501021030||ORU^R01|C2|P|2.5\r\nPID|1||MRN2",
    "MSH|^~\\&|RIS|SITE|EHR|SITE|202501021030||ORU^R01|C3|P|2.5\rOBR|1||ACC3||||202513011200\rOBX|1|TX|||text",
    "",
    "  PID|stray",
    "MSH|^",
    "MSH|^~\\&|RIS|SITE|EHR|SITE|202501021030||ORU^R01|C5|P|2.5",
    "OBR|1||ACC5",
    "OBX|1|TX|||caf\u00e9 na\u00efve \u00b5g \u2014 \\.br\\ second line",
])


def _outcome(path, **options):
    stats = ReadStats()
    reports = list(read_corpus([path], ReaderOptions(format="hl7", on_error="skip", **options), stats))
    return [r.to_dict() for r in reports], [(where.replace(str(path), "FILE"), why) for where, why in stats.skipped]


def _framed(text):
    """The messages of a text framed for MLLP (the separators of their segments as they were), after some junk."""
    return "junk\r\n" + "".join(f"\x0b{m}\x1c\r\n" for m in re.split(r"\n(?=MSH)", text))


def _whole(monkeypatch):
    """Every encoding read whole (as the reader read every file before)."""
    monkeypatch.setattr(hl7_reader, "_STREAMED", frozenset())


def test_a_file_read_in_pieces_gives_the_whole_files_reports_and_problems(tmp_path, monkeypatch):
    paths = write_feeds([d.report for d in generate_reports(n=40, seed=4)], tmp_path)
    demo = paths["reports.hl7"].read_text()
    mllp = paths["reports.mllp"].read_text()
    files = {  # name: (text, encoding)
        "demo.hl7": (demo, "utf-8"), "demo.mllp": (mllp, "utf-8"), "crlf.hl7": (demo.replace("\n", "\r\n"), "utf-8"),
        "cr.hl7": (demo.replace("\n", "\r"), "utf-8"), "bad.hl7": (BAD + "\n", "utf-8"),
        "bom.hl7": ("\ufeff" + BAD, "utf-8"), "sig.hl7": ("\ufeff\ufeff" + BAD, "utf-8-sig"),
        "latin.hl7": (BAD.replace("\u2014", "-"), "latin-1"), "cp.hl7": (BAD, "cp1252"),
        "late-frame.hl7": (demo + "\x0b" + demo[:300], "utf-8"),  # one frame start late: the whole file is MLLP
        "wide.hl7": (BAD, "utf-16"), "frames.mllp": (_framed(BAD.encode("ascii", "replace").decode()), "ascii"),
    }
    whole = {}
    for name, (text, encoding) in files.items():
        (tmp_path / name).write_bytes(text.encode(encoding))
    with monkeypatch.context() as m:
        _whole(m)
        for name, (_, encoding) in files.items():
            whole[name] = _outcome(tmp_path / name, encoding=encoding)
    for size in (1, 2, 3, 7, 64, 1 << 16):
        monkeypatch.setattr(hl7_reader, "_CHUNK", size)
        for name, (_, encoding) in files.items():
            assert _outcome(tmp_path / name, encoding=encoding) == whole[name], (name, size)
    assert len(whole["demo.hl7"][0]) == len(whole["demo.mllp"][0]) == len(whole["cr.hl7"][0]) == 40
    assert len(whole["late-frame.hl7"][0]) < 40  # read as MLLP: the frame start anywhere changes every message
    not_oru, no_obr, bad_time = ("message type ADT^A01 is not ORU^R01 (an observation result)",
                                 "an ORU^R01 message with no OBR segment (no report in it)",
                                 "report ACC3: OBR-7 '202513011200' is not a real date and time")
    odd = "message type (none) is not ORU^R01 (an observation result)"
    assert whole["bad.hl7"] == ([{"id": "ACC5", "sections": {"text": "caf\u00e9 na\u00efve \u00b5g \u2014 \n second line"},
                                  "metadata": {"date": "2025-01-02", "datetime": "2025-01-02T10:30"}}],
                                [("FILE message 1 (line 1)", not_oru), ("FILE message 2 (line 2)", no_obr),
                                 ("FILE message 3 (line 4)", bad_time), ("FILE message 4 (line 9)", odd)])
    for name in ("bom.hl7", "sig.hl7", "cp.hl7", "wide.hl7"):
        assert whole[name] == whole["bad.hl7"], name
    assert [r["id"] for r in whole["frames.mllp"][0]] == ["ACC5"]
    assert whole["frames.mllp"][1] == [("FILE message 1 (line 2)", not_oru), ("FILE message 2 (line 3)", no_obr),
                                       ("FILE message 3 (line 5)", bad_time), ("FILE message 4 (line 8)", odd)]


def test_an_undecodable_byte_anywhere_is_the_files_one_problem(tmp_path, monkeypatch):
    """As when the file was decoded whole: no report of it, its first bad byte named."""
    good = write_feeds([d.report for d in generate_reports(n=150, seed=4)], tmp_path)["reports.hl7"].read_bytes()
    assert len(good) > 70000
    for at, bad in ((len(good) - 1, b"\xff"), (70000, b"\xc3"), (3, b"\xe2\x80"), (len(good), b"\xe2\x82")):
        path = tmp_path / "bad.hl7"
        path.write_bytes(good[:at] + bad + good[at:])
        for size in (5, 1 << 16):
            monkeypatch.setattr(hl7_reader, "_CHUNK", size)
            assert _outcome(path) == ([], [("FILE", f"undecodable bytes at byte {at} (not valid utf-8)")])
    path.write_bytes(good + "\u00e9".encode("latin-1"))  # valid latin-1, not utf-8
    assert len(_outcome(path, encoding="latin-1")[0]) == 150 and _outcome(path)[0] == []


def test_a_file_is_not_held_whole_while_it_is_read(tmp_path):
    """Its reports taken one at a time, the reader holds a piece of the file (64 KiB) and what it makes of it, not
    the file's bytes, text and lines at once (fresh memory from the system on every read: page faults, which cost
    HL7 its rate against the CSV reader, which reads line by line)."""
    path = write_feeds([d.report for d in generate_reports(n=3000, seed=4)], tmp_path)["reports.hl7"]
    size = path.stat().st_size
    assert size > 1_500_000
    for _ in hl7_reader.read_hl7(path, ReaderOptions()):  # (the caches filled)
        pass
    tracemalloc.start()
    try:
        for _ in hl7_reader.read_hl7(path, ReaderOptions()):
            pass
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < size / 3, (peak, size)  # about a fifth of it; read whole, 2.5 times its size
