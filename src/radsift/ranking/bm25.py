"""BM25: the one place its settings, its statistics and its scoring are written.

Lucene's BM25 (k1 1.5, b 0.75; Kamphuis et al., "Which BM25 do you mean? A large-scale
reproducibility study of scoring variants", ECIR 2020) over :func:`radsift.text.tokens.tokenize`
(stems, negation words kept)::

    score(q, d) = sum over query terms t of  idf(t) * tf / (tf + k1 * (1 - b + b * |d| / avgdl))
    idf(t)      = ln(1 + (N - df(t) + 0.5) / (df(t) + 0.5))

An index stores only raw **term statistics** (:class:`TermStats`: term frequencies by term,
document lengths) per segment, never idf-weighted scores, so several segments, some of whose
documents are deleted, score exactly as one index of the live documents would: ``N``, ``df`` and
``avgdl`` are computed at query time over the live documents of all segments (:class:`BM25`).
The scores equal bm25s's ``method="lucene"`` (what radsift used before segments; tested).
``radsift bench`` and the training evaluation build one in memory (:func:`build_bm25`): everything
scores with :func:`bm25_scores`, so query words outside the vocabulary are dropped the same way
everywhere and a unit sharing no term with the query scores 0 (not retrieved).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np

from radsift.text.tokens import tokenize

#: Lucene BM25 (the defaults of Lucene and Elasticsearch).
BM25_PARAMS: dict[str, Any] = {"k1": 1.5, "b": 0.75, "method": "lucene"}
#: The files of a saved :class:`TermStats` folder.
TERM_FILES = ("terms.json", "indptr.npy", "rows.npy", "tf.npy", "lengths.npy")


@dataclass
class TermStats:
    """Term frequencies of a set of documents (rows ``0..n-1``), column by term (CSC).

    The documents holding term ``terms[j]`` are ``rows[indptr[j]:indptr[j+1]]`` (ascending), with
    their counts of it in ``tf`` at the same positions; ``lengths[d]`` is document ``d``'s number of tokens.
    """

    terms: list[str]
    indptr: np.ndarray  # int64 (n_terms + 1,)
    rows: np.ndarray  # int32 (nnz,)
    tf: np.ndarray  # int32 (nnz,)
    lengths: np.ndarray  # int32 (n_docs,)

    @property
    def n_docs(self) -> int:
        return int(self.lengths.shape[0])

    @classmethod
    def from_tokens(cls, tokens: Sequence[Sequence[str]]) -> "TermStats":
        """The statistics of tokenised documents (one token list per document, in row order)."""
        vocab: dict[str, int] = {}
        lengths = np.fromiter((len(t) for t in tokens), dtype=np.int64, count=len(tokens))
        ids = np.fromiter((vocab.setdefault(tok, len(vocab)) for doc in tokens for tok in doc), dtype=np.int64,
                          count=int(lengths.sum()))
        n = max(1, len(tokens))
        docs = np.repeat(np.arange(len(tokens), dtype=np.int64), lengths)
        keys, tf = np.unique(ids * n + docs, return_counts=True)  # sorted by term, then document
        term_of = keys // n
        indptr = np.zeros(len(vocab) + 1, dtype=np.int64)
        np.cumsum(np.bincount(term_of, minlength=len(vocab)), out=indptr[1:])
        return cls(list(vocab), indptr, (keys % n).astype(np.int32), tf.astype(np.int32), lengths.astype(np.int32))

    @classmethod
    def merge(cls, parts: Sequence[tuple["TermStats", np.ndarray]]) -> "TermStats":
        """One :class:`TermStats` of the kept documents of several: ``parts`` pairs each with the new row
        of each of its documents (``-1`` = dropped; new rows must be distinct and cover ``0..n-1``)."""
        vocab: dict[str, int] = {}
        cols, rows, tfs = [], [], []
        n = sum(int((new >= 0).sum()) for _, new in parts)
        lengths = np.zeros(n, dtype=np.int32)
        for stats, new in parts:
            new = np.asarray(new, dtype=np.int64)
            kept = new >= 0
            lengths[new[kept]] = stats.lengths[kept]
            ids = np.fromiter((vocab.setdefault(t, len(vocab)) for t in stats.terms), dtype=np.int64,
                              count=len(stats.terms))
            term = np.repeat(ids, np.diff(stats.indptr))
            r = new[np.asarray(stats.rows)]
            keep = r >= 0
            cols.append(term[keep])
            rows.append(r[keep])
            tfs.append(np.asarray(stats.tf)[keep])
        col = np.concatenate(cols) if cols else np.zeros(0, np.int64)
        row = np.concatenate(rows) if rows else np.zeros(0, np.int64)
        tf = np.concatenate(tfs) if tfs else np.zeros(0, np.int32)
        order = np.lexsort((row, col))
        col, row, tf = col[order], row[order], tf[order]
        counts = np.bincount(col, minlength=len(vocab))
        used = counts > 0  # a term only deleted documents held is dropped
        indptr = np.zeros(int(used.sum()) + 1, dtype=np.int64)
        np.cumsum(counts[used], out=indptr[1:])
        terms = [t for t, u in zip(vocab, used.tolist()) if u]
        return cls(terms, indptr, row.astype(np.int32), tf.astype(np.int32), lengths)

    def save(self, folder: Path) -> None:
        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "terms.json").write_text(json.dumps(self.terms, ensure_ascii=False), encoding="utf-8")
        for name in ("indptr", "rows", "tf", "lengths"):
            np.save(folder / f"{name}.npy", getattr(self, name))

    @classmethod
    def load(cls, folder: Path, mmap: bool = True) -> "TermStats":
        folder = Path(folder)
        terms = json.loads((folder / "terms.json").read_text(encoding="utf-8"))
        arrays = {name: np.load(folder / f"{name}.npy", mmap_mode="r" if mmap else None, allow_pickle=False)
                  for name in ("indptr", "rows", "tf", "lengths")}
        stats = cls(terms, **arrays)
        if stats.indptr.shape != (len(terms) + 1,) or stats.rows.shape != stats.tf.shape \
                or int(stats.indptr[-1]) != stats.rows.shape[0]:
            raise ValueError(f"{folder}: BM25 term statistics of inconsistent shapes")
        return stats


class BM25:
    """Lucene BM25 over one row space made of parts (an index's segments), scored with global statistics.

    Each part is a :class:`TermStats` and the global row of each of its documents (``-1``: deleted,
    never scored and not counted in ``N``, ``df`` or ``avgdl``). Has the two members the rest of
    radsift uses: ``vocab_dict`` (terms of the live documents, plus possibly terms only deleted
    documents hold, which then score 0 everywhere) and :meth:`get_scores`.

    A term's postings (global rows and ``tf / (tf + k1 (1 - b + b |d| / avgdl))``) are computed on
    its first query and kept (up to :attr:`CACHE_POSTINGS` postings in all), so a query costs
    what bm25s's precomputed matrices cost: one multiply-add per posting of its terms.
    """

    CACHE_POSTINGS = 50_000_000

    def __init__(self, parts: Sequence[tuple[TermStats, np.ndarray]], n: int,
                 params: Mapping[str, Any] | None = None) -> None:
        params = dict(params or BM25_PARAMS)
        if params.get("method", "lucene") != "lucene":
            raise ValueError(f"BM25 method {params['method']!r}: radsift scores Lucene BM25 only")
        self.k1, self.b = float(params["k1"]), float(params["b"])
        self.n = int(n)
        self.parts = []
        for stats, rows in parts:
            rows = np.asarray(rows, dtype=np.int64)
            # A part whose documents are all live and numbered consecutively maps rows by an offset.
            dense = bool(rows.size) and rows[0] >= 0 and bool(np.all(np.diff(rows) == 1))
            self.parts.append((stats, rows, int(rows[0]) if dense else None))
        live_lengths = [np.asarray(s.lengths)[rows >= 0] for s, rows, _ in self.parts]
        self.n_docs = int(sum(x.shape[0] for x in live_lengths))
        total = float(sum(int(x.sum(dtype=np.int64)) for x in live_lengths))
        self.avgdl = total / self.n_docs if self.n_docs else 1.0
        # Per document: k1 * (1 - b + b * |d| / avgdl), the length normalisation of every term.
        avgdl = self.avgdl or 1.0
        self._norm = [(self.k1 * (1.0 - self.b + self.b * np.asarray(s.lengths, dtype=np.float64) / avgdl))
                      .astype(np.float32) for s, _, _ in self.parts]
        self._cols = [{t: j for j, t in enumerate(s.terms)} for s, _, _ in self.parts]
        self.vocab_dict: dict[str, int] = {}
        for cols in self._cols:
            for t in cols:
                self.vocab_dict.setdefault(t, len(self.vocab_dict))
        self._postings: dict[str, tuple[np.ndarray, np.ndarray, float]] = {}
        self._impacts: dict[str, np.ndarray] = {}
        self._impact_postings: dict[str, tuple[np.ndarray, np.ndarray]] = {}
        self._cached = 0

    def postings(self, term: str) -> tuple[np.ndarray, np.ndarray, float]:
        """(global rows, term-frequency component, idf) of the live documents holding ``term``."""
        hit = self._postings.get(term)
        if hit is not None:
            return hit
        rows_out, weights = [], []
        for (stats, rows, offset), cols, norm in zip(self.parts, self._cols, self._norm):
            j = cols.get(term)
            if j is None:
                continue
            start, end = int(stats.indptr[j]), int(stats.indptr[j + 1])
            local = np.asarray(stats.rows[start:end], dtype=np.int64)
            tf = np.asarray(stats.tf[start:end], dtype=np.float32)
            w = tf / (tf + norm[local])
            if offset is not None:
                g = local + offset
            else:
                g = rows[local]
                keep = g >= 0
                g, w = g[keep], w[keep]
            rows_out.append(g)
            weights.append(w)
        g = np.concatenate(rows_out) if rows_out else np.zeros(0, dtype=np.int64)
        w = np.concatenate(weights) if weights else np.zeros(0, dtype=np.float32)
        df = g.shape[0]
        idf = math.log(1.0 + (self.n_docs - df + 0.5) / (df + 0.5)) if df else 0.0
        hit = (g, w, idf)
        if self._cached + df > self.CACHE_POSTINGS:
            self._postings, self._impacts, self._impact_postings, self._cached = {}, {}, {}, 0
        self._postings[term] = hit
        self._cached += df
        return hit

    def impact_order(self, term: str) -> np.ndarray:
        """Positions in :meth:`postings` of ``term``, highest weight first (kept with the postings): a top-k
        search reads a term's best documents first."""
        hit = self._impacts.get(term)
        if hit is None:
            hit = np.argsort(-self.postings(term)[1], kind="stable")
            if term in self._postings:
                self._impacts[term] = hit
        return hit

    def impact_postings(self, term: str) -> tuple[np.ndarray, np.ndarray]:
        """(rows, weights) of :meth:`postings` of ``term`` in :meth:`impact_order` (kept with the postings): a
        top-k search reads a term's best documents as slices, without a gather per read."""
        hit = self._impact_postings.get(term)
        if hit is None:
            g, w, _ = self.postings(term)
            order = self.impact_order(term)
            hit = (np.asarray(g, dtype=np.int64)[order], np.asarray(w)[order])
            if term in self._postings:
                self._impact_postings[term] = hit
        return hit

    def idf(self, term: str) -> float:
        """Lucene idf of ``term`` over the live documents (0 when none holds it)."""
        return self.postings(term)[2]

    def get_scores(self, tokens: Sequence[str]) -> np.ndarray:
        """BM25 of every row for a query's tokens (a token repeated counts again, as in bm25s)."""
        out = np.zeros(self.n, dtype=np.float32)
        for term in tokens:
            g, w, idf = self.postings(term)
            if idf:
                out[g] += np.float32(idf) * w  # a document appears once in a term's postings
        return out


def build_bm25(tokens: Sequence[Sequence[str]], params: Mapping[str, Any] | None = None) -> BM25:
    """An in-memory :class:`BM25` over tokenised units (one token list per unit, in row order)."""
    stats = TermStats.from_tokens(tokens)
    return BM25([(stats, np.arange(stats.n_docs))], stats.n_docs, params)


def build_bm25_texts(texts: Sequence[str], params: Mapping[str, Any] | None = None) -> BM25:
    """:func:`build_bm25` over raw texts, tokenised with :func:`radsift.text.tokens.tokenize`."""
    return build_bm25([tokenize(t) for t in texts], params)


def save_bm25(stats: TermStats | BM25, folder: Path) -> None:
    """Save term statistics (of a one-part :class:`BM25`, or a :class:`TermStats`) as plain ``.npy``/JSON."""
    if isinstance(stats, BM25):
        if len(stats.parts) != 1:
            raise ValueError("only a one-part BM25 can be saved: save each part's TermStats")
        stats = stats.parts[0][0]
    stats.save(folder)


def load_bm25(folder: Path, mmap: bool = True) -> TermStats:
    """The :class:`TermStats` saved in ``folder`` (memory-mapped)."""
    return TermStats.load(folder, mmap=mmap)


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
    if hasattr(retriever, "postings"):
        return _units_with_postings(retriever, list(dict.fromkeys(terms)), n)
    total = np.zeros(n, dtype=np.float32)
    mask = np.ones(n, dtype=bool)
    for term in dict.fromkeys(terms):
        scores = np.asarray(retriever.get_scores([term]), dtype=np.float32)[:n]
        mask &= scores > 0
        total += scores
    rows = np.flatnonzero(mask)
    return rows[np.argsort(-total[rows], kind="stable")]


def _units_with_postings(retriever, terms: Sequence[str], n: int) -> np.ndarray:
    """:func:`units_with_terms` from the terms' postings (their intersection; no array over every unit):
    the same rows in the same order (scores summed in float32 in term order, ties by the lower row)."""
    rows, total = None, None
    for term in terms:
        g, w, idf = retriever.postings(term)
        g = np.asarray(g, dtype=np.int64)
        score = np.float32(idf) * np.asarray(w, dtype=np.float32)
        keep = (g < n) & (score > 0)
        order = np.argsort(g[keep], kind="stable")  # a segment's rows may not follow the others'
        g, score = g[keep][order], score[keep][order]
        if rows is None:
            rows, total = g, score
            continue
        pos = np.minimum(np.searchsorted(g, rows), max(g.size - 1, 0))
        hit = (g[pos] == rows) if g.size else np.zeros(rows.size, dtype=bool)
        rows, total = rows[hit], (total[hit] + score[pos[hit]]).astype(np.float32)
    if rows is None or not rows.size:
        return np.zeros(0, dtype=np.int64)
    return rows[np.argsort(-total, kind="stable")]
