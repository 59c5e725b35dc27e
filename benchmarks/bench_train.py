"""Quick evaluation and ablations of ``radsift train`` recipes on Open-i (../shared/data).

This is the in-process evaluator used while developing the recipes; the tested table of the
README comes from ``radsift bench``. Figures (see :mod:`radsift.evaluation.heldout`):
Shi et al.'s sentence retrieval mAP (positive / negative / all weak-label queries), embedding
separation, and RadSearch's findings-to-impression top-5 match rate on the held-out reports,
with McNemar against the untrained model. Each model also gets a ``MODEL+bm25`` row: its
sentence scores fused with BM25's by the convex combination of :mod:`radsift.ranking.fusion`, as
``radsift bench``'s ``hybrid`` and ``radsift search``'s default mode rank, and a
``MODEL+bm25-rrf`` row: reciprocal rank fusion (``hybrid-rrf``).

Usage::

    # evaluate model folders against BM25 and the untrained MiniLM
    python benchmarks/bench_train.py evaluate /tmp/radsift-work/models/combined [--fold 0] [--sentences all]

    # Table-1-style ablation of the lexicon recipe on the 2-fold split by finding
    python benchmarks/bench_train.py ablation --steps 80 --folds 0 1 --variants rs hs mb64 mb128 mb256

    # a reranker over its bi-encoder on the held-out sentences, at several fusion weights
    python benchmarks/bench_train.py rerank MODELS/default MODELS/rerank --weights 0.3 0.5 0.7 1.0

    # hybrid fusion: convex combination at several dense weights vs RRF, for the two fold models,
    # on the unseen findings (test) and on the fold's own findings over held-out reports (dev)
    python benchmarks/bench_train.py fusion FOLD0_MODEL FOLD1_MODEL --alphas 0.5 0.6 0.7 0.75 0.8 0.9

    # time the default recipe end to end (the < 30 minutes check)
    python benchmarks/bench_train.py default --out /tmp/radsift-work/models/default

Trained models go under $RADSIFT_WORK/models/ (default /tmp/radsift-work; never into the repository).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OPENI = ROOT.parent / "shared" / "data" / "openi" / "reports.csv"
# Outside the repository; RADSIFT_WORK moves it (e.g. somewhere that survives a reboot, unlike /tmp).
WORK = Path(os.environ.get("RADSIFT_WORK", "/tmp/radsift-work"))

#: Ablation variants: name -> training settings (lexicon-triplet, batch 32 unless said).
VARIANTS = {
    "rs": dict(recipe="lexicon-triplet", negatives="random", mega_batch_size=32),
    "hs": dict(recipe="lexicon-triplet", negatives="hardest", mega_batch_size=32),
    "mb64": dict(recipe="lexicon-triplet", negatives="hardest", mega_batch_size=64),
    "mb128": dict(recipe="lexicon-triplet", negatives="hardest", mega_batch_size=128),
    "mb256": dict(recipe="lexicon-triplet", negatives="hardest", mega_batch_size=256),
    "rs-mb128": dict(recipe="lexicon-triplet", negatives="random", mega_batch_size=128),
    "mnrl-mb128": dict(recipe="lexicon-mnrl", negatives="hardest", mega_batch_size=128),
    "mnrl-s10-mb128": dict(recipe="lexicon-mnrl", negatives="hardest", mega_batch_size=128, scale=10.0),
    "sum-mb128": dict(recipe="lexicon-mnrl", loss="mnrl+triplet", negatives="hardest", mega_batch_size=128),
    "sumq-mb128": dict(recipe="lexicon-mnrl", loss="mnrl+triplet", negatives="hardest", mega_batch_size=128,
                       query_margin=0.5),
    "sumq-frz-mb128": dict(recipe="lexicon-mnrl", loss="mnrl+triplet", negatives="hardest", mega_batch_size=128,
                           query_margin=0.5, freeze_embeddings=True),
    "sumq-a0-mb128": dict(recipe="lexicon-mnrl", loss="mnrl+triplet", negatives="hardest", mega_batch_size=128,
                          query_margin=0.5, query_sampling_alpha=0.0),
    "sumq-swap25-mb128": dict(recipe="lexicon-mnrl", loss="mnrl+triplet", negatives="hardest", mega_batch_size=128,
                              query_margin=0.5, name_swap=0.25),
    "sumq-swap50-mb128": dict(recipe="lexicon-mnrl", loss="mnrl+triplet", negatives="hardest", mega_batch_size=128,
                              query_margin=0.5, name_swap=0.5),
    "combined": dict(recipe="combined"),
    "combined-swap25": dict(recipe="combined", name_swap=0.25),
    "findings-impression": dict(recipe="findings-impression"),
}


def read_openi():
    from radsift.corpus import ReaderOptions, ReadStats, read_corpus

    if not OPENI.exists():
        sys.exit(f"../shared/data absent: this benchmark needs {OPENI}")
    options = ReaderOptions.from_cli(format="csv", id_column="uid",
                                     sections=["findings=findings", "impression=impression"],
                                     text_column=None, on_error="fail")
    return list(read_corpus([OPENI], options, ReadStats()))


def load_st(path):
    from sentence_transformers import SentenceTransformer

    from radsift.models.encoder import resolve_model_path

    return SentenceTransformer(str(resolve_model_path(path)), device="cpu", local_files_only=True)


def evaluate_systems(data, models: dict[str, str | None], config, sentences: str) -> dict[str, dict]:
    """BM25 and each model (name -> folder, None = untrained) on the evaluation set of ``data``."""
    from radsift.evaluation.heldout import (eval_set, evaluate_bm25, evaluate_encoder, evaluate_hybrid,
                                                  model_encode_fn)

    es = eval_set(data, sentences=sentences)
    out = {"bm25": evaluate_bm25(es)}
    for name, path in models.items():
        t = time.monotonic()
        out[name] = evaluate_encoder(model_encode_fn(load_st(path), config), es)
        out[name]["eval_seconds"] = round(time.monotonic() - t, 1)
        if "scores" in out[name]:  # radsift search's default mode (and the RRF one): the model fused with BM25
            out[f"{name}+bm25"] = evaluate_hybrid(out[name], out["bm25"], es)
            out[f"{name}+bm25-rrf"] = evaluate_hybrid(out[name], out["bm25"], es, fusion="rrf")
    return out


def mcnemar_vs(results: dict[str, dict], base: str = "untrained") -> dict[str, dict]:
    from radsift.evaluation.stats import mcnemar

    out = {}
    for name, r in results.items():
        if name != base and "fi_hits" in r and "fi_hits" in results.get(base, {}):
            m = mcnemar(r["fi_hits"], results[base]["fi_hits"])
            out[name] = {k: getattr(m, k) for k in ("b", "c", "statistic", "p_value") if hasattr(m, k)}
    return out


def table(results: dict[str, dict], tests: dict[str, dict] | None = None) -> str:
    cols = [("map_yes", "mAP pos"), ("map_no", "mAP neg"), ("map_all", "mAP all"), ("separation", "separation"),
            ("fi_top5", "f→i top-5")]
    lines = ["| system | " + " | ".join(c for _, c in cols) + " | McNemar p vs untrained |",
             "|---" * (len(cols) + 2) + "|"]
    for name, r in results.items():
        cells = [f"{r[k]:.3f}" if isinstance(r.get(k), float) else "–" for k, _ in cols]
        p = (tests or {}).get(name, {}).get("p_value")
        lines.append(f"| {name} | " + " | ".join(cells) + f" | {p:.2g} |" if p is not None else
                     f"| {name} | " + " | ".join(cells) + " | – |")
    return "\n".join(lines)


def strip(results: dict[str, dict]) -> dict[str, dict]:
    from radsift.evaluation.heldout import summary

    return {name: summary(r) for name, r in results.items()}


# ------------------------------------------------------------------------------------------ commands
def cmd_evaluate(args) -> None:
    from radsift.models.training import load_config
    from radsift.models.training.data import prepare_data

    reports = read_openi()
    config = load_config(split_by_finding=args.fold)
    data = prepare_data(reports, config, progress=False)
    models = {"untrained": None, **{Path(m).name: m for m in args.models}}
    results = evaluate_systems(data, models, config, args.sentences)
    tests = mcnemar_vs(results)
    scope = f"fold {args.fold} findings" if args.fold is not None else "all findings"
    print(f"Open-i, {args.sentences} sentences, {scope}; f→i on {len(data.heldout_pairs)} held-out reports")
    print(table(results, tests))
    if args.json:
        Path(args.json).write_text(json.dumps({"results": strip(results), "mcnemar": tests}, indent=2))


def cmd_ablation(args) -> None:
    from radsift.models.training import load_config, train
    from radsift.models.training.data import prepare_data

    reports = read_openi()
    out_dir = Path(args.out)
    out_dir.mkdir(parents=True, exist_ok=True)
    record_path = out_dir / "ablation.json"
    record = json.loads(record_path.read_text()) if record_path.exists() else {}
    for fold in args.folds:
        base_cfg = load_config(split_by_finding=fold)
        data = prepare_data(reports, base_cfg, progress=False)
        key = f"fold{fold}"
        record.setdefault(key, {})
        if "untrained" not in record[key]:
            base = evaluate_systems(data, {"untrained": None}, base_cfg, args.sentences)
            record[key].update(strip(base))
        for name in args.variants:
            if name in record[key] and not args.redo:
                continue
            overrides = dict(VARIANTS[name])
            recipe = overrides.pop("recipe")
            # a mapping: None is a value here (time_limit_minutes None = no limit)
            cfg = load_config({"recipe": recipe, "split_by_finding": fold, "max_steps": args.steps, "seed": args.seed,
                               "evaluate": False, "time_limit_minutes": None, "base_model": args.base_model,
                               **overrides})
            folder = out_dir / f"{name}-fold{fold}"
            t = time.monotonic()
            result = train(reports, cfg, folder, overwrite=True, progress=False)
            seconds = time.monotonic() - t
            results = strip(evaluate_systems(data, {name: str(folder)}, cfg, args.sentences))
            r = {**results[name], "train_seconds": round(result.training["seconds"], 1),
                 "total_seconds": round(seconds, 1), "steps": result.training["steps"]}
            record[key][name] = r
            for fused in (f"{name}+bm25", f"{name}+bm25-rrf"):
                record[key][fused] = results[fused]
            record_path.write_text(json.dumps(record, indent=2))
            for shown in (name, f"{name}+bm25", f"{name}+bm25-rrf"):
                print(f"fold {fold} {shown}: " + ", ".join(f"{k} {v:.3f}" for k, v in record[key][shown].items()
                                                           if isinstance(v, float)), flush=True)
    print(ablation_table(record))


def ablation_table(record: dict) -> str:
    """Mean over folds of each system (only systems present in every fold)."""
    folds = sorted(record)
    names = [n for n in record[folds[0]] if all(n in record[f] for f in folds)]
    cols = [("map_yes", "mAP pos"), ("map_no", "mAP neg"), ("map_all", "mAP all"), ("separation", "separation")]
    lines = [f"folds: {', '.join(folds)} (mean)", "| system | " + " | ".join(c for _, c in cols) + " | train s/fold |",
             "|---" * (len(cols) + 2) + "|"]
    for n in names:
        cells = []
        for k, _ in cols:
            vals = [record[f][n].get(k) for f in folds]
            cells.append(f"{sum(vals) / len(vals):.3f}" if all(isinstance(v, float) for v in vals) else "–")
        secs = [record[f][n].get("train_seconds") for f in folds]
        cells.append(f"{sum(secs) / len(secs):.0f}" if all(isinstance(s, float) for s in secs) else "–")
        lines.append(f"| {n} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def cmd_default(args) -> None:
    from radsift.evaluation.heldout import HeldOutEvaluator
    from radsift.models.training import load_config, train

    reports = read_openi()
    t = time.monotonic()
    result = train(reports, load_config(), args.out, overwrite=True, progress=False, log=print,
                   evaluator=HeldOutEvaluator())
    print(f"default recipe: {time.monotonic() - t:.0f} s in all ({result.training})")
    for name, r in result.evaluation.items():
        print(name, r)


def cmd_rerank(args) -> None:
    import numpy as np

    from radsift.models.encoder import Encoder
    from radsift.models.reranker import Reranker
    from radsift.models.training import load_config
    from radsift.models.training.data import prepare_data
    from radsift.evaluation.heldout import eval_set, evaluate_reranker

    class ScoreOnce:
        """The cross-encoder, scoring each list of pairs once across the fusion weights."""

        def __init__(self, model) -> None:
            self.model, self.seen = model, {}

        def eval(self) -> None:
            self.model.eval()

        def predict(self, pairs, **kwargs):
            key = tuple(pairs)
            if key not in self.seen:
                self.seen[key] = self.model.predict(pairs, **kwargs)
            return self.seen[key]

    data = prepare_data(read_openi(), load_config(), progress=False)
    es = eval_set(data)
    bi = Encoder.load(args.bi_encoder, max_seq_length=128)
    vectors = {}  # text -> first-stage vector, encoded once

    def encode(texts):
        missing = [t for t in dict.fromkeys(texts) if t not in vectors]
        if missing:
            vectors.update(zip(missing, bi.encode(missing, batch_size=64)))
        return np.stack([vectors[t] for t in texts])

    model = ScoreOnce(Reranker.load(args.reranker).model)
    print(f"Open-i held-out sentences; first stage {args.bi_encoder}, top {args.depth} reranked by {args.reranker}")
    print("| ranking | weight | mAP pos | mAP neg | mAP all |\n|---|---|---|---|---|")
    seen = set()
    for w in args.weights:
        r = evaluate_reranker(model, encode, es, args.depth, w)
        rows = [("first stage", "–", r["first_stage"]), ("fused", w, r["reranked"]),
                ("cross-encoder alone", 1.0, r["cross_encoder_only"])]
        for name, weight, f in rows:
            if (name, weight) not in seen:
                seen.add((name, weight))
                print(f"| {name} | {weight} | {f['map_yes']:.3f} | {f['map_no']:.3f} | {f['map_all']:.3f} |", flush=True)


def trained_findings_set(data):
    """The fold's training findings over the held-out reports: a development set for the split by
    finding (no test finding, no trained report)."""
    from radsift.evaluation.heldout import eval_set

    trained = {q.finding for s in data.heldout_sentences for q in s.all_labels} - set(data.test_findings)
    return eval_set(data, findings=trained)


def cmd_fusion(args) -> None:
    import numpy as np

    from radsift.models.training import load_config
    from radsift.models.training.data import prepare_data
    from radsift.evaluation.heldout import (eval_set, evaluate_bm25, evaluate_encoder, evaluate_hybrid,
                                                  model_encode_fn)

    reports = read_openi()
    rows: dict[str, dict[str, list[float]]] = {}
    for fold, model in enumerate(args.models):
        config = load_config(split_by_finding=fold)
        data = prepare_data(reports, config, progress=False)
        encode = model_encode_fn(load_st(model), config)
        for split, es in (("dev", trained_findings_set(data)), ("test", eval_set(data, sentences="all"))):
            dense, bm25 = evaluate_encoder(encode, es), evaluate_bm25(es)
            systems = {"BM25": bm25, "dense": dense,
                       "RRF (k = 60)": evaluate_hybrid(dense, bm25, es, fusion="rrf"),
                       **{f"convex, alpha {a:g}": evaluate_hybrid(dense, bm25, es, alpha=a) for a in args.alphas}}
            for name, r in systems.items():
                for metric in ("map_no", "map_all"):
                    rows.setdefault(name, {}).setdefault(f"{split} {metric}", []).append(r[metric])
            print(f"fold {fold} {split}: {len(es.queries)} queries over {len(es.sentences)} sentences", flush=True)
    cols = ["test map_no", "test map_all", "dev map_no", "dev map_all"]
    print("mean of the folds (fold 0 / fold 1 on unseen findings in brackets); test = unseen findings over all "
          "sentences, dev = the fold's trained findings over its held-out reports")
    print("| ranking | unseen: mAP neg | unseen: mAP all | dev: mAP neg | dev: mAP all |\n|---|---|---|---|---|")
    for name, r in rows.items():
        cells = [f"{np.mean(r[c]):.3f}" + (f" ({' / '.join(f'{v:.3f}' for v in r[c])})" if c.startswith("test") else "")
                 for c in cols]
        print(f"| {name} | " + " | ".join(cells) + " |")


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="cmd", required=True)
    e = sub.add_parser("evaluate", help="Evaluate model folders against BM25 and the untrained model.")
    e.add_argument("models", nargs="*")
    e.add_argument("--fold", type=int, default=None, help="Only the queries of this fold's findings.")
    e.add_argument("--sentences", choices=("heldout", "all"), default="heldout")
    e.add_argument("--json", default=None)
    a = sub.add_parser("ablation", help="Train and evaluate variants on the split by finding.")
    a.add_argument("--steps", type=int, default=80)
    a.add_argument("--folds", type=int, nargs="+", default=[0, 1])
    a.add_argument("--variants", nargs="+", default=["rs", "hs", "mb64", "mb128", "mb256"], choices=sorted(VARIANTS))
    a.add_argument("--sentences", choices=("heldout", "all"), default="all")
    a.add_argument("--seed", type=int, default=0)
    a.add_argument("--out", default=str(WORK / "models" / "ablation"))
    a.add_argument("--redo", action="store_true", help="Retrain variants already in ablation.json.")
    a.add_argument("--base-model", default=None,
                   help="Start every variant from this model folder (default: the packaged MiniLM); "
                        "the 'untrained' row stays the packaged MiniLM: judge the base with radsift bench.")
    d = sub.add_parser("default", help="Train the default recipe on Open-i (timing check).")
    d.add_argument("--out", default=str(WORK / "models" / "default"))
    r = sub.add_parser("rerank", help="Held-out mAP of a bi-encoder with its top reranked, at several fusion weights.")
    r.add_argument("bi_encoder")
    r.add_argument("reranker")
    r.add_argument("--depth", type=int, default=50)
    r.add_argument("--weights", type=float, nargs="+", default=[0.3])
    f = sub.add_parser("fusion", help="Hybrid fusion (convex at several dense weights, RRF) of two fold models.")
    f.add_argument("models", nargs=2, help="The fold 0 and fold 1 models (radsift train --split-by-finding F).")
    f.add_argument("--alphas", type=float, nargs="+", default=[0.5, 0.6, 0.7, 0.75, 0.8, 0.9])
    args = parser.parse_args(argv)
    {"evaluate": cmd_evaluate, "ablation": cmd_ablation, "default": cmd_default, "rerank": cmd_rerank,
     "fusion": cmd_fusion}[args.cmd](args)


if __name__ == "__main__":
    main()
