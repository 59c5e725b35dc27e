"""Issue 34, item 6 (ingest rate): the readers' later speed paths give what the paths before them gave.

* HL7 timestamps of 8, 12 or 14 digits are read without the pattern: the same text, the same errors.
* ``assemble`` joins a section's texts in one dict: the same reports as the list per name before.
* HL7 segments are told by their prefix: bad messages are named as before (file, message, line, reason).
"""

from __future__ import annotations

import copy
import random
import re

import pytest

from radsift.corpus import read_corpus
import radsift.corpus.fhir_reader as fhir_reader
import radsift.corpus.fhir_validate as fhir_validate
from radsift.corpus.hl7_reader import _regex_time, hl7_time, split_messages
from radsift.corpus.options import ReaderOptions
from radsift.corpus.rows import _unix_newlines, assemble
from radsift.corpus.stats import ReadStats
from radsift.demo import generate_reports
from radsift.demo.feeds import assign_patients, fhir_resource
from radsift.records import Report
from radsift.text import split_sections


def _outcome(read, value):
    try:
        return read(value)
    except ValueError as exc:
        return f"ValueError: {exc}"


def test_digit_times_read_as_the_pattern_reads_them():
    rng = random.Random(3)
    parts = ["00", "01", "09", "10", "12", "13", "23", "24", "28", "31", "32", "59", "60", "99"]
    values = ["20250101", "202501011230", "20250101123045", "20251301", "20250132", "202501012400",
              "202501011260", "20250101123099", "00000000", "99999999"]
    values += ["2025" + "".join(rng.choice(parts) for _ in range(rng.choice((2, 4, 5)))) for _ in range(5000)]
    read = 0
    for value in values:
        assert len(value) in (8, 12, 14)
        ours, pattern = _outcome(hl7_time, value), _outcome(_regex_time, value)
        assert ours == pattern, value
        read += not ours.startswith("ValueError")
    assert 100 < read < len(values)  # both kinds seen
    # other forms still go to the pattern: a zone, fractions, other lengths, non-ASCII digits
    assert hl7_time(" 202501011230+0100 ") == "2025-01-01T12:30+01:00"
    assert hl7_time("2025010112") == "2025-01-01T12:00" and hl7_time("2025") == "2025"
    with pytest.raises(ValueError, match="not an HL7 timestamp"):
        hl7_time("2025-01-01")
    assert _outcome(hl7_time, "２０２５０１０１") == _outcome(_regex_time, "２０２５０１０１")  # full-width digits


def _assemble_before(report_id, free_text, sections, metadata):
    """``assemble`` as it was (a list of texts per section name, joined at the end)."""
    merged: dict[str, list[str]] = {}
    pairs = list(split_sections(free_text)) if free_text else []
    pairs.extend(sections)
    for name, text in pairs:
        text = _unix_newlines(text).strip() if text and "\r" in text else (text or "").strip()
        if text:
            merged.setdefault(name, []).append(text)
    meta = {key: (_unix_newlines(value) if "\r" in value else value).strip()
            for key, value in metadata if value is not None and value.strip()}
    return Report(report_id, {name: " ".join(texts) for name, texts in merged.items()}, meta)


def test_assemble_is_assemble_before():
    rng = random.Random(5)
    texts = [None, "", "  ", "a", " b \r\n c ", "FINDINGS: x\nIMPRESSION: y", "d\r", "IMPRESSION: z", "\t"]
    names = ["findings", "impression", "text", "history"]
    for _ in range(3000):
        free = rng.choice(texts)
        sections = [(rng.choice(names), rng.choice(texts)) for _ in range(rng.randrange(4))]
        metadata = [(rng.choice(["a", "b"]), rng.choice(texts)) for _ in range(rng.randrange(3))]
        ours = assemble("r1", free, iter(sections), metadata)
        before = _assemble_before("r1", free, sections, metadata)
        assert ours.to_dict() == before.to_dict()
        assert list(ours.sections) == list(before.sections)  # the same order


