"""Protocol ``passages``: answer-passage retrieval on the MedQuAD CDV test split, as CAPR evaluates it.

CAPR (Grundmann, Arnold & Löser, "Self-supervised answer retrieval on clinical notes") ranks
candidate passages for each query and reports Recall@1 and Recall@5. Here:

* The pool is every annotated passage of the split (3,762 answers of 1,111 MedQuAD documents;
  :func:`radsift.corpus.medquad_passages.load_cdv`).
* Each of the 3,293 queries is asked twice: (a) as its (entity, aspect) pair, the text
  :func:`radsift.text.aspects.entity_aspect_text` builds from the annotated entity and the
  aspect it normalises to (``"Sarcoidosis information"``); (b) as its natural-language question.
* Candidates of a query (per kind): the :data:`DEPTH` = 64 passages BM25 scores highest for that
  query text over the whole pool (ties by pool order); every gold passage not among them is
  appended after them (so a query has 64 to 64 + #gold candidates). A system orders only those
  candidates; ties keep the candidate order (BM25's).
* R@k is the share of queries with a gold passage among the top k (for the 97% of queries with
  one gold passage, exactly Recall@k), with a Wilson 95% interval (:func:`radsift.evaluation.stats.wilson_interval`).

``radsift bench --protocol passages`` runs it and writes its report (:mod:`radsift.evaluation.bench_passages`).
"""

from __future__ import annotations

import time
from typing import Callable, Sequence

import numpy as np

from radsift.corpus.medquad_passages import PassageData
from radsift.evaluation.protocols.base import ProtocolResult, Table, no_log
from radsift.evaluation.stats import wilson_interval
from radsift.evaluation.systems.passage_systems import BM25Passages
from radsift.ranking import top_k

KEY = "passages"
TITLE = "Answer passages by (entity, aspect) and by question (MedQuAD CDV test split, CAPR)"
DEPTH = 64
CUTOFFS = (1, 5)
QUERY_KINDS = ("entity-aspect", "natural")
def candidate_lists(bm25, queries: Sequence[str], golds: Sequence[frozenset[int]], depth: int = DEPTH) -> list[list[int]]:
    """Per query: BM25's top ``depth`` pool rows, then the gold rows it missed (ascending)."""
    out = []
    for q, gold in zip(queries, golds):
        rows, _ = top_k(bm25.full_scores(q), depth)
        cand = [int(r) for r in rows]
        cand += sorted(g for g in gold if g not in set(cand))
        out.append(cand)
    return out


def hits_at(scores: Sequence[np.ndarray], candidates: Sequence[Sequence[int]], golds: Sequence[frozenset[int]],
            k: int) -> list[bool]:
    """Per query: is a gold row among the ``k`` best-scored candidates (ties by candidate order)?"""
    out = []
    for s, cand, gold in zip(scores, candidates, golds):
        rows, _ = top_k(np.asarray(s), k)
        out.append(any(cand[r] in gold for r in rows))
    return out


def recall_summary(hits: Sequence[bool]) -> dict[str, float]:
    """Share of hits with its Wilson 95% interval (as fractions)."""
    n, s = len(hits), int(sum(hits))
    low, high = wilson_interval(s, n) if n else (float("nan"), float("nan"))
    return {"value": s / n if n else float("nan"), "low": low, "high": high, "n": n}


