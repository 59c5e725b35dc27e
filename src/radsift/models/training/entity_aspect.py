"""Recipe ``entity-aspect``: CAPR's self-supervision (Grundmann, Arnold & Löser) on clinical notes and MedQuAD, end to end.

The data (passages, (entity, aspect) examples, the development split) come from
:mod:`.entity_aspect_data`, the batches from :mod:`.entity_aspect_sampler`. One recipe per model
type trains on them:

* ``model_type: bi`` (:mod:`.entity_aspect_bi`): the listwise in-batch cross-entropy (multiple-negatives
  ranking loss) over the batch's positives and hard negatives;
* ``model_type: poly`` (:mod:`.entity_aspect_poly`): in-batch cross-entropy on the poly-encoder's scores;
* ``model_type: cross`` (:mod:`.entity_aspect_cross`): cross-entropy over the positive, the hard
  negative and ``rerank_negatives`` other passages of the batch.

The development figures (every ``eval_every`` steps and at the end) come from the caller's
evaluator (:meth:`radsift.models.training.evaluator.Evaluator.development`): training never
imports :mod:`radsift.evaluation`.
"""

from __future__ import annotations

import json
import random
import shutil
import time
from pathlib import Path
from typing import Any, Callable

from radsift.corpus.medquad_passages import PassageData
from radsift.models.poly_encoder import PolyEncoder
from radsift.models.reranker import SETTINGS_FILE, write_reranker_settings
from radsift.models.training.entity_aspect_bi import EntityAspectRecipe
from radsift.models.training.entity_aspect_cross import CrossRecipe
from radsift.models.training.entity_aspect_data import EAData, build_entity_aspect_data, load_sources, load_test_pairs
from radsift.models.training.entity_aspect_notes import build_notes_only_data
from radsift.models.training.entity_aspect_poly import PolyRecipe
from radsift.models.training.evaluator import Evaluator
from radsift.models.training.loop import Optimizer, run_loop
from radsift.models.training.modelcard import TRAINING_JSON, write_model_card
from radsift.models.training.rerank import build_cross_encoder
from radsift.models.training.result import TrainResult, run_info

#: Where a run with ``eval_every`` keeps its latest checkpoint (removed once the final model is saved).
CHECKPOINT_DIR = "checkpoint"
#: The model card's name for each model type.
KINDS = {"bi": "bi-encoder", "poly": "poly-encoder", "cross": "cross-encoder"}


def build_model(config, base_path: Path, data: EAData, rng: random.Random):
    """``(model, poly, recipe, params)`` for ``config.model_type``: the model being trained, the
    poly-encoder around it (None unless ``poly``), its recipe and the parameters to optimise."""
    poly = None
    if config.model_type == "bi":
        from sentence_transformers import SentenceTransformer

        model = SentenceTransformer(str(base_path), device="cpu", local_files_only=True)
        recipe = EntityAspectRecipe(model, data, config, rng)
        params = list(model.parameters())
    elif config.model_type == "poly":
        poly = PolyEncoder.new(str(base_path), config.poly_codes, seed=config.seed)
        model = poly.model
        recipe = PolyRecipe(poly, data, config, rng)
        params = list(model.parameters()) + [poly.codes]
    else:
        model = build_cross_encoder(str(base_path), config.section_max_seq_length)
        recipe = CrossRecipe(model, data, config, rng)
        params = list(model.parameters())
    return model, poly, recipe, params


def load_data(reports, config, say: Callable[[str], None]) -> EAData:
    """The recipe's data in ``config.setting``: ``notes-only`` (the notes alone, development split = held-out
    notes) or ``in-collection`` (the notes and MedQuAD outside the test split, its near-duplicates and asked
    (entity, aspect) pairs removed; development split = held-out MedQuAD documents)."""
    if config.setting == "notes-only":
        return build_notes_only_data(reports, log=say)
    docs, test_ids, test_texts = load_sources(config, say)
    return build_entity_aspect_data(reports, medquad_docs=docs, test_ids=test_ids, test_texts=test_texts,
                                    test_pairs=load_test_pairs(config) if docs else (),
                                    near_jaccard=config.near_duplicate_jaccard, dev_fraction=config.dev_fraction,
                                    seed=config.heldout_seed, log=say)


