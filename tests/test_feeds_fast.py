"""Issue 34, item 6: the feed readers' speed paths give the records the full parses give.

* HL7: the reader splits segments at the header's separators and reads OBX-5 without a call per field;
  here every report of the demo's feeds (and of awkward messages) is compared with one read from
  python-hl7's full parse by the reader's rules (OBR-3 / OBR-2 / MSH-10, PID-3, OBR-4, OBR-7, OBX-5 in order).
* FHIR: orjson (when installed) parses NDJSON lines, json the lines it refuses; a type's passed values are
  remembered; both read the same records and name the same problems as json and a whole validation.
* Sections: headings are found from the colons; the same matches as the heading pattern's ``finditer``.
"""

from __future__ import annotations

import json
import random

import hl7
import pytest

import radsift.corpus.fhir_reader as fhir_reader
import radsift.corpus.fhir_validate as fhir_validate
import radsift.text.sections as sections
from radsift.corpus import read_corpus
from radsift.corpus.hl7_reader import _field, hl7_time, split_messages
from radsift.corpus.options import ReaderOptions
from radsift.corpus.rows import assemble
from radsift.corpus.stats import ReadStats
from radsift.demo import generate_reports
from radsift.demo.feeds import report_text, write_feeds
from radsift.text.modalities import modality_in

AWKWARD = "\n".join([
    "MSH|^~\\&|RIS|SITE|EHR|SITE|202501021030||ORU^R01^ORU_R01|C1|P|2.5",
    "PID|1||MRN1^^^SITE^MR~OLD9^^^SITE^PI||DOE^JANE||19500101|F",
    "OBR|1|PL1^RIS|ACC1&sub^FILL|^CT CHEST~^MR HEAD|||202501021015|||||||||||||||||F",
    "OBX|1|TX|||FINDINGS: line with \\T\\ and \\S\\ escaped \\.br\\next  ||||||F",
    "OBX|2|FT|||rep one~rep two^comp||",
    "OBX|3",
    "OBR|2||ACC2|CT1^CT CHEST W CONTRAST|||20250102",
    "OBX|1|TX|||IMPRESSION: \\E\\ no acute disease",
    "MSH|^~\\&|RIS|SITE|EHR|SITE|20250103||ORU^R01|C2|P|2.5",
    "OBR|1|||71046",
    "OBX|1|TX|||  text with only a code  ",
    "MSH|#~\\&|RIS|SITE|EHR|SITE|20250104||ORU^R01|C3|P|2.5",
    "OBR|1||ACC#X|71046#XR CHEST|||202501041200",
    "OBX|1|TX|||other # separators",
])


def _reference_hl7(path):
    """Reports of an HL7 file read from python-hl7's full parse of each message, by the reader's rules."""
    out = []
    for _, raw in split_messages(path.read_text()):
        parsed = hl7.parse(raw)
        msh = parsed.segment("MSH")
        groups, patient = [], ""
        for segment in parsed:
            name = str(segment[0]).strip()
            if name == "PID":
                patient = _field(segment, 3, 0)
            elif name == "OBR":
                groups.append([segment])
            elif name == "OBX" and groups:
                groups[-1].append(segment)
        for n, (obr, *obxs) in enumerate(groups):
            rid = _field(obr, 3, 0) or _field(obr, 2, 0) or (_field(msh, 10) + (f"-{n + 1}" if n else ""))
            lines = [parsed.unescape(_field(obx, 5)).replace("\r", "\n") for obx in obxs]
            when = hl7_time(_field(obr, 7, 0)) or hl7_time(_field(msh, 7, 0))
            exam = _field(obr, 4, 1) or _field(obr, 4, 0)
            out.append(assemble(rid, "\n".join(line for line in lines if line.strip()), [], [
                ("patient", patient or None), ("date", when[:10] if when else None), ("datetime", when),
                ("exam", exam or None), ("exam_code", _field(obr, 4, 0) or None), ("modality", modality_in(exam)),
                ("status", _field(obr, 25) or None)]))
    return [r.to_dict() for r in out]


