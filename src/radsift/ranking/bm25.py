"""BM25: the one place its settings, its index and its scoring are written.

Lucene's BM25 (k1 1.5, b 0.75) from bm25s over :func:`radsift.text.tokens.tokenize` (stems,
negation words kept). The index store saves it as a folder of plain ``.npy``/JSON files, and
``radsift bench`` and the training evaluation build it in memory: all three score with
:func:`bm25_scores`, so query words outside the vocabulary are dropped the same way everywhere
and a unit sharing no term with the query scores 0 (not retrieved).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np

from radsift.text.tokens import tokenize

#: Lucene BM25 as bm25s implements it (the defaults of Lucene and Elasticsearch).
BM25_PARAMS: dict[str, Any] = {"k1": 1.5, "b": 0.75, "method": "lucene"}


def build_bm25(tokens: Sequence[Sequence[str]], params: Mapping[str, Any] | None = None):
    """A bm25s retriever over tokenised units (one token list per unit, in row order).

    bm25s cannot index an empty corpus (or one with no token at all): such a corpus keeps
    one-token stubs that no query matches.
    """
    import bm25s

    retriever = bm25s.BM25(**dict(params or BM25_PARAMS))
    docs = [list(t) for t in tokens]
    retriever.index(docs if any(docs) else [[""]] * max(1, len(docs)), show_progress=False)
    return retriever


def build_bm25_texts(texts: Sequence[str], params: Mapping[str, Any] | None = None):
    """:func:`build_bm25` over raw texts, tokenised with :func:`radsift.text.tokens.tokenize`."""
    return build_bm25([tokenize(t) for t in texts], params)


def save_bm25(retriever, folder: Path) -> None:
    retriever.save(Path(folder), show_progress=False)


def load_bm25(folder: Path):
    import bm25s

    return bm25s.BM25.load(Path(folder), mmap=False, show_progress=False)


def bm25_scores(retriever, query: str, n: int) -> np.ndarray:
    """BM25 score of ``query`` against the first ``n`` units (float32; 0 = no term in common)."""
    vocab = retriever.vocab_dict
    tokens = [t for t in tokenize(query) if t in vocab]
    if not tokens or n == 0:
        return np.zeros(n, dtype=np.float32)
    return np.asarray(retriever.get_scores(tokens), dtype=np.float32)[:n]


def units_with_terms(retriever, terms: Sequence[str], n: int) -> np.ndarray:
    """Rows of the units containing every term (stems, as :func:`~radsift.text.tokens.tokenize` writes
    them), best BM25 match of the terms first; empty when a term is not in the vocabulary."""
    vocab = retriever.vocab_dict
    if not terms or n == 0 or any(t not in vocab for t in terms):
        return np.zeros(0, dtype=np.int64)
    total = np.zeros(n, dtype=np.float32)
    mask = np.ones(n, dtype=bool)
    for term in dict.fromkeys(terms):
        scores = np.asarray(retriever.get_scores([term]), dtype=np.float32)[:n]
        mask &= scores > 0
        total += scores
    rows = np.flatnonzero(mask)
    return rows[np.argsort(-total[rows], kind="stable")]
