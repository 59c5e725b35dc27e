"""Protocol ``passages``: answer-passage retrieval on the MedQuAD CDV test split, as CAPR evaluates it.

CAPR (Grundmann, Arnold & Löser, "Self-supervised answer retrieval on clinical notes") ranks
candidate passages for each query and reports Recall@1 and Recall@5. Here:

* The pool is every annotated passage of the split (3,762 answers of 1,111 MedQuAD documents;
  :func:`radsift.corpus.medquad_passages.load_cdv`).
* Each of the 3,293 queries is asked twice: (a) as its (entity, aspect) pair, the text
  :func:`radsift.text.aspects.entity_aspect_text` builds from the annotated entity and the
  aspect it normalises to (``"Sarcoidosis information"``); (b) as its natural-language question.
* Candidates of a query (per kind), two rules:

  - ``bm25-64`` (the primary figure, the candidates CAPR scores): the :data:`DEPTH` = 64 passages
    BM25 scores highest for that query text over the whole pool (ties at the cut by pool order).
    A gold passage BM25 missed stays missed: R@k counts that query as a miss, whatever the system.
  - ``bm25-64+gold`` (secondary, labelled as such): the same, with every gold passage BM25 missed
    appended, so every query has its gold among its candidates.

* A system scores only those candidates. Candidates with identical text (after folding runs of
  white space) get one score, their mean, and every tie counts as the expected value over the
  orders of the tied candidates (:func:`expected_hit`): never the candidate order.
* R@k is the (expected) share of queries with a gold passage among the top k (for the 97% of
  queries with one gold passage, exactly Recall@k), with a Wilson 95% interval
  (:func:`radsift.evaluation.stats.wilson_interval`).

``radsift bench --protocol passages`` runs it and writes its report (:mod:`radsift.evaluation.bench_passages`);
:mod:`radsift.evaluation.protocols.note_passages` runs the same machinery on held-out clinical notes.
"""

from __future__ import annotations

import math
import time
from typing import Callable, Mapping, Sequence

import numpy as np

from radsift.corpus.medquad_passages import PassageData, PassageQuery
from radsift.evaluation.protocols.base import ProtocolResult, Table, no_log
from radsift.evaluation.stats import wilson_interval
from radsift.evaluation.systems.passage_systems import BM25Passages
from radsift.ranking import top_k

KEY = "passages"
TITLE = "Answer passages by (entity, aspect) and by question (MedQuAD CDV test split, CAPR)"
DEPTH = 64
CUTOFFS = (1, 5)
QUERY_KINDS = ("entity-aspect", "natural")
#: The candidate rules: BM25's top 64 alone (primary), with missed golds appended (secondary),
#: and (the note protocol) the golds among 64 random passages.
RULE_BM25 = "bm25-64"
RULE_APPENDED = "bm25-64+gold"
RULE_RANDOM = "random-64"
RULE_TEXT = {RULE_BM25: "BM25's top 64, no gold appended (a gold BM25 missed is a miss)",
             RULE_APPENDED: "BM25's top 64 with the gold passages BM25 missed appended (secondary)",
             RULE_RANDOM: "the gold passages among random passages of the pool, 64 in all"}


def bm25_candidates(bm25, queries: Sequence[str], depth: int = DEPTH) -> list[list[int]]:
    """Per query: BM25's top ``depth`` pool rows, best first (ties at the cut by pool row)."""
    return [[int(r) for r in top_k(bm25.full_scores(q), depth)[0]] for q in queries]


def append_gold(candidates: Sequence[Sequence[int]], golds: Sequence[frozenset[int]]) -> list[list[int]]:
    """Per query: its candidates, then the gold rows they miss (ascending): the secondary rule."""
    out = []
    for cand, gold in zip(candidates, golds):
        have = set(cand)
        out.append(list(cand) + sorted(g for g in gold if g not in have))
    return out