@pytest.fixture(scope="module")
def feeds(tmp_path_factory):
    return write_feeds([d.report for d in generate_reports(n=300, seed=7)], tmp_path_factory.mktemp("feeds"))


def _dicts(path, **kw):
    return [r.to_dict() for r in read_corpus([path], ReaderOptions(**kw))]


def test_hl7_reports_are_those_of_python_hl7s_full_parse(feeds, tmp_path):
    for name in ("reports.hl7", "reports.mllp"):
        ours = _dicts(feeds[name], format="hl7")
        assert len(ours) == 300 and ours == _reference_hl7(feeds[name])
    awkward = tmp_path / "awkward.hl7"
    awkward.write_text(AWKWARD + "\n")
    ours = _dicts(awkward)
    assert ours == _reference_hl7(awkward) and len(ours) == 4
    # the fields a slip would get wrong: the first repetition's component, escapes undone, the OBX-5 order
    assert ours[0]["id"] == "ACC1&sub" and ours[0]["metadata"]["patient"] == "MRN1"
    assert ours[0]["metadata"]["exam"] == "CT CHEST" and ours[0]["metadata"]["modality"] == "CT"
    assert ours[0]["sections"]["findings"].startswith("line with & and ^ escaped \nnext\nrep one~rep two^comp")
    assert ours[1]["sections"] == {"impression": "\\ no acute disease"} and ours[2]["id"] == "C2"
    assert ours[3]["id"] == "ACC" and ours[3]["metadata"]["exam"] == "XR CHEST"


_OBX_VALUES = ["", "   ", "text", "FINDINGS: clear", "IMPRESSION: x \\T\\ y", "\\.br\\", " \\.br\\ x", "a\\.br\\b",
               "\\X0D\\", "line\\X0D\\", "\\E\\", "x~y^z", "FINDINGS:", "HISTORY: \\X0D\\ \\.br\\"]


def _random_message(rng, n):
    """An ORU^R01 message with any of the fields the reader reads present, empty, escaped or absent."""
    segments = [f"MSH|^~\\&|RIS|SITE|EHR|SITE|{rng.choice(['202501021030', '20250102', ''])}||ORU^R01|C{n}|P|2.5"]
    if rng.random() < 0.7:
        segments.append(f"PID|1||{rng.choice(['MRN1', 'MRN2^^^S^MR~X', '', ' M3 '])}")
    for k in range(rng.randrange(1, 3)):
        obr = ["OBR", str(k + 1), rng.choice(["", f"PL{n}-{k}^RIS"]), rng.choice(["", f"ACC{n}-{k}", " "]),
               rng.choice(["", "71046", "71046^XR CHEST", "^CT HEAD", "C1^MR BRAIN~x", " ^ "]), "", "",
               rng.choice(["", "202501021015", "20250102"])][:rng.randrange(3, 9)]
        if rng.random() < 0.5:
            obr += [""] * (25 - len(obr)) + [rng.choice(["F", "P", " ", ""])]
        segments.append("|".join(obr))
        for j in range(rng.randrange(4)):
            segments.append(f"OBX|{j + 1}|TX|||{rng.choice(_OBX_VALUES)}" + rng.choice(["", "||||||F"]))
    return segments


def test_hl7_reports_of_random_messages_are_those_of_python_hl7s_full_parse(tmp_path):
    """Every way the reader's short cuts could part from the full parse: the text's lines joined as they are
    (no escape, no empty value) or unescaped one by one, the metadata with fields absent or empty."""
    rng = random.Random(17)
    path = tmp_path / "random.hl7"
    for sep in ("\n", "\r"):
        path.write_text("\n".join(sep.join(_random_message(rng, n)) for n in range(400)) + "\n")
        stats = ReadStats()
        ours = [r.to_dict() for r in read_corpus([path], ReaderOptions(on_error="skip"), stats)]
        no_text = {why.split(":")[0].removeprefix("report ") for _, why in stats.skipped}
        assert all(why.endswith("no text (no OBX-5 value)") for _, why in stats.skipped)
        reference = _reference_hl7(path)
        assert ours == [r for r in reference if r["id"] not in no_text]
        assert all(not r["sections"] for r in reference if r["id"] in no_text)
        assert 100 < len(no_text) < len(ours) and any(not r["sections"] for r in ours)
        assert len({tuple(r["metadata"]) for r in ours}) > 6


