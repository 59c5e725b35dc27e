"""Issue 34, item 1: hospital feeds in. FHIR R4 DiagnosticReport (one resource, a Bundle, bulk NDJSON) and
HL7 v2 ORU^R01 (plain or MLLP) read into reports with their patient, time and exam; bad input named."""

from __future__ import annotations

import base64
import json

import pytest

from radsift.corpus import read_corpus
from radsift.corpus.hl7_reader import hl7_time
from radsift.corpus.options import ReaderOptions, infer_format
from radsift.corpus.stats import ReadStats
from radsift.demo import generate_reports
from radsift.demo.feeds import assign_patients, fhir_resource, hl7_message, write_feeds
from radsift.errors import CorpusError


@pytest.fixture(scope="module")
def feeds(tmp_path_factory):
    reports = [d.report for d in generate_reports(n=12, seed=3)]
    return reports, write_feeds(reports, tmp_path_factory.mktemp("feeds"))


def _read(path, **kw):
    return list(read_corpus([path], ReaderOptions(**kw)))


@pytest.mark.parametrize("name", ["reports.ndjson", "reports.hl7", "reports.mllp", "bundle.json"])
def test_every_feed_reads_back_the_reports_with_patient_and_time(feeds, name):
    reports, paths = feeds
    got = _read(paths[name])
    items = assign_patients(reports)[:len(got)]
    assert len(got) == (5 if name == "bundle.json" else len(reports))  # the Bundle's Patients are passed over
    for report, item in zip(got, items):
        assert report.id == item.report.id
        assert dict(report.sections) == dict(item.report.sections)  # text exactly, split at its headings
        assert report.metadata["patient"] == item.patient
        assert report.metadata["date"] == item.when.strftime("%Y-%m-%d")
        assert report.metadata["datetime"].startswith(item.when.strftime("%Y-%m-%dT%H:%M"))
        assert report.metadata["exam"] == "XR CHEST 2 VIEWS" and report.metadata["modality"] == "XR"


def test_formats_are_inferred_from_the_files(feeds, tmp_path):
    _, paths = feeds
    assert infer_format(paths["reports.ndjson"]) == "fhir"
    assert infer_format(paths["bundle.json"]) == "fhir"
    assert infer_format(paths["reports.hl7"]) == "hl7" and infer_format(paths["reports.mllp"]) == "hl7"
    plain = tmp_path / "plain.ndjson"  # NDJSON that is not FHIR stays JSONL
    plain.write_text('{"id": "r1", "findings": "No effusion."}\n')
    assert infer_format(plain) == "jsonl"
    folder = tmp_path / "drop"
    folder.mkdir()
    (folder / "a.hl7").write_text(paths["reports.hl7"].read_text())
    assert infer_format(folder) == "hl7" and len(_read(folder)) == 12


def _resource(**changes) -> dict:
    item = assign_patients([d.report for d in generate_reports(n=1, seed=3)])[0]
    resource = fhir_resource(item)
    resource.update(changes)
    return {k: v for k, v in resource.items() if v is not None}


def test_fhir_text_from_html_base64_and_conclusion(tmp_path):
    body = "<html><body><h2>FINDINGS:</h2><p>Small left pleural effusion &amp; no pneumothorax.</p>" \
           "<script>alert(1)</script></body></html>"
    html_form = {"contentType": "text/html", "data": base64.b64encode(body.encode()).decode()}
    path = tmp_path / "one.json"
    path.write_text(json.dumps(_resource(id="h1", presentedForm=[html_form], conclusion="Small effusion.")))
    (report,) = _read(path)
    assert report.sections["findings"] == "Small left pleural effusion & no pneumothorax."
    assert report.sections["impression"] == "Small effusion."  # conclusion: the impression the text lacks
    latin = {"contentType": "text/plain; charset=iso-8859-1", "data": base64.b64encode("Pleural épanchement.".encode("latin-1")).decode()}
    path.write_text(json.dumps(_resource(id="l1", presentedForm=[latin], conclusion=None)))
    assert _read(path)[0].sections["text"] == "Pleural épanchement."
    path.write_text(json.dumps(_resource(id="c1", presentedForm=None, conclusion="No acute disease.")))
    assert dict(_read(path)[0].sections) == {"impression": "No acute disease."}


@pytest.mark.parametrize("change, needle", [
    ({"resourceType": "Observation"}, "a Observation resource, not a DiagnosticReport"),
    ({"effectiveDateTime": "yesterday"}, "not a valid FHIR DiagnosticReport (effectiveDateTime"),
    ({"presentedForm": None, "conclusion": None}, "no report text"),
    ({"presentedForm": [{"contentType": "text/plain", "data": "%%%not base64"}]}, "(presentedForm.0.data"),
    ({"id": None, "identifier": None}, "neither id nor identifier"),
])
def test_bad_fhir_resources_are_named_by_file_and_line(tmp_path, change, needle):
    good = _resource()
    path = tmp_path / "export.ndjson"
    path.write_text(json.dumps(good) + "\n\n" + json.dumps(_resource(**{"id": "bad-1", **change})) + "\n")
    with pytest.raises(CorpusError) as err:
        _read(path, format="fhir")
    assert f"{path} line 3: " in str(err.value) and needle in str(err.value)
    stats = ReadStats()
    kept = list(read_corpus([path], ReaderOptions(format="fhir", on_error="skip"), stats))
    assert [r.id for r in kept] == [good["id"]] and len(stats.skipped) == 1


