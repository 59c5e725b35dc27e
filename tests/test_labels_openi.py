"""Weak labels on the real Open-i reports (skipped when ../shared/data is absent)."""

from __future__ import annotations

from pathlib import Path

import pytest

SHARED = Path(__file__).resolve().parents[1].parent / "shared" / "data"
OPENI = SHARED / "openi" / "reports.csv"


@pytest.fixture(scope="module")
def openi_reports():
    if not OPENI.exists():
        pytest.skip("../shared/data absent: Open-i reports not available")
    from radsift.corpus import ReaderOptions, read_corpus

    options = ReaderOptions.from_cli(
        format="csv", id_column="uid", sections=["findings=findings", "impression=impression"],
        text_column=None, on_error="fail",
    )
    return list(read_corpus([OPENI], options))


@pytest.mark.shared
@pytest.mark.slow
def test_openi_weak_labels(openi_reports) -> None:
    from radsift.labels import build_weak_labels, split_findings

    weak = build_weak_labels(openi_reports, progress=False)
    stats = weak.stats()
    assert stats["reports"] == len(openi_reports) > 3000
    assert stats["unique_sentences"] < stats["sentences"]  # radiology repeats itself
    assert stats["labeled_entries"] > 5000
    assert stats["positive_queries"] > 40 and stats["negative_queries"] > 20
    per = stats["per_finding"]
    # Normal reports dominate: negated pneumothorax and effusion far outnumber present ones.
    assert per["pneumothorax"]["no"] > 5 * per["pneumothorax"]["yes"]
    assert per["pleural effusion"]["reports_no"] > per["pleural effusion"]["reports_yes"]
    assert per["cardiomegaly"]["yes"] > 50 and per["cardiomegaly"]["no"] > 50
    folds = split_findings(weak)
    counts = weak.entry_counts()
    a, b = (sum(counts[f] for f in fold) for fold in folds)
    assert abs(a - b) <= max(counts.values())
