"""Tests for radsift.corpus: reader options, each format, bad input, real corpora."""

from __future__ import annotations

import inspect
import json
from pathlib import Path

import pytest

from radsift.corpus import ReaderOptions, ReadStats, infer_format, read_corpus
from radsift.errors import ConfigError, CorpusError
from radsift.text import report_sentences

# Invented reports: no real data in fixtures.
CSV_TEXT = (
    "uid,image,indication,findings,impression\n"
    '1,Chest two views,Cough,"Heart size normal. Lungs clear.",No acute disease.\n'
    '2,,"Fever,\nchills","Small left effusion.\nNo pneumothorax.","1. Effusion. 2. No pneumothorax."\n'
    "3,Chest,Pain,,\n"
)


def write(path: Path, text: str, encoding: str = "utf-8") -> Path:
    path.write_bytes(text.encode(encoding))
    return path


def read(paths, **kwargs) -> tuple[list, ReadStats]:
    stats = ReadStats()
    reports = list(read_corpus([str(p) for p in paths], ReaderOptions(**kwargs), stats))
    return reports, stats


# --- options -----------------------------------------------------------------------------


def test_from_cli_builds_options() -> None:
    options = ReaderOptions.from_cli("CSV", "uid", ["findings=findings", "Impression = impr"], None, "skip")
    assert options.format == "csv"
    assert options.id_column == "uid"
    assert dict(options.sections) == {"findings": "findings", "impression": "impr"}
    assert options.on_error == "skip"
    assert ReaderOptions.from_cli("xml").format == "openi-xml"
    assert ReaderOptions.from_cli(None).format is None
    assert hash(options) == hash(ReaderOptions.from_cli("csv", "uid", ["findings=findings", "impression=impr"], on_error="skip"))


@pytest.mark.parametrize(
    ("kwargs", "flag"),
    [
        ({"format": "xls"}, "--format"),
        ({"on_error": "ignore"}, "--on-error"),
        ({"sections": ["findings"]}, "--section"),
        ({"sections": ["=findings"]}, "--section"),
        ({"sections": ["findings="]}, "--section"),
        ({"sections": ["find ings=x"]}, "--section"),
        ({"sections": ["findings=a", "findings=b"]}, "--section"),
        ({"id_column": " "}, "--id-column"),
        ({"text_column": ""}, "--text-column"),
        ({"encoding": "no-such-codec"}, "--encoding"),
    ],
)
def test_from_cli_rejects_bad_flags(kwargs: dict, flag: str) -> None:
    with pytest.raises(ConfigError, match=flag):
        ReaderOptions.from_cli(**kwargs)


def test_options_validate_on_construction() -> None:
    with pytest.raises(ConfigError, match="format"):
        ReaderOptions(format="xls")
    with pytest.raises(ConfigError, match="on_error"):
        ReaderOptions(on_error="maybe")
    options = ReaderOptions(sections={"findings": "f"})
    with pytest.raises(TypeError):
        options.sections["x"] = "y"  # type: ignore[index]


def test_infer_format(tmp_path: Path) -> None:
    assert infer_format("a.csv") == "csv"
    assert infer_format("a.JSONL") == "jsonl"
    assert infer_format("a.ndjson") == "jsonl"
    assert infer_format("a.xml") == "openi-xml"
    assert infer_format("a.txt") == "text"
    txt_dir = tmp_path / "notes"
    txt_dir.mkdir()
    assert infer_format(txt_dir) == "txt"
    xml_dir = tmp_path / "xml"
    xml_dir.mkdir()
    (xml_dir / "1.xml").write_text("<eCitation/>")
    assert infer_format(xml_dir) == "openi-xml"
    with pytest.raises(CorpusError, match=r"a\.docx.*--format"):
        infer_format("a.docx")


