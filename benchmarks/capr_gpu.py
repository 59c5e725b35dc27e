"""Issue 31 on an accelerator: train notes-only bi-, poly- and cross-encoders with the entity-aspect recipe and
measure them, in one run, zero-shot on the MedQuAD CDV test split and on held-out MTSamples notes.

Inputs come from ``benchmarks/capr_prepare.py`` (the bundle: training examples, pools, queries, candidates;
built on the CPU because the accelerator has no spaCy) and an fp16 copy of the packaged MiniLM
(``--make-fp16``). Everything else is radsift's own code: the recipes (:mod:`radsift.models.training`),
the sampler, the passage systems and the protocol's scoring (:func:`radsift.evaluation.protocols.passage_retrieval.evaluate_rules`:
identical texts score alike, ties count as their expected value).

Run:

1. ``bm25`` and the untrained MiniLM on every test pool (cdv-test: both query kinds, bm25-64 and
   bm25-64+gold; notes-test: bm25-64, bm25-64+gold, random-64);
2. per model type (bi, then poly from the trained bi, then cross from the base MiniLM): train on the
   notes-only data, scoring a seeded sample of the development notes' queries (bm25-64) every few
   steps (the learning curve), keep the best step, then score it on the whole development split
   and the test pools; the cross-encoder also re-scores the bi- and poly-encoders' top 16 (fused
   as ``radsift bench``'s ``rerank:`` does, weight 0.3, and at weight 1.0);
3. if time is left, the in-collection bi-encoder (MedQuAD metadata, near-duplicates removed) on
   the CDV test split: a secondary setting, never a zero-shot figure;
4. the best model on the development notes, in fp16, split into parts of at most 15 MB.

``--phases`` picks what runs (``base,bi,poly,cross`` by default; ``cross`` alone for a cross-encoder run).
Every evaluation rewrites ``OUT/results.json``; each log line carries the elapsed seconds; a phase that fails
is logged and recorded (``failures``) and the run goes on.

Usage::

    python benchmarks/capr_gpu.py --make-fp16 MODEL_DIR OUT_DIR          # once, on the CPU
    python benchmarks/capr_gpu.py --bundle B --model FP16_DIR --out OUT [--budget 480] [--tiny]
"""

from __future__ import annotations

import argparse
import gzip
import json
import lzma
import random
import shutil
import tarfile
import time
import traceback
from pathlib import Path

import numpy as np

from radsift.corpus.medquad_passages import passage_data_from_json
from radsift.evaluation.protocols.passage_retrieval import (RULE_APPENDED, RULE_BM25, append_gold, evaluate_rules,
                                                            figures_json)
from radsift.evaluation.systems.passage_systems import BM25Passages, CrossPassages, DensePassages, PolyPassages
from radsift.models.poly_encoder import PolyEncoder, PolyHead
from radsift.models.training import load_config
from radsift.models.training.entity_aspect_bi import EntityAspectRecipe
from radsift.models.training.entity_aspect_cross import CrossRecipe
from radsift.models.training.entity_aspect_data import ea_data_from_json
from radsift.models.training.entity_aspect_poly import PolyRecipe
from radsift.models.training.loop import Optimizer

T0 = time.perf_counter()
#: Word pieces every model reads (training and evaluation).
MAX_LEN = 256
RESULTS: dict = {"phases": {}, "curves": {}, "dev": {}, "test": {}, "timings": {}}
#: Where results.json goes (set by main; every evaluation rewrites it, so a run cut short keeps what it measured).
OUT: list[Path] = []


def log(message: str) -> None:
    print(f"[{time.perf_counter() - T0:7.1f} s] {message}", flush=True)


def elapsed() -> float:
    return time.perf_counter() - T0


def save(out: Path | None = None) -> None:
    out = out or (OUT[0] if OUT else None)
    if out is None:
        return
    (out / "results.json").write_text(json.dumps(RESULTS, indent=1, default=str) + "\n", encoding="utf-8")


