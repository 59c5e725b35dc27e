"""Prepare, on the CPU, everything the accelerator run of issue 31 needs (``benchmarks/capr_gpu.py``).

The accelerator has no spaCy, so the entity dictionary, the training examples, the benchmark pools,
queries and candidate lists are built here, with radsift's own code, into one xz-compressed JSON bundle:

* ``train``: the notes-only training data (:func:`radsift.models.training.entity_aspect_notes.build_notes_only_data`:
  the training notes of MTSamples, the notes' own dictionary; no MedQuAD read);
* ``train_incollection``: the in-collection data (notes + MedQuAD outside the CDV test split, its
  near-duplicates, prefixes and asked pairs removed), for the secondary setting;
* ``evals``: ``notes-dev`` and ``notes-test`` (held-out MTSamples notes, rules bm25-64, bm25-64+gold,
  random-64), ``cdv-test`` (the CDV test split, both query kinds, rules bm25-64 and bm25-64+gold) and
  ``medquad-dev`` (the in-collection development split).

Usage (from the repository root, data in ../shared/data)::

    PYTHONPATH=src nice -n 10 python benchmarks/capr_prepare.py --out /tmp/capr/bundle.json.xz
"""

from __future__ import annotations

import argparse
import json
import lzma
import time
from pathlib import Path

from radsift.corpus.medquad_passages import dev_passage_data, load_cdv, passage_data_to_json
from radsift.corpus.reader import read_corpus
from radsift.evaluation.bench_passages import MTSAMPLES, MTSAMPLES_READER
from radsift.evaluation.protocols.note_passages import note_candidates
from radsift.evaluation.protocols.passage_retrieval import DEPTH, QUERY_KINDS, RULE_APPENDED, RULE_BM25, bm25_candidates
from radsift.evaluation.systems.passage_systems import BM25Passages
from radsift.models.training import load_config
from radsift.models.training.entity_aspect import load_data
from radsift.models.training.entity_aspect_data import ea_data_to_json
from radsift.models.training.entity_aspect_notes import note_passage_data, split_notes

DATA = Path("../shared/data")


def medquad_candidates(data, kinds=QUERY_KINDS) -> dict:
    """rule -> kind -> per-query candidates: BM25's top 64 (the appended rule is derived from it there)."""
    bm25 = BM25Passages()
    bm25.prepare(data.passages)
    return {RULE_BM25: {k: bm25_candidates(bm25, [q.texts[k] for q in data.queries], DEPTH) for k in kinds}}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--no-incollection", action="store_true", help="leave the in-collection setting out")
    args = ap.parse_args()
    t0 = time.perf_counter()
    say = lambda m: print(f"[{time.perf_counter() - t0:6.1f} s] {m}", flush=True)  # noqa: E731
    reports = list(read_corpus([MTSAMPLES], MTSAMPLES_READER))
    train = load_data(reports, load_config(recipe="entity-aspect", setting="notes-only"), say)
    sides = split_notes(reports)
    bundle: dict = {"train": ea_data_to_json(train), "evals": {}, "meta": {
        "notes": {s: [r.id for r in v] for s, v in sides.items()}, "dictionary_phrases": train.dictionary.phrase_count}}
    for side in ("dev", "test"):
        data = note_passage_data(sides[side], train.dictionary, source=f"{side} notes (held-out MTSamples)")
        say(f"notes-{side}: {data.notes[0]}")
        bundle["evals"][f"notes-{side}"] = {**passage_data_to_json(data),
                                             "candidates": {r: c for r, c in note_candidates(data, data.queries).items()
                                                            if r != RULE_APPENDED}}
    cdv = load_cdv(DATA / "medquad-cdv-test", DATA / "medquad")
    bundle["evals"]["cdv-test"] = {**passage_data_to_json(cdv), "candidates": medquad_candidates(cdv)}
    say(f"cdv-test: {len(cdv.passages)} passages, {len(cdv.queries)} queries")
    if not args.no_incollection:
        inc = load_data(reports, load_config(recipe="entity-aspect", setting="in-collection"), say)
        bundle["train_incollection"] = ea_data_to_json(inc)
        dev = dev_passage_data(inc.dev_docs)
        bundle["evals"]["medquad-dev"] = {**passage_data_to_json(dev), "candidates": medquad_candidates(dev)}
        say(f"medquad-dev: {len(dev.passages)} passages, {len(dev.queries)} queries")
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    with lzma.open(out, "wt", encoding="utf-8") as fh:  # xz: the accelerator's carry is 64 MiB in all
        json.dump(bundle, fh)
    say(f"wrote {out} ({out.stat().st_size / 1e6:.1f} MB)")


if __name__ == "__main__":
    main()
