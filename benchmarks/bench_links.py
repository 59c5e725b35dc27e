"""Concept links beside the user's words (issue 35, item 1): link precision, literal readings kept, and the
description benchmark's ranking, for the checkout on PYTHONPATH (run it on the code before and after a change).

Run:  PYTHONPATH=src .venv/bin/python benchmarks/bench_links.py [--splits dev test] [--work DIR] [--index DIR]
                                                               [--mtsamples-index DIR] [--out FILE] [--link-threshold T]

Measured with the packaged all-MiniLM-L6-v2 on the Open-i index (built once into ``--work``, as
``bench_descriptions.py`` builds it):

- link precision and recall on the description queries (``description_queries.tsv``), development and test
  split, on the second development batch (``description_queries_dev2.tsv``: its ``none`` rows describe
  nothing on a chest film, so a link there is wrong) and on the third batch (``description_queries_v3.tsv``,
  written and committed before any linker run on it, split dev3 / test3 by ``newcomer.split_of``; ``none``
  rows as in dev2), as ``radsift search`` links: every ``linked`` finding of the index's reading of the query
  (``Index.read``: a link beside the user's words or in their place, each of a query's parts read), each link
  counted; the later batches (v4 ... v8) likewise; ``link_dev_pooled`` is every development batch together (the figure
  the linker's rules are chosen on), ``link_test_pooled`` every test split;
- the 141 findings outside the lexicon (``open_vocab_findings.tsv``), less those the packaged lexicon has come to
  name word for word since (``now_in_lexicon``): the share whose reading holds no link (every link there, beside
  the words or in their place, is wrong), and, over an MTSamples index (``--mtsamples-index``: any index of the
  distinct MTSamples notes; its encoder is not used), the share whose literal reading is kept (the phrase
  occurs in those notes, so a link may only stand beside it);
- mAP / P@10 of the description queries (hybrid + concepts, the default) and of the Open-i weak-label
  queries (hybrid, negation ignored), report level, k = 1000.

``--splits dev`` measures the development data only: no test figure (link or mAP) is computed or printed, so
the linker can be worked on without looking at the test splits.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_descriptions import (
    DATA,
    QUERIES,
    evaluate,
    lexicon_names,
    open_index,
    outside_findings,
    read_queries,
    relevant_reports,
    use,
    uses_examples,
    weak_label_queries,
    without_examples,
)


DEV2 = QUERIES.with_name("description_queries_dev2.tsv")
V3 = QUERIES.with_name("description_queries_v3.tsv")
#: The fourth batch (session 10): written blind after the lexicon's everyday names, split by the same hash.
V4 = QUERIES.with_name("description_queries_v4.tsv")
#: The fifth batch (session 18): written blind after the lexicon's mediastinal mass and everyday names, same split.
V5 = QUERIES.with_name("description_queries_v5.tsv")
#: The sixth batch (written in session 21, committed in session 22 before any linker run on it), same split.
V6 = QUERIES.with_name("description_queries_v6.tsv")
#: The seventh batch (written blind and committed in session 23 before any linker run on it), same split.
V7 = QUERIES.with_name("description_queries_v7.tsv")
#: The eighth batch (written blind and committed in session 25 before any linker run on it), same split.
V8 = QUERIES.with_name("description_queries_v8.tsv")


def link_rows(idx, texts: list[str]) -> list[tuple[str, ...]]:
    """The concepts each text links to as a search reads it (:meth:`radsift.search.Index.read`, hybrid mode): every
    ``linked`` finding of its reading, a link beside the literal reading or in its place, in query order (empty: no
    link). The search's reading splits a query into its parts, so a query may link twice ("asthmatic child, ? thick
    airway walls": the asthma too)."""
    return [tuple(f.finding for f in idx.read(" ".join(text.split())).findings if f.source == "linked")
            for text in texts]


