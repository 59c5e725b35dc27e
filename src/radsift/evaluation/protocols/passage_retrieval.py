"""Protocol ``passages``: answer-passage retrieval on the MedQuAD CDV test split, as CAPR evaluates it.

CAPR (Grundmann, Arnold & Löser, "Self-supervised answer retrieval on clinical notes") ranks
candidate passages for each query and reports Recall@1 and Recall@5. Here:

* The pool is every annotated passage of the split (3,762 answers of 1,111 MedQuAD documents;
  :func:`radsift.corpus.medquad.read_cdv_test`).
* Each of the 3,293 queries is asked twice: (a) as its (entity, aspect) pair, the text
  :func:`radsift.text.aspects.entity_aspect_text` builds from the annotated entity and the
  aspect it normalises to (``"Sarcoidosis information"``); (b) as its natural-language question.
* Candidates of a query (per kind): the :data:`DEPTH` = 64 passages BM25 scores highest for that
  query text over the whole pool (ties by pool order); every gold passage not among them is
  appended after them (so a query has 64 to 64 + #gold candidates). A system orders only those
  candidates; ties keep the candidate order (BM25's).
* R@k is the share of queries with a gold passage among the top k (for the 97% of queries with
  one gold passage, exactly Recall@k), with a Wilson 95% interval (:func:`radsift.evaluation.stats.wilson_interval`).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Sequence

import numpy as np

from radsift.evaluation.protocols.base import ProtocolResult, Table, no_log

KEY = "passages"
TITLE = "Answer passages by (entity, aspect) and by question (MedQuAD CDV test split, CAPR)"
DEPTH = 64
CUTOFFS = (1, 5)
QUERY_KINDS = ("entity-aspect", "natural")
#: The CDV split's aspect names that are not headings of radsift's aspect map.
CDV_ASPECTS = {"exams and tests": "tests", "genetic changes": "genetics", "susceptibility": "risk_factors",
               "information": "information"}


@dataclass
class PassageQuery:
    """One query: its id, its texts by kind and its gold passage rows."""

    id: str
    texts: dict[str, str]
    gold: frozenset[int]


@dataclass
class PassageData:
    """A pool of passages and the queries over it."""

    passages: list[str]
    passage_ids: list[str]
    queries: list[PassageQuery]
    source: str = ""
    notes: list[str] = field(default_factory=list)


def cdv_aspect(aspect: str) -> str:
    """The radsift aspect of a CDV aspect name (``exams and tests`` -> ``tests``)."""
    from radsift.text.aspects import resolve_aspect

    return CDV_ASPECTS.get(aspect) or resolve_aspect(aspect)


def load_cdv(cdv_dir: str | Path, medquad_dir: str | Path) -> PassageData:
    """The CDV test split as a :class:`PassageData` (both query kinds)."""
    from radsift.corpus.medquad import read_cdv_test
    from radsift.text.aspects import entity_aspect_text

    split = read_cdv_test(cdv_dir, medquad_dir)
    rows = {p.id: i for i, p in enumerate(split.passages)}
    queries = [PassageQuery(q.id, {"entity-aspect": entity_aspect_text(q.entity, cdv_aspect(q.aspect)),
                                   "natural": q.text}, frozenset(rows[g] for g in q.gold))
               for q in split.queries]
    return PassageData([p.text for p in split.passages], [p.id for p in split.passages], queries,
                       source=f"{cdv_dir} + {medquad_dir}")


def candidate_lists(bm25, queries: Sequence[str], golds: Sequence[frozenset[int]], depth: int = DEPTH) -> list[list[int]]:
    """Per query: BM25's top ``depth`` pool rows, then the gold rows it missed (ascending)."""
    from radsift.ranking import top_k

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
    from radsift.ranking import top_k

    out = []
    for s, cand, gold in zip(scores, candidates, golds):
        rows, _ = top_k(np.asarray(s), k)
        out.append(any(cand[r] in gold for r in rows))
    return out


def recall_summary(hits: Sequence[bool]) -> dict[str, float]:
    """Share of hits with its Wilson 95% interval (as fractions)."""
    from radsift.evaluation.stats import wilson_interval

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
    from radsift.evaluation.systems.passage_systems import BM25Passages

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


#: ``split`` of :func:`bench_passages`: the CDV test split (never tuned on) or the development split.
SPLITS = ("test", "dev")


def load_dev(cdv_dir: str | Path, medquad_dir: str | Path) -> PassageData:
    """The development split as the protocol's data: the answers of the MedQuAD documents that
    ``radsift train --recipe entity-aspect`` holds out with its default ``dev_fraction`` and
    ``heldout_seed`` (outside the CDV test split; the split to tune on)."""
    from radsift.corpus.medquad import read_medquad, test_document_ids
    from radsift.models.training.config import TrainConfig
    from radsift.models.training.entity_aspect import dev_passage_data, split_medquad

    defaults = TrainConfig()
    _, dev = split_medquad(read_medquad(medquad_dir), test_document_ids(cdv_dir), defaults.dev_fraction,
                           defaults.heldout_seed)
    return dev_passage_data(dev)