# ------------------------------------------------------------------ model files
def make_fp16(src: Path, dst: Path) -> None:
    """A copy of a sentence-transformers folder with its weights in fp16 (half the bytes to carry)."""
    from safetensors.torch import load_file, save_file

    shutil.copytree(src, dst, ignore=shutil.ignore_patterns("model.safetensors", "README.md", "*.onnx", "onnx",
                                                            "openvino", "data_config.json"), dirs_exist_ok=True)
    weights = load_file(str(src / "model.safetensors"))
    save_file({k: v.half() for k, v in weights.items()}, str(dst / "model.fp16.safetensors"))


def materialize(fp16: Path, dst: Path) -> Path:
    """The fp16 copy back as an fp32 folder sentence-transformers loads."""
    from safetensors.torch import load_file, save_file

    shutil.copytree(fp16, dst, ignore=shutil.ignore_patterns("model.fp16.safetensors"), dirs_exist_ok=True)
    weights = load_file(str(fp16 / "model.fp16.safetensors"))
    save_file({k: v.float() for k, v in weights.items()}, str(dst / "model.safetensors"))
    return dst


def on_device(st, device: str):
    """A SentenceTransformer on ``device`` whose preprocess hands tensors on that device (its forward
    pass does not move them; radsift's poly-encoder calls it directly)."""
    import torch

    st.to(device)
    plain = st.preprocess

    def preprocess(inputs, *args, **kwargs):
        return {k: v.to(device) if isinstance(v, torch.Tensor) else v for k, v in plain(inputs, *args, **kwargs).items()}

    st.preprocess = preprocess
    return st


# ------------------------------------------------------------------ systems on the device
class DenseEncoder:
    """What :class:`DensePassages` asks of an encoder: normalised vectors."""

    def __init__(self, st) -> None:
        self.st = st

    def encode(self, texts, batch_size: int = 64, progress: bool = False, desc: str = ""):
        import torch

        self.st.eval()
        self.st.max_seq_length = MAX_LEN
        with torch.inference_mode():
            return self.st.encode(list(texts), batch_size=256, convert_to_numpy=True, normalize_embeddings=True,
                                  show_progress_bar=False)


class PolyOnDevice:
    """What :class:`PolyPassages` asks of a poly-encoder, computed on the device."""

    def __init__(self, poly, device: str) -> None:
        self.poly, self.device = poly, device

    def encode_queries(self, texts, batch_size: int = 256):
        import torch

        self.poly.model.eval()
        with torch.inference_mode():
            return np.concatenate([self.poly.forward_queries(list(texts[i:i + batch_size])).float().cpu().numpy()
                                   for i in range(0, len(texts), batch_size)])

    def encode_passages(self, texts, batch_size: int = 128):
        import torch

        self.poly.model.eval()
        self.poly.model.max_seq_length = MAX_LEN
        order = np.argsort([len(t) for t in texts], kind="stable")
        out = np.zeros((len(texts), self.poly.m, self.poly.dim), dtype=np.float32)
        with torch.inference_mode():
            for i in range(0, len(texts), batch_size):
                idx = order[i:i + batch_size]
                out[idx] = self.poly.forward_passages([texts[j] for j in idx]).float().cpu().numpy()
        return out

    def score(self, queries, codes):
        import torch

        with torch.inference_mode():
            q = torch.from_numpy(np.asarray(queries, dtype=np.float32)).to(self.device)
            c = torch.from_numpy(np.asarray(codes, dtype=np.float32)).to(self.device)
            return PolyHead.scores(q, c).float().cpu().numpy()