def train_entity_aspect(reports, config, out: Path, base_path: Path, *, evaluator: Evaluator | None = None,
                        progress: bool = True, log: Callable[[str], None] | None = None,
                        start: float | None = None) -> TrainResult:
    """The ``entity-aspect`` recipe end to end (called by :func:`radsift.models.training.train`).

    Args:
        evaluator: Scores the saved model on the development split (its :meth:`~radsift.models.training.evaluator.Evaluator.development`)
            every ``config.eval_every`` steps and at the end when ``config.evaluate`` is set;
            ``radsift train`` passes :class:`radsift.evaluation.heldout.HeldOutEvaluator`. None: no
            development figures (checkpoints are still saved).
    """
    say = log or (lambda m: None)
    start = time.monotonic() if start is None else start
    data = load_data(reports, config, say)
    model, poly, recipe, params = build_model(config, base_path, data, random.Random(config.seed))
    optimizer = Optimizer(params, config)
    curve: list[dict[str, Any]] = []
    checkpoint = out / CHECKPOINT_DIR
    develop = evaluator.development if evaluator is not None else None

    def step(i: int):
        result = recipe.step(optimizer)
        if config.eval_every and (i + 1) % config.eval_every == 0 and i + 1 < config.max_steps:
            # Save, then score the dev split's (entity, aspect) queries: the learning curve, and a model
            # that survives an interrupted run. The dev split is the one tuned on, never the test split.
            _save(model, poly, checkpoint, config)
            if data.dev_docs and develop is not None:
                figures = develop(checkpoint, config, data.dev_docs, say, kinds=("entity-aspect",))
                curve.append({"step": i + 1, "seconds": round(time.monotonic() - start, 1),
                              **{k: v for k, v in figures["dev"]["trained"]["entity-aspect"].items() if "CI" not in k}})
                say(f"step {i + 1}: development split (entity, aspect) R@1 {curve[-1]['R@1']}, R@5 {curve[-1]['R@5']}")
            model.train(True)
        return result

    loop = run_loop(step, config, desc=f"training entity-aspect ({config.model_type})", progress=progress, log=say)
    say(f"trained {loop.steps} steps in {loop.seconds:.0f} s" + (" (time limit)" if loop.stopped_early else ""))
    _save(model, poly, out, config)
    evaluation: dict[str, Any] = {}
    weighed = getattr(evaluator, "rerank_weights", None)
    if config.model_type == "cross" and config.evaluate and data.dev_docs and weighed is not None:
        evaluation["rerank_weight"] = choose_rerank_weight(out, config, data.dev_docs, weighed, say)
    if config.evaluate and data.dev_docs and develop is not None:
        evaluation.update(develop(out, config, data.dev_docs, say))
    if curve:
        evaluation["dev_curve"] = curve
    if checkpoint.is_dir():  # the final model is saved: the checkpoint has served
        shutil.rmtree(checkpoint, ignore_errors=True)
    info = run_info(config, data.stats, loop.to_dict(), {}, base_path, KINDS[config.model_type], start)
    write_model_card(out, info)
    if evaluation:  # the card's held-out section speaks of weak labels: the dev figures get their own
        _write_dev_card(out, info, evaluation, _dev_description(data), curve)
    return TrainResult(out, config, data.stats, loop.to_dict(), evaluation, time.monotonic() - start)


def choose_rerank_weight(out: Path, config, dev_docs, weighed, say: Callable[[str], None]) -> dict[str, Any]:
    """Score the saved cross-encoder on the development split at each rerank weight (``weighed``: the
    evaluator's ``rerank_weights``), write the best to ``OUT/radsift_reranker.json`` (what
    :meth:`radsift.models.reranker.Reranker.load` reads) and say what was chosen."""
    settings = write_reranker_settings(out, weighed(out, config, dev_docs, say))
    figures = ", ".join(f"{w} {v}" for w, v in settings["dev_R@1"].items())
    if settings["helps"]:
        say(f"rerank weight {settings['weight']} chosen on {settings['queries']} development queries "
            f"(R@1 by weight: {figures}); written to {SETTINGS_FILE}")
    else:
        say(f"the cross-encoder does not help on the development split: no weight beat the first stage alone "
            f"(R@1 by weight: {figures}); weight 0 written to {SETTINGS_FILE}, so passage search keeps the "
            "first stage's order")
    return settings


def _dev_description(data: EAData) -> str:
    """What the development split is, for the model card."""
    dev = data.dev_docs
    if isinstance(dev, PassageData):  # notes-only: the passages of held-out notes
        return f"the {len(dev.passages)} passages of {dev.source}"
    return f"the answers of {len(dev)} held-out MedQuAD training documents (never the CDV test split)"


def _write_dev_card(out: Path, info: dict[str, Any], evaluation: dict[str, Any], dev_text: str,
                    curve: list[dict[str, Any]]) -> None:
    """Add the development figures (and the learning curve) to the run record and the model card."""
    (out / TRAINING_JSON).write_text(json.dumps({**info, "evaluation": evaluation}, indent=2, default=str) + "\n",
                                     encoding="utf-8")
    lines = ["", "## Development split", ""]
    if "dev" in evaluation:
        lines += [f"{evaluation['dev_queries']} queries over {dev_text}, candidates BM25's top 64 (no gold "
                  "appended): % R@1 / R@5.", "", "| system | query kind | R@1 | R@5 |", "|---|---|---|---|"]
        for name, by_kind in evaluation["dev"].items():
            for qkind, figures in by_kind.items():
                lines.append(f"| {name} | {qkind} | {figures['R@1']} | {figures['R@5']} |")
    chosen = evaluation.get("rerank_weight")
    if chosen:
        lines += ["", f"Rerank weight (`{SETTINGS_FILE}`): **{chosen['weight']}**"
                  + ("" if chosen["helps"] else " (no weight beat the first stage alone: the reranker does not help)")
                  + f", chosen on {chosen['chosen_on']}.", "", "| weight | R@1 | R@5 |", "|---|---|---|"]
        lines += [f"| {w} | {v} | {chosen['dev_R@5'].get(w, '')} |" for w, v in chosen["dev_R@1"].items()]
    if curve:
        lines += ["", "Learning curve, (entity, aspect) queries of the development split:", "",
                  "| step | seconds | R@1 | R@5 |", "|---|---|---|---|"]
        lines += [f"| {c['step']} | {c['seconds']} | {c['R@1']} | {c['R@5']} |" for c in curve]
    with (out / "README.md").open("a", encoding="utf-8") as fh:
        fh.write("\n".join(lines) + "\n")


def _save(model, poly, out: Path, config) -> None:
    """Save the model being trained (bi-encoder, poly-encoder or cross-encoder) to ``out``."""
    model.eval()
    if poly is not None:
        poly.save(out)
        return
    if config.model_type == "bi":
        model.max_seq_length = config.section_max_seq_length
    model.save(str(out))