def test_read_stats_summary() -> None:
    stats = ReadStats(reports=5, files=2, empty=["a", "b", "c", "d"], skipped=[("f.csv line 3", "bad")])
    line = stats.summary()
    assert line == "5 reports from 2 files; 4 empty (a, b, c, ...); 1 skipped (first: f.csv line 3: bad)"
    assert "\n" not in line


# --- CSV ---------------------------------------------------------------------------------


def test_csv_sections_metadata_multiline_and_empty(tmp_path: Path) -> None:
    path = write(tmp_path / "r.csv", "\ufeff" + CSV_TEXT)  # with a byte-order mark
    reports, stats = read([path], id_column="uid", sections={"findings": "findings", "impression": "impression"})
    assert [r.id for r in reports] == ["1", "2", "3"]
    first, second, third = reports
    assert dict(first.sections) == {"findings": "Heart size normal. Lungs clear.", "impression": "No acute disease."}
    assert dict(first.metadata) == {"image": "Chest two views", "indication": "Cough"}
    assert second.sections["findings"] == "Small left effusion.\nNo pneumothorax."
    assert dict(second.metadata) == {"indication": "Fever,\nchills"}  # empty "image" kept out
    assert third.is_empty and dict(third.sections) == {}
    assert stats.empty == ["3"] and stats.reports == 3 and stats.files == 1 and stats.skipped == []


def test_csv_default_id_column_and_text_column(tmp_path: Path) -> None:
    path = write(
        tmp_path / "notes.csv",
        'id,note\nn1,"EXAM: ,Chest.,FINDINGS: ,Clear lungs.,IMPRESSION: ,Normal."\nn2,Plain text only.\n',
    )
    reports, _ = read([path], text_column="note")
    assert [(r.id, dict(r.sections)) for r in reports] == [
        ("n1", {"exam": "Chest.", "findings": "Clear lungs.", "impression": "Normal."}),
        ("n2", {"text": "Plain text only."}),
    ]


def test_csv_missing_id_column_names_the_option(tmp_path: Path) -> None:
    path = write(tmp_path / "r.csv", CSV_TEXT)
    with pytest.raises(CorpusError, match=r"r\.csv.*--id-column.*columns: uid, image, indication, findings, impression"):
        list(read_corpus([path], ReaderOptions(sections={"findings": "findings"})))


def test_csv_without_sections_tells_which_flags(tmp_path: Path) -> None:
    path = write(tmp_path / "r.csv", CSV_TEXT)
    with pytest.raises(CorpusError, match=r"--section.*--text-column.*columns: uid"):
        list(read_corpus([path], ReaderOptions(id_column="uid")))


@pytest.mark.parametrize(
    ("kwargs", "column"),
    [
        ({"id_column": "report_id", "sections": {"findings": "findings"}}, "report_id"),
        ({"id_column": "uid", "sections": {"findings": "finding"}}, "finding"),
        ({"id_column": "uid", "text_column": "report"}, "report"),
    ],
)
def test_csv_missing_column_always_fails(tmp_path: Path, kwargs: dict, column: str) -> None:
    path = write(tmp_path / "r.csv", CSV_TEXT)
    for on_error in ("fail", "skip"):
        with pytest.raises(CorpusError) as info:
            list(read_corpus([path], ReaderOptions(on_error=on_error, **kwargs)))
        message = str(info.value)
        assert str(path) in message and repr(column) in message and "columns: uid, image" in message


def test_csv_bad_rows_fail_with_file_and_line(tmp_path: Path) -> None:
    path = write(tmp_path / "r.csv", "id,findings\na,ok\nb,too,many\nc\n,no id\n")
    options = ReaderOptions(sections={"findings": "findings"})
    reports = read_corpus([path], options)
    assert next(reports).id == "a"  # streams: rows before the bad one come out first
    with pytest.raises(CorpusError, match=r"r\.csv line 3: row has 3 fields but the header has 2"):
        next(reports)