def precision(queries: list[dict], got: list[tuple[str, ...]]) -> dict:
    """Link precision and recall, over every link a search makes: a link naming the row's concept is right, any
    other wrong (a link on a ``none`` row, which describes nothing on a chest film, is wrong); recall is over the rows
    that describe a concept (a row is found when one of its links names it). ``rows_all_right``: the rows whose
    every link is right, of the rows with a link."""
    links = [(g, q) for row, q in zip(got, queries) for g in row]
    right = sum(g == q["finding"] for g, q in links)
    linked_rows = [(row, q) for row, q in zip(got, queries) if row]
    described = sum(q["finding"] != "none" for q in queries)
    found = sum(q["finding"] in row for row, q in zip(got, queries) if q["finding"] != "none")
    res = {"n": len(queries), "linked": len(links), "right": right,
           "precision": round(right / len(links), 3) if links else None,
           "recall": round(found / described, 3) if described else None,
           "found": found, "described": described,
           "rows_linked": len(linked_rows),
           "rows_all_right": sum(all(g == q["finding"] for g in row) for row, q in linked_rows),
           "wrong": sorted({f"{q['query']} -> {g}" for g, q in links if g != q["finding"]})}
    if described < len(queries):
        res["none_linked"] = sum(bool(row) and q["finding"] == "none" for row, q in zip(got, queries))
    return res


def pooled(parts: list[dict]) -> dict:
    """Links, right links and precision over ``parts``, and recall over their rows that describe a concept."""
    linked = sum(p["linked"] for p in parts)
    right = sum(p["right"] for p in parts)
    found = sum(p.get("found", 0) for p in parts)
    described = sum(p.get("described", 0) for p in parts)
    return {"linked": linked, "right": right, "precision": round(right / linked, 3) if linked else None,
            "recall": round(found / described, 3) if described else None}


def batches(splits: list[str]) -> dict[str, list[dict]]:
    """The description batches of ``splits`` by name: dev, dev2, dev3 ... dev8 (and test, test3 ... test8)."""
    first = read_queries()
    out = {"dev": [q for q in first if q["split"] == "dev"], "dev2": read_queries(DEV2)}
    if "test" in splits:
        out["test"] = [q for q in first if q["split"] == "test"]
    for n, path in ((3, V3), (4, V4), (5, V5), (6, V6), (7, V7), (8, V8)):  # each later batch split dev<n> / test<n> by the query's hash
        rows = read_queries(path)
        for split in ("dev", "test"):
            if split in splits:
                out[f"{split}{n}"] = [q for q in rows if q["split"] == split]
    return out