BAD_HL7 = "\n".join([
    "MSH|^~\\&|RIS|SITE|EHR|SITE|202501021030||ADT^A01|C1|P|2.5",
    "PID|1||MRN1",
    "MSH|^~\\&|RIS|SITE|EHR|SITE|202501021030||ORU^R01|C2|P|2.5",
    "PID|1||MRN2",
    "MSH|^~\\&|RIS|SITE|EHR|SITE|202501021030||ORU^R01|C3|P|2.5",
    "OBR|1||ACC3||||202513011200",
    "OBX|1|TX|||text",
    "MSH|^~\\&|RIS|SITE|EHR|SITE|202501021030||ORU^R01|C4|P|2.5",
    "OBR|1||ACC4||||2025-01-01",
    "OBX|1|TX|||text",
    "MSH|^~\\&|RIS|SITE|EHR|SITE|202501021030||ORU^R01|C5|P|2.5",
    "OBR|1||ACC5",
    "OBX|1|TX|||   ",
    "OBX |1|TX|||an OBX named with a space",
    "MSH|^~\\&|RIS|SITE|EHR|SITE|202501021030||ORU^R01|C6|P|2.5",
    "OBR |1||ACC6||||202501011200",
    "OBX|1|TX|||IMPRESSION: read, its OBR named with a space",
    "MSH|^~\\&|RIS|SITE|EHR|SITE|202501021030||ORU^R01|C7|P|2.5",
    "OBR|1||ACC7||||202501011260",
    "OBX|1|TX|||text",
    "MSH|^~\\&|RIS|SITE|EHR|SITE|202501021030||ORU^R01|C8|P|2.5",
    "OBR|1||ACC8",
    "OBX|1|TX|||  ",
])


def test_bad_hl7_messages_are_named_as_before(tmp_path):
    path = tmp_path / "bad.hl7"
    path.write_text(BAD_HL7 + "\n")
    stats = ReadStats()
    reports = list(read_corpus([path], ReaderOptions(on_error="skip"), stats))
    assert [(r.id, dict(r.sections), r.metadata.get("datetime")) for r in reports] == [
        ("ACC5", {"text": "an OBX named with a space"}, "2025-01-02T10:30"),
        ("ACC6", {"impression": "read, its OBR named with a space"}, "2025-01-01T12:00")]
    assert stats.skipped == [
        (f"{path} message 1 (line 1)", "message type ADT^A01 is not ORU^R01 (an observation result)"),
        (f"{path} message 2 (line 3)", "an ORU^R01 message with no OBR segment (no report in it)"),
        (f"{path} message 3 (line 5)", "report ACC3: OBR-7 '202513011200' is not a real date and time"),
        (f"{path} message 4 (line 8)", "report ACC4: OBR-7 '2025-01-01' is not an HL7 timestamp (YYYYMMDDHHMM)"),
        (f"{path} message 7 (line 18)", "report ACC7: OBR-7 '202501011260' is not a real date and time"),
        (f"{path} message 8 (line 21)", "report ACC8: no text (no OBX-5 value)"),
    ]


def _split_before(text):
    """``split_messages`` as it was: a test per line (MLLP frames split with the pattern)."""
    text = text.lstrip("\ufeff")
    if "\x0b" in text:
        line = 1
        for n, chunk in enumerate(text.split("\x0b")):
            if n:
                body = chunk.split("\x1c", 1)[0]
                yield line, "\r".join(s for s in re.split(r"\r\n|\r|\n", body) if s.strip())
            line += chunk.count("\n")
        return
    current, start = [], 1
    for number, line in enumerate(re.split(r"\r\n|\r|\n", text), 1):
        if line.startswith("MSH") and current:
            yield start, "\r".join(current)
            current = []
        if line.strip():
            if not current:
                start = number
            current.append(line)
    if current:
        yield start, "\r".join(current)


def test_messages_split_as_before():
    rng = random.Random(11)
    pieces = ["MSH|^~\\&|A", "PID|1", "OBX|1|TX|||x", "", " ", "\t", "  MSH|x", "MSHX", "xMSH|", "\ufeff"]
    seps = ["\n", "\r", "\r\n", "\n\n"]
    kinds = set()
    for _ in range(4000):
        sep = rng.choice(seps) if rng.random() < 0.2 else "\n"
        text = sep.join(rng.choice(pieces) for _ in range(rng.randrange(12)))
        if rng.random() < 0.1:
            text = "".join(f"\x0b{m}\x1c\r" + rng.choice(["", "\n"]) for m in text.split("MSH"))
        ours, before = list(split_messages(text)), list(_split_before(text))
        assert ours == before, repr(text)
        kinds.add(len(before))
    assert len(kinds) > 4


