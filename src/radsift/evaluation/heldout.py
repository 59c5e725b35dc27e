"""The held-out evaluation ``radsift train`` runs at the end for the model card (its evaluator).

Training does not import this module: the caller hands :class:`HeldOutEvaluator` to
:func:`radsift.models.training.train` (as sentence-transformers' trainer takes an evaluator).
Every ranking here goes through :mod:`radsift.ranking`, as ``radsift search`` and ``radsift
bench`` rank.

Three figures on the held-out reports of the training split (the full, statistically tested
table comes from ``radsift bench``):

* **Sentence retrieval** (Shi et al.): each weak-label query ("pneumothorax", "no
  pneumothorax") ranks the unique held-out sentences; relevant = the sentences carrying its
  label. mAP over positive, negative and all queries, restricted to the held-out findings
  fold when training was split by finding (unseen queries).
* **Embedding separation** (Shi et al., Table 3): mean over labeled held-out entries
  (sentence s, query q) of ``cos(q, s) - cos(opposite(q), s)``.
* **Findings-to-impression top-5 match rate** (RadSearch): each held-out report's findings
  rank the *distinct* held-out impressions (case, spacing and a final period folded, as
  ``radsift bench`` does: identical boilerplate impressions are one candidate); a hit when the
  report's own impression is in the top 5.

Queries use their plain phrasing (:attr:`radsift.labels.Query.text`). BM25 over the same
units is available as a baseline (:func:`evaluate_bm25`).

The ``entity-aspect`` recipes (no weak labels) are scored on their development split instead:
R@1/R@5 of (entity, aspect) and question queries over the answers of the held-out MedQuAD
documents, the passages protocol's way (:func:`evaluate_on_dev`,
:meth:`HeldOutEvaluator.development`).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np

from radsift.corpus.medquad_passages import PassageData, dev_passage_data
from radsift.evaluation.metrics import average_precision
from radsift.evaluation.protocols.passage_retrieval import DEPTH, QUERY_KINDS, report_json, run_passages
from radsift.evaluation.systems.cache import load_encoder
from radsift.evaluation.systems.passage_systems import (RERANK_TOP, CrossPassages, DensePassages, PassageSpec,
                                                        build_passage_systems)
from radsift.labels.weak import Query, normalize_sentence, opposite
from radsift.models.reranker import WEIGHT_CANDIDATES, Reranker
from radsift.models.training.data import LabeledSentence, SectionPair, TrainingData, labeled_sentence
from radsift.ranking import DENSE_WEIGHT, RERANK_WEIGHT, bm25_scores, build_bm25_texts, rank, rerank, top_k

TOP_K = 5
#: Development queries (a seeded sample) on which training chooses a cross-encoder's rerank weight.
RERANK_WEIGHT_QUERIES = 300


@dataclass
class EvalSet:
    """The held-out units and judgments of one evaluation.

    Attributes:
        sentences: Unique held-out sentences (the ranked documents).
        queries: Query -> ids of its relevant sentences (only queries with one or more).
        entries: ``(sentence position, query)`` labeled entries for the separation.
        pairs: Held-out findings-impression pairs.
        findings: The findings evaluated (None = all).
    """

    sentences: list[LabeledSentence]
    queries: dict[Query, set[str]]
    entries: list[tuple[int, Query]]
    pairs: list[SectionPair]
    findings: set[str] | None = None


def eval_set(data: TrainingData, findings: set[str] | None = None, sentences: str = "heldout") -> EvalSet:
    """The evaluation set of ``data``.

    Args:
        data: The prepared training data.
        findings: Only queries and entries of these findings (default: the held-out findings
            fold when training was split by finding, else all findings).
        sentences: ``heldout``: rank the unique sentences of the held-out reports;
            ``all``: every unique sentence of the corpus (the ``radsift bench`` protocol, where
            unseen *findings*, not unseen reports, make the test).
    """
    if findings is None:
        findings = set(data.test_findings) or None
    if sentences == "all":
        sentences = [labeled_sentence(s, set()) for s in data.weak.sentences]
    elif sentences == "heldout":
        sentences = data.heldout_sentences
    else:
        raise ValueError(f"sentences must be 'heldout' or 'all', not {sentences!r}")
    queries: dict[Query, set[str]] = {}
    entries = []
    for pos, s in enumerate(sentences):
        for q in sorted(s.all_labels):
            if findings is None or q.finding in findings:
                queries.setdefault(q, set()).add(s.id)
                entries.append((pos, q))
    return EvalSet(sentences, dict(sorted(queries.items())), entries, list(data.heldout_pairs), findings)


def _retrieval_scores(scores: np.ndarray, es: EvalSet, mode: str = "dense",
                      bm25: np.ndarray | None = None, alpha: float = DENSE_WEIGHT) -> dict[str, float]:
    """AP of each query when its sentences are ranked by ``mode`` (``scores``: the dense side, or
    the only side for ``dense``/``bm25``; ``bm25``: the BM25 side of the hybrids)."""
    ids = [s.id for s in es.sentences]
    per_query = {}
    for row, (q, relevant) in enumerate(es.queries.items()):
        if mode == "bm25":
            parts = {"bm25": scores[row]}
        elif mode == "dense":
            parts = {"dense": scores[row]}
        else:
            parts = {"dense": scores[row], "bm25": bm25[row], "alpha": alpha}
        order, _ = rank(mode, None, **parts)
        per_query[q.qid] = average_precision([ids[j] for j in order], {d: 1 for d in relevant})
    return per_query


def _means(per_query: dict[str, float]) -> dict[str, Any]:
    yes = [v for k, v in per_query.items() if k.startswith("yes:")]
    no = [v for k, v in per_query.items() if k.startswith("no:")]
    mean = lambda xs: float(np.mean(xs)) if xs else float("nan")  # noqa: E731
    return {"map_yes": mean(yes), "map_no": mean(no), "map_all": mean(yes + no),
            "n_queries_yes": len(yes), "n_queries_no": len(no)}


def distinct_impressions(pairs: Sequence[SectionPair]) -> tuple[list[str], list[int]]:
    """The distinct impressions (first text of each key) and each pair's candidate index."""
    index: dict[str, int] = {}
    texts: list[str] = []
    own = []
    for p in pairs:
        key = normalize_sentence(p.impression)
        if key not in index:
            index[key] = len(texts)
            texts.append(p.impression)
        own.append(index[key])
    return texts, own


