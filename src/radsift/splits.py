"""The splits shared by training and evaluation, so that a model is never judged on what it saw.

This module sits below both :mod:`radsift.models.training` and :mod:`radsift.evaluation`. Three
splits are used by ``radsift bench`` and must be used the same way by ``radsift train``:

- :func:`report_split`: a seeded report-level hold-out (RadSearch's findings-to-impression
  matching and the category protocol query the held-out reports). Membership is decided by
  hashing each report id with the seed, one id at a time, so it does not depend on which
  other reports are present: training on "reports with both sections" and benchmarking on
  "all reports" hold out exactly the same ids.
- :func:`fold_findings`: Shi et al.'s 2-fold split by finding (findings in two halves with
  about equal labeled entries, see :func:`radsift.labels.split_findings`); fold ``f``'s test
  findings are ``groups[f]``, its training findings all the others. Unlike the report split,
  it depends on the labels: a labeler or lexicon change can move findings between folds, so
  ``radsift bench`` checks a fold model's recorded held-out findings
  (:func:`radsift.evaluation.card_splits.check_card_splits`) and can take them from the model
  (:func:`radsift.evaluation.card_splits.card_split`, ``--split-from``).
- :func:`split_medquad`: MedQuAD documents outside the CDV test split, a hashed share of them
  held out as the development split (``radsift train --recipe entity-aspect`` tunes on it,
  ``radsift bench --protocol passages --split dev`` measures on it).

Defaults (:data:`DEFAULT_SEED`, :data:`DEFAULT_HOLDOUT_FRACTION`, :data:`DEFAULT_FOLDS`) are
the ones ``radsift bench`` uses when no option is given.
"""

from __future__ import annotations

import hashlib
from typing import Iterable

from radsift.errors import ConfigError
from radsift.labels import WeakLabels, split_findings

DEFAULT_SEED = 0
DEFAULT_HOLDOUT_FRACTION = 0.2
DEFAULT_FOLDS = 2


def _unit(report_id: str, seed: int) -> float:
    """A uniform number in [0, 1) from the id and the seed (stable across runs and machines)."""
    digest = hashlib.sha256(f"radsift-split:{seed}:{report_id}".encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big") / 2.0**64


def is_held_out(report_id: str, fraction: float = DEFAULT_HOLDOUT_FRACTION, seed: int = DEFAULT_SEED) -> bool:
    """True when ``report_id`` belongs to the held-out (test) reports of ``(fraction, seed)``."""
    check_fraction(fraction)
    return _unit(str(report_id), int(seed)) < fraction


def report_split(
    report_ids: Iterable[str], fraction: float = DEFAULT_HOLDOUT_FRACTION, seed: int = DEFAULT_SEED
) -> tuple[list[str], list[str]]:
    """Split report ids into training and held-out (test) ids.

    Each id is held out when ``sha256(seed, id)`` mapped to [0, 1) is below ``fraction``: the
    test share is ``fraction`` in expectation (not exactly), and an id's side never depends on
    the other ids.

    Args:
        report_ids: Report ids (repeats are kept once, first occurrence order).
        fraction: Expected share of held-out reports, in (0, 1).
        seed: Split seed; the same seed gives the same split.

    Returns:
        ``(train_ids, test_ids)``, each in input order.

    Raises:
        ConfigError: ``fraction`` is not in (0, 1).
    """
    check_fraction(fraction)
    train: list[str] = []
    test: list[str] = []
    seen: set[str] = set()
    for rid in report_ids:
        rid = str(rid)
        if rid in seen:
            continue
        seen.add(rid)
        (test if _unit(rid, int(seed)) < fraction else train).append(rid)
    return train, test


def check_fraction(fraction: float) -> None:
    """Raise :class:`ConfigError` unless ``0 < fraction < 1``."""
    if not isinstance(fraction, (int, float)) or not 0.0 < float(fraction) < 1.0:
        raise ConfigError(f"--holdout-fraction must be between 0 and 1 (exclusive), got {fraction!r}")


def fold_findings(
    weak_labels: "WeakLabels", fold: int, folds: int = DEFAULT_FOLDS, seed: int = DEFAULT_SEED
) -> tuple[set[str], set[str]]:
    """Training and test findings of one fold of the split by finding (Shi et al. 2022).

    Args:
        weak_labels: The weak labels of the corpus (the split balances their labeled entries).
        fold: Which fold is the test fold, ``0 <= fold < folds``.
        folds: Number of folds (2 in the paper).
        seed: Tie-breaking seed of :func:`radsift.labels.split_findings`.

    Returns:
        ``(train_findings, test_findings)``: disjoint, together every labeled finding.

    Raises:
        ConfigError: ``fold`` is out of range.
    """
    if folds < 2:
        raise ConfigError(f"a split by finding needs at least 2 folds, got {folds}")
    if not 0 <= fold < folds:
        raise ConfigError(f"--fold must be between 0 and {folds - 1}, got {fold}")
    groups = split_findings(weak_labels, folds=folds, seed=seed)
    test = set(groups[fold])
    train = set().union(*(g for i, g in enumerate(groups) if i != fold))
    return train, test


def heldout_ids(report_ids: Iterable[str], fraction: float = DEFAULT_HOLDOUT_FRACTION,
                seed: int = DEFAULT_SEED) -> set[str]:
    """The ids of the held-out reports among ``report_ids`` (about ``fraction`` of them).

    ``radsift train`` sets them aside; they are exactly the reports ``radsift bench`` tests
    findings-to-impression matching on (same corpus, fraction and seed).

    Raises:
        ConfigError: ``fraction`` is not in (0, 1).
    """
    return set(report_split(report_ids, fraction, seed)[1])


def split_medquad(docs: Iterable, test_ids: frozenset[str], dev_fraction: float, seed: int) -> tuple[list, list]:
    """MedQuAD documents outside the test split, as (training, development): ``dev_fraction`` of them,
    drawn by :func:`heldout_ids` with ``seed``, form the development split.

    ``radsift train --recipe entity-aspect`` trains on the first and tunes on the second;
    ``radsift bench --protocol passages --split dev`` evaluates on the second.
    """
    docs = [d for d in docs if d.id not in test_ids]
    dev_ids = heldout_ids([d.id for d in docs], dev_fraction, seed) if docs and dev_fraction > 0 else set()
    return [d for d in docs if d.id not in dev_ids], [d for d in docs if d.id in dev_ids]
