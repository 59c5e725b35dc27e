"""Tests for radsift.text: section headings, section splitting, sentence splitting."""

from __future__ import annotations

import random

import pytest

from radsift.errors import ConfigError
from radsift.records import Report
from radsift.text import (
    canonical_section,
    is_known_heading,
    load_section_titles,
    report_sentences,
    split_sections,
    split_sentences,
)


def sentences(text: str) -> list[str]:
    return [text[start:end] for start, end in split_sentences(text)]


# --- canonical_section -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("heading", "expected"),
    [
        ("FINDINGS", "findings"),
        ("Findings:", "findings"),
        ("IMPRESSION:", "impression"),
        ("CONCLUSION", "impression"),
        ("SUMMARY", "impression"),
        ("OPINION", "impression"),
        ("IMPRESSON", "impression"),  # frequent misspelling
        ("INDICATION", "indication"),
        ("REASON FOR EXAM", "indication"),
        ("reason  for   exam:", "indication"),
        ("CLINICAL INFORMATION", "indication"),
        ("HISTORY", "history"),
        ("CLINICAL HISTORY", "history"),
        ("clinical_history", "history"),
        ("COMPARISON", "comparison"),
        ("PRIOR", "comparison"),
        ("TECHNIQUE", "technique"),
        ("EXAM", "exam"),
        ("EXAMINATION", "exam"),
        ("RECOMMENDATIONS", "recommendations"),
    ],
)
def test_canonical_section_known(heading: str, expected: str) -> None:
    assert canonical_section(heading) == expected


def test_canonical_section_unknown_headings_are_kept_as_slugs() -> None:
    assert canonical_section("PHYSICAL EXAMINATION:") == "physical_examination"
    assert canonical_section("ASSESSMENT/PLAN") == "assessment_plan"
    assert canonical_section("physical_examination") == "physical_examination"  # idempotent
    assert canonical_section("  ") == "text"
    assert not is_known_heading("PHYSICAL EXAMINATION")
    assert is_known_heading("impression")


def test_section_table_loads_and_every_canonical_name_maps_to_itself() -> None:
    table = load_section_titles()
    names = set(table.values())
    assert {"findings", "impression", "indication", "history", "comparison", "technique", "exam"} <= names
    for name in names:
        assert canonical_section(name) == name


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("findings: [FINDINGS]\nfindings: [FINDING]\n", "duplicate key"),
        ("findings: [FINDINGS]\nimpression: [Findings]\n", "already listed"),
        ("Findings: [X]\n", "canonical name"),
        ("findings: FINDINGS\n", "non-empty list"),
        ("findings: [3]\n", "non-empty string"),
        ("- a\n- b\n", "expected a mapping"),
        ("findings: [FINDINGS\n", "invalid YAML"),
    ],
)
def test_section_table_loader_is_strict(tmp_path, content: str, message: str) -> None:
    path = tmp_path / "titles.yaml"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(ConfigError, match=message) as info:
        load_section_titles(path)
    assert str(path) in str(info.value)


# --- split_sections ----------------------------------------------------------------------


def test_split_sections_plain_headings() -> None:
    text = (
        "EXAM: Chest radiograph, two views.\n"
        "CLINICAL HISTORY: Cough.\n"
        "FINDINGS: The lungs are clear. No effusion.\n"
        "IMPRESSION: No acute disease."
    )
    assert split_sections(text) == [
        ("exam", "Chest radiograph, two views."),
        ("history", "Cough."),
        ("findings", "The lungs are clear. No effusion."),
        ("impression", "No acute disease."),
    ]


def test_split_sections_mtsamples_comma_form() -> None:
    text = (
        "EXAM: ,CT chest.,REASON FOR EXAM: , Dyspnea.,FINDINGS:  ,Small nodule measures 4.5 mm.  "
        "No effusion.,The heart is normal.,IMPRESSION:,1.  Small nodule.,2.  No effusion."
    )
    assert split_sections(text) == [
        ("exam", "CT chest."),
        ("indication", "Dyspnea."),
        ("findings", "Small nodule measures 4.5 mm.  No effusion.\nThe heart is normal."),
        ("impression", "1.  Small nodule.\n2.  No effusion."),
    ]


def test_split_sections_preamble_unknown_and_repeated_headings() -> None:
    text = "Portable chest. FINDINGS: Lungs clear. PHYSICAL EXAM: Calm.\nFINDINGS: Heart normal."
    assert split_sections(text) == [
        ("text", "Portable chest."),
        ("findings", "Lungs clear. Heart normal."),
        ("physical_exam", "Calm."),
    ]


def test_split_sections_heading_after_sentence_end_without_space() -> None:
    assert split_sections("FINDINGS: Clear lungs.IMPRESSION: Normal.") == [
        ("findings", "Clear lungs."),
        ("impression", "Normal."),
    ]