def bench_passages(out_dir: str | Path, specs: Sequence[str], *, medquad_dir: str | Path | None = None,
                   cdv_dir: str | Path | None = None, split: str = "test", kinds: Sequence[str] = QUERY_KINDS,
                   max_queries: int | None = None, seed: int = 0, threads: int | None = None, batch_size: int = 64,
                   with_latency: bool = False, max_tokens: int | None = None,
                   log: Callable[[str], None] = no_log) -> dict:
    """``radsift bench --protocol passages``: run the protocol and write ``report.json`` and ``report.md``.

    ``report.json`` holds ``results``: system -> query kind -> ``"R@1"``, ``"R@5"`` (percent) and
    their 95% intervals, then the protocol's tables, counts and settings.

    ``split``: ``test``, the CDV test split (CAPR's; never tune on it), or ``dev``, the development
    split of :func:`load_dev` (for choosing settings).

    Raises:
        ConfigError: Unknown systems, split or query kind, or missing folders (before any work).
    """
    import json
    import os

    from radsift.errors import ConfigError
    from radsift.evaluation.report import prepare_out_dir
    from radsift.evaluation.systems.passage_systems import (build_passage_systems, check_passage_specs,
                                                     parse_passage_system)

    data_dir = Path("../shared/data")
    medquad_dir = Path(medquad_dir) if medquad_dir else data_dir / "medquad"
    cdv_dir = Path(cdv_dir) if cdv_dir else data_dir / "medquad-cdv-test"
    for flag, path in (("--medquad", medquad_dir), ("--cdv", cdv_dir)):
        if not Path(path).is_dir():
            raise ConfigError(f"{flag} {path}: folder not found (the passages protocol reads MedQuAD and its CDV "
                              "test split; by default from ../shared/data)")
    if split not in SPLITS:
        raise ConfigError(f"unknown split {split!r}; known: {', '.join(SPLITS)}")
    unknown = [k for k in kinds if k not in QUERY_KINDS]
    if unknown:
        raise ConfigError(f"unknown query kind {unknown[0]!r}; known: {', '.join(QUERY_KINDS)}")
    parsed = [parse_passage_system(s) for s in (specs or ["bm25", "dense"])]
    check_passage_specs(parsed)
    prepare_out_dir(out_dir)
    t0 = time.perf_counter()
    data = load_cdv(cdv_dir, medquad_dir) if split == "test" else load_dev(cdv_dir, medquad_dir)
    log(f"read {len(data.passages)} passages and {len(data.queries)} queries ({data.source})")
    systems = build_passage_systems(parsed, threads=threads, batch_size=batch_size, max_tokens=max_tokens)
    result = run_passages(data, systems, kinds=kinds, max_queries=max_queries, seed=seed, log=log)
    report: dict = {"protocol": KEY, "results": report_json(result), **result.to_dict()}
    report["data"] = {k: v for k, v in result.data.items() if k != "per_query_hit1"}
    if with_latency:
        log(f"latency: {LATENCY_PASSAGES} passages per query ...")
        report["latency"] = latency(build_passage_systems(parsed, threads=threads, batch_size=batch_size,
                                                          max_tokens=max_tokens),
                                    data.passages, data.queries[0].texts[kinds[0]])
        report["latency_load"] = os.getloadavg()[0] if hasattr(os, "getloadavg") else None
    report["seconds"] = round(time.perf_counter() - t0, 1)
    report["settings"] = {"systems": [s.label for s in parsed], "split": split, "kinds": list(kinds),
                          "max_queries": max_queries,
                          "seed": seed, "threads": threads, "max_tokens": max_tokens, "medquad": str(medquad_dir), "cdv": str(cdv_dir),
                          "cpus": os.cpu_count()}
    out = Path(out_dir)
    (out / "report.json").write_text(json.dumps(report, indent=2, default=str) + "\n", encoding="utf-8")
    title = TITLE if split == "test" else TITLE.replace("CDV test split", "development split")
    lines = [f"# {title}", "", f"Pool and queries: {data.source}.", "", result.description, ""]
    for table in result.tables:
        lines += [f"## {table.title}", "", "| " + " | ".join(table.columns) + " |",
                  "|" + "---|" * len(table.columns)] + ["| " + " | ".join(map(str, r)) + " |" for r in table.rows]
        lines += ["", table.note, ""]
    if with_latency:
        lines += [f"## Latency: ms to score {LATENCY_PASSAGES} passages for one query ({os.cpu_count()} cores, "
                  f"load {report['latency_load']})", "", "| system | pre-encoded | with encoding |", "|---|---|---|"]
        lines += [f"| {r['system']} | {r['ms_pre_encoded']} | {r['ms_with_encoding']} |" for r in report["latency"]]
    (out / "report.md").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return report