def test_csv_skip_records_bad_rows(tmp_path: Path) -> None:
    path = write(tmp_path / "r.csv", "id,findings\na,ok\nb,too,many\nc\n,no id\nd,fine\n")
    reports, stats = read([path], sections={"findings": "findings"}, on_error="skip")
    assert [r.id for r in reports] == ["a", "d"]
    assert stats.skipped == [
        (f"{path} line 3", "row has 3 fields but the header has 2"),
        (f"{path} line 4", "row has 1 fields but the header has 2"),
        (f"{path} line 5", "empty id in column 'id'"),
    ]


def test_csv_malformed_quoting_and_crlf(tmp_path: Path) -> None:
    path = tmp_path / "r.csv"
    path.write_bytes(b'id,findings\r\na,"two\r\nlines"\r\nb,"x"y\r\nc,"never closed\r\n')
    with pytest.raises(CorpusError, match=r"r\.csv line 4: malformed CSV"):
        list(read_corpus([path], ReaderOptions(sections={"findings": "findings"})))
    reports, stats = read([path], sections={"findings": "findings"}, on_error="skip")
    assert [(r.id, r.sections["findings"]) for r in reports] == [("a", "two\nlines")]
    assert [loc for loc, _ in stats.skipped] == [f"{path} line 4", f"{path} line 5"]


def test_csv_undecodable_bytes_name_the_line(tmp_path: Path) -> None:
    path = tmp_path / "r.csv"
    path.write_bytes(b"id,findings\na,ok\nb,caf\xe9 \xff\nc,fine\n")
    with pytest.raises(CorpusError, match=r"r\.csv line 3: undecodable bytes"):
        list(read_corpus([path], ReaderOptions(sections={"findings": "findings"})))
    reports, stats = read([path], sections={"findings": "findings"}, on_error="skip")
    assert [r.id for r in reports] == ["a", "c"]
    assert stats.skipped[0][0] == f"{path} line 3"
    # the same bytes are fine in the right encoding
    reports, _ = read([path], sections={"findings": "findings"}, encoding="latin-1")
    assert reports[1].sections["findings"] == "caf\u00e9 \u00ff"


def test_duplicate_ids_name_both_locations(tmp_path: Path) -> None:
    one = write(tmp_path / "one.csv", "id,findings\na,x\nb,y\n")
    two = write(tmp_path / "two.csv", "id,findings\nc,z\na,again\n")
    options = ReaderOptions(sections={"findings": "findings"})
    with pytest.raises(CorpusError) as info:
        list(read_corpus([one, two], options))
    message = str(info.value)
    assert "duplicate report id 'a'" in message
    assert f"{two} line 3" in message and f"{one} line 2" in message
    reports, stats = read([one, two], sections={"findings": "findings"}, on_error="skip")
    assert [r.id for r in reports] == ["a", "b", "c"]
    assert stats.files == 2 and len(stats.skipped) == 1 and "duplicate report id 'a'" in stats.skipped[0][1]


def test_missing_path_always_fails(tmp_path: Path) -> None:
    for on_error in ("fail", "skip"):
        with pytest.raises(CorpusError, match="nope.csv: no such file"):
            list(read_corpus([tmp_path / "nope.csv"], ReaderOptions(on_error=on_error)))


def test_read_corpus_is_a_lazy_generator(tmp_path: Path) -> None:
    gen = read_corpus([tmp_path / "nope.csv"], ReaderOptions())
    assert inspect.isgenerator(gen)  # nothing is read (or raised) until iteration starts


# --- JSONL -------------------------------------------------------------------------------