def _json_only(monkeypatch):
    monkeypatch.setattr(fhir_reader, "orjson", None)


def _read_all(path):
    stats = ReadStats()
    reports = [r.to_dict() for r in read_corpus([path], ReaderOptions(format="fhir", on_error="skip"), stats)]
    return reports, stats.skipped


def test_fhir_reports_are_those_of_json_and_whole_validation(feeds, monkeypatch):
    fast = _read_all(feeds["reports.ndjson"])
    assert len(fast[0]) == 300 and not fast[1]
    _json_only(monkeypatch)
    monkeypatch.setattr(fhir_reader, "ShapeValidator", lambda model, **_: model.model_validate)
    assert _read_all(feeds["reports.ndjson"]) == fast


def test_orjson_and_json_read_awkward_lines_alike(feeds, tmp_path, monkeypatch):
    pytest.importorskip("orjson")
    good = feeds["reports.ndjson"].read_bytes().splitlines()[:3]
    resource = json.loads(good[0])
    odd = [
        b"\xef\xbb\xbf" + good[0],  # a BOM (json reads it after the decoding drops it; orjson refuses it)
        b"", b"   \t", b"null", b"[]", b"{not json",
        json.dumps({**resource, "id": "nan-1", "extension": [{"url": "u", "valueDecimal": 1}]}).encode()
        .replace(b'"valueDecimal": 1', b'"valueDecimal": NaN'),  # json reads NaN, orjson does not
        json.dumps({**resource, "id": "sur-1", "conclusion": "x"}).encode().replace(b'"x"', b'"\\ud800"'),
        json.dumps({**resource, "id": "big-1", "extension": [{"url": "u", "valueInteger": 1}]}).encode()
        .replace(b'"valueInteger": 1', b'"valueInteger": 123456789012345678901234567890'),
        json.dumps({**resource, "id": "bytes-1"}).encode().replace(b"final", b"fin\xe9l"),  # not UTF-8
        json.dumps({**resource, "id": "dup-1"}).encode().replace(b'"id": "dup-1"', b'"id": "a", "id": "dup-1"'),
        good[1], good[2] + b"\r",
        # long numbers after the shapes are known: in a Patient, alone, in a report's decimal (a float shape),
        # and in a report's text (a string: orjson reads it as json does)
        json.dumps({"resourceType": "Patient", "id": "p", "x": 1}).encode()
        .replace(b'"x": 1', b'"x": 123456789012345678901234'),
        b"123456789012345678901234567890",
        json.dumps({**resource, "id": "big-2", "extension": [{"url": "u", "valueDecimal": 1.5}]}).encode()
        .replace(b'"valueDecimal": 1.5', b'"valueDecimal": 12345678901234567890123.5'),
        json.dumps({**resource, "id": "short-1", "extension": [{"url": "u", "valueDecimal": 1.5}]}).encode(),
        json.dumps({**resource, "id": "big-3", "extension": [{"url": "u", "valueInteger": 1}]}).encode()
        .replace(b'"valueInteger": 1', b'"valueInteger": 123456789012345678901234567890'),
        json.dumps({**resource, "id": "text-1", "conclusion": "accession 1234567890123456789012345"}).encode(),
    ]
    path = tmp_path / "odd.ndjson"
    path.write_bytes(b"\n".join(odd) + b"\n")
    fast = _read_all(path)
    _json_only(monkeypatch)
    slow = _read_all(path)
    assert fast == slow
    assert [r["id"] for r in fast[0]][:4] == [resource["id"], "dup-1", *(json.loads(g)["id"] for g in good[1:])]
    assert [r["id"] for r in fast[0]][4:] == ["big-2", "short-1", "text-1"]
    assert [where.rsplit(" ", 1)[-1] for where, _ in fast[1]][:7] == ["4", "5", "6", "7", "8", "9", "10"]
    assert [where.rsplit(" ", 1)[-1] for where, _ in fast[1]][7:] == ["14", "15", "18"]