def _variants(value, rng):
    """``value`` with one random change of structure or of a value (or none)."""
    out = copy.deepcopy(value)
    node, key = out, None
    for _ in range(rng.randrange(4)):  # walk down a little
        items = list(node.items()) if isinstance(node, dict) else list(enumerate(node))
        nested = [(k, v) for k, v in items if isinstance(v, (dict, list)) and v]
        if not nested:
            break
        key, node = rng.choice(nested)
    change = rng.randrange(8)
    keys = list(node) if isinstance(node, dict) else list(range(len(node)))
    if not keys:
        return out
    k = rng.choice(keys)
    if change == 0:
        node[k] = rng.choice([1, 1.0, True, None, "s", [], {}, [1], {"a": 1}])  # another type
    elif change == 1 and isinstance(node, dict):
        node["extra"] = "x"  # a key more
    elif change == 2:
        del node[k]  # a key or item less
    elif change == 3 and isinstance(node, dict) and len(node) > 1:
        moved = node.pop(k)
        node[k] = moved  # another key order
    elif change == 4 and isinstance(node, list):
        node.append(copy.deepcopy(node[0]))  # a longer list
    elif change in (5, 6) and isinstance(node[k], str):
        node[k] = node[k] + "x"  # another value, the same shape
    return out


def _small_sorted(value):
    """``value`` with the keys of its objects of at most ``_BY_KEY`` keys sorted (a matcher reads those by key)."""
    if isinstance(value, dict):
        items = sorted(value.items()) if len(value) <= fhir_validate._BY_KEY else value.items()
        return {k: _small_sorted(v) for k, v in items}
    if isinstance(value, list):
        return [_small_sorted(v) for v in value]
    return value


def test_a_matcher_matches_exactly_its_shape():
    resources = [fhir_resource(item) for item in assign_patients([d.report for d in generate_reports(n=20, seed=9)])]
    resources += [{"a": "x", "b": [{"c": 1}, None], "d": {"e": True}, "": [], "k y'\"\\": {}}]
    rng = random.Random(13)
    seen = {True: 0, False: 0}
    for sample in resources:
        paths = fhir_validate._leaf_paths(sample)
        chosen = rng.sample(paths, min(len(paths), 6))
        match = fhir_validate.matcher(sample, chosen)
        for _ in range(300):
            other = _variants(sample, rng)
            same = fhir_validate._shape(_small_sorted(other)) == fhir_validate._shape(_small_sorted(sample))
            got = match(other)
            assert (got is not None) == same, other
            if same:
                leaves, where = [], []
                fhir_validate._walk(other, [], leaves)
                where = fhir_validate._leaf_paths(other)
                assert list(got) == [leaves[where.index(p)] for p in chosen]
            seen[same] += 1
    assert min(seen.values()) > 500


def test_a_matcher_tells_empty_containers_and_look_alikes_apart():
    """Small objects are not type-checked (anything else raises at len() or at a key) and lists are unpacked
    without their length (another length raises): a string, list or null of an object's length, a longer or
    shorter list, a non-empty list or object where the shape has an empty one, are other shapes."""
    sample = {"a": [], "b": {}, "c": {"d": "x"}, "e": ["y"]}
    match = fhir_validate.matcher(sample, [("c", "d"), ("e", 0)])
    assert match({"e": ["w"], "c": {"d": "z"}, "b": {}, "a": []}) == ("z", "w")
    others = [{"a": [1]}, {"a": {}}, {"a": ""}, {"b": []}, {"b": {"k": 1}}, {"b": None}, {"c": "d"}, {"c": ["d"]},
              {"c": None}, {"c": {"k": "x"}}, {"c": {"d": "x", "k": 1}}, {"e": "y"}, {"e": {"y": 1}},
              {"e": ["y", "y"]}, {"e": []}, {"e": None}]
    for other in others:
        assert match({**sample, **other}) is None, other