def _fi_hits(scores: np.ndarray, own: Sequence[int], k: int = TOP_K) -> list[bool]:
    """Whether each query's own candidate is among its top ``k`` (``scores``: queries x candidates)."""
    return [bool(target in top_k(scores[row], k)[0]) for row, target in enumerate(own)]


def evaluate_encoder(
    encode: Callable[[list[str], str], np.ndarray],
    es: EvalSet,
) -> dict[str, Any]:
    """Score a bi-encoder on ``es``.

    Args:
        encode: ``encode(texts, kind)`` -> unit vectors; ``kind`` is ``sentence`` or ``section``
            (so the caller can pick the truncation length).
        es: The evaluation set.

    Returns:
        ``map_yes``, ``map_no``, ``map_all``, ``n_queries_*``, ``separation``, ``n_entries``,
        ``fi_top5``, ``n_pairs``, and the per-unit details ``per_query`` (qid -> AP),
        ``scores`` (queries x sentences, for fusing with another system) and ``fi_hits`` (one
        bool per held-out pair, for McNemar).
    """
    out: dict[str, Any] = {}
    queries = list(es.queries)
    sep_queries = sorted({q for _, q in es.entries} | {opposite(q) for _, q in es.entries})
    q_index = {q: i for i, q in enumerate(sep_queries)}
    if es.sentences and sep_queries:
        s_vecs = encode([s.text for s in es.sentences], "sentence")
        q_vecs = encode([q.text for q in sep_queries], "sentence")
        scores = q_vecs[[q_index[q] for q in queries]] @ s_vecs.T
        per_query = _retrieval_scores(scores, es)
        out.update(_means(per_query))
        seps = [float(q_vecs[q_index[q]] @ s_vecs[pos] - q_vecs[q_index[opposite(q)]] @ s_vecs[pos])
                for pos, q in es.entries]
        out["separation"] = float(np.mean(seps))
        out["n_entries"] = len(seps)
        out["per_query"] = per_query
        out["scores"] = scores
    if len(es.pairs) >= 2:
        candidates, own = distinct_impressions(es.pairs)
        f_vecs = encode([p.findings for p in es.pairs], "section")
        i_vecs = encode(candidates, "section")
        hits = _fi_hits(f_vecs @ i_vecs.T, own)
        out["fi_top5"] = float(np.mean(hits))
        out["n_pairs"] = len(hits)
        out["fi_hits"] = hits
    return out


