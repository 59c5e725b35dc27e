"""Candidate engine against exact engine: agreement of the page and the counts, and latency, in one run.

Run (builds what is missing under --workdir with the hashing encoder, then compares):
    PYTHONPATH=src .venv/bin/python benchmarks/bench_candidates.py --corpus openi:1 --corpus openi:10 --backend hnsw
    PYTHONPATH=src .venv/bin/python benchmarks/bench_candidates.py --corpus demo --corpus openi:1 --corpus mtsamples

``openi:N`` is Open-i (../shared/data/openi/reports.csv) copied N times (report ids suffixed), ``demo`` 2,000
reports of the demo generator, ``demo:N`` N reports as ``bench_scale_e2e.py`` makes them (the issue's 45,000), ``mtsamples`` the distinct MTSamples notes; ``--index DIR`` compares any index.

Each index is opened with the hashing encoder (no model: the query encoding is not what is timed; the
timings are of the rest of the search). For each query (the demo generator's example queries, the
lexicon's findings as "X" and "no X", a fixed list of chest X-ray queries) and each setting (mode x
level x page), both engines run (``RADSIFT_ENGINE``); a query agrees when its page (report ids, unit
texts, ranks) and its ``total`` / ``matching`` counts are the same. Prints one row per index with the
agreement rate, the counts' agreement, the p50 of each engine and the load average. ``--kind open`` runs the
findings outside the lexicon instead (``benchmarks/data/open_vocab_findings.tsv``, "X" and "no X", the first
``--open-limit`` findings; only the queries read as an open-vocabulary finding count), over :data:`OPEN_SETTINGS`,
and adds ``lower_bound`` to the counts compared; ``--kind section`` runs the queries of the default list with
section units (``unit="section"``) in every setting and timing; ``--kind beside`` runs lay phrasings (:data:`LAY`), report wording
outside the lexicon (:data:`WORDED`) and the description benchmark's queries (``benchmarks/data/description_queries.tsv``) with the right concept
linked (forced: the hashing encoder links nothing), those whose link stands beside the literal reading, over
:data:`BESIDE_SETTINGS` (``bm25`` never links; ``--read-as literal``: the same queries without the link).
``--gap G`` runs every search with calibrated tier boosts (``Index.tier_gap``); ``--prf`` with pseudo-relevance
feedback. Scores, fused scores and relevance are compared unrounded (bit for bit), with the bands. ``--alternate``
times the indexes in turn, query by query, in one run (no agreement runs) and gives each index's p50 over
the first's (Open-i x10 over x1: the target of issue 33 item 1):
    PYTHONPATH=src .venv/bin/python benchmarks/bench_candidates.py --corpus openi:1 --corpus openi:10 \
        --backend hnsw --alternate --reps 3
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np

FIXED = ["pneumothorax", "no pneumothorax", "pleural effusion", "no pleural effusion", "cardiomegaly",
         "enlarged heart", "right lower lobe consolidation", "pulmonary edema", "calcified granuloma",
         "endotracheal tube", "rib fracture", "hiatal hernia", "no acute cardiopulmonary abnormality",
         "tortuous aorta", "interstitial opacities", "small left pleural effusion", "no right pneumothorax",
         # places of the mediastinum and hila, lay normals, open phrases ranked before the normal-only units
         "right hilar mass", "mediastinal lymphadenopathy", "no hilar adenopathy", "heart and lungs are okay",
         "wet lungs", "hyperexpanded lungs",
         # a query's parts read on their own, the mid zone and the lung behind the heart
         "pneumonia with fluid around the lung", "hiatal hernia, lungs clear", "left midlung scarring",
         "pneumonia behind the heart",
         # a change since the last study: alone, beside a finding, a lobe, a removal
         "new pleural effusion", "stable cardiomegaly", "improving right lower lobe pneumonia", "PICC line removed",
         "worse than last time", "no new opacity",
         # a finding read with its alternatives (pneumonia: consolidation, infiltrate, airspace disease)
         "pneumonia", "new pneumonia", "right lower lobe pneumonia getting better",
         # a degree, alone and beside a change and a lobe; lay words for a base
         "small pneumothorax", "severe emphysema", "small new left pleural effusion", "scarring at the bottom of the lungs",
         # two things at once: each part linked, a device by its parts, a place beside two findings (own_reading)
         "curved spine and a twisted aorta", "pacemaker with a hiatal hernia", "bibasilar atelectasis and cardiomegaly",
         "emphysema with biapical scarring",
         # a finding without another (the absence never filled), COPD read with emphysema, a mediastinal place in
         # everyday words, a pattern of the look (alone, beside a lobe, beside two findings)
         "cardiomegaly without pleural effusion", "pleural effusion in a patient with COPD", "metal clips near the heart",
         "streaky left basilar opacity", "bibasilar subsegmental atelectasis", "perihilar opacities with cardiomegaly",
         # an absence beside a finding asked present weighs less (tiers.weights), an old finding (a change bit), a
         # finding's signs (the lexicon's signs)
         "chest port, no pneumothorax", "emphysema without signs of CHF", "old compression fracture",
         "healed rib fracture", "pacemaker with no signs of heart failure", "heart failure",
         # lobes asked apart (one key more), the airspace words' alternatives, a base in everyday words, the mediastinum
         # in everyday words, a bone place, a change read apart from the linked words
         "RML and RLL infiltrates", "opacities in the right middle lobe and lingula", "left midzone consolidation",
         "density low in the left chest", "growth between the lungs", "cracked shoulder blade",
         "lung nodule is growing", "compression deformity",
         # a state denied without its copula, a bone called intact, a change denied, perihilar in everyday words, a
         # mediastinal mass, an ill-defined margin
         "lungs not overexpanded", "clavicle intact", "no increase in the pleural effusion",
         "no significant change since the prior study", "hazy opacity around the right hilum", "paratracheal mass",
         "ill-defined opacity in the left lower lobe",
         # a heart chamber's side: no side of the chest, and asked of the chambers when it is the query's side
         "catheter tip in the right atrium", "enlarged left atrium", "right pleural effusion with a pacemaker"]
SETTINGS = [{"mode": "hybrid", "level": "report"}, {"mode": "hybrid", "level": "sentence"},
            {"mode": "dense", "level": "report"}, {"mode": "bm25", "level": "report"},
            {"mode": "hybrid", "level": "report", "offset": 20}, {"mode": "hybrid", "level": "report", "target": "impression"},
            {"mode": "bm25", "level": "report", "offset": 20}, {"mode": "bm25", "level": "report", "target": "impression"},
            {"mode": "bm25", "level": "sentence"}]

#: The settings of the open-vocabulary queries (``--kind open``): the modes, a page, a section, a filter-free set.
OPEN_SETTINGS = [{"mode": "hybrid", "level": "report"}, {"mode": "hybrid", "level": "sentence"},
                 {"mode": "dense", "level": "report"}, {"mode": "bm25", "level": "report"},
                 {"mode": "hybrid", "level": "report", "offset": 20}]
OPEN_FINDINGS = Path(__file__).resolve().parent / "data" / "open_vocab_findings.tsv"

#: The settings of the readings with a link beside them (``--kind beside``): the modes that link (``bm25`` never
#: does), both levels, a page, a section target, section units.
BESIDE_SETTINGS = [{"mode": "hybrid", "level": "report"}, {"mode": "hybrid", "level": "sentence"},
                   {"mode": "dense", "level": "report"}, {"mode": "dense", "level": "sentence"},
                   {"mode": "hybrid", "level": "report", "offset": 20},
                   {"mode": "hybrid", "level": "report", "target": "impression"},
                   {"mode": "hybrid", "level": "report", "unit": "section"}]
DESCRIPTIONS = Path(__file__).resolve().parent / "data" / "description_queries.tsv"
#: Lay phrasings -> the concept a right link gives them (``--kind beside``, with the description benchmark's).
LAY = {"fluid around the lungs": "pleural effusion", "no fluid around the lungs": "pleural effusion",
       "water on the lungs": "pulmonary edema", "fluid in the lungs": "pulmonary edema",
       "no fluid in the lungs": "pulmonary edema", "collapsed lung": "pneumothorax", "no collapsed lung": "pneumothorax",
       "big heart": "cardiomegaly", "the heart is big": "cardiomegaly", "heart is not enlarged": "cardiomegaly",
       "broken rib": "rib fracture", "no broken ribs": "rib fracture", "lung infection": "pneumonia",
       "possible lung infection": "pneumonia", "no lung infection": "pneumonia", "partly collapsed lung": "atelectasis",
       "breathing tube": "endotracheal tube", "spot on the lung": "nodule", "curved spine": "scoliosis",
       "heart device": "pacemaker", "hardened arteries": "atherosclerotic calcification",
       "stomach pushing into the chest": "hiatal hernia", "wires in the breastbone": "sternotomy wires",
       "old scar in the lung": "scarring", "overinflated lungs": "hyperinflation",
       "line in the neck vein": "central venous catheter", "cloudy lung": "lung opacity",
       "small left fluid around the lung": "pleural effusion", "right lower lobe lung infection": "pneumonia"}
#: Report wording outside the lexicon -> a concept a link could give it: phrases many reports hold (the lay
#: phrasings above rarely occur in radiology reports, so their literal reading seldom stays), as "X" and "no X".
WORDED = {"heart size": "cardiomegaly", "mediastinal contours": "enlarged cardiomediastinum",
          "cardiomediastinal silhouette": "enlarged cardiomediastinum", "pulmonary vascularity": "vascular congestion",
          "lung volumes": "low lung volumes", "costophrenic angles": "blunted costophrenic angle",
          "osseous structures": "acute osseous abnormality", "bony structures": "fracture",
          "thoracic spine": "degenerative change", "aorta": "aortic tortuosity", "diaphragm": "diaphragmatic flattening",
          "lung fields": "lung opacity", "hilar contours": "enlarged cardiomediastinum", "trachea": "mediastinal shift",
          "interstitial markings": "interstitial opacity", "surgical changes": "surgical clips",
          "upper abdomen": "cholecystectomy", "left lung base": "atelectasis", "right hemidiaphragm": "pleural effusion",
          "possible pulmonary vascularity": "pulmonary edema"}

#: The settings timed (the first is the headline: hybrid, report level, k 10).
TIMED = [{"mode": "hybrid", "level": "report"}, {"mode": "bm25", "level": "report"}, {"mode": "dense", "level": "report"}]


def queries(index) -> list[str]:
    from radsift.demo import load_example_queries
    out = list(FIXED) + [q for _, q in load_example_queries()]
    for f in list(index.store.manifest.findings)[:40] if hasattr(index, "store") else []:
        name = f.replace("_", " ")
        out += [name, f"no {name}"]
    return list(dict.fromkeys(out))


def kind_of(kind: str, index, open_limit: int, settings=SETTINGS, timed=TIMED) -> tuple[list[str], list, list]:
    """(queries, settings compared, settings timed) of a query kind (lexicon, open, section)."""
    if kind == "open":
        return open_queries(index, open_limit), OPEN_SETTINGS, timed
    if kind == "beside":
        return beside_queries(index), BESIDE_SETTINGS, [kw for kw in timed if kw["mode"] != "bm25"]
    if kind == "section":
        return queries(index), [{**kw, "unit": "section"} for kw in settings], [{**kw, "unit": "section"} for kw in timed]
    return queries(index), settings, timed


def open_queries(index, limit: int) -> list[str]:
    """"X" and "no X" of the first ``limit`` findings outside the lexicon, those read as an open finding."""
    rows = OPEN_FINDINGS.read_text(encoding="utf-8").splitlines()[1:limit + 1]
    out = []
    for line in rows:
        name = line.split("\t")[0]
        for q in (name, f"no {name}"):
            if any(not f.labeled for f in index.read(q).findings):
                out.append(q)
    return out


def beside_queries(index) -> list[str]:
    """:data:`LAY`, :data:`WORDED` and the description benchmark's queries, each linked to its concept (the right link, forced:
    the hashing encoder links nothing), kept where the link stands beside the literal reading (the index holds
    the query's phrases, as ``read_as=both`` needs)."""
    from radsift.search.query import normalize_query
    rows = [line.split("\t") for line in DESCRIPTIONS.read_text(encoding="utf-8").splitlines()[1:]]
    known = set(index.store.manifest.findings)
    worded = [(q, f) for w, f in WORDED.items() for q in (w, f"no {w}")]
    links = {normalize_query(q): f for q, f in [*LAY.items(), *worded, *((r[1], r[2]) for r in rows)] if f in known}
    force_links(index, links)
    return [q for q in links if any(f.beside for f in index.read(q).findings)]


def force_links(index, links: dict) -> None:
    """Link each query of ``links`` to its concept wherever the search links (modes that use the encoder)."""
    from radsift.ranking import NEEDS_DENSE
    from radsift.search.concepts import Link

    def link_function(mode, query, query_vector):
        concept = links.get(query)
        return (lambda text: Link(concept, 1.0, concept)) if NEEDS_DENSE[mode] and concept else None
    index._link_function = link_function


#: ``--read-as``: how a linked query is read (``literal`` drops the link: the same queries without it).
READ_AS = ["both"]
#: ``--prf``: every search with pseudo-relevance feedback.
PRF = [False]


def run(index, q: str, engine: str, **kw):
    os.environ["RADSIFT_ENGINE"] = engine
    t = time.perf_counter()
    res = index.search(q, k=10, mentions=False, include_report=False, read_as=READ_AS[0], prf=PRF[0], **kw)
    ms = (time.perf_counter() - t) * 1000
    # the scores unrounded (score, fused score before tiers, relevance): bit for bit
    page = [(h.report_id, h.sentence.text, h.band, h.score, h.fused, h.relevance) for h in res]
    return page, (res.total, res.matching, res.lower_bound), ms


#: Searches the candidate engine answered (the rest of those run with RADSIFT_ENGINE=candidates were routed
#: to the exact engine: hybrid-rrf, open-vocabulary findings, ...).
ANSWERED = [0]


def _count_answers() -> None:
    from radsift.search import walk
    real = walk.candidate_page
    if getattr(real, "counted", False):
        return

    def counted(*args, **kwargs):
        ANSWERED[0] += 1
        return real(*args, **kwargs)
    counted.counted = True
    walk.candidate_page = counted


class CachedDense:
    """A vector backend answering each query vector it has seen from memory: timings without the backend."""

    def __init__(self, backend) -> None:
        self.backend, self.kept = backend, {}
        self.pushdown = getattr(backend, "pushdown", False)

    def scores(self, query, mask=None, **hints):
        key = (np.asarray(query).tobytes(), None if mask is None else id(mask))
        if key not in self.kept:
            self.kept[key] = self.backend.scores(query, mask, **hints)
        return self.kept[key]


def _cache_dense(index) -> None:
    real = index._backend
    wrapped = {}

    def backend(store, kind):
        b = real(store, kind)
        return wrapped.setdefault(id(b), CachedDense(b))
    index._backend = backend


def alternate(paths: list[str], backend: str, reps: int, model: Path, kind: str = "lexicon",
              open_limit: int = 40, gap: float | None = None) -> list[dict]:
    """p50 of each timed setting and engine on each index, the indexes timed in turn query by query (so a
    change of load on a shared machine falls on all of them alike), and each index's p50 over the first's."""
    from radsift.models.hashing import HashingEncoder
    from radsift.search import Index
    indexes = [Index.open(p, encoder=HashingEncoder(model), backend=backend) for p in paths]
    for index in indexes:
        index.tier_gap = gap
    qs, _, timed = kind_of(kind, indexes[0], open_limit)
    for index in indexes[1:]:  # --kind beside: the same links on every index
        index._link_function = indexes[0]._link_function
    times: list[dict] = [{} for _ in indexes]
    for kw in timed:
        for _ in range(reps):
            for q in qs:
                for index, got in zip(indexes, times):
                    for eng in ("exact", "candidates"):
                        got.setdefault(f"{kw['mode']}/{eng}", []).append(run(index, q, eng, **kw)[2])
    p50 = [{k: float(np.percentile(v, 50)) for k, v in got.items()} for got in times]
    return [{"index": path, "alternate": True, "kind": kind, "gap": gap, "prf": PRF[0], "queries": len(qs), "reps": reps,
             "p50_ms": {k: round(v, 2) for k, v in mine.items()},
             f"p50_over_{Path(paths[0]).name}": {k: round(v / p50[0][k], 2) for k, v in mine.items()},
             "load": tuple(round(x, 2) for x in os.getloadavg())} for path, mine in zip(paths, p50)]


def compare(path: str, backend: str, settings=SETTINGS, reps: int = 1, model: Path = Path("/tmp/cand-bench/model"),
            cached_dense: bool = False, agreement: bool = True, kind: str = "lexicon", open_limit: int = 40,
            gap: float | None = None) -> dict:
    from radsift.errors import ConfigError
    from radsift.models.hashing import HashingEncoder
    from radsift.search import Index
    index = Index.open(path, encoder=HashingEncoder(model), backend=backend)
    index.tier_gap = gap
    _count_answers()
    ANSWERED[0] = 0
    qs, settings, timed = kind_of(kind, index, open_limit, settings)
    same = counts_same = n = full = 0
    times = {"exact": [], "candidates": []}
    by_mode = {}
    bad = []
    for kw in settings if agreement else ():
        for q in qs:
            try:
                a, ca, _ = run(index, q, "exact", **kw)
            except ConfigError as exc:  # a setting the index lacks (no impression section)
                bad.append((q, kw, repr(exc)[:80]))
                continue
            b, cb, _ = run(index, q, "candidates", **kw)
            n += 1
            same += [x[:2] for x in a] == [x[:2] for x in b]
            counts_same += ca == cb
            full += a == b
            if ([x[:2] for x in a] != [x[:2] for x in b] or ca != cb) and len(bad) < 8:
                bad.append((q, kw, ca, cb))
    answered = ANSWERED[0]
    if cached_dense:
        _cache_dense(index)
        for kw in timed:  # fill the cache
            for q in qs:
                run(index, q, "exact", **kw)
    for kw in timed:
        for _ in range(reps):
            for q in qs:
                for eng in ("exact", "candidates"):
                    ms = run(index, q, eng, **kw)[2]
                    by_mode.setdefault(f"{kw['mode']}/{eng}", []).append(ms)
                    if kw is timed[0]:
                        times[eng].append(ms)
    vector_backend = index._backend(index.store, "sentence")
    vecs = [index.encoder.encode_query(q) for q in qs]
    for _ in range(reps):
        for v in vecs:
            t = time.perf_counter()
            vector_backend.scores(v)
            by_mode.setdefault("backend.scores", []).append((time.perf_counter() - t) * 1000)
    return {"index": path, "kind": kind, "gap": gap, "prf": PRF[0], "queries": len(qs), "backend": backend, "units": int(index.store.units("sentence").report_row.shape[0]) if hasattr(index, "store") else None,
            "runs": n, "top10_same": round(same / max(n, 1), 4), "counts_same": round(counts_same / max(n, 1), 4),
            "scores_bands_same": round(full / max(n, 1), 4), "answered_by_candidates": answered,
            "p50_exact_ms": round(float(np.percentile(times["exact"], 50)), 2),
            "p50_cand_ms": round(float(np.percentile(times["candidates"], 50)), 2),
            "dense_cached": cached_dense, "p50_ms": {k: round(float(np.percentile(v, 50)), 2) for k, v in by_mode.items()},
            "load": tuple(round(x, 2) for x in os.getloadavg()), "disagreements": bad}


DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"


def corpus_index(spec: str, work: Path) -> str:
    """The index of ``spec`` under ``work`` (built with the hashing encoder when absent)."""
    import dataclasses

    from radsift.corpus import ReaderOptions, read_corpus
    from radsift.demo import generate_reports
    from radsift.index import build_index
    from radsift.models.hashing import HashingEncoder

    name = spec.replace(":", "")
    path = work / name
    if (path / "CURRENT").exists():
        return str(path)
    enc = HashingEncoder(work / "model")
    if spec == "demo":
        reports = [d.report for d in generate_reports(n=2000, seed=7)]
    elif spec.startswith("demo:"):  # the synthetic corpus: bench_scale_e2e's reports (image references)
        sys.path.insert(0, str(Path(__file__).resolve().parent))
        from bench_scale_e2e import reports as scale_reports
        reports = list(scale_reports(int(spec.split(":")[1])))
    elif spec == "mtsamples":
        sys.path.insert(0, str(Path(__file__).resolve().parent))
        from bench_negation import mtsamples_index
        return str(mtsamples_index(work, DATA / "mtsamples" / "mtsamples.csv", enc).store.index_dir)
    else:
        copies = int(spec.split(":")[1])
        options = ReaderOptions(format="csv", id_column="uid",
                                sections={"findings": "findings", "impression": "impression"})
        base = list(read_corpus([DATA / "openi" / "reports.csv"], options))
        reports = [r if c == 0 else dataclasses.replace(r, id=f"{r.id}-c{c}") for c in range(copies) for r in base]
    build_index(path, reports, encoder=enc, progress=False)
    return str(path)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--index", action="append", default=[])
    ap.add_argument("--corpus", action="append", default=[],
                    help="demo, demo:N (N reports as bench_scale_e2e.py makes them), mtsamples or openi:COPIES")
    ap.add_argument("--workdir", type=Path, default=Path("/tmp/cand-bench"))
    ap.add_argument("--backend", default="auto")
    ap.add_argument("--reps", type=int, default=1)
    ap.add_argument("--kind", choices=("lexicon", "open", "section", "beside"), default="lexicon",
                    help="lexicon: the fixed, example and lexicon queries; open: findings outside the lexicon; "
                         "section: the lexicon queries with section units; beside: lay phrasings and descriptions "
                         "with a link forced beside their literal reading")
    ap.add_argument("--open-limit", type=int, default=40, help="--kind open: the first N findings of the list")
    ap.add_argument("--gap", type=float, default=None,
                    help="calibrated tier boosts: each reading tier costs GAP times the score spread (default strict)")
    ap.add_argument("--read-as", choices=("both", "literal"), default="both",
                    help="literal: the queries read without their link (--kind beside: the same queries, no link)")
    ap.add_argument("--prf", action="store_true",
                    help="every search with pseudo-relevance feedback")
    ap.add_argument("--timing-only", action="store_true", help="skip the agreement runs")
    ap.add_argument("--cached-dense", action="store_true",
                    help="time without the vector backend: each query's dense scores computed once, then kept")
    ap.add_argument("--alternate", action="store_true",
                    help="time the indexes in turn, query by query, and give each one's p50 over the first's")
    args = ap.parse_args(argv)
    READ_AS[0] = args.read_as
    PRF[0] = args.prf
    args.workdir.mkdir(parents=True, exist_ok=True)
    paths = [corpus_index(spec, args.workdir) for spec in args.corpus] + args.index
    if args.alternate:
        for row in alternate(paths, args.backend, args.reps, args.workdir / "model", args.kind, args.open_limit,
                             args.gap):
            print(row, flush=True)
        return 0
    for path in paths:
        row = compare(path, args.backend, reps=args.reps, model=args.workdir / "model", cached_dense=args.cached_dense,
                      agreement=not args.timing_only, kind=args.kind, open_limit=args.open_limit, gap=args.gap)
        print(row, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
