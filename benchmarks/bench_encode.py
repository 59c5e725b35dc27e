"""Encoding benchmark: today's torch encoder against the ONNX Runtime one (speed and Open-i mAP).

Run:  .venv/bin/python benchmarks/bench_encode.py --out results.json
          [--openi ../shared/data/openi/reports.csv] [--sentences 5000] [--repeats 3]
          [--cache-dir DIR] [--threads N] [--batch-size 64] [--no-map] [--quick] [--only VARIANT ...]

Needs ``onnxruntime`` and ``onnx`` (``pip install 'radsift[fast]'``); exits with a message when
they or the Open-i data are absent.

1. **Speed.** A seeded sample of ``--sentences`` Open-i sentences (findings and impression split
   by :func:`radsift.text.sentences.split_sentences`, repeats kept as a corpus has them) is
   encoded by every variant, ``--repeats`` rounds, interleaved: each round runs every variant
   once, in a rotated order, in this one process, so a change of load on the machine (other
   people's jobs) hits every variant alike. Reported: median sentences/s, the speedup over the
   baseline as the median of the per-round ratios (each round's baseline and variant ran back
   to back), and the load average (``os.getloadavg``) at every round. Variants:

   - ``torch`` — today's :class:`radsift.models.Encoder`, batch 64, torch's default threads
     (the baseline);
   - ``torch-b16`` / ``torch-b128`` — the same with batch 16 / 128;
   - ``torch-1thread`` — batch 64 with ``torch.set_num_threads(1)`` (restored after);
   - ``onnx-fp32`` — :class:`radsift.models.onnx_encoder.OnnxEncoder`, no quantization (the
     chosen fast path: the default variant);
   - ``onnx-int8`` — the same, dynamic int8 with per-channel weight scales (opt-in, faster);
   - ``onnx-int8-per-tensor`` / ``onnx-int8-reduce-range`` — the int8 settings not chosen;
   - ``onnx-fp32-1thread`` / ``onnx-int8-1thread`` — one ONNX Runtime thread, to set against
     ``torch-1thread`` (single-threaded ratios are the least disturbed by other jobs' load).

2. **Agreement.** Cosine of each variant's vector with the baseline's, per sentence: mean,
   1st percentile and minimum.

3. **Retrieval quality.** Shi et al.'s sentence retrieval judged by the weak labels on all of
   Open-i (:func:`radsift.evaluation.protocols.run_sentence_retrieval`, the ``sentences``
   protocol of ``radsift bench``: every positive and negative finding query ranks every unique
   sentence, mAP over the full ranking) with the ``dense`` system, for

   (a) sentences and queries both encoded by the baseline (today's index and search);
   (b) sentences by the fast encoder, queries by the baseline (build fast, search as usual);
   (c) both by the fast encoder.

   mAP positive / negative / all and the change from (a). Target: speedup >= 2 and |ΔmAP| <= 0.005.

Writes everything to ``--out`` (JSON) and prints markdown tables. The ONNX exports are made
from the packaged model into ``--cache-dir`` (default: a temporary folder, so the export time
is measured too).
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import platform
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_OPENI = ROOT.parent / "shared" / "data" / "openi" / "reports.csv"
BASELINE = "torch"
CHOSEN = "onnx-fp32"
TARGET_SPEEDUP = 2.0
TARGET_DMAP = 0.005


def load_sentences(path: Path, n: int, seed: int = 0) -> list[str]:
    """A seeded sample of ``n`` sentences of the findings and impression columns."""
    from radsift.text.sentences import split_sentences

    out: list[str] = []
    with path.open(encoding="utf-8", newline="") as fh:
        for row in csv.DictReader(fh):
            for column in ("findings", "impression"):
                text = row.get(column) or ""
                out.extend(text[a:b] for a, b in split_sentences(text))
    random.Random(seed).shuffle(out)
    return out[:n]


def loadavg() -> list[float]:
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except OSError:  # pragma: no cover - not on Linux
        return []


def cpu_info() -> dict[str, Any]:
    info: dict[str, Any] = {"cpus": os.cpu_count(), "platform": platform.platform(), "python": platform.python_version()}
    try:
        text = Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace")
        model = next((line.split(":", 1)[1].strip() for line in text.splitlines() if line.startswith("model name")), "")
        flags = next((line.split(":", 1)[1].split() for line in text.splitlines() if line.startswith("flags")), [])
        info["model"] = model
        info["simd"] = sorted(f for f in flags if f.startswith(("avx", "amx")) or "vnni" in f)
    except OSError:
        pass
    return info


def versions() -> dict[str, str]:
    out = {}
    for name in ("torch", "sentence_transformers", "transformers", "onnxruntime", "onnx", "numpy"):
        try:
            out[name] = __import__(name).__version__
        except ImportError:
            out[name] = "absent"
    return out


# ---------------------------------------------------------------------------------------------
# Variants
# ---------------------------------------------------------------------------------------------
def make_variants(args, log: Callable[[str], None]) -> tuple[dict[str, Callable[[Sequence[str]], np.ndarray]],
                                                                 dict[str, Any], dict[str, float]]:
    """``{name: encode(texts)}``, the encoders by name, and the export seconds of the ONNX variants."""
    from radsift.models.encoder import Encoder, set_threads
    from radsift.models.onnx_encoder import OnnxEncoder, export_onnx

    import torch

    default_threads = torch.get_num_threads()
    base = Encoder.load(None, threads=args.threads)
    torch_threads = torch.get_num_threads()

    def torch_variant(batch: int, threads: int | None = None):
        def run(texts):
            if threads is not None:
                set_threads(threads)
            try:
                return base.encode(texts, batch_size=batch)
            finally:
                if threads is not None:
                    set_threads(torch_threads)
        return run

    variants: dict[str, Callable] = {BASELINE: torch_variant(args.batch_size)}
    encoders: dict[str, Any] = {BASELINE: base}
    if not args.quick:
        variants["torch-b16"] = torch_variant(16)
        variants["torch-b128"] = torch_variant(128)
        variants["torch-1thread"] = torch_variant(args.batch_size, 1)
    export_seconds: dict[str, float] = {}
    onnx_variants = ["fp32", "int8"] + ([] if args.quick else ["int8-per-tensor", "int8-reduce-range"])
    for v in onnx_variants:
        t0 = time.perf_counter()
        export_onnx(None, args.cache_dir, variant=v, log=log)
        export_seconds[f"onnx-{v}"] = round(time.perf_counter() - t0, 2)
        enc = OnnxEncoder.load(None, variant=v, cache_dir=args.cache_dir, threads=args.threads)
        encoders[f"onnx-{v}"] = enc
        variants[f"onnx-{v}"] = (lambda e: lambda texts: e.encode(texts, batch_size=args.batch_size))(enc)
        if v in ("fp32", "int8") and not args.quick:
            # One thread each, against torch-1thread: the ratio least disturbed by other jobs' load.
            one = OnnxEncoder.load(None, variant=v, cache_dir=args.cache_dir, threads=1)
            variants[f"onnx-{v}-1thread"] = (lambda e: lambda texts: e.encode(texts, batch_size=args.batch_size))(one)
    log(f"torch threads: {torch_threads} (default {default_threads}); ONNX Runtime intra-op threads: "
        f"{args.threads or 'its default'}")
    return variants, encoders, export_seconds


def time_variants(variants: dict[str, Callable], texts: list[str], repeats: int,
                  log: Callable[[str], None]) -> dict[str, Any]:
    """Interleaved rounds: every variant once per round, order rotated each round."""
    names = list(variants)
    for name in names:  # warm-up: first calls allocate and (torch) pick kernels
        variants[name](texts[:64])
    seconds: dict[str, list[float]] = {n: [] for n in names}
    rounds = []
    for r in range(repeats):
        order = names[r % len(names):] + names[:r % len(names)]
        before = loadavg()
        for name in order:
            t0 = time.perf_counter()
            variants[name](texts)
            seconds[name].append(time.perf_counter() - t0)
        after = loadavg()
        rounds.append({"round": r, "order": order, "load_before": before, "load_after": after,
                       "seconds": {n: round(seconds[n][-1], 3) for n in names}})
        log(f"round {r + 1}/{repeats} (load {before} -> {after}): "
            + ", ".join(f"{n} {len(texts) / seconds[n][-1]:.0f}/s" for n in names))
    out: dict[str, Any] = {"rounds": rounds, "variants": {}}
    # The round that started on the least loaded machine: torch's spinning OpenMP threads lose most
    # under other people's load, so that round's ratio is the conservative one.
    quiet = min(range(repeats), key=lambda r: (rounds[r]["load_before"] or [0.0])[0])
    out["quietest_round"] = quiet
    for name in names:
        ratios = [b / s for b, s in zip(seconds[BASELINE], seconds[name])]
        out["variants"][name] = {
            "seconds": [round(s, 3) for s in seconds[name]],
            "sentences_per_s_median": round(len(texts) / statistics.median(seconds[name]), 1),
            "sentences_per_s_best": round(len(texts) / min(seconds[name]), 1),
            "speedup_median_of_rounds": round(statistics.median(ratios), 2),
            "speedup_min_of_rounds": round(min(ratios), 2),
            "speedup_quietest_round": round(ratios[quiet], 2),
        }
        if name.endswith("-1thread") and name != "torch-1thread" and "torch-1thread" in seconds:
            one = [b / s for b, s in zip(seconds["torch-1thread"], seconds[name])]
            out["variants"][name]["speedup_vs_torch_1thread_median"] = round(statistics.median(one), 2)
            out["variants"][name]["speedup_vs_torch_1thread_min"] = round(min(one), 2)
    return out


def agreement(encoders: dict[str, Any], texts: list[str], batch_size: int) -> dict[str, Any]:
    """Cosine of every variant's vectors with the baseline's, per sentence."""
    uniq = list(dict.fromkeys(texts))
    base = encoders[BASELINE].encode(uniq, batch_size=batch_size)
    out = {}
    for name, enc in encoders.items():
        if name == BASELINE:
            continue
        vecs = enc.encode(uniq, batch_size=batch_size)
        cos = np.einsum("ij,ij->i", base, vecs)
        norms = np.linalg.norm(vecs, axis=1)
        out[name] = {"sentences": len(uniq), "cos_mean": round(float(cos.mean()), 5),
                     "cos_p1": round(float(np.percentile(cos, 1)), 5), "cos_min": round(float(cos.min()), 5),
                     "norm_max_error": float(np.abs(norms - 1).max()), "dim": int(vecs.shape[1]),
                     "dtype": str(vecs.dtype)}
    return out


# ---------------------------------------------------------------------------------------------
# Retrieval quality
# ---------------------------------------------------------------------------------------------
def weak_labels(openi: Path, log: Callable[[str], None]):
    """Open-i read as ``radsift bench`` reads it, its sentences labeled (the weak labels)."""
    from radsift.corpus import ReaderOptions, ReadStats, read_corpus
    from radsift.labels import Labeler, build_weak_labels

    reader = ReaderOptions.from_cli(format="csv", id_column="uid", sections=["findings=findings", "impression=impression"],
                                    text_column=None, on_error="fail")
    stats = ReadStats()
    reports = [r for r in read_corpus([openi], reader, stats) if not r.is_empty]
    log(f"read {len(reports)} reports ({stats.summary()}); labeling sentences ...")
    return build_weak_labels(reports, Labeler(), sections=("findings", "impression"), progress=False)


def retrieval(weak, encoders: dict[str, Any], batch_size: int, log: Callable[[str], None]) -> dict[str, Any]:
    """Weak-label mAP (positive/negative/all) for (a) baseline, (b) fast index + baseline queries, (c) fast."""
    from radsift.evaluation.protocols import run_sentence_retrieval
    from radsift.evaluation.systems import DenseSystem, EmbeddingCache

    class MixedDense(DenseSystem):
        """Candidates (the index) embedded by one encoder, queries by another."""

        def __init__(self, name: str, index_cache: EmbeddingCache, query_cache: EmbeddingCache) -> None:
            super().__init__(name, cache=index_cache)
            self.query_cache = query_cache

        def scores(self, queries, candidates):
            return self.query_cache.embed(queries) @ self.embed_candidates(candidates).T

    caches = {n: EmbeddingCache(e, batch_size=batch_size, progress=False) for n, e in encoders.items()}
    systems = [DenseSystem(f"(a) {BASELINE}", cache=caches[BASELINE])]
    pairs = {}
    for name in encoders:
        if name == BASELINE or not name.startswith("onnx"):
            continue
        systems.append(MixedDense(f"(b) index {name}, queries {BASELINE}", caches[name], caches[BASELINE]))
        systems.append(DenseSystem(f"(c) {name}", cache=caches[name]))
        pairs[name] = (systems[-2].name, systems[-1].name)
    res = run_sentence_retrieval(weak, systems, log=log)
    summary = res.data["summary"]

    def maps(system: str) -> dict[str, float]:
        return {g: round(summary[system][g]["map"]["mean"], 4) for g in ("positive", "negative", "all")}

    base = maps(systems[0].name)
    out: dict[str, Any] = {"queries": res.data["queries"], "candidates": res.data["candidates"],
                           "counts": {g: summary[systems[0].name][g]["n"] for g in ("positive", "negative", "all")},
                           "a_baseline": base, "variants": {}}
    for name, (b, c) in pairs.items():
        entry = {}
        for key, system in (("b_index_fast_queries_baseline", b), ("c_both_fast", c)):
            m = maps(system)
            entry[key] = {"map": m, "delta": {g: round(m[g] - base[g], 4) for g in m}}
        out["variants"][name] = entry
    out["paired_tests"] = [{k: (round(v, 5) if isinstance(v, float) else v) for k, v in row.items()}
                           for row in res.data["paired_tests"] if row["a"] == systems[0].name]
    return out


def verdicts(result: dict[str, Any]) -> dict[str, Any]:
    """Per ONNX variant: speedup, the largest |ΔmAP| over positive/negative/all and (b)/(c), targets met."""
    out: dict[str, Any] = {"chosen": CHOSEN}
    for name, s in result["speed"]["variants"].items():
        if not name.startswith("onnx"):
            continue
        v: dict[str, Any] = {"speedup": s["speedup_median_of_rounds"]}
        ret = result.get("retrieval", {}).get("variants", {}).get(name)
        if ret is not None:
            v["max_abs_delta_map"] = round(max(abs(d) for k in ("b_index_fast_queries_baseline", "c_both_fast")
                                               for d in ret[k]["delta"].values()), 4)
            v["max_abs_delta_map_all_queries"] = round(max(abs(ret[k]["delta"]["all"])
                                                           for k in ("b_index_fast_queries_baseline", "c_both_fast")), 4)
            v["meets_targets"] = bool(v["speedup"] >= TARGET_SPEEDUP and v["max_abs_delta_map"] <= TARGET_DMAP)
        out[name] = v
    return out


# ---------------------------------------------------------------------------------------------
def markdown(result: dict[str, Any]) -> str:
    speed = result["speed"]["variants"]
    agree = result.get("agreement", {})
    ret = result.get("retrieval")
    lines = ["Load average (1/5/15 min) per round: "
             + "; ".join(f"{r['load_before']} -> {r['load_after']}" for r in result["speed"]["rounds"]), "",
             "| variant | sentences/s (median) | speedup (median of rounds) | speedup (quietest round) "
             "| cos mean / min vs torch | mAP pos / neg / all, (b) index fast | Δ all (b) | mAP pos / neg / all, (c) both fast | Δ all (c) |",
             "| :--- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for name, s in speed.items():
        cos = agree.get(name)
        cos_txt = f"{cos['cos_mean']:.4f} / {cos['cos_min']:.4f}" if cos else ("1 / 1" if name == BASELINE else "—")
        b = c = None
        if ret is not None:
            if name == BASELINE:
                b = c = {"map": ret["a_baseline"], "delta": {"all": 0.0}}
            elif name in ret["variants"]:
                b = ret["variants"][name]["b_index_fast_queries_baseline"]
                c = ret["variants"][name]["c_both_fast"]

        def fmt(x):
            return "—" if x is None else " / ".join(f"{x['map'][g]:.4f}" for g in ("positive", "negative", "all"))

        def dfmt(x):
            return "—" if x is None else f"{x['delta']['all']:+.4f}"

        lines.append(f"| {name} | {s['sentences_per_s_median']:.0f} | {s['speedup_median_of_rounds']:.2f}x "
                     f"| {s['speedup_quietest_round']:.2f}x | {cos_txt} | {fmt(b)} | {dfmt(b)} | {fmt(c)} | {dfmt(c)} |")
    for name, s in speed.items():
        if "speedup_vs_torch_1thread_median" in s:
            lines.append(f"\n{name} against torch-1thread (one thread each): {s['speedup_vs_torch_1thread_median']:.2f}x "
                         f"median of rounds, {s['speedup_vs_torch_1thread_min']:.2f}x the lowest round")
    if ret is not None:
        lines += ["", f"(a) both torch: mAP positive {ret['a_baseline']['positive']:.4f}, negative "
                      f"{ret['a_baseline']['negative']:.4f}, all {ret['a_baseline']['all']:.4f} "
                      f"({ret['counts']['positive']} / {ret['counts']['negative']} / {ret['counts']['all']} queries "
                      f"over {ret['candidates']} unique sentences)"]
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--openi", type=Path, default=DEFAULT_OPENI)
    parser.add_argument("--sentences", type=int, default=5000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--threads", type=int, default=None, help="torch and ONNX Runtime threads (default: theirs)")
    parser.add_argument("--cache-dir", type=Path, default=None, help="ONNX export cache (default: a temporary folder)")
    parser.add_argument("--no-map", action="store_true", help="skip the retrieval-quality part")
    parser.add_argument("--quick", action="store_true", help="only torch, onnx-fp32 and onnx-int8")
    parser.add_argument("--only", action="append", default=None, metavar="VARIANT",
                        help="time only these variants (repeatable; the baseline is always timed)")
    parser.add_argument("--out", type=Path, default=None, help="write the results as JSON here")
    args = parser.parse_args()

    def log(message: str) -> None:
        print(message, file=sys.stderr, flush=True)

    if not args.openi.exists():
        print(f"skipped: {args.openi} absent (../shared/data is not on this machine)")
        return 0
    from radsift.models.onnx_encoder import fast_encoding_available, INSTALL_HINT

    if not fast_encoding_available():
        print(f"skipped: onnxruntime/onnx are not installed ({INSTALL_HINT})")
        return 0
    tmp = None
    if args.cache_dir is None:
        tmp = tempfile.TemporaryDirectory(prefix="radsift-onnx-")
        args.cache_dir = Path(tmp.name)
    t_start = time.perf_counter()
    result: dict[str, Any] = {
        "command": " ".join([Path(sys.executable).name, *sys.argv]), "environment": {**cpu_info(), **versions()},
        "load_start": loadavg(), "settings": {"sentences": args.sentences, "repeats": args.repeats,
                                              "batch_size": args.batch_size, "threads": args.threads},
        "targets": {"speedup": TARGET_SPEEDUP, "abs_delta_map": TARGET_DMAP},
    }
    texts = load_sentences(args.openi, args.sentences)
    log(f"{len(texts)} sentences ({len(set(texts))} distinct); load {loadavg()}")
    variants, encoders, export_seconds = make_variants(args, log)
    if args.only:
        unknown = sorted(set(args.only) - set(variants))
        if unknown:
            parser.error(f"--only {', '.join(unknown)}: known variants are {', '.join(variants)}")
        variants = {n: f for n, f in variants.items() if n == BASELINE or n in args.only}
        encoders = {n: e for n, e in encoders.items() if n == BASELINE or n in args.only}
    result["export_seconds"] = export_seconds
    result["speed"] = time_variants(variants, texts, args.repeats, log)
    result["agreement"] = agreement(encoders, texts, args.batch_size)
    if not args.no_map:
        t0 = time.perf_counter()
        weak = weak_labels(args.openi, log)
        result["retrieval"] = retrieval(weak, {n: e for n, e in encoders.items() if n == BASELINE or n.startswith("onnx")},
                                        args.batch_size, log)
        result["retrieval"]["seconds"] = round(time.perf_counter() - t0, 1)
    result["load_end"] = loadavg()
    result["verdict"] = verdicts(result)
    result["seconds"] = round(time.perf_counter() - t_start, 1)
    text = markdown(result)
    print(text)
    print(f"\nverdict: {json.dumps(result['verdict'])}")
    if args.out is not None:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        result["markdown"] = text
        args.out.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
        print(f"wrote {args.out}")
    if tmp is not None:
        tmp.cleanup()
    return 0


if __name__ == "__main__":
    sys.exit(main())