def candidate_lists(bm25, queries: Sequence[str], golds: Sequence[frozenset[int]], depth: int = DEPTH,
                    *, append: bool = False) -> list[list[int]]:
    """Per query: BM25's top ``depth`` pool rows; with ``append`` the gold rows it missed after them."""
    cands = bm25_candidates(bm25, queries, depth)
    return append_gold(cands, golds) if append else cands


def random_candidates(n_pool: int, golds: Sequence[frozenset[int]], depth: int = DEPTH, seed: int = 0,
                      ) -> list[list[int]]:
    """Per query: its gold rows and random other rows of the pool, ``depth`` in all (seeded; CAPR's
    random candidates for notes). A query with ``depth`` golds or more keeps its golds alone."""
    rng = np.random.default_rng(seed)
    out = []
    for gold in golds:
        need = max(0, min(depth, n_pool) - len(gold))
        others = [int(r) for r in rng.permutation(n_pool) if int(r) not in gold][:need]
        out.append(sorted(gold) + others)
    return out


def text_groups(passages: Sequence[str]) -> np.ndarray:
    """One group id per pool row; rows with the same text (runs of white space folded) share one."""
    ids: dict[str, int] = {}
    return np.asarray([ids.setdefault(" ".join(p.split()), len(ids)) for p in passages], dtype=np.int64)


def _tie_scores(scores: np.ndarray, groups: np.ndarray) -> np.ndarray:
    """Every candidate scored as the mean over the candidates with its text (identical texts tie)."""
    _, inverse = np.unique(groups, return_inverse=True)
    sums = np.bincount(inverse, weights=scores.astype(np.float64))
    counts = np.bincount(inverse)
    return sums[inverse] / counts[inverse]


def expected_hit(scores: np.ndarray, is_gold: np.ndarray, k: int) -> float:
    """Probability that a gold candidate is in the top ``k`` when ties are ordered uniformly at random.

    With ``s`` the best gold score, ``a`` candidates strictly above it (none gold), ``t`` tied at
    it of which ``g`` gold: 0 when ``a >= k``, else ``1 - C(t - g, m) / C(t, m)`` with ``m = k - a``.
    """
    if not is_gold.any():
        return 0.0
    best = scores[is_gold].max()
    above = int((scores > best).sum())
    if above >= k:
        return 0.0
    tied = scores == best
    t, g, m = int(tied.sum()), int((tied & is_gold).sum()), k - above
    if m >= t or t - g < m:
        return 1.0
    return 1.0 - math.comb(t - g, m) / math.comb(t, m)


def expected_hits_at(scores: Sequence[np.ndarray], candidates: Sequence[Sequence[int]],
                     golds: Sequence[frozenset[int]], k: int, groups: np.ndarray | None = None) -> list[float]:
    """Per query: the expected hit@k (:func:`expected_hit`); with ``groups`` (:func:`text_groups`)
    candidates of identical text score alike first."""
    out = []
    for s, cand, gold in zip(scores, candidates, golds):
        s = np.asarray(s, dtype=np.float64)
        idx = np.asarray(cand, dtype=np.int64)
        if groups is not None and idx.size:
            s = _tie_scores(s, groups[idx])
        out.append(expected_hit(s, np.asarray([c in gold for c in cand], dtype=bool), k))
    return out


def recall_summary(hits: Sequence[float]) -> dict[str, float]:
    """Mean of (expected) hits with its Wilson 95% interval (as fractions)."""
    n, s = len(hits), float(sum(hits))
    low, high = wilson_interval(min(s, n), n) if n else (float("nan"), float("nan"))
    return {"value": s / n if n else float("nan"), "low": low, "high": high, "n": n}


def _union(lists: Sequence[Sequence[int]]) -> list[int]:
    return list(dict.fromkeys(r for cand in lists for r in cand))