def test_jsonl_sections_object_mapping_and_metadata(tmp_path: Path) -> None:
    lines = [
        {"id": 1, "sections": {"FINDINGS": "Lungs clear.", "conclusion": "Normal."}, "age": 54,
         "urgent": False, "tags": ["x"], "metadata": {"site": "A", "blank": ""}},
        {"id": "r2", "sections": {"findings": "Effusion."}, "note": None},
        {},
    ]  # fmt: skip
    text = "\n".join(json.dumps(line) for line in lines[:2]) + "\n\n"
    path = write(tmp_path / "r.jsonl", text)
    reports, _ = read([path])
    assert [r.id for r in reports] == ["1", "r2"]
    assert dict(reports[0].sections) == {"findings": "Lungs clear.", "impression": "Normal."}
    assert dict(reports[0].metadata) == {"age": "54", "urgent": "false", "site": "A"}
    assert dict(reports[1].metadata) == {}


def test_jsonl_mapping_text_field_and_id_field(tmp_path: Path) -> None:
    path = write(
        tmp_path / "r.ndjson",
        json.dumps({"rid": "a", "f": "Clear.", "note": "IMPRESSION: Normal.", "site": "B"})
        + "\n"
        + json.dumps({"rid": "b", "note": "No headings here."})
        + "\n",
    )
    reports, _ = read([path], id_column="rid", sections={"findings": "f"}, text_column="note")
    assert dict(reports[0].sections) == {"impression": "Normal.", "findings": "Clear."}
    assert dict(reports[0].metadata) == {"site": "B"}
    assert dict(reports[1].sections) == {"text": "No headings here."}  # later rows may omit "f"


def test_jsonl_first_object_acts_as_header(tmp_path: Path) -> None:
    path = write(tmp_path / "r.jsonl", json.dumps({"id": "a", "findings": "x"}) + "\n")
    with pytest.raises(CorpusError, match=r"r\.jsonl line 1: no field 'impr' \(--section impression=impr\); fields: id, findings"):
        list(read_corpus([path], ReaderOptions(sections={"impression": "impr"}, on_error="skip")))
    with pytest.raises(CorpusError, match=r"no field 'uid' \(--id-column\)"):
        list(read_corpus([path], ReaderOptions(id_column="uid", sections={"findings": "findings"})))
    with pytest.raises(CorpusError, match=r"--section NAME=FIELD or --text-column"):
        list(read_corpus([path], ReaderOptions()))


def test_jsonl_bad_lines(tmp_path: Path) -> None:
    good = json.dumps({"id": "a", "sections": {"findings": "x"}})
    path = tmp_path / "r.jsonl"
    path.write_bytes(
        (
            good + "\n{not json\n[1, 2]\n" + json.dumps({"sections": {}}) + "\n"
            + json.dumps({"id": "c", "sections": {"findings": ["list"]}}) + "\n"
        ).encode() + b'{"id": "d", "sections": {"findings": "\xff"}}\n'
    )  # fmt: skip
    with pytest.raises(CorpusError, match=r"r\.jsonl line 2: invalid JSON"):
        list(read_corpus([path], ReaderOptions()))
    reports, stats = read([path], on_error="skip")
    assert [r.id for r in reports] == ["a"]
    assert [(loc.rsplit(" ", 1)[1], reason.split(":")[0]) for loc, reason in stats.skipped] == [
        ("2", "invalid JSON"),
        ("3", "expected a JSON object, got a JSON list"),
        ("4", "no field 'id'"),
        ("5", "field 'sections.findings'"),
        ("6", "undecodable bytes at column 39 (not valid utf-8)"),
    ]


# --- text files --------------------------------------------------------------------------


def test_txt_folder(tmp_path: Path) -> None:
    folder = tmp_path / "notes"
    (folder / "sub").mkdir(parents=True)
    (folder / ".hidden").mkdir()
    write(folder / "a.txt", "FINDINGS: Clear lungs.\nIMPRESSION: Normal.")
    write(folder / "sub" / "b.txt", "Just some text.")
    write(folder / "empty.txt", "  \n")
    write(folder / ".hidden" / "c.txt", "ignored")
    write(folder / "skip.md", "ignored")
    reports, stats = read([folder])
    assert [r.id for r in reports] == ["a", "empty", "sub/b"]
    assert dict(reports[0].sections) == {"findings": "Clear lungs.", "impression": "Normal."}
    assert stats.empty == ["empty"]