def test_the_matcher_path_keeps_the_whole_validations_verdicts():
    model = fhir_reader._validator()
    items = assign_patients([d.report for d in generate_reports(n=5, seed=9)])
    good = [fhir_resource(item) for item in items]
    validator = fhir_validate.ShapeValidator(model)
    for resource in good:
        validator(resource)
    assert validator._last is not None  # the matcher path is the one taken
    other_type = {**good[1], "resourceType": "Observation"}  # the same keys and types, another resource type
    bad_date = {**good[2], "effectiveDateTime": "2025-02-30T10:00:00Z"}
    for bad in (other_type, bad_date):
        with pytest.raises(Exception) as whole:
            model.model_validate(bad)
        with pytest.raises(Exception) as ours:
            validator(bad)
        assert str(ours.value) == str(whole.value)
    validator(good[3])  # still passes after the refusals
    # an object's keys in another order: the same plan (its small objects are read by key), the same verdicts
    flipped = {**good[4], "identifier": [dict(reversed(good[4]["identifier"][0].items()))]}
    assert validator(flipped) is not None  # matched by the plan's function, not validated whole
    model.model_validate(flipped)
    bad = {**flipped, "identifier": [{**flipped["identifier"][0], "value": ""}]}
    with pytest.raises(Exception) as whole:
        model.model_validate(bad)
    with pytest.raises(Exception) as ours:
        validator(bad)
    assert str(ours.value) == str(whole.value)


def test_mllp_frames_and_odd_headers_are_named_as_before(tmp_path):
    path = tmp_path / "frames.mllp"
    frames = ["", "  \r\n", "PID|1||X", "MSH|^~\\&|A|B|C|D|202501011200||ORU^R01|F1|P|2.5\rOBR|1||ACC1\rOBX|1|TX|||ok",
              "MSH|^", "MSH^~\\&|A\rOBR|1||ACC2\rOBX|1|TX|||x"]
    path.write_bytes(b"junk\n" + b"".join(b"\x0b" + f.encode() + b"\x1c\r\n" for f in frames))
    stats = ReadStats()
    reports = list(read_corpus([path], ReaderOptions(format="hl7", on_error="skip"), stats))
    assert [r.id for r in reports] == ["ACC1"]
    not_hl7 = "not an HL7 v2 message (it does not start with an MSH segment)"
    not_oru = "message type (none) is not ORU^R01 (an observation result)"
    assert stats.skipped == [(f"{path} message 1 (line 2)", not_hl7), (f"{path} message 2 (line 3)", not_hl7),
                             (f"{path} message 3 (line 5)", not_hl7), (f"{path} message 5 (line 7)", not_oru),
                             (f"{path} message 6 (line 8)", not_oru)]  # as the reader before named them


def test_hl7_sections_are_stripped_as_assemble_strips_them(tmp_path):
    path = tmp_path / "spaces.hl7"
    path.write_text("\n".join([
        "MSH|^~\\&|RIS|SITE|EHR|SITE|202501021030||ORU^R01|C1|P|2.5",
        "OBR|1||ACC1|71046^XR CHEST|||202501021015",
        "OBX|1|TX|||FINDINGS: clear\u2003",  # an em space: not one of the edges split_sections strips
        "OBX|2|TX|||HISTORY:\u2003\u00a0",  # nothing but such spaces: no section
        "OBX|3|TX|||IMPRESSION: \x0cnormal\\X0D\\",  # a form feed, and an escaped CR at the end
    ]) + "\n")
    (report,) = read_corpus([path], ReaderOptions())
    expected = assemble("ACC1", "FINDINGS: clear\u2003\nHISTORY:\u2003\u00a0\nIMPRESSION: \x0cnormal\n", [], [
        ("patient", None), ("date", "2025-01-02"), ("datetime", "2025-01-02T10:15"), ("exam", "XR CHEST"),
        ("exam_code", "71046"), ("modality", "XR"), ("status", None)])
    assert report.to_dict() == expected.to_dict()
    assert dict(report.sections) == {"findings": "clear", "impression": "normal"}