def evaluate_bm25(es: EvalSet) -> dict[str, Any]:
    """The same figures for BM25 (:mod:`radsift.ranking.bm25`; no separation: BM25 has no embedding)."""
    out: dict[str, Any] = {}
    if es.sentences and es.queries:
        retriever = build_bm25_texts([s.text for s in es.sentences])
        scores = np.stack([bm25_scores(retriever, q.text, len(es.sentences)) for q in es.queries])
        per_query = _retrieval_scores(scores, es, "bm25")
        out.update(_means(per_query))
        out["per_query"] = per_query
        out["scores"] = scores
    if len(es.pairs) >= 2:
        candidates, own = distinct_impressions(es.pairs)
        retriever = build_bm25_texts(candidates)
        scores = np.stack([bm25_scores(retriever, p.findings, len(candidates)) for p in es.pairs])
        hits = _fi_hits(scores, own)
        out["fi_top5"] = float(np.mean(hits))
        out["n_pairs"] = len(hits)
        out["fi_hits"] = hits
    return out


def model_encode_fn(model, config) -> Callable[[list[str], str], np.ndarray]:
    """An ``encode(texts, kind)`` for a SentenceTransformer, with the configured truncation lengths."""

    def encode(texts: list[str], kind: str) -> np.ndarray:
        model.max_seq_length = config.section_max_seq_length if kind == "section" else config.max_seq_length
        return model.encode(list(texts), batch_size=64, convert_to_numpy=True, normalize_embeddings=True,
                            show_progress_bar=False).astype(np.float32)

    return encode


def summary(result: dict[str, Any]) -> dict[str, Any]:
    """The figures without the per-unit details (for JSON and the model card)."""
    return {k: (round(v, 4) if isinstance(v, float) else v) for k, v in result.items()
            if k not in ("per_query", "fi_hits", "scores")}


def evaluate_hybrid(dense: dict[str, Any], bm25: dict[str, Any], es: EvalSet, fusion: str = "convex",
                    alpha: float | None = None) -> dict[str, Any]:
    """Sentence mAP of a dense and a BM25 result of :func:`evaluate_encoder` and
    :func:`evaluate_bm25` fused on ``es`` by the ranking core, as ``radsift search`` fuses them.

    Args:
        fusion: ``convex`` (``hybrid``: the convex combination of the scores) or ``rrf``
            (``hybrid-rrf``: the dense ranking fused with BM25's ranking of the sentences it
            scores above 0).
        alpha: ``convex``: the dense share (default :data:`radsift.ranking.DENSE_WEIGHT`).
    """
    modes = {"convex": "hybrid", "rrf": "hybrid-rrf"}
    if fusion not in modes:
        raise ValueError(f"fusion must be 'convex' or 'rrf', not {fusion!r}")
    per_query = _retrieval_scores(dense["scores"], es, modes[fusion], bm25["scores"],
                                  DENSE_WEIGHT if alpha is None else alpha)
    return {**_means(per_query), "per_query": per_query}


