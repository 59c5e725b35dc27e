"""Link examples (issue 35, item 1): queries written for a concept link a user's query worded like them.

The lexicon's ``examples`` file holds queries written for each concept by people shown only its name. The packaged
one is the development half of the description batches (``benchmarks/link_examples.py``), never a test row. An
example speaks for its concept and never against another, needs a higher cosine than the concepts' own words
(:data:`radsift.search.concepts.EXAMPLE_THRESHOLD`), and never takes away a link the own words make. The hashing
encoder (bag of hashed words) makes the cosines predictable; each test states the ones it rests on.
"""

from __future__ import annotations

import csv
import tempfile
import textwrap
from pathlib import Path

import pytest
from test_description_queries import read_rows

from radsift.errors import LexiconError
from radsift.labels.lexicon import load_lexicon
from radsift.models.hashing import HashingEncoder
from radsift.search import concepts
from radsift.search.concepts import ConceptLinker

ROOT = Path(__file__).resolve().parents[1]
LEXICON = """
examples: ex.tsv
concepts:
  - name: pneumothorax
    category: finding
    descriptions: [air leaking around a collapsed lung, sharp white line at the top of the lung]
  - name: atelectasis
    category: finding
    descriptions: [a small bit of lung not opening up fully]
  - name: lung resection
    category: procedure
  - name: hyperinflation
    category: finding
"""
EXAMPLES = """\
# written for these tests
concept\texample\tsource
pneumothorax\tneedle biopsy this morning, ? lung peeled away from the ribs\tt1
lung resection\ta small bit of lung opening up after the operation\tt2
atelectasis\tneedle biopsy this morning, lung shut down\tt3
hyperinflation\tlungs look normal but bigger\tt4
"""
ENC = HashingEncoder(Path(tempfile.mkdtemp()) / "model")


def _cos(a: str, b: str) -> float:
    return float(ENC.encode_query(a) @ ENC.encode_query(b))


def _linker(tmp_path: Path, lexicon: str = LEXICON, examples: str = EXAMPLES) -> ConceptLinker:
    (tmp_path / "lex.yaml").write_text(textwrap.dedent(lexicon), encoding="utf-8")
    (tmp_path / "ex.tsv").write_text(examples, encoding="utf-8")
    return ConceptLinker.for_lexicon(load_lexicon(tmp_path / "lex.yaml"), ENC)


def _link(linker: ConceptLinker, text: str, threshold: float = 0.5, **kw):
    found = linker.link(ENC.encode_query(text), threshold, text, **kw)
    return found.concept if found is not None else None


def test_a_query_worded_like_an_example_links_to_its_concept(tmp_path):
    text = "lung peeled away from the ribs after a needle biopsy"
    assert _cos(text, "needle biopsy this morning, ? lung peeled away from the ribs") > 0.75
    assert _link(_linker(tmp_path), text) == "pneumothorax"
    assert load_lexicon(tmp_path / "lex.yaml")["pneumothorax"].examples[0].startswith("needle biopsy")
    # without the examples the concept's own words are too far from the query
    bare = _linker(tmp_path, LEXICON.replace("examples: ex.tsv\n", ""))
    assert _link(bare, text) is None


def test_an_example_is_never_a_rival(tmp_path):
    text = "small bit of lung not opening up fully after an operation"
    own, example = _cos(text, "a small bit of lung not opening up fully"), _cos(text, "a small bit of lung opening up "
                                                                                "after the operation")
    assert own > example > own - concepts.LINK_MARGIN  # within the margin: a rival would leave no clear winner
    assert _link(_linker(tmp_path), text) == "atelectasis"


def test_another_concepts_example_is_no_rival(tmp_path):
    text = "needle biopsy this morning, lung peeled away"
    first = _cos(text, "needle biopsy this morning, ? lung peeled away from the ribs")
    second = _cos(text, "needle biopsy this morning, lung shut down")  # atelectasis's example
    assert first > concepts.EXAMPLE_THRESHOLD and 0 < first - second < 0.15
    assert _cos(text, "a small bit of lung not opening up fully") < first - 0.15  # atelectasis's own words
    assert _link(_linker(tmp_path), text, margin=0.15) == "pneumothorax"


def test_an_example_never_takes_away_a_link_of_the_own_words(tmp_path):
    text = "a small bit of lung not opening up after an operation"
    own, example = _cos(text, "a small bit of lung not opening up fully"), _cos(text, "a small bit of lung opening up "
                                                                                "after the operation")
    assert example > own > example - 0.1 and example > concepts.EXAMPLE_THRESHOLD
    # within a margin of 0.1 the example's concept has no clear lead: the own words decide
    assert _link(_linker(tmp_path), text, margin=0.1) == "atelectasis"