def evaluate_rules(systems: Sequence, passages: Sequence[str], queries: Sequence[PassageQuery],
                   candidates: Mapping[str, Mapping[str, Sequence[Sequence[int]]]], *,
                   log: Callable[[str], None] = no_log, prepare: bool = True) -> tuple[dict, dict, dict]:
    """Score every system on every query kind once over the union of its rules' candidates.

    Args:
        systems: Passage systems (``prepare(pool)``, ``score(queries, candidates)``).
        passages: The pool.
        queries: The queries (their ``texts`` by kind and ``gold`` rows).
        candidates: rule -> kind -> per-query candidate rows.
        prepare: Call each system's ``prepare`` with the pool (False: already prepared).

    Returns:
        ``(results, per_query, seconds)``: results[system][rule][kind] = {"R@1": summary, "R@5": ...};
        per_query[system][rule][kind] = expected hit@1 per query; seconds per system.
    """
    golds = [q.gold for q in queries]
    groups = text_groups(passages)
    kinds = list(dict.fromkeys(kind for by_kind in candidates.values() for kind in by_kind))
    results: dict = {}
    per_query: dict = {}
    seconds: dict = {}
    for system in systems:
        t0 = time.perf_counter()
        if prepare:
            log(f"  {system.name}: preparing {len(passages)} passages")
            system.prepare(passages)
        results[system.name] = {rule: {} for rule in candidates}
        per_query[system.name] = {rule: {} for rule in candidates}
        for kind in kinds:
            rules = [r for r in candidates if kind in candidates[r]]
            union = [_union([candidates[r][kind][i] for r in rules]) for i in range(len(queries))]
            scored = system.score([q.texts[kind] for q in queries], union)
            lookup = [dict(zip(u, np.asarray(s, dtype=np.float64))) for u, s in zip(union, scored)]
            for rule in rules:
                cands = candidates[rule][kind]
                scores = [np.asarray([lk[c] for c in cand], dtype=np.float64) for lk, cand in zip(lookup, cands)]
                entry = {}
                for k in CUTOFFS:
                    hits = expected_hits_at(scores, cands, golds, k, groups)
                    entry[f"R@{k}"] = recall_summary(hits)
                    if k == 1:
                        per_query[system.name][rule][kind] = [round(h, 4) for h in hits]
                results[system.name][rule][kind] = entry
                log(f"  {system.name} / {rule} / {kind}: R@1 {100 * entry['R@1']['value']:.2f}, "
                    f"R@5 {100 * entry['R@5']['value']:.2f}")
        seconds[system.name] = round(time.perf_counter() - t0, 1)
    return results, per_query, seconds


def ceiling(candidates: Sequence[Sequence[int]], golds: Sequence[frozenset[int]]) -> float:
    """Share of queries with a gold among their candidates: the best R@k any system can reach."""
    return sum(bool(set(c) & g) for c, g in zip(candidates, golds)) / max(1, len(golds))


def sample_queries(queries: Sequence[PassageQuery], max_queries: int | None, seed: int) -> list[PassageQuery]:
    """A seeded sample of ``max_queries`` queries in their order (all when None or more)."""
    queries = list(queries)
    if max_queries is not None and max_queries < len(queries):
        rng = np.random.default_rng(seed)
        keep = sorted(rng.choice(len(queries), size=max_queries, replace=False).tolist())
        queries = [queries[i] for i in keep]
    return queries


def rule_tables(results: dict, rules: Sequence[str], kinds: Sequence[str], n_queries: int, n_passages: int,
                notes: Mapping[tuple[str, str], str]) -> list[Table]:
    """One table per (rule, kind): % R@1 and R@5 with Wilson intervals."""
    tables = []
    for rule in rules:
        for kind in kinds:
            rows = []
            for name, by_rule in results.items():
                e = by_rule.get(rule, {}).get(kind)
                if e is None:
                    continue
                rows.append([name] + [f"{100 * e[f'R@{k}']['value']:.2f} [{100 * e[f'R@{k}']['low']:.1f}, "
                                      f"{100 * e[f'R@{k}']['high']:.1f}]" for k in CUTOFFS])
            tables.append(Table(title=f"{kind} queries ({n_queries}), candidates {rule}: % R@1 and R@5 "
                                      "[Wilson 95% interval]",
                                columns=["system", "R@1", "R@5"], rows=rows,
                                note=f"Candidates: {RULE_TEXT[rule]}, of {n_passages} passages. "
                                     + notes.get((rule, kind), "")))
    return tables