def evaluate_reranker(model, first_stage_encode, es, depth: int = 50, weight: float | None = None) -> dict:
    """Held-out sentence retrieval: bi-encoder ranking vs the same with its top ``depth`` reranked.

    Args:
        model: The CrossEncoder.
        first_stage_encode: ``encode(texts) -> unit vectors`` of the first-stage bi-encoder.
        es: The evaluation set.
        depth: Candidates reranked per query.
        weight: Cross-encoder share of the fused score (default
            :data:`radsift.ranking.RERANK_WEIGHT`).

    Returns:
        ``{"first_stage": {map_*}, "reranked": {map_*}, "cross_encoder_only": {map_*}, "depth",
        "weight"}``: ``reranked`` is what ``radsift search --rerank`` does (the fused score),
        ``cross_encoder_only`` orders the head by the cross-encoder alone.
    """
    if not es.sentences or not es.queries:
        return {}
    weight = RERANK_WEIGHT if weight is None else weight
    ids = [s.id for s in es.sentences]
    texts = [s.text for s in es.sentences]
    s_vecs = first_stage_encode(texts)
    queries = list(es.queries)
    q_vecs = first_stage_encode([q.text for q in queries])
    first, fused, alone = {}, {}, {}
    model.eval()
    for row, q in enumerate(queries):
        order, sims = rank("dense", None, dense=q_vecs[row] @ s_vecs.T)
        relevant = {d: 1 for d in es.queries[q]}
        first[q.qid] = average_precision([ids[j] for j in order], relevant)
        head = order[:depth]
        scores = model.predict([(q.text, texts[j]) for j in head], batch_size=64, convert_to_numpy=True,
                               show_progress_bar=False)
        for out, w in ((fused, weight), (alone, 1.0)):
            positions, _ = rerank(sims[:depth], scores, w, tail=sims[depth:])
            out[q.qid] = average_precision([ids[order[i]] for i in positions], relevant)
    return {"first_stage": _means(first), "reranked": _means(fused), "cross_encoder_only": _means(alone),
            "depth": depth, "weight": weight}


def evaluate_on_dev(model_dir: Path, config, dev_docs, say: Callable[[str], None],
                    kinds: Sequence[str] | None = None) -> dict[str, Any]:
    """R@1/R@5 of the trained model (and BM25) on the development split, the passages protocol's way
    (``kinds``: the query kinds to score, default both). ``dev_docs``: held-out MedQuAD documents, or
    (notes-only setting) the passages of held-out notes as a :class:`~radsift.corpus.medquad_passages.PassageData`
    (its queries are (entity, aspect) only)."""
    if config.model_type == "bi":
        spec = PassageSpec("dense", model=str(model_dir), name="trained")
    elif config.model_type == "poly":
        spec = PassageSpec("poly", model=str(model_dir), name="trained")
    else:  # the cross-encoder re-scores the head of the bi-encoder it started from (the packaged one by default)
        spec = PassageSpec("rerank", model=config.base_model, reranker=str(model_dir), name="trained")
    systems = build_passage_systems([PassageSpec("bm25"), spec], threads=config.threads)
    data = dev_docs if isinstance(dev_docs, PassageData) else dev_passage_data(dev_docs)
    if isinstance(dev_docs, PassageData):
        kinds = [k for k in (kinds or QUERY_KINDS) if k in (data.queries[0].texts if data.queries else {})]
    result = run_passages(data, systems, max_queries=config.dev_max_queries,
                          seed=config.seed, log=say, **({"kinds": tuple(kinds)} if kinds else {}))
    return {"dev": report_json(result), "dev_queries": result.data["queries"]}


class _AtWeight:
    """A reranker at ``weight`` whose scores are kept per (query, texts) in ``cache``: every weight of the
    sweep shares one cache, so each pair is scored once."""

    def __init__(self, reranker, weight: float, cache: dict) -> None:
        self.reranker, self.weight, self.cache = reranker, weight, cache

    def score(self, query, texts):
        key = (query, tuple(texts))
        if key not in self.cache:
            self.cache[key] = self.reranker.score(query, texts)
        return self.cache[key]


