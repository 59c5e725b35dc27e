"""A fold model's recorded split, checked before ``radsift bench`` judges it.

The splits themselves live below training and evaluation, in :mod:`radsift.splits`; this module
reads what ``radsift train --split-by-finding`` recorded beside a model.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterable

from radsift.errors import ConfigError
from radsift.models.training.modelcard import TRAINING_JSON
from radsift.splits import DEFAULT_FOLDS


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