def test_remembered_exams_modalities_and_categories_are_those_read(tmp_path, monkeypatch):
    """The exam, modality and category read once per (shape, code and category values) are those read from
    each report: codes, displays, systems (DICOM among them) and categories varied within one shape."""
    import json

    items = assign_patients([d.report for d in generate_reports(n=300, seed=21)])
    rng = random.Random(21)
    lines = []
    for item in items:
        r = copy.deepcopy(fhir_resource(item))  # its code and category are the demo's own objects
        coding = r["code"]["coding"][0]
        coding["system"] = rng.choice([coding["system"], fhir_reader.DICOM])
        coding["code"] = rng.choice([coding["code"], "CT", "mr", "XR", "US", "zz"])
        coding["display"] = rng.choice([coding["display"], "CT HEAD", "MRI KNEE", "Chest"])
        r["code"]["text"] = rng.choice([r["code"]["text"], "CT ABDOMEN", "Ultrasound neck"])
        cat = r["category"][0]["coding"][0]
        cat["system"], cat["display"] = rng.choice([(cat["system"], cat["display"]), (fhir_reader.DICOM, "Imaging")])
        cat["code"] = rng.choice([cat["code"], "MR", "NM"])
        patient = rng.choice(["P1", "P2", "x/y"])
        r["subject"] = rng.choice([{"reference": f"Patient/{patient}"}, {"reference": f"Patient/{patient}/"},
                                   {"reference": patient}, {"identifier": {"value": patient}}])
        lines.append(json.dumps(r))
    path = tmp_path / "varied.ndjson"
    path.write_text("\n".join(lines) + "\n")
    fast = [r.to_dict() for r in read_corpus([path], ReaderOptions())]
    assert len({(r["metadata"]["exam"], r["metadata"].get("modality"), r["metadata"]["category"]) for r in fast}) > 10
    model = fhir_reader._validator()  # each report read alone, nothing remembered
    alone = [fhir_reader.report_of(json.loads(line), model.model_validate)[0].to_dict() for line in lines]
    assert alone == fast and len({r["metadata"]["patient"] for r in fast}) == 4
    monkeypatch.setattr(fhir_reader, "ShapeValidator", lambda model, **_: model.model_validate)  # nothing remembered
    assert [r.to_dict() for r in read_corpus([path], ReaderOptions())] == fast


def _fhir_report_before(resource, memo_key, memo, patients):
    """The FHIR reader's report as it was built before: the pairs handed to ``assemble``."""
    f = fhir_reader
    rid = resource.get("id") or f._first(resource.get("identifier")).get("value")
    if not rid:
        return None, "a DiagnosticReport with neither id nor identifier"
    try:
        texts = [t for att in resource.get("presentedForm") or () if (t := f._attachment_text(att))]
    except ValueError as exc:
        return None, f"DiagnosticReport {rid}: {exc}"
    conclusion = (resource.get("conclusion") or "").strip()
    text = "\n".join(texts)
    if (not text or text.isspace()) and not conclusion:
        return None, f"DiagnosticReport {rid}: no report text (no text/plain or text/html presentedForm, no conclusion)"
    when = resource.get("effectiveDateTime") or (resource.get("effectivePeriod") or {}).get("start") \
        or resource.get("issued")
    concepts = memo.setdefault(memo_key, tuple(zip(("exam", "modality", "category"), f._concepts(resource))))
    sections = split_sections(text) if texts else []
    impression = next((body for name, body in sections if name == "impression"), None)
    subject = resource.get("subject")
    ref = subject.get("reference") if type(subject) is dict else None
    patient = patients.setdefault(ref, f._reference_id(subject)) if type(ref) is str and ref else f._reference_id(subject)
    when = when if type(when) is str or not when else str(when)
    metadata = [("patient", patient), ("date", when[:10] if when else None), ("datetime", when or None),
                *concepts, ("status", resource.get("status"))]
    if conclusion and impression is None:
        sections.append(("impression", conclusion))
    elif conclusion and conclusion != impression and " ".join(conclusion.split()) != " ".join(impression.split()):
        metadata.append(("conclusion", conclusion))
    return assemble(rid if type(rid) is str else str(rid), None, sections, metadata), None


def _b64(text):
    import base64

    return base64.b64encode(text.encode()).decode()