def test_txt_folder_errors(tmp_path: Path) -> None:
    folder = tmp_path / "notes"
    folder.mkdir()
    with pytest.raises(CorpusError, match="no .txt files"):
        list(read_corpus([folder], ReaderOptions(format="txt")))
    (folder / "bad.txt").write_bytes(b"FINDINGS: ok\nsecond line \xff\n")
    with pytest.raises(CorpusError, match=r"bad\.txt line 2: undecodable bytes"):
        list(read_corpus([folder], ReaderOptions()))
    with pytest.raises(ConfigError, match="--id-column does not apply to format 'txt'"):
        list(read_corpus([folder], ReaderOptions(id_column="id")))
    with pytest.raises(CorpusError, match="use --format text"):
        list(read_corpus([folder / "bad.txt"], ReaderOptions(format="txt")))


def test_text_file(tmp_path: Path) -> None:
    path = write(tmp_path / "case-7.txt", "Portable view.\nFINDINGS: Lungs clear.")
    reports, _ = read([path])
    assert [(r.id, dict(r.sections)) for r in reports] == [
        ("case-7", {"text": "Portable view.", "findings": "Lungs clear."})
    ]
    with pytest.raises(CorpusError, match="use --format txt"):
        list(read_corpus([tmp_path], ReaderOptions(format="text")))


# --- Open-i XML --------------------------------------------------------------------------

XML_ONE = """<?xml version="1.0" encoding="utf-8"?>
<eCitation>
  <meta type="rr"/>
  <uId id="CXR900"/>
  <pmcId id="900"/>
  <MedlineCitation><Article><Abstract>
    <AbstractText Label="COMPARISON">None.</AbstractText>
    <AbstractText Label="INDICATION">Invented indication.</AbstractText>
    <AbstractText Label="FINDINGS">Invented finding. Heart 1.5 cm.</AbstractText>
    <AbstractText Label="IMPRESSION">Invented impression.</AbstractText>
  </Abstract></Article></MedlineCitation>
  <MeSH><major>Alpha/mild</major><major>Beta</major><automatic>Gamma</automatic></MeSH>
  <parentImage id="CXR900_IM-1"><caption>x</caption></parentImage>
  <parentImage id="CXR900_IM-2"/>
</eCitation>
"""
XML_MANY = """<root>
  <eCitation><MedlineCitation><Article><Abstract>
    <AbstractText Label="FINDINGS">First.</AbstractText></Abstract></Article></MedlineCitation></eCitation>
  <eCitation><pmcId id="77"/><MedlineCitation><Article><Abstract>
    <AbstractText Label="FINDINGS"></AbstractText></Abstract></Article></MedlineCitation></eCitation>
</root>
"""


def test_openi_xml_file(tmp_path: Path) -> None:
    path = write(tmp_path / "1.xml", XML_ONE)
    reports, _ = read([path])
    (report,) = reports
    assert report.id == "CXR900"
    assert dict(report.sections) == {
        "comparison": "None.",
        "indication": "Invented indication.",
        "findings": "Invented finding. Heart 1.5 cm.",
        "impression": "Invented impression.",
    }
    assert dict(report.metadata) == {
        "uid": "CXR900",
        "pmc_id": "900",
        "mesh_major": "Alpha/mild; Beta",
        "mesh_automatic": "Gamma",
        "images": "CXR900_IM-1 CXR900_IM-2",
    }
    for s in report_sentences(report):
        assert report.sections[s.section][s.start : s.end] == s.text


