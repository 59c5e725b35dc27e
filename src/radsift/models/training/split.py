"""The held-out split by report: which reports training must never see.

Training uses the evaluation suite's own split (:func:`radsift.evaluation.splits.report_split`)
with the same defaults, so ``radsift train`` holds out exactly the reports ``radsift bench``
tests findings-to-impression matching on (same corpus, fraction and seed). A report's side
depends only on its id, the seed and the fraction; all of its sentences fall on that side.
"""

from __future__ import annotations

from typing import Iterable

from radsift.evaluation.splits import DEFAULT_HOLDOUT_FRACTION, DEFAULT_SEED, report_split

__all__ = ["DEFAULT_HOLDOUT_FRACTION", "DEFAULT_SEED", "heldout_ids"]


def heldout_ids(report_ids: Iterable[str], fraction: float = DEFAULT_HOLDOUT_FRACTION,
                seed: int = DEFAULT_SEED) -> set[str]:
    """The ids of the held-out reports among ``report_ids`` (about ``fraction`` of them).

    Raises:
        ConfigError: ``fraction`` is not in (0, 1).
    """
    return set(report_split(report_ids, fraction, seed)[1])