def run_passages(data: PassageData, systems: Sequence, *, kinds: Sequence[str] = QUERY_KINDS, depth: int = DEPTH,
                 max_queries: int | None = None, seed: int = 0, log: Callable[[str], None] = no_log) -> ProtocolResult:
    """Rank each query's candidates with every system; R@1 and R@5 with Wilson intervals per kind.

    Args:
        data: The pool and the queries.
        systems: :class:`radsift.evaluation.systems.passage_systems.PassageSystem` objects.
        kinds: Query kinds to run.
        depth: BM25 candidates per query.
        max_queries: Evaluate a seeded sample of this many queries (None = all).
        seed: Seed of the sample.
    """
    queries = list(data.queries)
    if max_queries is not None and max_queries < len(queries):
        rng = np.random.default_rng(seed)
        keep = sorted(rng.choice(len(queries), size=max_queries, replace=False).tolist())
        queries = [queries[i] for i in keep]
    golds = [q.gold for q in queries]
    pool_bm25 = BM25Passages()
    pool_bm25.prepare(data.passages)
    results: dict[str, dict[str, dict]] = {}
    seconds: dict[str, float] = {}
    cands_by_kind = {kind: candidate_lists(pool_bm25, [q.texts[kind] for q in queries], golds, depth)
                     for kind in kinds}
    added = {kind: sum(len(c) - min(depth, len(data.passages)) for c in cands) for kind, cands in cands_by_kind.items()}
    per_query: dict[str, dict[str, list[int]]] = {}
    for system in systems:
        t0 = time.perf_counter()
        log(f"  {system.name}: preparing {len(data.passages)} passages")
        system.prepare(data.passages)
        results[system.name] = {}
        per_query[system.name] = {}
        for kind in kinds:
            cands = cands_by_kind[kind]
            scores = system.score([q.texts[kind] for q in queries], cands)
            entry = {}
            for k in CUTOFFS:
                hits = hits_at(scores, cands, golds, k)
                entry[f"R@{k}"] = recall_summary(hits)
                if k == 1:
                    per_query[system.name][kind] = [int(h) for h in hits]
            results[system.name][kind] = entry
            log(f"  {system.name} / {kind}: R@1 {entry['R@1']['value']:.4f}, R@5 {entry['R@5']['value']:.4f}")
        seconds[system.name] = time.perf_counter() - t0
    tables = []
    for kind in kinds:
        rows = []
        for name, by_kind in results.items():
            e = by_kind[kind]
            rows.append([name] + [f"{100 * e[f'R@{k}']['value']:.2f} [{100 * e[f'R@{k}']['low']:.1f}, "
                                  f"{100 * e[f'R@{k}']['high']:.1f}]" for k in CUTOFFS])
        tables.append(Table(title=f"{kind} queries ({len(queries)}): % R@1 and R@5 [Wilson 95% interval]",
                            columns=["system", "R@1", "R@5"], rows=rows,
                            note=f"Candidates: BM25 top {depth} of {len(data.passages)} passages plus missed gold "
                                 f"passages ({added[kind]} added over all queries)."))
    description = (__doc__ or "").split("\n\n", 1)[1].strip()
    res = ProtocolResult(key=KEY, title=TITLE, description=description, tables=tables,
                         data={"systems": results, "queries": len(queries), "passages": len(data.passages),
                               "depth": depth, "gold_added": added, "source": data.source,
                               "per_query_hit1": per_query, "seconds": {k: round(v, 1) for k, v in seconds.items()}},
                         notes=list(data.notes))
    return res


def report_json(result: ProtocolResult) -> dict:
    """The compact ``report.json`` of the protocol: system -> kind -> {"R@1", "R@5", intervals} (percent)."""
    out: dict[str, dict] = {}
    for name, by_kind in result.data["systems"].items():
        out[name] = {}
        for kind, e in by_kind.items():
            out[name][kind] = {}
            for k in CUTOFFS:
                m = e[f"R@{k}"]
                out[name][kind][f"R@{k}"] = round(100 * m["value"], 2)
                out[name][kind][f"R@{k} 95% CI"] = [round(100 * m["low"], 2), round(100 * m["high"], 2)]
    return out


#: Passages scored per query in the latency table (CAPR: 2,048 passages in about 10 s on a V100).
LATENCY_PASSAGES = 2048


def latency(systems: Sequence, passages: Sequence[str], query: str, n: int = LATENCY_PASSAGES) -> list[dict]:
    """Milliseconds to score ``n`` passages for one query, per system: with the passages already
    encoded (what a search pays; encoding is done at indexing) and including their encoding (cold).

    Systems that read the pair jointly (cross-encoders) have no pre-encoding: both figures are the same.
    """
    texts = [passages[i % len(passages)] for i in range(n)]
    rows = [list(range(n))]
    out = []
    for system in systems:
        t0 = time.perf_counter()
        system.prepare(texts)
        if hasattr(system, "_ensure"):  # encode the passages now (an index holds them encoded)
            system._ensure(range(n))
        t1 = time.perf_counter()
        system.score([query], rows)
        t2 = time.perf_counter()
        joint = getattr(system, "kind", "") in ("cross", "rerank")
        out.append({"system": system.name, "passages": n,
                    "ms_pre_encoded": round(1000 * ((t2 - t0) if joint else (t2 - t1)), 1),
                    "ms_with_encoding": round(1000 * (t2 - t0), 1)})
    return out