def test_split_sections_does_not_take_false_headings() -> None:
    text = (
        "FINDINGS: Disc bulge at L5-S1: mild. Seen as per the NOTE: above. "
        "Dr. XXXX: called at 10:30. Heart: normal size."
    )
    # L5-S1 has digits, NOTE is mid-sentence, XXXX is a placeholder, 10:30 is a time and
    # "Heart:" is a mixed-case word the section table does not know.
    assert split_sections(text) == [("findings", text[len("FINDINGS: ") :])]


def test_split_sections_mixed_case_known_heading_at_line_start() -> None:
    text = "Findings: Lungs clear.\nImpression: Normal chest."
    assert split_sections(text) == [("findings", "Lungs clear."), ("impression", "Normal chest.")]


def test_split_sections_limits_headings_to_five_words() -> None:
    text = "PA AND LATERAL VIEWS OF THE CHEST: Normal."
    assert split_sections(text) == [("text", text)]


def test_split_sections_no_heading_and_empty() -> None:
    assert split_sections("Lungs are clear.") == [("text", "Lungs are clear.")]
    assert split_sections("") == []
    assert split_sections("FINDINGS: ,IMPRESSION: ,") == []


# --- split_sentences ---------------------------------------------------------------------


def test_sentences_decimals_and_measurements() -> None:
    text = "Nodule measures 2.5 cm. Mass is 1.2 x 3.4 cm in size. Stable."
    assert sentences(text) == ["Nodule measures 2.5 cm.", "Mass is 1.2 x 3.4 cm in size.", "Stable."]


def test_sentences_abbreviations() -> None:
    text = "Dr. Smith was called. Atelectasis vs. scar, e.g. in the base, i.e. stable. Approx. 3 cm. Done."
    assert sentences(text) == [
        "Dr. Smith was called.",
        "Atelectasis vs. scar, e.g. in the base, i.e. stable.",
        "Approx. 3 cm.",
        "Done.",
    ]


def test_sentences_no_as_number_and_as_word() -> None:
    text = "Tube No. 5 in place. No pneumothorax. No. Effusion is small."
    assert sentences(text) == ["Tube No. 5 in place.", "No pneumothorax.", "No.", "Effusion is small."]


def test_sentences_deidentification_tokens() -> None:
    text = "Normal chest x-XXXX. Inferior XXXX XXXX. XXXX is stable. Seen by Dr. XXXX XXXX today."
    assert sentences(text) == ["Normal chest x-XXXX.", "Inferior XXXX XXXX.", "XXXX is stable.", "Seen by Dr. XXXX XXXX today."]


def test_sentences_numbered_lists_keep_their_numbers() -> None:
    text = "1. Bullous emphysema. 2. No pneumothorax. 3. Heart size 1.5 times normal."
    assert sentences(text) == ["1. Bullous emphysema.", "2. No pneumothorax.", "3. Heart size 1.5 times normal."]
    # items without a final period still split when the next number continues the list
    assert sentences("1. Cardiomegaly 2. Small effusion") == ["1. Cardiomegaly", "2. Small effusion"]
    assert sentences("Chest 1. No acute disease. 2. Old fracture.") == ["Chest 1. No acute disease.", "2. Old fracture."]
    # a number ending a sentence is not a list marker
    assert sentences("Seen on image 2. The heart is normal.") == ["Seen on image 2.", "The heart is normal."]


def test_sentences_missing_space_after_period() -> None:
    text = "Opacity in the lung apex.There are streaky opacities.1.Severe arthritis. See U.S.A. guidance."
    assert sentences(text) == [
        "Opacity in the lung apex.",
        "There are streaky opacities.",
        "1.Severe arthritis.",
        "See U.S.A. guidance.",
    ]


def test_sentences_newlines_and_bullets() -> None:
    text = "Findings\n- clear lungs\n- no effusion\nThere is a small\nright effusion.\n\nNew paragraph here"
    assert sentences(text) == [
        "Findings",
        "- clear lungs",
        "- no effusion",
        "There is a small\nright effusion.",
        "New paragraph here",
    ]


def test_sentences_question_exclamation_ellipsis_and_stray_punctuation() -> None:
    text = "  Pneumonia? Possibly!  Stable... Unchanged. .  "
    assert sentences(text) == ["Pneumonia?", "Possibly!", "Stable...", "Unchanged."]
    # a clinician's mark before the words it asks ends nothing ("fever, ? pneumonia"); after a word it does
    assert sentences("Cough and fever, ? pneumonia. Heart normal.") == ["Cough and fever, ? pneumonia.", "Heart normal."]
    assert sentences("PMH: PUD, ? stroke.") == ["PMH: PUD, ? stroke."]
    assert sentences("Effusion ? Resolved.") == ["Effusion ?", "Resolved."]
    assert split_sentences("") == []
    assert split_sentences(" . , ") == []