def test_a_type_remembers_only_values_it_passed(feeds, monkeypatch):
    resources = [json.loads(line) for line in feeds["reports.ndjson"].read_text().splitlines()]
    for r in resources:  # values not of the plain form: their validators decide, and they are remembered
        r["conclusion"], r["status"] = r["conclusion"] + "\x85", "fin\xe1l"
    DiagnosticReport = fhir_reader._validator()
    validator = fhir_validate.ShapeValidator(DiagnosticReport)
    monkeypatch.setattr(fhir_validate, "MAX_PASSED", 50)
    for r in resources:
        validator(r)
    passed = list(validator._passed.values())
    assert max(len(p) for p in passed) == 50  # bounded
    assert all(len(v) <= fhir_validate.MAX_PASSED_LENGTH for p in passed for v in p if isinstance(v, str))
    assert any("fin\xe1l" in p for p in passed)
    assert not any("final" in p for p in passed)  # the plain form passes without its validator
    bad = {**resources[1], "status": "final "}  # a value never passed is validated: refused
    with pytest.raises(Exception, match="status"):
        validator(bad)
    with pytest.raises(Exception, match="status"):
        DiagnosticReport.model_validate(bad)


def _matches(text):
    padded = "\n" + text
    whole = [(m.span(), m.groupdict()) for m in sections._HEADING_RE.finditer(padded)]
    return whole, [(m.span(), m.groupdict()) for m in sections._heading_matches(padded)]


def test_headings_found_from_the_colons_are_finditers():
    for d in generate_reports(n=300, seed=4):
        whole, ours = _matches(report_text(d.report))
        assert whole == ours and len(whole) >= 1
    rng = random.Random(0)
    alphabet = list("abAB XYZ:,.;!?\n\t'\"&/-)]1\u2028\x0b") + ["FINDINGS", "Impression", ": ", "10:30", "http://",
                                                                 "L5-S1:", "XXXX", "\r\n"]
    found = 0
    for _ in range(20000):
        whole, ours = _matches("".join(rng.choice(alphabet) for _ in range(rng.randrange(30))))
        assert whole == ours
        found += len(whole)
    assert found > 1000


def test_a_shape_is_equal_only_for_equal_structures():
    shape = fhir_validate._shape
    base = {"a": "x", "b": [{"c": 1}, None], "d": {"e": True}}
    assert shape(base) == shape({"a": "y", "b": [{"c": 2}, None], "d": {"e": False}})
    for other in ({"b": [{"c": 1}, None], "a": "x", "d": {"e": True}},  # keys in another order
                  {"a": "x", "b": [{"c": True}, None], "d": {"e": True}},  # a bool for an int
                  {"a": "x", "b": [{"c": 1.0}, None], "d": {"e": True}},  # a float for an int
                  {"a": "x", "b": [{"c": 1}], "d": {"e": True}},  # a shorter list
                  {"a": "x", "b": [{"c": 1}, None, None], "d": {"e": True}},
                  {"a": "x", "b": [{"c": 1}, {}], "d": {"e": True}},
                  {"a": "x", "b": [{"c": 1, "d": None}], "d": {"e": True}},  # a key moved into the list
                  {"a": "x", "b": [{"c": 1}, None], "d": {"e": True, "f": None}},
                  {"a": "x", "b": [{"c": 1}, None], "d": [{"e": True}]}):
        assert shape(other) != shape(base), other
