"""The evaluation splits, shared with training so that a model is never judged on what it saw.

Two splits are used by ``radsift bench`` and must be used the same way by ``radsift train``:

- :func:`report_split`: a seeded report-level hold-out (RadSearch's findings-to-impression
  matching and the category protocol query the held-out reports). Membership is decided by
  hashing each report id with the seed, one id at a time, so it does not depend on which
  other reports are present: training on "reports with both sections" and benchmarking on
  "all reports" hold out exactly the same ids.
- :func:`fold_findings`: Shi et al.'s 2-fold split by finding (findings in two halves with
  about equal labeled entries, see :func:`radsift.labels.split_findings`); fold ``f``'s test
  findings are ``groups[f]``, its training findings all the others. Unlike the report split,
  it depends on the labels: a labeler or lexicon change can move findings between folds, so
  ``radsift bench`` checks a fold model's recorded held-out findings (:func:`check_card_splits`)
  and can take them from the model (:func:`card_split`, ``--split-from``).

Defaults (:data:`DEFAULT_SEED`, :data:`DEFAULT_HOLDOUT_FRACTION`, :data:`DEFAULT_FOLDS`) are
the ones ``radsift bench`` uses when no option is given.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Iterable

from radsift.errors import ConfigError

if TYPE_CHECKING:  # radsift.labels pulls in nothing heavy at import, but keep this module light
    from radsift.labels import WeakLabels

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
    from radsift.labels import split_findings

    if folds < 2:
        raise ConfigError(f"a split by finding needs at least 2 folds, got {folds}")
    if not 0 <= fold < folds:
        raise ConfigError(f"--fold must be between 0 and {folds - 1}, got {fold}")
    groups = split_findings(weak_labels, folds=folds, seed=seed)
    test = set(groups[fold])
    train = set().union(*(g for i, g in enumerate(groups) if i != fold))
    return train, test


@dataclass(frozen=True)
class CardSplit:
    """The split by finding a trained model was made with (from its ``radsift_training.json``).

    Attributes:
        model: The model folder.
        fold: The fold it held out (``radsift train --split-by-finding``).
        folds: Number of folds.
        test_findings: The findings it never trained on.
    """

    model: str
    fold: int
    folds: int
    test_findings: frozenset[str]


def card_split(model_dir: str | Path) -> CardSplit | None:
    """The held-out fold recorded by ``radsift train`` beside a model, or None.

    None when the folder has no training record (a packaged or foreign model) or the model was
    trained without ``--split-by-finding``.

    Raises:
        ConfigError: The record exists but cannot be read.
    """
    from radsift.models.training.modelcard import TRAINING_JSON

    path = Path(model_dir) / TRAINING_JSON
    if not path.is_file():
        return None
    try:
        info = json.loads(path.read_text(encoding="utf-8"))
        config, data = info.get("config") or {}, info.get("data") or {}
        fold = config.get("split_by_finding")
        if fold is None:
            return None
        return CardSplit(str(model_dir), int(fold), int(config.get("finding_folds", DEFAULT_FOLDS)),
                         frozenset(data["test_findings"]))
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
        raise ConfigError(f"{path}: cannot read the held-out findings ({exc})") from exc


def check_card_splits(splits: Iterable[CardSplit], fold: int, test_findings: set[str],
                      warn: Callable[[str], None] | None = None) -> None:
    """Refuse to judge a fold model on findings it was trained on.

    The split by finding balances labeled entries greedily, so a small change in the weak labels
    (a new labeler rule, a lexicon edit, more reports) can move findings between folds; a model
    trained on yesterday's fold 0 would then be judged partly on findings it trained on.

    Args:
        splits: The recorded splits of the models under test.
        fold: The fold being judged.
        test_findings: This run's test findings of that fold.
        warn: Called with a message for a model trained on another fold (judged on findings it saw).

    Raises:
        ConfigError: A model held out the same fold but other findings.
    """
    for split in splits:
        if split.fold != fold:
            if warn is not None:
                warn(f"{split.model} was trained holding out fold {split.fold}, not fold {fold}: "
                     "it is judged on findings it trained on")
            continue
        if set(split.test_findings) != set(test_findings):
            only_model = sorted(split.test_findings - set(test_findings))
            only_here = sorted(set(test_findings) - split.test_findings)
            raise ConfigError(
                f"{split.model} held out other findings than fold {fold} of these weak labels "
                f"(only in the model's fold: {', '.join(only_model[:5]) or '-'}; only in this run's fold: "
                f"{', '.join(only_here[:5]) or '-'}): the labels changed since it was trained. "
                f"Pass --split-from {split.model} to judge it on the findings it held out, or retrain it."
            )


def split_from_card(split: CardSplit, labeled_findings: Iterable[str]) -> list[set[str]]:
    """Fold groups that reproduce a model's recorded split: its test findings in ``groups[fold]``.

    The other findings with labels go to the next fold (for 2 folds, exactly the training side).
    """
    groups: list[set[str]] = [set() for _ in range(split.folds)]
    groups[split.fold] = set(split.test_findings)
    groups[(split.fold + 1) % split.folds] = set(labeled_findings) - set(split.test_findings)
    return groups