_PIECES = [
    "No", "pneumothorax", "2.5", "cm", "Dr.", "XXXX", "x-XXXX.", "1.", "2.", "e.g.", "vs.",
    "lungs.", "Heart", "apex.There", "?", "!", "\n", "\n\n", "- ", ",", "  ", "(", ")", "\"", "etc.",
    "IMPRESSION:", "No.", "3", "a.m.", "U.S.", "\t", "...",
]  # fmt: skip


def test_sentence_offsets_are_exact_on_random_text() -> None:
    rng = random.Random(20240611)
    for _ in range(2000):
        text = " ".join(rng.choice(_PIECES) for _ in range(rng.randint(0, 30)))
        if rng.random() < 0.5:
            text = text.replace(" ", "", rng.randint(0, 5))
        spans = split_sentences(text)
        previous_end = 0
        for start, end in spans:
            assert previous_end <= start < end <= len(text)
            piece = text[start:end]
            assert piece == piece.strip() and any(c.isalnum() for c in piece)
            previous_end = end
        # nothing with letters or digits is lost between or around the spans
        covered = set()
        for start, end in spans:
            covered.update(range(start, end))
        assert all(c.isalnum() is False for i, c in enumerate(text) if i not in covered)


# --- report_sentences --------------------------------------------------------------------


def test_report_sentences_offsets_point_into_sections() -> None:
    report = Report(
        "r1",
        {"findings": "  Lungs clear.  Heart 1.2 cm. ", "impression": "1. Normal. 2. No change.", "text": ""},
    )
    units = report_sentences(report)
    assert [(s.section, s.index, s.text) for s in units] == [
        ("findings", 0, "Lungs clear."),
        ("findings", 1, "Heart 1.2 cm."),
        ("impression", 0, "1. Normal."),
        ("impression", 1, "2. No change."),
    ]
    for s in units:
        assert s.report_id == "r1"
        assert report.sections[s.section][s.start : s.end] == s.text
    assert [s.section for s in report_sentences(report, ["impression", "missing"])] == ["impression", "impression"]
    assert units[2].uid == "r1::impression::0"


def _split_sections_as_before(text: str) -> list[tuple[str, str]]:
    """split_sections as it was written before its headings' verdicts and names were remembered together:
    every match of the heading pattern (finditer), judged and named one by one."""
    from radsift.text import sections

    def is_heading(m):
        head = m.group("head")
        if len(head) < 2 or sections._XXXX_RE.search(head):
            return False
        return head.upper() == head or (m.group("pre") != "," and is_known_heading(head))

    padded = "\n" + text
    heads = [m for m in sections._HEADING_RE.finditer(padded) if is_heading(m)]
    if not heads:
        body = text.strip(sections._EDGE_CHARS)
        return [("text", body)] if body else []
    comma_form = any(m.group("pre") == "," or padded[m.end() : m.end() + 3].lstrip(" \t").startswith(",") for m in heads)
    parts, cursor, name = [], 1, "text"
    for m in heads:
        parts.append((name, padded[cursor : m.end("pre")]))
        name, cursor = canonical_section(m.group("head")), m.end()
    parts.append((name, padded[cursor:]))
    merged: dict[str, list[str]] = {}
    for part_name, body in parts:
        body = body.strip(sections._EDGE_CHARS)
        if comma_form:
            body = sections._unwrap_commas(body).strip(sections._EDGE_CHARS)
        if body:
            merged.setdefault(part_name, []).append(body)
    return [(part_name, " ".join(bodies)) for part_name, bodies in merged.items()]


def test_split_sections_gives_what_it_gave_on_reports_and_random_text() -> None:
    from radsift.demo import generate_reports
    from radsift.demo.feeds import report_text

    texts = [report_text(d.report) for d in generate_reports(n=200, seed=7)]
    texts += ["FINDINGS: a.\nIMPRESSION: b.\nFINDINGS: c.", "EXAM: ,CT chest.,FINDINGS: ,There is x.,IMPRESSION: ,1. y",
              "Impression: known. , Heart: normal.", "XXXX: placeholder. L5-S1: disc.", "", " , ", "no heading at all"]
    rng = random.Random(1)
    alphabet = list("abAB XYZ:,.;!?\n\t'\"&/-)]1\r") + ["FINDINGS", "Impression", "IMPRESSION", ": ", "10:30", "XXXX",
                                                     "Heart", ", ", ".,", "\r\n", "COMPARISON"]
    texts += ["".join(rng.choice(alphabet) for _ in range(rng.randrange(40))) for _ in range(20000)]
    found = 0
    for text in texts:
        expected = _split_sections_as_before(text)
        assert split_sections(text) == expected, text
        found += len(expected) > 1
    assert found > 1000  # texts with headings, not only preambles