def test_a_link_by_an_example_needs_the_higher_threshold(tmp_path, monkeypatch):
    text = "lung bit opening up after operation today"
    example = _cos(text, "a small bit of lung opening up after the operation")
    assert 0.6 < example < concepts.EXAMPLE_THRESHOLD
    assert _cos(text, "a small bit of lung not opening up fully") < 0.6  # the own words reach no link
    assert _link(_linker(tmp_path), text, threshold=0.6) is None
    monkeypatch.setattr(concepts, "EXAMPLE_THRESHOLD", 0.6)
    assert _link(_linker(tmp_path), text, threshold=0.6) == "lung resection"


def test_a_normal_statement_links_by_the_concepts_own_words(tmp_path):
    # "lungs look normal" links to the concept naming the lungs abnormal, as the lexicon names it, or to none: an
    # example is a query for a finding present, and this one shares every word of the statement
    assert _cos("lungs look normal", "lungs look normal but bigger") > concepts.EXAMPLE_THRESHOLD
    assert _link(_linker(tmp_path), "lungs look normal") is None
    assert _link(_linker(tmp_path), "lungs look bigger") == "hyperinflation"  # no normal statement: the example speaks


def test_a_phrase_at_the_top_links_no_text_at_the_bottom(tmp_path):
    linker = _linker(tmp_path)
    assert _cos("thin white line at the bottom of the lung", "sharp white line at the top of the lung") > 0.8
    assert _link(linker, "thin white line at the bottom of the lung") is None
    assert _link(linker, "thin white line at the top of the lung") == "pneumothorax"
    assert _link(linker, "white line from the top to the bottom of the lung") == "pneumothorax"  # both ends: neither


@pytest.mark.parametrize(("examples", "message"), [
    ("concept\texample\nnodule\ta spot\n", r"ex\.tsv:2: example of 'nodule', which is no concept"),
    ("concept\texample\npneumothorax\t  \n", r"ex\.tsv:2: empty example of 'pneumothorax'"),
    ("# c\nconcept\texample\natelectasis\tair leaking around a collapsed lung\n",
     r"ex\.tsv:3: example 'air leaking around a collapsed lung' of 'atelectasis' words a phrase, description or "
     r"example of 'pneumothorax'"),
    ("concept\texample\npneumothorax\tpopped lung\natelectasis\tPopped lung.\n",
     r"ex\.tsv:3: example 'Popped lung.' of 'atelectasis' words a phrase, description or example of 'pneumothorax'"),
    ("finding\tquery\npneumothorax\tpopped lung\n", r"ex\.tsv:1: the header must start with concept<TAB>example"),
])
def test_a_bad_example_names_the_file_and_line(tmp_path, examples, message):
    with pytest.raises(LexiconError, match=message):
        _linker(tmp_path, examples=examples)


def test_a_missing_examples_file_names_it(tmp_path):
    (tmp_path / "lex.yaml").write_text(textwrap.dedent(LEXICON), encoding="utf-8")
    with pytest.raises(LexiconError, match=r"ex\.tsv: cannot read link examples"):
        load_lexicon(tmp_path / "lex.yaml")


def _batch_rows() -> dict[str, dict[str, str]]:
    paths = sorted((ROOT / "benchmarks" / "data").glob("description_queries*.tsv"))
    return {r["qid"]: r for path in paths for r in read_rows(path)}


def test_the_packaged_examples_are_development_rows_only():
    batch = _batch_rows()
    path = ROOT / "src" / "radsift" / "labels" / "data" / "chest_xray_examples.tsv"
    with path.open(encoding="utf-8", newline="") as fh:
        rows = list(csv.DictReader((ln for ln in fh if not ln.startswith("#")), delimiter="\t",
                                   quoting=csv.QUOTE_NONE))
    assert len(rows) >= 500
    tests = {" ".join(r["query"].split()).casefold() for r in batch.values() if r["split"] == "test"}
    for row in rows:
        assert row["example"].casefold() not in tests, row  # a test row would make the test splits no longer held out
        if ":" in row["source"]:  # written for linking alone: the file and line it came from
            name, line = row["source"].split(":")
            written = (ROOT / "benchmarks" / "data" / f"{name}.tsv").read_text(encoding="utf-8").splitlines()
            assert written[int(line) - 1].split("\t")[:2] == [row["concept"], row["example"]], row
            continue
        source = batch[row["source"]]
        assert source["split"] in ("dev", "dev2"), row
        assert source["finding"] == row["concept"] and " ".join(source["query"].split()) == row["example"], row
    lexicon = load_lexicon()
    assert sum(len(c.examples) for c in lexicon) == len(rows)
    linker = ConceptLinker.for_lexicon(lexicon, ENC)
    assert int(linker.example.sum()) == len(rows)