def rerank_weights_on_dev(model_dir: Path, config, dev_docs, say: Callable[[str], None], *,
                          weights: Sequence[float] = WEIGHT_CANDIDATES, max_queries: int = RERANK_WEIGHT_QUERIES,
                          reranker=None, first_stage=None) -> dict[str, Any]:
    """(entity, aspect) R@1/R@5 on the development split of a trained cross-encoder re-scoring, as passage
    search does (:func:`radsift.models.reranker.rerank_head`), the first stage's top 16 of BM25's top 64, at
    each of ``weights`` (0: the first stage alone), on a seeded sample of at most ``max_queries`` queries.

    Args:
        reranker: The loaded cross-encoder (default: ``model_dir`` loaded as search loads it).
        first_stage: The first-stage encoder (default: ``config.base_model``, the packaged model when None:
            the bi-encoder the cross-encoder started from).

    Returns:
        ``{"R@1": {weight: %}, "R@5": {weight: %}, "queries", "first_stage", "top", "depth", "chosen_on"}``.
    """
    reranker = reranker or Reranker.load(model_dir, threads=config.threads, weight=1.0)
    encoder = first_stage or load_encoder(config.base_model, threads=config.threads)
    first = DensePassages("first", encoder)
    cache: dict = {}
    systems = [CrossPassages(f"weight {w}", _AtWeight(reranker, float(w), cache), first, top=RERANK_TOP)
               for w in weights]
    data = dev_docs if isinstance(dev_docs, PassageData) else dev_passage_data(dev_docs)
    n = min(max_queries, config.dev_max_queries)
    result = run_passages(data, systems, kinds=("entity-aspect",), max_queries=n, seed=config.seed, log=say)
    figures = report_json(result)
    name = config.base_model or "the packaged model"
    return {"R@1": {float(w): figures[f"weight {w}"]["entity-aspect"]["R@1"] for w in weights},
            "R@5": {float(w): figures[f"weight {w}"]["entity-aspect"]["R@5"] for w in weights},
            "queries": result.data["queries"], "first_stage": str(name), "top": RERANK_TOP, "depth": DEPTH,
            "chosen_on": f"development split, {result.data['queries']} (entity, aspect) queries of {data.source}: "
                         f"BM25's top {DEPTH}, the first stage's ({name}) top {RERANK_TOP} re-scored"}


class HeldOutEvaluator:
    """The evaluator ``radsift train`` is given: held-out figures for the model card
    (:class:`radsift.models.training.evaluator.Evaluator`).

    Called by :func:`radsift.models.training.train` once the model is saved, with ``kind``
    ``bi-encoder`` (the trained model, the base model and BM25 on the held-out reports) or
    ``cross-encoder`` (the bi-encoder's ranking with and without the reranker); the
    ``entity-aspect`` recipes call :meth:`development`.
    """

    def development(self, model_dir: Path, config, dev_docs, log: Callable[[str], None],
                    kinds: Sequence[str] | None = None) -> dict[str, Any]:
        """The development-split figures of an ``entity-aspect`` model (:func:`evaluate_on_dev`)."""
        return evaluate_on_dev(model_dir, config, dev_docs, log, kinds=kinds)

    def rerank_weights(self, model_dir: Path, config, dev_docs, log: Callable[[str], None]) -> dict[str, Any]:
        """A trained cross-encoder's development figures per rerank weight (:func:`rerank_weights_on_dev`)."""
        return rerank_weights_on_dev(model_dir, config, dev_docs, log)

    def __call__(self, kind: str, model, data: TrainingData, config, base_path=None,
                 first_stage_encode=None) -> dict[str, Any]:
        es = eval_set(data)
        if kind == "cross-encoder":
            return evaluate_reranker(model, first_stage_encode, es)
        from sentence_transformers import SentenceTransformer

        result = {"trained": summary(evaluate_encoder(model_encode_fn(model, config), es))}
        if base_path is not None:
            base = SentenceTransformer(str(base_path), device="cpu", local_files_only=True)
            result["untrained"] = summary(evaluate_encoder(model_encode_fn(base, config), es))
        result["bm25"] = summary(evaluate_bm25(es))
        return result