def test_fhir_reports_are_assembles_reports():
    """The FHIR reader builds its report in one pass (values cleaned as ``assemble`` cleans them, exam, modality
    and category cleaned once per key, a patient once per reference, the record wrapped without copies): the
    same reports, keys in the same order, and the same problems as the pairs handed to ``assemble``."""
    rng = random.Random(34)
    spaces = ["", " ", "\u2003", "\r", "\r\n", "\x0c", "\u00a0", ","]
    texts = ["FINDINGS: clear lungs.{s}\nIMPRESSION:{s} normal{s}", "no heading at all{s}", "{s}",
             "FINDINGS:{s}\r\nIMPRESSION: a\r\nb{s}", "HISTORY: cough{s}IMPRESSION: z{s}", "IMPRESSION: {s}"]
    items = assign_patients([d.report for d in generate_reports(n=40, seed=34)])
    memo, patients, memo_before, patients_before, seen = {}, {}, {}, {}, 0
    for n in range(3000):
        r = copy.deepcopy(fhir_resource(rng.choice(items), as_html=rng.random() < 0.2))
        s = lambda: rng.choice(spaces)
        if rng.random() < 0.7:
            forms = [{"contentType": rng.choice(["text/plain", "text/plain; charset=utf-8", "text/html"]),
                      "data": _b64(rng.choice(texts).format(s=s()))} for _ in range(rng.choice((0, 1, 1, 2)))]
            r["presentedForm"] = forms
        r["conclusion"] = rng.choice([None, "", s(), f"{s()}normal{s()}", "a\r\nb", "a  b", "z", "other",
                                      r.get("conclusion")])
        r["subject"] = rng.choice([{"reference": f"Patient/{s()}P{rng.randrange(5)}{s()}"}, {"reference": "/"},
                                   {"identifier": {"value": f"{s()}Q{s()}"}}, None, {"reference": "P1"}])
        r["code"]["text"] = rng.choice([r["code"]["text"], f"{s()}CT HEAD{s()}", s(), None])
        r["category"][0]["coding"][0]["display"] = rng.choice(["Radiology", f"{s()}Rad{s()}", s()])
        r["status"] = rng.choice(["final", f"{s()}final{s()}", s(), None])
        when = rng.choice([r["effectiveDateTime"], f"{s()}2025-01-02T10:00:00Z", f"2025-01-0{s()}", None])
        r["effectiveDateTime"] = when
        if when is None and rng.random() < 0.5:
            r["effectivePeriod"] = {"start": f"2024-12-3{rng.randrange(2)}{s()}"}
        if rng.random() < 0.1:
            r["id"] = rng.choice([None, "", 123])
        r = {k: v for k, v in r.items() if v is not None}
        key = (0, repr(r.get("code")), repr(r.get("category")))  # what a ShapeValidator key stands for
        ours, problem = fhir_reader._report(r, key, memo, patients)
        before, problem_before = _fhir_report_before(r, key, memo_before, patients_before)
        assert problem == problem_before, r
        if ours is None:
            assert before is None
            continue
        seen += 1
        assert ours == before and ours.to_dict() == before.to_dict(), r
        assert list(ours.sections) == list(before.sections) and list(ours.metadata) == list(before.metadata), r
        assert vars(ours) == vars(before) and type(ours.sections) is type(before.sections), r
    assert seen > 2000 and len(memo) > 10 and len(patients) > 5


def test_a_fresh_report_is_a_report():
    sections, metadata = {"findings": "a"}, {"patient": "P1"}
    ours = Report.fresh("r1", dict(sections), dict(metadata))
    assert ours == Report("r1", sections, metadata) and type(ours) is Report
    assert vars(ours) == vars(Report("r1", sections, metadata))
    assert {k: type(v) for k, v in vars(ours).items()} == {k: type(v) for k, v in vars(Report("r1", {}, {})).items()}
    with pytest.raises(AttributeError):  # frozen as a Report is (dataclasses.FrozenInstanceError)
        ours.id = "r2"
    with pytest.raises(TypeError):  # and its mappings read-only
        ours.sections["findings"] = "b"
    assert Report.fresh(7, {}, {}).id == "7"  # an id made a str, as the constructor makes it