def literal_kept(idx, notes_dir: Path, findings: list[str]) -> dict:
    """Over the MTSamples notes: the findings (as "X" and "no X") whose reading keeps the phrase as written."""
    from radsift.search import Index
    from radsift.search import reading as reading_mod

    notes = Index.open(notes_dir, encoder=idx.encoder)  # only its labels and BM25 are read
    try:
        from radsift.search.plan import literal_check
        literal = {"literal": literal_check(notes.store)}
    except ImportError:  # the code before: no literal reading beside a link
        literal = {}
    link = idx.link_function("hybrid")
    kept = occurs = 0
    lost = []
    for f in findings:
        for q in (f, f"no {f}"):
            reading = reading_mod.read_query(q, idx.labeler, link=link, **literal)
            own = [x for x in reading.findings if x.source == "open"]
            occurs += 1
            if own:
                kept += 1
            else:
                lost.append(f"{q} -> {reading.describe()}")
    return {"queries": occurs, "literal_kept": kept, "share": round(kept / occurs, 3), "lost": lost[:20]}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--work", type=Path, default=Path("/tmp/radsift-bench-descriptions"))
    parser.add_argument("--openi", type=Path, default=DATA / "openi" / "reports.csv")
    parser.add_argument("--mtsamples-index", type=Path, default=None)
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--splits", nargs="+", default=["dev", "test"], choices=["dev", "test"],
                        help="dev: development data only, no test figure computed or printed")
    parser.add_argument("--index", type=Path, default=None,
                        help="an existing index of Open-i (e.g. the quick start's, built with --adapt) in place of the "
                             "one built into --work with the packaged model")
    parser.add_argument("--link-threshold", type=float, default=None,
                        help="the model's link threshold in place of its search settings' (a sweep)")
    args = parser.parse_args()
    if not args.openi.exists():
        print(f"skipped: {args.openi} absent")
        return 0
    t0 = time.perf_counter()
    if args.index is not None:
        from radsift.search import Index

        idx = Index.open(args.index)
    else:
        idx = open_index(args.work, args.openi, None)
    if args.link_threshold is not None:
        idx.settings = dataclasses.replace(idx.settings, link_threshold=args.link_threshold)
    queries = [q for q in read_queries() if q["split"] in args.splits]
    res: dict = {"settings": str(idx.settings), "splits": args.splits}
    shipped = idx.linker
    own = {name: [q["query"] for q in qs] for name, qs in batches(["dev"]).items()}  # each batch's link examples
    for name, qs in batches(args.splits).items():
        # a development batch is measured with its own rows out of the link examples (leave one batch out)
        use(idx, without_examples(idx, shipped, own[name]) if name.startswith("dev") else shipped)
        res[f"link_{name}"] = precision(qs, link_rows(idx, [q["query"] for q in qs]))
        if name.startswith("test") and uses_examples(idx):
            # the same test split without the development half of its batch: no example of the same writer
            use(idx, without_examples(idx, shipped, own["dev" + name[4:]]))
            res[f"writer_out_{name}"] = precision(qs, link_rows(idx, [q["query"] for q in qs]))
    use(idx, shipped)
    res["link_dev_pooled"] = pooled([res[k] for k in list(res) if k.startswith("link_dev")])
    if "test" in args.splits:
        res["link_test_pooled"] = pooled([res[k] for k in list(res) if k.startswith("link_test")])
        if uses_examples(idx):
            res["writer_out_test_pooled"] = pooled([res[k] for k in list(res) if k.startswith("writer_out_test")])
    # the findings the packaged lexicon has come to name since the list was written are outside it no more: a
    # search reads them literally, as lexicon findings ("subluxation" since the dislocation concept)
    listed = outside_findings()
    named = [f for f in listed if lexicon_names(f)]
    outside = [f for f in listed if f not in named]
    got = link_rows(idx, outside)
    res["outside"] = {"n": len(outside), "now_in_lexicon": named, "linked": sum(bool(g) for g in got),
                      "precision": round(sum(not g for g in got) / len(outside), 3),
                      "links": sorted(f"{f} -> {', '.join(g)}" for f, g in zip(outside, got) if g)}
    if args.mtsamples_index is not None:
        res["outside_literal"] = literal_kept(idx, args.mtsamples_index, outside)
    qrels = {f: relevant_reports(idx, f) for f in {q["finding"] for q in queries}}
    res["descriptions_hybrid_concepts"] = evaluate(idx, [q for q in queries if q["split"] != "dev"], qrels,
                                                   mode="hybrid")
    if "dev" in args.splits:  # the first batch's development rows, without their own link examples
        use(idx, without_examples(idx, shipped, own["dev"]))
        res["descriptions_hybrid_concepts"].update(evaluate(idx, [q for q in queries if q["split"] == "dev"], qrels,
                                                            mode="hybrid"))
        use(idx, shipped)
    weak, weak_qrels = weak_label_queries(idx)
    res["weak_hybrid"] = evaluate(idx, weak, weak_qrels, mode="hybrid", negation="ignore")
    res["weak_hybrid_aware"] = evaluate(idx, weak, weak_qrels, mode="hybrid")
    res["seconds"] = round(time.perf_counter() - t0, 1)
    print(json.dumps(res, indent=1))
    if args.out:
        args.out.write_text(json.dumps(res, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