def test_bad_json_in_a_bulk_export_is_named(tmp_path):
    path = tmp_path / "export.ndjson"
    path.write_text(json.dumps(_resource()) + "\n{not json\n")
    with pytest.raises(CorpusError, match=r"export.ndjson line 2: invalid JSON"):
        _read(path, format="fhir")


def _message(**replace) -> str:
    item = assign_patients([d.report for d in generate_reports(n=1, seed=3)])[0]
    msg = hl7_message(item, "MSG1")
    for old, new in replace.items():
        msg = msg.replace(old, new)
    return msg


@pytest.mark.parametrize("replace, needle", [
    ({"ORU^R01": "ADT^A01"}, "message type ADT^A01 is not ORU^R01"),
    ({"OBR|1|": "XXX|1|"}, "no OBR segment"),
    ({"||202": "||2O2"}, "OBR-7 '2O2"),  # a letter O in the time
])
def test_bad_hl7_messages_are_named_by_file_message_and_line(tmp_path, replace, needle):
    path = tmp_path / "feed.hl7"
    bad = _message(**replace)
    path.write_text((_message() + "\r" + bad).replace("\r", "\n") + "\n")
    first_line = len(_message().split("\r")) + 1
    with pytest.raises(CorpusError) as err:
        _read(path)
    assert f"feed.hl7 message 2 (line {first_line})" in str(err.value) and needle in str(err.value)
    stats = ReadStats()
    assert len(list(read_corpus([path], ReaderOptions(on_error="skip"), stats))) == 1 and len(stats.skipped) == 1


def test_hl7_ids_fall_back_and_text_is_unescaped(tmp_path):
    msg = _message().replace("|MSG1|", "|CTRL9|")
    obr = next(s for s in msg.split("\r") if s.startswith("OBR"))
    fields = obr.split("|")
    fields[2], fields[3] = "PLACER7", ""  # no filler number: the placer's
    no_filler = msg.replace(obr, "|".join(fields))
    fields[2] = ""  # neither: the message control id
    neither = msg.replace(obr, "|".join(fields))
    escaped = _message().replace("|TX|RPT^Report^L||FINDINGS: ", "|TX|RPT^Report^L||FINDINGS: a \\F\\ b\\.br\\")
    path = tmp_path / "ids.hl7"
    path.write_text("\n".join(m.replace("\r", "\n") for m in (no_filler, neither)) + "\n")
    assert [r.id for r in _read(path)] == ["PLACER7", "CTRL9"]
    path.write_text(escaped)
    assert _read(path)[0].sections["findings"].startswith("a | b\nEndotracheal")


def test_hl7_times():
    assert hl7_time("202601021530") == "2026-01-02T15:30"
    assert hl7_time("20260102153045+0100") == "2026-01-02T15:30:45+01:00"
    assert hl7_time("20260102") == "2026-01-02"
    assert hl7_time("") is None
    for bad in ("2026-01-02", "20261302", "202601021561"):
        with pytest.raises(ValueError):
            hl7_time(bad)


def test_patient_and_date_columns_are_validated_and_normalised(tmp_path):
    """Issue 34, item 2: --patient-column / --date-column on a CSV or JSONL corpus."""
    from radsift.corpus.dates import normalise_date

    path = tmp_path / "r.csv"
    path.write_text("id,mrn,exam_time,findings\nr1,M1,2025-03-07 14:05,No effusion.\nr2,M1,20250410,Small effusion.\n"
                    "r3,M2,,Clear lungs.\n")
    opts = dict(sections={"findings": "findings"}, patient_column="mrn", date_column="exam_time")
    got = {r.id: dict(r.metadata) for r in _read(path, **opts)}
    assert got["r1"]["patient"] == "M1" and got["r1"]["date"] == "2025-03-07"
    assert got["r1"]["datetime"] == "2025-03-07T14:05"
    assert got["r2"]["date"] == "2025-04-10" and "datetime" not in got["r2"]
    assert got["r3"]["patient"] == "M2" and "date" not in got["r3"]  # an empty cell is no date
    path.write_text("id,mrn,exam_time,findings\nr1,M1,03/07/2025,No effusion.\n")
    with pytest.raises(CorpusError, match=r"r.csv line 2: column 'exam_time' \(--date-column\): '03/07/2025' is not "
                                          r"a date \(day and month order"):
        _read(path, **opts)
    with pytest.raises(CorpusError, match=r"no column 'when' \(--date-column\); columns: id, mrn, exam_time"):
        _read(path, **{**opts, "date_column": "when"})
    jsonl = tmp_path / "r.jsonl"
    jsonl.write_text('{"id": "j1", "findings": "x", "pid": "P9", "on": "2024-12-31T23:59:59Z"}\n')
    (report,) = _read(jsonl, sections={"findings": "findings"}, patient_column="pid", date_column="on")
    assert report.metadata["patient"] == "P9" and report.metadata["datetime"] == "2024-12-31T23:59:59+00:00"
    assert normalise_date("202503071405") == ("2025-03-07", "2025-03-07T14:05")
    with pytest.raises(ValueError):
        normalise_date("2025-02-30")
