"""The lexicon and rules loaders: the packaged files, and strict errors that name file and line."""

from __future__ import annotations

import textwrap

import pytest

from radsift.errors import LexiconError
from radsift.labels.lexicon import load_lexicon, slugify
from radsift.labels.rules import NEGATED, NEGATION_END, POSSIBLE, load_rules


def write(tmp_path, name: str, text: str):
    path = tmp_path / name
    path.write_text(textwrap.dedent(text).lstrip(), encoding="utf-8")
    return path


def test_packaged_lexicon_is_large_and_rich() -> None:
    lexicon = load_lexicon()
    assert len(lexicon) >= 80
    mean_synonyms = sum(len(c.synonyms) - 1 for c in lexicon) / len(lexicon)
    assert mean_synonyms >= 3
    for name in ("pneumothorax", "pleural effusion", "cardiomegaly", "calcified granuloma", "endotracheal tube",
                 "sternotomy wires", "hiatal hernia", "aortic tortuosity", "atherosclerotic calcification"):
        assert name in lexicon
    assert "PTX" in lexicon["pneumothorax"].synonyms
    assert lexicon["cardiomegaly"].normal_subjects  # "heart size is normal"
    assert {c.category for c in lexicon} <= set(lexicon.categories)
    assert len({c.slug for c in lexicon}) == len(lexicon)
    assert lexicon.by_slug("pleural_effusion").name == "pleural effusion"


def test_user_lexicon_loads(tmp_path) -> None:
    path = write(tmp_path, "mri.yaml", """
        name: brain MRI
        concepts:
          - name: acute infarct
            category: finding
            synonyms: [acute stroke, restricted diffusion]
          - name: mass effect
            category: finding
            synonyms: midline shift
            description: a single string is a one-item list
    """)
    lexicon = load_lexicon(path)
    assert lexicon.names == ["acute infarct", "mass effect"]
    assert lexicon["mass effect"].synonyms == ("mass effect", "midline shift")
    assert lexicon.source == str(path)


def test_unknown_key_names_file_and_line(tmp_path) -> None:
    path = write(tmp_path, "bad.yaml", """
        concepts:
          - name: pneumothorax
            category: finding
            synonym: [PTX]
    """)
    with pytest.raises(LexiconError, match=r"bad\.yaml:4: unknown key 'synonym'"):
        load_lexicon(path)


def test_unknown_top_level_key(tmp_path) -> None:
    path = write(tmp_path, "bad.yaml", """
        concept:
          - name: pneumothorax
    """)
    with pytest.raises(LexiconError, match=r"bad\.yaml:1: unknown key 'concept'"):
        load_lexicon(path)


def test_duplicate_name_names_both_lines(tmp_path) -> None:
    path = write(tmp_path, "dup.yaml", """
        concepts:
          - name: pneumothorax
            category: finding
          - name: effusion
            category: finding
          - name: Pneumothorax
            category: finding
    """)
    with pytest.raises(LexiconError, match=r"dup\.yaml:6: duplicate concept name 'Pneumothorax' \(first at line 2\)"):
        load_lexicon(path)


def test_duplicate_synonym_after_plural_folding(tmp_path) -> None:
    path = write(tmp_path, "dup.yaml", """
        concepts:
          - name: pleural effusion
            category: finding
            synonyms: [effusion]
          - name: fluid
            category: finding
            synonyms: [Effusions]
    """)
    with pytest.raises(LexiconError, match=r"dup\.yaml:7: duplicate phrase 'Effusions'"):
        load_lexicon(path)


def test_duplicate_yaml_key_and_bad_yaml(tmp_path) -> None:
    path = write(tmp_path, "dupkey.yaml", """
        concepts:
          - name: a
            name: b
            category: finding
    """)
    with pytest.raises(LexiconError, match=r"dupkey\.yaml:3: duplicate key 'name'"):
        load_lexicon(path)
    broken = write(tmp_path, "broken.yaml", "concepts: [\n  - name: a\n")
    with pytest.raises(LexiconError, match=r"broken\.yaml:\d+: invalid YAML"):
        load_lexicon(broken)


def test_category_must_be_declared_and_phrases_strings(tmp_path) -> None:
    path = write(tmp_path, "cat.yaml", """
        categories: [finding]
        concepts:
          - name: pacemaker
            category: device
    """)
    with pytest.raises(LexiconError, match=r"cat\.yaml:4: category 'device'"):
        load_lexicon(path)
    path = write(tmp_path, "bool.yaml", """
        concepts:
          - name: x
            category: finding
            synonyms: [yes]
    """)
    with pytest.raises(LexiconError, match=r"bool\.yaml:4: .*quote YAML words"):
        load_lexicon(path)


def test_gap_must_be_inside_a_phrase(tmp_path) -> None:
    path = write(tmp_path, "gap.yaml", """
        concepts:
          - name: cardiomegaly
            category: finding
            synonyms: ["* enlarged"]
    """)
    with pytest.raises(LexiconError, match=r"gap\.yaml:4: phrase '\* enlarged' must start and end with a word"):
        load_lexicon(path)


def test_missing_file_is_a_lexicon_error(tmp_path) -> None:
    with pytest.raises(LexiconError, match="cannot read lexicon"):
        load_lexicon(tmp_path / "absent.yaml")


