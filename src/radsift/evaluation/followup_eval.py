"""How well :mod:`radsift.labels.followups` finds follow-up recommendations, on a set written for radsift.

The set (``evaluation/data/followups.tsv``) holds sentences with their truth: does the sentence recommend
an imaging follow-up, which modality, which interval. Its ``dev`` half is the one the rules were tuned on;
the ``test`` half is not (issue 34's targets are read on it: precision >= 0.95, recall >= 0.90, due dates
exact). Due dates are exact when the interval is: :func:`radsift.labels.followups.due_date` adds it in
calendar units, checked on its own by the tests.
"""

from __future__ import annotations

from dataclasses import dataclass
from importlib import resources

from radsift.errors import ConfigError
from radsift.labels.followups import FollowUp, due_date, find_followup

SPLITS = ("dev", "test", "all")
#: The exam date due dates are computed from in the evaluation (any date would do; a month end is the hard case).
EXAM_DATE = "2025-01-31"


@dataclass(frozen=True)
class FollowUpCase:
    """One sentence of the set and its truth."""

    split: str
    recommends: bool
    modality: str | None
    interval: str | None  # "3 month"
    sentence: str


def load_cases(split: str = "all") -> list[FollowUpCase]:
    """The set's sentences of ``split`` (``dev``, ``test`` or ``all``)."""
    if split not in SPLITS:
        raise ConfigError(f"split {split!r}: expected one of {', '.join(SPLITS)}")
    text = resources.files("radsift.evaluation").joinpath("data/followups.tsv").read_text(encoding="utf-8")
    out = []
    for line in text.splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        part, rec, modality, interval, sentence = line.split("\t")
        if split in ("all", part):
            out.append(FollowUpCase(part, rec == "1", None if modality == "-" else modality,
                                    None if interval == "-" else interval, sentence))
    return out


def _due(interval: str | None) -> str | None:
    if interval is None:
        return None
    amount, unit = interval.split()
    return due_date(EXAM_DATE, FollowUp(None, int(amount), unit))


def evaluate_followups(split: str = "test") -> dict:
    """Precision and recall of finding a recommendation; of those found and true, the share with the right
    modality and the share with the exact due date; and every error, for reading."""
    cases = load_cases(split)
    tp = fp = fn = modality_ok = due_ok = 0
    errors = []
    for case in cases:
        found = find_followup(case.sentence)
        if found and case.recommends:
            tp += 1
            modality_ok += found.modality == case.modality
            due_ok += _due(found.interval) == _due(case.interval)
            if found.modality != case.modality or found.interval != case.interval:
                errors.append({"sentence": case.sentence, "kind": "details", "found": [found.modality, found.interval],
                               "truth": [case.modality, case.interval]})
        elif found:
            fp += 1
            errors.append({"sentence": case.sentence, "kind": "false positive"})
        elif case.recommends:
            fn += 1
            errors.append({"sentence": case.sentence, "kind": "missed"})
    return {"split": split, "sentences": len(cases), "recommendations": tp + fn, "tp": tp, "fp": fp, "fn": fn,
            "precision": round(tp / (tp + fp), 4) if tp + fp else 0.0,
            "recall": round(tp / (tp + fn), 4) if tp + fn else 0.0,
            "modality_exact": round(modality_ok / tp, 4) if tp else 0.0,
            "due_date_exact": round(due_ok / tp, 4) if tp else 0.0, "errors": errors}
