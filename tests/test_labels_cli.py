"""``radsift label``: --explain on one sentence, and a tiny CSV corpus to exports."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from radsift.cli import app

runner = CliRunner()


def test_explain_prints_mentions_spans_status_and_cue() -> None:
    result = runner.invoke(app, ["label", "--explain", "No effusion, but a small right pneumothorax."])
    assert result.exit_code == 0, result.output
    out = result.output
    for expected in ("pleural effusion", "3-11", "absent", "NEGATED_EXISTENCE:no", "pneumothorax", "31-43", "present"):
        assert expected in out


def test_label_needs_corpus_or_explain() -> None:
    result = runner.invoke(app, ["label"])
    assert result.exit_code == 2
    assert "--explain" in result.output


def test_label_corpus_needs_out(tmp_path) -> None:
    corpus = tmp_path / "r.csv"
    corpus.write_text("id,findings\n1,No pneumothorax.\n", encoding="utf-8")
    result = runner.invoke(app, ["label", str(corpus), "--id-column", "id", "--section", "findings=findings"])
    assert result.exit_code == 2 and "--out" in result.output


def test_label_tiny_csv(tmp_path) -> None:
    corpus = tmp_path / "reports.csv"
    corpus.write_text(
        "id,findings,impression\n"
        "a1,No pneumothorax or pleural effusion. Heart size is normal.,No acute cardiopulmonary abnormality.\n"
        "a2,Small left pleural effusion.,Possible pneumonia.\n",
        encoding="utf-8",
    )
    out = tmp_path / "labels"
    result = runner.invoke(
        app,
        ["label", str(corpus), "--out", str(out), "--id-column", "id",
         "--section", "findings=findings", "--section", "impression=impression"],
    )
    assert result.exit_code == 0, result.output
    assert "labeled entries" in result.output and "positive queries" in result.output
    stats = json.loads((out / "stats.json").read_text())
    assert stats["reports"] == 2 and stats["unique_sentences"] == 5
    assert (out / "qrels.report.trec").read_text().splitlines().count("yes:pleural_effusion 0 a2 1") == 1
    queries = (out / "queries.tsv").read_text()
    assert "no:cardiomegaly\tno cardiomegaly" in queries


def test_bad_lexicon_is_one_line_error(tmp_path) -> None:
    lexicon = tmp_path / "lex.yaml"
    lexicon.write_text("concepts:\n  - name: x\n    category: finding\n    colour: red\n", encoding="utf-8")
    result = runner.invoke(app, ["label", "--explain", "x", "--lexicon", str(lexicon)])
    assert result.exit_code == 2
    assert "lex.yaml:4: unknown key 'colour'" in " ".join(result.output.split())
