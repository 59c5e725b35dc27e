"""Embedding separation of opposite-negation queries (Shi et al. 2022, Table 3).

For every labeled entry (a unique sentence and one of its labels, e.g. "no pneumothorax"),
the separation is ``cos(matched query, sentence) − cos(opposite query, sentence)`` with the
opposite query of the other polarity ("pneumothorax"). A model that understands negation puts
a sentence closer to the query it matches: the difference is positive, and the larger the
better. Reported as mean ± standard deviation (sample std, ddof = 1) over all labeled entries,
for positive and negative labels apart, with the share of entries whose difference is > 0.

Only systems with a similarity (dense encoders) are measured. BM25 scores are not
similarities: "no pneumothorax" can never score below "pneumothorax" on a sentence that
contains "no", so a BM25 difference would measure the query's length, not understanding;
hybrid scores mix in BM25 (a fused score or a rank fusion). Both are shown as n/a.
"""

from __future__ import annotations

import math
import time
from typing import Sequence

import numpy as np

from radsift.evaluation.protocols.base import Log, ProtocolResult, Table, no_log, num, percent, skipped
from radsift.labels.weak import opposite

KEY = "embedding_separation"
TITLE = "Embedding separation of opposite-negation queries (Shi et al. 2022, Table 3)"


def entries_for(weak, findings: set[str] | None = None) -> list[tuple[str, object]]:
    """``(sentence text, Query)`` for every labeled entry, optionally only some findings."""
    out = []
    for s in weak.sentences:
        for q in sorted(s.labels):
            if findings is None or q.finding in findings:
                out.append((s.text, q))
    return out


def _stats(d: np.ndarray) -> dict[str, float]:
    if d.size == 0:
        return {"n": 0, "mean": math.nan, "std": math.nan, "positive_share": math.nan}
    return {
        "n": int(d.size),
        "mean": float(d.mean()),
        "std": float(d.std(ddof=1)) if d.size > 1 else math.nan,
        "positive_share": float((d > 0).mean()),
    }


def run_separation(weak, systems: Sequence, *, findings: set[str] | None = None, log: Log = no_log) -> ProtocolResult:
    """Separation of every dense system over the labeled entries of ``weak``.

    Args:
        weak: Weak labels (the entries).
        systems: Systems under test; those without :attr:`~radsift.evaluation.systems.System.has_similarity`
            get an n/a row.
        findings: Only entries of these findings (the test findings of ``--fold``).
    """
    t0 = time.perf_counter()
    entries = entries_for(weak, findings)
    if not entries:
        return skipped(KEY, TITLE, "no labeled entry")
    texts = [t for t, _ in entries]
    polarity = np.array([q.polarity == "yes" for _, q in entries])
    matched = [q.text for _, q in entries]
    opposed = [opposite(q).text for _, q in entries]
    rows, data, hist = [], {}, {}
    for system in systems:
        if not system.has_similarity:
            rows.append([system.name, "n/a", "n/a", "n/a", "n/a", len(entries)])
            data[system.name] = None
            continue
        log(f"  {system.name}: {len(entries)} labeled entries")
        diff = system.similarity(matched, texts) - system.similarity(opposed, texts)
        groups = {"all": _stats(diff), "positive": _stats(diff[polarity]), "negative": _stats(diff[~polarity])}
        data[system.name] = groups
        hist[system.name] = {"all": diff.astype(np.float32), "positive": polarity}
        rows.append([system.name] + [f"{num(groups[g]['mean'])} ± {num(groups[g]['std'])}"
                                     for g in ("all", "positive", "negative")]
                    + [percent(groups["all"]["positive_share"]), len(entries)])
    n_pos = int(polarity.sum())
    result = ProtocolResult(
        key=KEY,
        title=TITLE,
        description=(
            f"Over {len(entries)} labeled entries ({n_pos} positive, {len(entries) - n_pos} negative): "
            "cos(matched query, sentence) − cos(opposite-negation query, sentence). Positive means the "
            "sentence sits closer to the query it matches."
        ),
        tables=[Table(
            title="Separation, mean ± std",
            columns=["system", "all entries", "positive labels", "negative labels", "difference > 0", "entries"],
            rows=rows,
            note="n/a: the system has no similarity score (BM25 and the hybrids); see the protocol's definition.",
        )],
        data={"entries": len(entries), "positive_entries": n_pos, "systems": data},
        plots={"separation": hist},
    )
    result.seconds = time.perf_counter() - t0
    return result