def test_slugify() -> None:
    assert slugify("Pleural Effusion") == "pleural_effusion"
    assert slugify("air-fluid level") == "air_fluid_level"


def test_packaged_rules() -> None:
    rules = load_rules()
    literals = {c.literal: c for c in rules.cues}
    assert literals["no evidence of"].category == NEGATED
    assert literals["cannot be excluded"].category == POSSIBLE
    assert literals["cannot be excluded"].direction == "BACKWARD"
    assert literals["no change in"].direction == "PSEUDO"
    assert literals["but"].direction == "TERMINATE"
    assert "within normal limits" in rules.normal_forms.after


def test_rules_errors_name_file_and_line(tmp_path) -> None:
    path = write(tmp_path, "rules.yaml", """
        rules:
          - category: NEGATED_EXISTENCE
            direction: FORWARD
            cues: ["no", without]
          - category: NEGATION
            direction: FORWARD
            cues: [absent]
    """)
    with pytest.raises(LexiconError, match=r"rules\.yaml:5: unknown category 'NEGATION'"):
        load_rules(path)
    path = write(tmp_path, "rules2.yaml", """
        rules:
          - category: NEGATED_EXISTENCE
            direction: FORWARD
            cues: ["no", without,
                   "No"]
    """)
    with pytest.raises(LexiconError, match=r"rules2\.yaml:5: cue 'No' is listed twice \(first at line 4\)"):
        load_rules(path)
    path = write(tmp_path, "rules3.yaml", """
        rules:
          - category: NEGATED_EXISTENCE
            direction: SIDEWAYS
            cues: [without]
    """)
    with pytest.raises(LexiconError, match=r"rules3\.yaml:3: unknown direction 'SIDEWAYS'"):
        load_rules(path)


def test_negation_end_rules(tmp_path) -> None:
    """NEGATION_END is written with direction TERMINATE; other categories may not use it."""
    rules = load_rules()
    ends = [c for c in rules.cues if c.category == NEGATION_END]
    assert {"represents", "with"} <= {c.literal for c in ends}
    assert all(c.direction == "TERMINATE" for c in ends)
    path = write(tmp_path, "rules.yaml", """
        rules:
          - category: NEGATION_END
            direction: FORWARD
            cues: [represents]
        """)
    with pytest.raises(LexiconError, match=r"rules\.yaml:3: category NEGATION_END needs direction TERMINATE"):
        load_rules(path)
    path = write(tmp_path, "rules2.yaml", """
        rules:
          - category: NEGATED_EXISTENCE
            direction: TERMINATE
            cues: [no]
        """)
    with pytest.raises(LexiconError, match=r"rules2\.yaml:3: category NEGATED_EXISTENCE needs direction FORWARD"):
        load_rules(path)


def test_descriptions_load_and_are_no_phrases(tmp_path) -> None:
    path = write(tmp_path, "lex.yaml", """
        concepts:
          - name: pneumothorax
            category: finding
            synonyms: [PTX]
            descriptions: [air outside the lung, "a lung that has fallen in"]
          - name: pleural effusion
            category: finding
            descriptions: fluid around the lung
        """)
    lexicon = load_lexicon(path)
    assert lexicon["pneumothorax"].descriptions == ("air outside the lung", "a lung that has fallen in")
    assert lexicon["pleural effusion"].descriptions == ("fluid around the lung",)
    assert "air outside the lung" not in lexicon["pneumothorax"].synonyms  # never spotted in reports


@pytest.mark.parametrize(("second", "message"), [
    ("descriptions: [Ptx!]", r"lex.yaml:6: description 'Ptx!' of 'pleural effusion' is a phrase of 'pneumothorax' \(line 4\)"),
    ("descriptions: [Air outside the lung]", r"lex.yaml:6: description 'Air outside the lung' of 'pleural effusion' is also a "
                                             r"description of 'pneumothorax' \(line 5\)"),
])
def test_a_description_that_words_another_concept_is_an_error_naming_both(tmp_path, second, message) -> None:
    path = write(tmp_path, "lex.yaml", f"""
        concepts:
          - name: pneumothorax
            category: finding
            synonyms: [PTX]
            descriptions: [air outside the lung]
          - {{name: pleural effusion, category: finding, {second}}}
        """)
    with pytest.raises(LexiconError, match=message):
        load_lexicon(path)


def test_any_of_names_other_concepts_and_an_unknown_one_names_its_line(tmp_path) -> None:
    path = write(tmp_path, "any.yaml", """
        concepts:
          - name: pneumonia
            category: disease
            any_of: [consolidation]
          - name: consolidation
            category: finding
    """)
    assert load_lexicon(path)["pneumonia"].any_of == ("consolidation",)
    assert load_lexicon(None)["pneumonia"].any_of == ("consolidation", "infiltrate", "airspace disease")
    path = write(tmp_path, "bad_any.yaml", """
        concepts:
          - name: pneumonia
            category: disease
            any_of: [consolidaton]
    """)
    with pytest.raises(LexiconError, match=r"bad_any\.yaml:4: any_of 'consolidaton' of 'pneumonia' is not another"):
        load_lexicon(path)