def test_openi_xml_label_selection_and_folder(tmp_path: Path) -> None:
    folder = tmp_path / "xml"
    folder.mkdir()
    write(folder / "1.xml", XML_ONE)
    write(folder / "many.xml", XML_MANY)
    reports, stats = read([folder], sections={"findings": "findings", "impression": "IMPRESSION"})
    assert [r.id for r in reports] == ["CXR900", "many", "77"]
    assert dict(reports[0].sections) == {"findings": "Invented finding. Heart 1.5 cm.", "impression": "Invented impression."}
    assert reports[0].metadata["indication"] == "Invented indication."
    assert stats.empty == ["77"]


def test_openi_xml_errors(tmp_path: Path) -> None:
    folder = tmp_path / "xml"
    folder.mkdir()
    write(folder / "a.xml", XML_ONE)
    write(folder / "b.xml", "<eCitation>\n<uId id='x'/>\n<broken>\n</eCitation>")
    write(folder / "c.xml", "<other/>")
    with pytest.raises(CorpusError, match=r"b\.xml line 4: invalid XML"):
        list(read_corpus([folder], ReaderOptions()))
    reports, stats = read([folder], on_error="skip")
    assert [r.id for r in reports] == ["CXR900"]
    assert [Path(loc.split(" ")[0]).name for loc, _ in stats.skipped] == ["b.xml", "c.xml"]
    assert "no Open-i report" in stats.skipped[1][1]
    with pytest.raises(ConfigError, match="--text-column does not apply"):
        list(read_corpus([folder], ReaderOptions(text_column="x")))


# --- real corpora ------------------------------------------------------------------------


@pytest.mark.shared
def test_openi_reports_csv(shared_data: Path) -> None:
    path = shared_data / "openi" / "reports.csv"
    if not path.exists():
        pytest.skip(f"{path} absent")
    options = ReaderOptions.from_cli(None, "uid", ["findings=findings", "impression=impression"], None, "fail")
    stats = ReadStats()
    reports = list(read_corpus([path], options, stats))
    assert len(reports) == 3851 == stats.reports
    assert stats.skipped == []
    assert len(stats.empty) < 100  # a few reports have neither findings nor impression
    both = [r for r in reports if "findings" in r.sections and "impression" in r.sections]
    assert len(both) == 3331
    first = reports[0]
    assert set(first.metadata) <= {"image", "indication", "comparison"}
    assert "uid" not in first.metadata and "findings" not in first.metadata
    units = [s for r in reports for s in report_sentences(r)]
    by_id = {r.id: r for r in reports}
    assert len(units) > 15000
    for s in units:
        assert by_id[s.report_id].sections[s.section][s.start : s.end] == s.text
    # decimals are never cut ("2.5 cm"); the placeholder "x-XXXX." ends its sentence
    for s in units:
        section = by_id[s.report_id].sections[s.section]
        assert not (s.text.endswith(".") and section[s.end : s.end + 1].isdigit()), s
        assert "x-XXXX. " not in s.text, s


@pytest.mark.shared
def test_mtsamples_radiology_notes_get_findings_and_impression(shared_data: Path) -> None:
    path = shared_data / "mtsamples" / "mtsamples.csv"
    if not path.exists():
        pytest.skip(f"{path} absent")
    options = ReaderOptions.from_cli(None, "note_id", [], "transcription", "fail")
    reports = list(read_corpus([path], options))
    assert len(reports) == 4999
    radiology = [r for r in reports if "Radiology" in r.metadata.get("medical_specialty", "")]
    assert len(radiology) == 273
    with_both = [r for r in radiology if {"findings", "impression"} <= set(r.sections)]
    assert len(with_both) >= 100
    for report in with_both:
        for name in ("findings", "impression"):
            text = report.sections[name]
            # stray commas of the scraped form are gone and no heading leaks into the text
            assert not text.startswith(",") and not text.endswith(",")
            assert "FINDINGS:" not in text and "IMPRESSION:" not in text
        for s in report_sentences(report):
            assert report.sections[s.section][s.start : s.end] == s.text