class CachedCross:
    """A reranker (``score(query, texts)``) whose pairs are scored in large batches ahead (:meth:`prefill`).

    Scoring reads the model's own tokenizer and network directly (not ``CrossEncoder.predict``, which
    scored about 2,200 pairs a second on an H100 in the first run): each query and each passage is
    tokenized once, a pair is ``[CLS] query [SEP] passage [SEP]`` cut to ``MAX_LEN`` word pieces from the
    passage's end (what ``longest_first`` truncation does while the query is the shorter side), pairs
    are sorted by length and run in bf16 autocast on a GPU. The score is the sigmoid of the logit,
    as ``predict`` gives it (:func:`check_pairs` compares the two on a sample before a run relies on it).
    """

    def __init__(self, model, weight: float = 1.0, bf16: bool = True) -> None:
        self.model, self.weight, self.cache, self.bf16 = model, weight, {}, bf16
        self.ids: dict[str, list[int]] = {}

    def _ids(self, texts) -> None:
        todo = [t for t in dict.fromkeys(texts) if t not in self.ids]
        tok = self.model.tokenizer
        for i in range(0, len(todo), 4096):
            chunk = todo[i:i + 4096]
            enc = tok(chunk, add_special_tokens=False, truncation=True, max_length=MAX_LEN)["input_ids"]
            self.ids.update(zip(chunk, enc))

    def prefill(self, pairs) -> None:
        import torch

        todo = list(dict.fromkeys(p for p in pairs if p not in self.cache))
        if not todo:
            return
        self._ids([q for q, _ in todo] + [t for _, t in todo])
        tok, net = self.model.tokenizer, self.model.model
        cls, sep, pad = tok.cls_token_id, tok.sep_token_id, tok.pad_token_id or 0
        rows = []
        for q, t in todo:
            qi = self.ids[q][:MAX_LEN // 2]
            ti = self.ids[t][:max(0, MAX_LEN - 3 - len(qi))]
            rows.append(([cls] + qi + [sep] + ti + [sep], len(qi) + 2))
        order = np.argsort([len(r[0]) for r in rows], kind="stable")
        device = next(net.parameters()).device
        out = np.zeros(len(todo), dtype=np.float32)
        net.eval()
        with torch.inference_mode(), torch.autocast(device.type, dtype=torch.bfloat16,
                                                     enabled=self.bf16 and device.type == "cuda"):
            for i in range(0, len(order), 1024):
                idx = order[i:i + 1024]
                width = max(len(rows[j][0]) for j in idx)
                ids = np.full((len(idx), width), pad, dtype=np.int64)
                types = np.zeros((len(idx), width), dtype=np.int64)
                mask = np.zeros((len(idx), width), dtype=np.int64)
                for r, j in enumerate(idx):
                    seq, first = rows[j]
                    ids[r, :len(seq)], mask[r, :len(seq)], types[r, first:len(seq)] = seq, 1, 1
                logits = net(input_ids=torch.from_numpy(ids).to(device), attention_mask=torch.from_numpy(mask).to(device),
                             token_type_ids=torch.from_numpy(types).to(device)).logits
                out[idx] = torch.sigmoid(logits.float().view(-1)).cpu().numpy()
        self.cache.update(zip(todo, out.tolist()))

    def score(self, query, texts):
        self.prefill([(query, t) for t in texts])
        return np.asarray([self.cache[(query, t)] for t in texts], dtype=np.float32)


def check_pairs(model, pairs) -> float:
    """The largest difference between :class:`CachedCross`'s scores (fp32, no autocast) and
    ``CrossEncoder.predict``'s on ``pairs``."""
    fast = CachedCross(model, bf16=False)
    fast.prefill(list(pairs))
    ref = np.asarray(model.predict(list(pairs), batch_size=64, show_progress_bar=False, convert_to_numpy=True)).ravel()
    return float(np.abs(ref - np.asarray([fast.cache[p] for p in pairs], dtype=np.float32)).max())


class CrossSystem(CrossPassages):
    """radsift's cross-encoder passage system, every candidate pair scored in one batched pass first."""

    def score(self, queries, candidates):
        self.reranker.prefill([(q, self.passages[r]) for q, c in zip(queries, candidates) for r in c])
        return super().score(queries, candidates)


# ------------------------------------------------------------------ evaluation sets
class EvalSet:
    """A pool, its queries and candidates (rule -> kind -> per-query rows), from the bundle."""

    def __init__(self, obj: dict, max_queries: int | None = None, seed: int = 0) -> None:
        self.data = passage_data_from_json(obj)
        self.queries = self.data.queries
        cands = {rule: {k: [list(map(int, c)) for c in v] for k, v in by_kind.items()}
                 for rule, by_kind in obj["candidates"].items()}
        keep = list(range(len(self.queries)))
        if max_queries is not None and max_queries < len(keep):
            keep = sorted(random.Random(seed).sample(keep, max_queries))
        self.queries = [self.queries[i] for i in keep]
        self.candidates = {rule: {k: [v[i] for i in keep] for k, v in by_kind.items()} for rule, by_kind in cands.items()}
        golds = [q.gold for q in self.queries]
        self.candidates[RULE_APPENDED] = {k: append_gold(v, golds) for k, v in self.candidates[RULE_BM25].items()}

    def only(self, rules, kinds=None) -> dict:
        return {r: {k: v for k, v in self.candidates[r].items() if kinds is None or k in kinds} for r in rules}


def evaluate(name: str, es: EvalSet, systems, rules=None, kinds=None) -> dict:
    """Score ``systems`` on ``es``; figures (percent) by system -> rule -> kind."""
    t = time.perf_counter()
    cands = es.only(rules or list(es.candidates), kinds)
    results, _, seconds = evaluate_rules(systems, es.data.passages, es.queries, cands)
    out = {s: figures_json(by_rule) for s, by_rule in results.items()}
    for s, by_rule in out.items():
        for rule, by_kind in by_rule.items():
            for kind, f in by_kind.items():
                log(f"  {name} | {s} | {rule} | {kind}: R@1 {f['R@1']:.2f}  R@5 {f['R@5']:.2f}  (n={len(es.queries)})")
    RESULTS["timings"][f"eval {name} {','.join(out)}"] = round(time.perf_counter() - t, 1)
    return out


# ------------------------------------------------------------------ training
def train(kind: str, data, base: Path, device: str, dev_set: EvalSet, budget: float, args, start_from=None,
          tag: str | None = None):
    """Train one model type on ``data`` for about ``budget`` seconds; keep the step best on the
    development sample (its curve in RESULTS under ``tag``). Returns the model (and the poly wrapper)."""
    tag = tag or kind
    import torch
    from sentence_transformers import CrossEncoder, SentenceTransformer

    hp = {"bi": dict(batch_size=64, learning_rate=2e-5), "poly": dict(batch_size=64, learning_rate=2e-5),
          "cross": dict(batch_size=32, learning_rate=4e-5, rerank_negatives=5)}[kind]
    if args.batch:  # a smaller run (the CPU check of this script)
        hp = {**hp, "batch_size": args.batch, **({"rerank_negatives": min(args.batch - 1, 5)} if kind == "cross" else {})}
    config = load_config(recipe="entity-aspect", model_type=kind, section_max_seq_length=MAX_LEN, max_steps=args.cap,
                         warmup_ratio=0.0, time_limit_minutes=None, seed=0, **hp)
    rng = random.Random(0)
    torch.manual_seed(0)
    poly = None
    if kind == "bi":
        model = on_device(SentenceTransformer(str(base), device=device, local_files_only=True), device)
        recipe = EntityAspectRecipe(model, data, config, rng)
        recipe.chunk_size = 256
        params = list(model.parameters())
    elif kind == "poly":
        poly = PolyEncoder.new(str(start_from or base), config.poly_codes, seed=0)
        on_device(poly.model, device)
        poly.codes = torch.nn.Parameter(poly.codes.detach().to(device))
        poly.head = PolyHead(poly.codes)
        model = poly.model
        recipe = PolyRecipe(poly, data, config, rng)
        params = list(model.parameters()) + [poly.codes]
    else:
        model = CrossEncoder(str(base), num_labels=1, max_length=MAX_LEN, device=device, local_files_only=True)
        recipe = CrossRecipe(model, data, config, rng)
        params = list(model.parameters())
    opt = Optimizer(params, config)
    plain_step = opt.step

    def step_fp32(loss):  # the forward runs in bf16 autocast (below); backward and update leave it
        with torch.autocast(device, enabled=False):
            return plain_step(loss)

    opt.step = step_fp32
    plan = [args.cap]
    warm = 50

    def lr_at(step: int) -> float:
        return min(1.0, (step + 1) / warm) * max(0.0, (plan[0] - step) / max(1, plan[0] - warm))

    opt.scheduler = torch.optim.lr_scheduler.LambdaLR(opt.optimizer, lr_at)
    curve, best, best_state = [], -1.0, None
    t_start = time.perf_counter()
    eval_every, eval_seconds, step = (args.min_eval if args.cap < 30 else 10**9), 0.0, 0

    def dev_figure() -> float:
        nonlocal eval_seconds
        t = time.perf_counter()
        system = {"bi": lambda: DensePassages("m", DenseEncoder(model)),
                  "poly": lambda: PolyPassages("m", PolyOnDevice(poly, device)),
                  "cross": lambda: CrossSystem("m", CachedCross(model))}[kind]()
        res, _, _ = evaluate_rules([system], dev_set.data.passages, dev_set.queries,
                                   dev_set.only([RULE_BM25], ["entity-aspect"]))
        eval_seconds += time.perf_counter() - t
        e = res["m"][RULE_BM25]["entity-aspect"]
        return 100 * e["R@1"]["value"], 100 * e["R@5"]["value"]

    losses = []
    while step < plan[0]:
        with torch.autocast(device, dtype=torch.bfloat16, enabled=device == "cuda" and kind in args.amp):
            losses.append(recipe.step(opt).loss)
        step += 1
        if step == 30:  # the speed is known: plan the steps that fit the budget (evaluations included)
            per_step = (time.perf_counter() - t_start) / 30
            plan[0] = int(min(args.cap, max(60, 0.8 * budget / per_step)))
            eval_every = max(args.min_eval, plan[0] // args.points)
            log(f"{kind}: {per_step * 1000:.0f} ms a step; {plan[0]} steps planned, development sample every {eval_every}")
        if step % eval_every == 0 or step == plan[0]:
            r1, r5 = dev_figure()
            curve.append({"step": step, "seconds": round(time.perf_counter() - t_start, 1), "R@1": round(r1, 2),
                          "R@5": round(r5, 2), "loss": round(float(np.mean(losses[-50:])), 4)})
            log(f"{kind} step {step}: dev R@1 {r1:.2f} R@5 {r5:.2f} loss {curve[-1]['loss']}")
            if r1 > best:
                best = r1
                best_state = {k: v.detach().to("cpu", copy=True) for k, v in model.state_dict().items()}
                if poly is not None:
                    best_state["__codes__"] = poly.codes.detach().to("cpu", copy=True)
            RESULTS["curves"][tag] = curve
            save()
            if time.perf_counter() - t_start > budget:
                log(f"{kind}: time budget reached at step {step}")
                break
    if best_state is not None:
        codes = best_state.pop("__codes__", None)
        model.load_state_dict(best_state)
        if codes is not None:
            poly.codes.data.copy_(codes.to(device))
    model.eval()
    RESULTS["phases"][f"train {tag}"] = {"steps": step, "planned": plan[0], "best_dev_R@1": best,
                                          "seconds": round(time.perf_counter() - t_start, 1),
                                          "eval_seconds": round(eval_seconds, 1), "hyper": hp,
                                          "max_len": MAX_LEN, "examples": len(data.examples),
                                          "passages": len(data.passages)}
    return model, poly


# ------------------------------------------------------------------ the run
def base_systems(base_st) -> list:
    return [BM25Passages("bm25"), DensePassages("minilm-untrained", DenseEncoder(base_st))]


def guarded(what: str, fn, default=None):
    """Run one phase; a failure is logged (and recorded) and the run goes on with the next phase."""
    try:
        return fn()
    except Exception:  # noqa: BLE001 - one shot on the accelerator: keep what the other phases give
        log(f"FAILED: {what}\n{traceback.format_exc()}")
        RESULTS.setdefault("failures", {})[what] = traceback.format_exc()[-2000:]
        return default


def test_all(tag: str, systems_fn, pools: dict, dev: EvalSet | None = None) -> None:
    """Score fresh systems on the development notes (when given) and every test pool, one system at a
    time (a failing one does not stop the others)."""
    for i in range(len(systems_fn())):
        if dev is not None:
            got = guarded(f"notes-dev {tag} #{i}", lambda: evaluate(f"notes-dev {tag}", dev, [systems_fn()[i]],
                                                                      rules=[RULE_BM25]), {})
            RESULTS["dev"].setdefault(tag, {}).update(got)
            save()
        for name, es in pools.items():
            got = guarded(f"{name} {tag} #{i}", lambda: evaluate(f"{name} {tag}", es, [systems_fn()[i]]), {})
            RESULTS["test"].setdefault(name, {}).update(got)
            save()


def trained_change(model_dir: Path, base_fp16: Path | None) -> float:
    """The largest weight change of a saved model from the base it started from (the encoder's weights; a
    cross-encoder's are prefixed ``bert.``). The 2026-11-26 run carried back a "best" cross-encoder equal to
    its base to fp16 rounding: a saved model that did not move is refused, not carried."""
    from safetensors.torch import load_file

    if base_fp16 is None or not (base_fp16 / "model.fp16.safetensors").is_file():
        return float("nan")
    base = load_file(str(base_fp16 / "model.fp16.safetensors"))
    weights = load_file(str(model_dir / "model.safetensors"))
    diffs = [(v.float() - base[k.removeprefix("bert.")].float()).abs().max().item()
             for k, v in weights.items() if k.removeprefix("bert.") in base and base[k.removeprefix("bert.")].shape == v.shape]
    return max(diffs) if diffs else float("nan")


def save_best(model_dir: Path, out: Path, part_mb: int = 15, base_fp16: Path | None = None) -> list[str]:
    """The model folder in fp16, tarred and split into parts of ``part_mb`` MB under ``out``.

    Raises:
        RuntimeError: The model's weights did not move from the base (:func:`trained_change` below 1e-3).
    """
    from safetensors.torch import load_file, save_file

    weights = model_dir / "model.safetensors"
    change = trained_change(model_dir, base_fp16) if weights.is_file() else float("nan")
    RESULTS["best_weight_change"] = change
    if change == change and change < 1e-3:
        raise RuntimeError(f"{model_dir}: the weights equal the base model's (largest change {change:.2g}): "
                           "the trained model was not saved")
    if weights.is_file():
        save_file({k: v.half() for k, v in load_file(str(weights)).items()}, str(model_dir / "model.fp16.safetensors"))
        weights.unlink()
    tar = Path("/tmp/capr-best.tar")
    with tarfile.open(tar, "w") as t:
        t.add(model_dir, arcname="model")
    blob, names = tar.read_bytes(), []
    for i in range(0, len(blob), part_mb * 10**6):
        name = f"best.tar.part{i // (part_mb * 10**6)}"
        (out / name).write_bytes(blob[i:i + part_mb * 10**6])
        names.append(name)
    return names


def load_bundle(path: Path) -> dict:
    opener = lzma.open if path.suffix == ".xz" else gzip.open
    with opener(path, "rt", encoding="utf-8") as fh:
        return json.load(fh)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--make-fp16", nargs=2, metavar=("MODEL_DIR", "OUT_DIR"))
    ap.add_argument("--bundle", type=Path)
    ap.add_argument("--model", type=Path, help="the fp16 copy of the base model (--make-fp16)")
    ap.add_argument("--out", type=Path)
    ap.add_argument("--budget", type=float, default=480.0, help="seconds for the whole run")
    ap.add_argument("--cap", type=int, default=3000, help="steps at most per model")
    ap.add_argument("--points", type=int, default=8, help="development points per learning curve")
    ap.add_argument("--min-eval", type=int, default=50)
    ap.add_argument("--dev-sample", type=int, default=600, help="development queries of the learning curves")
    ap.add_argument("--max-queries", type=int, default=None, help="queries per pool (None = all)")
    ap.add_argument("--train-seconds", type=float, nargs=3, default=(60.0, 45.0, 100.0), metavar=("BI", "POLY", "CROSS"))
    ap.add_argument("--skip-incollection", action="store_true")
    ap.add_argument("--amp", default="bi,poly", help="model types trained in bf16 autocast (the second H100 run: "
                    "bi 229 -> 136 ms a step, cross 228 -> 625 ms, so the cross-encoder trains in fp32)")
    ap.add_argument("--phases", default="base,bi,poly,cross", help="comma-separated: base, bi, poly, cross "
                    "(poly starts from the trained bi when bi runs, else from the base model)")
    ap.add_argument("--batch", type=int, default=None, help="examples per step for every model (default: 64, 64, 32)")
    args = ap.parse_args()
    if args.make_fp16:
        make_fp16(Path(args.make_fp16[0]), Path(args.make_fp16[1]))
        return
    import torch
    from sentence_transformers import SentenceTransformer

    device = "cuda" if torch.cuda.is_available() else "cpu"
    torch.backends.cuda.matmul.allow_tf32 = True
    torch.backends.cudnn.allow_tf32 = True
    torch.set_float32_matmul_precision("high")
    out = args.out
    out.mkdir(parents=True, exist_ok=True)
    OUT.append(out)
    RESULTS["meta"] = {"device": torch.cuda.get_device_name(0) if device == "cuda" else "cpu",
                       "torch": torch.__version__, "args": {k: str(v) for k, v in vars(args).items()}}
    base = materialize(args.model, Path("/tmp/capr-base"))
    bundle = load_bundle(args.bundle)
    log(f"device {RESULTS['meta']['device']}; bundle read")
    evals = bundle["evals"]
    dev_full = EvalSet(evals["notes-dev"], args.max_queries)
    dev_curve = EvalSet(evals["notes-dev"], min(args.dev_sample, args.max_queries or 10**9), seed=1)
    # the CDV test split first: the first run ended while the cross-encoder scored it after the notes
    pools = {"cdv-test": EvalSet(evals["cdv-test"], args.max_queries),
             "notes-test": EvalSet(evals["notes-test"], args.max_queries)}
    notes = ea_data_from_json(bundle["train"])
    RESULTS["data"] = {"notes_only": notes.stats, "queries": {k: len(v.queries) for k, v in pools.items()},
                       "dev_queries": len(dev_full.queries), "dev_curve_queries": len(dev_curve.queries)}
    base_st = SentenceTransformer(str(base), device=device, local_files_only=True)
    phases = set(args.phases.split(","))
    if "base" in phases:
        test_all("base", lambda: base_systems(base_st), pools, dev_full)
    save(out)
    bi_budget, poly_budget, cross_budget = args.train_seconds
    bi_dir, cross_dir = Path("/tmp/capr-bi"), Path("/tmp/capr-cross")
    minilm = DenseEncoder(base_st)
    # The cross-encoder first: the first run ended before it was scored on the CDV split.
    cross = guarded("train cross", lambda: train("cross", notes, base, device, dev_curve, cross_budget, args)[0]) \
        if "cross" in phases else None
    rr = None
    if cross is not None:
        guarded("save cross", lambda: cross.save(str(cross_dir)))
        sample = [(q.texts["entity-aspect"], dev_full.data.passages[c]) for q, cs in
                  zip(dev_full.queries[:4], dev_full.candidates[RULE_BM25]["entity-aspect"][:4]) for c in cs[:8]]
        RESULTS["cross_fast_vs_predict_max_diff"] = guarded("check pairs", lambda: check_pairs(cross, sample))
        log(f"cross: fast scoring vs predict, largest difference {RESULTS['cross_fast_vs_predict_max_diff']}")
        rr = CachedCross(cross)  # one cache: the rerank systems reuse the full cross-encoder's pair scores

    def weighted(w):
        c = CachedCross(cross, w)
        c.cache, c.ids = rr.cache, rr.ids
        return c

    if rr is not None:
        test_all("cross", lambda: [
            CrossSystem("cross-notes", rr),
            CrossSystem("minilm+cross top16 w0.3", weighted(0.3), DensePassages("m", minilm), 16),
            CrossSystem("minilm+cross top16 w1.0", weighted(1.0), DensePassages("m", minilm), 16)], pools, dev_full)
    save(out)
    bi = guarded("train bi", lambda: train("bi", notes, base, device, dev_curve, bi_budget, args)[0]) \
        if "bi" in phases and args.budget - elapsed() > bi_budget + 40 else None
    if bi is not None:
        bi.save(str(bi_dir))
        test_all("bi", lambda: [DensePassages("bi-notes", DenseEncoder(bi))], pools, dev_full)
    save(out)
    poly = guarded("train poly", lambda: train("poly", notes, base, device, dev_curve, poly_budget, args,
                                               start_from=bi_dir if bi is not None else None)[1]) \
        if "poly" in phases and args.budget - elapsed() > poly_budget + 50 else None
    if poly is not None:
        test_all("poly", lambda: [PolyPassages("poly-notes", PolyOnDevice(poly, device))], pools, dev_full)
    save(out)
    if rr is not None and (bi is not None or poly is not None) and args.budget - elapsed() > 60:
        def reranked():
            out_ = []
            if poly is not None:
                out_ += [CrossSystem("poly+cross top16 w0.3", weighted(0.3), PolyPassages("p", PolyOnDevice(poly, device)), 16)]
            if bi is not None:
                out_ += [CrossSystem("bi+cross top16 w0.3", weighted(0.3), DensePassages("b", DenseEncoder(bi)), 16)]
            return out_
        test_all("rerank", reranked, pools, dev_full)
    names = {"bi": "bi-notes", "poly": "poly-notes", "cross": "cross-notes"}
    dev_r1 = {k: RESULTS["dev"].get(k, {}).get(n, {}).get(RULE_BM25, {}).get("entity-aspect", {}).get("R@1", -1)
              for k, n in names.items()}
    RESULTS["best_on_dev"] = {"dev_R@1": dev_r1}
    if not args.skip_incollection and args.budget - elapsed() > bi_budget + 50 and "train_incollection" in bundle:
        def incollection():
            inc = ea_data_from_json(bundle["train_incollection"])
            mq_dev = EvalSet(evals["medquad-dev"], min(args.dev_sample, args.max_queries or 10**9), seed=1)
            RESULTS["data"]["in_collection"] = inc.stats
            bi_inc, _ = train("bi", inc, base, device, mq_dev, min(bi_budget, args.budget - elapsed() - 50), args,
                              tag="bi in-collection")
            RESULTS["test"]["cdv-test (in-collection)"] = evaluate(
                "cdv-test in-collection", pools["cdv-test"], [DensePassages("bi-in-collection", DenseEncoder(bi_inc))])
        guarded("in-collection", incollection)
        save(out)
    # The cross-encoder comes back (the carry holds one model: the passage path's reranker).
    if cross_dir.is_dir():
        RESULTS["model_parts"] = guarded("model parts", lambda: save_best(cross_dir, out, base_fp16=args.model))
    RESULTS["seconds"] = round(elapsed(), 1)
    save(out)
    log("done")


if __name__ == "__main__":
    main()