def run_passages(data: PassageData, systems: Sequence, *, kinds: Sequence[str] = QUERY_KINDS, depth: int = DEPTH,
                 max_queries: int | None = None, seed: int = 0, log: Callable[[str], None] = no_log) -> ProtocolResult:
    """Rank each query's candidates with every system; R@1 and R@5 with Wilson intervals per kind,
    under the primary rule (BM25's top ``depth``, no gold appended) and the appended one.

    Args:
        data: The pool and the queries.
        systems: :class:`radsift.evaluation.systems.passage_systems.PassageSystem` objects.
        kinds: Query kinds to run.
        depth: BM25 candidates per query.
        max_queries: Evaluate a seeded sample of this many queries (None = all).
        seed: Seed of the sample.
    """
    queries = sample_queries(data.queries, max_queries, seed)
    golds = [q.gold for q in queries]
    pool_bm25 = BM25Passages()
    pool_bm25.prepare(data.passages)
    primary = {kind: bm25_candidates(pool_bm25, [q.texts[kind] for q in queries], depth) for kind in kinds}
    appended = {kind: append_gold(c, golds) for kind, c in primary.items()}
    candidates = {RULE_BM25: primary, RULE_APPENDED: appended}
    added = {kind: sum(len(a) - len(p) for a, p in zip(appended[kind], primary[kind])) for kind in kinds}
    missed = {kind: sum(not set(c) & g for c, g in zip(primary[kind], golds)) for kind in kinds}
    results, per_query, seconds = evaluate_rules(systems, data.passages, queries, candidates, log=log)
    notes = {}
    for kind in kinds:
        notes[(RULE_BM25, kind)] = (f"{missed[kind]} of {len(queries)} queries have no gold among them: no system "
                                    f"can pass {100 * ceiling(primary[kind], golds):.2f}% R@k.")
        notes[(RULE_APPENDED, kind)] = f"{added[kind]} gold passages appended over all queries."
    tables = rule_tables(results, [RULE_BM25, RULE_APPENDED], kinds, len(queries), len(data.passages), notes)
    description = (__doc__ or "").split("\n\n", 1)[1].strip()
    data_out = {"systems": {name: by_rule[RULE_BM25] for name, by_rule in results.items()},
                "appended": {name: by_rule[RULE_APPENDED] for name, by_rule in results.items()},
                "queries": len(queries), "passages": len(data.passages), "depth": depth,
                "rules": {RULE_BM25: RULE_TEXT[RULE_BM25], RULE_APPENDED: RULE_TEXT[RULE_APPENDED]},
                "gold_added": added, "queries_without_gold": missed,
                "ceiling": {kind: round(100 * ceiling(primary[kind], golds), 2) for kind in kinds},
                "source": data.source, "per_query_hit1": per_query, "seconds": seconds}
    return ProtocolResult(key=KEY, title=TITLE, description=description, tables=tables, data=data_out,
                          notes=list(data.notes))


def report_json(result: ProtocolResult, rule: str = RULE_BM25) -> dict:
    """The compact ``report.json`` figures: system -> kind -> {"R@1", "R@5", intervals} (percent), of the
    primary rule (``bm25-64``, no gold appended) or, with ``rule="bm25-64+gold"``, the appended one."""
    by_system = result.data["systems"] if rule == RULE_BM25 else result.data["appended"]
    return figures_json(by_system)


def figures_json(by_system: Mapping[str, Mapping[str, Mapping]]) -> dict:
    """system -> kind -> {"R@1", "R@5", "R@k 95% CI"} in percent, from :func:`recall_summary` entries."""
    out: dict[str, dict] = {}
    for name, by_kind in by_system.items():
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
