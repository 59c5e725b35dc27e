"""Reading tiers: negation-aware ranking moves units that state the opposite of the query down.

For "pneumothorax" a sentence labeled "pneumothorax: absent" (and not also present) states the
opposite reading; for "no pleural effusion", one that affirms an effusion. Such units rank below
every other unit, whatever their similarity; within a tier the retrieval score orders them.
"""

from __future__ import annotations

from typing import Mapping

import numpy as np

#: Signed polarity of a stated reading (uncertain mentions have none).
POLARITY = {"present": 1, "absent": -1}
#: Finding statuses as stored in an index's ``label_status.npy``.
STATUS_CODES = {"present": 1, "absent": -1, "uncertain": 0}


def demote(scores: np.ndarray, rows: np.ndarray | None) -> np.ndarray:
    """Move ``rows`` below every other unit, keeping their order among themselves.

    Every score of ``rows`` drops by more than the whole score range, so a demoted unit is
    below every other unit in any mode, whatever the scale of the scores.
    """
    if rows is None or not len(rows) or not len(scores):
        return scores
    scores = np.array(scores, dtype=np.float32, copy=True)
    scores[rows] -= float(scores.max() - scores.min()) + 1.0
    return scores


def opposing_rows(label_row: np.ndarray, label_finding: np.ndarray, label_status: np.ndarray,
                  wanted: Mapping[int, str]) -> np.ndarray | None:
    """Unit rows that state the opposite of a wanted reading and not the wanted one.

    Args:
        label_row, label_finding, label_status: One entry per (unit, finding) mention: the unit
            row, the finding code and the status code (:data:`STATUS_CODES`).
        wanted: Finding code -> the status the query asks for (``present`` or ``absent``).

    Returns:
        Sorted unique rows, or None when the query asks for no reading.
    """
    out = []
    for code, status in wanted.items():
        if status not in POLARITY:
            continue
        sel = label_finding == code
        polarity = POLARITY[status]
        opposite = label_row[sel & (label_status == -polarity)]
        same = label_row[sel & (label_status == polarity)]
        out.append(np.setdiff1d(opposite, same))
    return np.unique(np.concatenate(out)).astype(np.int64) if out else None
