"""``train(reports, config, out)``: prepare the data, run a recipe, save the model and its card."""

from __future__ import annotations

import random
import shutil
import time
from pathlib import Path
from typing import Any, Callable, Iterable

import numpy as np

from radsift.errors import ConfigError
from radsift.models.encoder import Encoder, resolve_model_path, set_threads
from radsift.models.settings import TRAINED, packaged_settings, write_search_settings
from radsift.models.training.combined import CombinedRecipe
from radsift.models.training.data import prepare_data
from radsift.models.training.entity_aspect import train_entity_aspect
from radsift.models.training.entity_aspect_data import build_entity_aspect_data, load_sources, load_test_pairs
from radsift.models.training.evaluator import Evaluator
from radsift.models.training.findings_impression import FindingsImpressionRecipe
from radsift.models.training.lexicon import LexiconRecipe
from radsift.models.training.loop import Optimizer, run_loop
from radsift.models.training.modelcard import write_model_card
from radsift.models.training.rerank import RerankRecipe, build_cross_encoder, mine_rerank_negatives
from radsift.models.training.result import TrainResult, run_info
from radsift.models.training.weights import freeze_embeddings, interpolate_with_base
from radsift.records import Report


def seed_everything(seed: int) -> None:
    """Seed python, numpy and torch."""
    import torch

    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


def _prepare_out(out: Path, overwrite: bool) -> None:
    if out.exists() and not out.is_dir():
        raise ConfigError(f"--out {out} exists and is not a folder")
    if out.is_dir() and any(out.iterdir()):
        if not overwrite:
            raise ConfigError(f"--out {out} is not empty (pass --overwrite to replace it)")
        shutil.rmtree(out)
    out.mkdir(parents=True, exist_ok=True)


def train(
    reports: Iterable[Report],
    config,
    out: str | Path,
    *,
    overwrite: bool = False,
    labeler=None,
    evaluator: Evaluator | None = None,
    progress: bool = True,
    log: Callable[[str], None] | None = None,
) -> TrainResult:
    """Train a model on ``reports`` with ``config`` and save it (with its model card) into ``out``.

    Args:
        reports: The corpus (all of it: the held-out reports are set aside here).
        config: A :class:`~radsift.models.training.config.TrainConfig`.
        out: Output folder: a sentence-transformers model (a CrossEncoder for ``rerank``).
        overwrite: Replace a non-empty ``out``.
        labeler: The weak labeler (default: packaged lexicon and rules).
        evaluator: Called at the end when ``config.evaluate`` is set, as ``evaluator(kind, model,
            data, config, base_path=..., first_stage_encode=...)``, returning the held-out figures
            of the model card; the ``entity-aspect`` recipe calls its ``development(...)`` instead
            (and every ``eval_every`` steps). See :class:`~radsift.models.training.evaluator.Evaluator`;
            ``radsift train`` passes :class:`radsift.evaluation.heldout.HeldOutEvaluator`. None = no
            evaluation.
        progress: Show progress bars.
        log: Receives one-line progress messages (default: silent).

    Raises:
        ConfigError: Bad configuration or output folder.
        CorpusError: Nothing to train on.
    """
    say = log or (lambda message: None)
    start = time.monotonic()
    if not progress:
        from transformers.utils import logging as hf_logging

        hf_logging.disable_progress_bar()  # the weight-loading bars of each model load
    out = Path(out)
    base_path = resolve_model_path(config.base_model)
    if config.recipe == "rerank" and config.bi_encoder:
        resolve_model_path(config.bi_encoder)  # fail before the long steps
    _prepare_out(out, overwrite)
    set_threads(config.threads)
    seed_everything(config.seed)
    if config.recipe == "entity-aspect":  # CAPR: its own data (passages, MedQuAD), no weak labels
        return train_entity_aspect(reports, config, out, base_path, evaluator=evaluator, progress=progress, log=say,
                                   start=start)

    reports = list(reports)  # read twice when the combined recipe joins entity-aspect examples
    data = prepare_data(reports, config, labeler=labeler, progress=progress)
    stats = data.stats()
    say(f"data: {stats['train_reports']} training reports, {stats['heldout_reports']} held out; "
        f"{stats['train_entries']} weak-label entries over {stats['train_queries']} queries; "
        f"{stats['train_pairs']} findings-impression pairs")
    rng = random.Random(config.seed)
    if config.recipe == "rerank":
        return _train_reranker(data, stats, config, out, base_path, rng, progress, say, start, evaluator)

    from sentence_transformers import SentenceTransformer

    model = SentenceTransformer(str(base_path), device="cpu", local_files_only=True)
    if config.freeze_embeddings:
        say(f"embeddings frozen ({freeze_embeddings(model):,} parameters)")
    entity = _entity_aspect_data(reports, data, config, say) if config.recipe == "combined" and config.entity_share > 0 \
        else None
    if entity is not None:
        stats = {**stats, "entity_aspect": entity.stats}
    recipe = build_recipe(model, data, config, rng, entity=entity)
    optimizer = Optimizer(model.parameters(), config)
    loop = run_loop(lambda i: recipe.step(optimizer), config, desc=f"training {config.recipe}", progress=progress,
                    log=log)
    say(f"trained {loop.steps} steps in {loop.seconds:.0f} s" + (" (time limit)" if loop.stopped_early else ""))
    model.eval()
    if config.base_weight > 0:
        interpolate_with_base(model, base_path, config.base_weight)
        say(f"weights interpolated with the base model (base share {config.base_weight})")
    model.max_seq_length = config.section_max_seq_length  # indexes encode sections too
    model.save(str(out))
    # The search settings measured for this recipe's models travel with the model (radsift.models.settings).
    write_search_settings(out, packaged_settings(TRAINED), note="measured for radsift train's bi-encoders: "
                                                                 "docs/measurements.md")

    evaluation: dict[str, Any] = {}
    if config.evaluate and evaluator is not None:
        evaluation = evaluator("bi-encoder", model, data, config, base_path=base_path)
        say("held-out: " + ", ".join(f"{k} {v:.3f}" for k, v in evaluation["trained"].items()
                                     if isinstance(v, float)))
    info = run_info(config, stats, loop.to_dict(), evaluation, base_path, "bi-encoder", start)
    write_model_card(out, info)
    return TrainResult(out, config, stats, loop.to_dict(), evaluation, time.monotonic() - start)


def _entity_aspect_data(reports, data, config, say):
    """``combined`` with ``entity_share``: CAPR's examples from the training reports' sections and MedQuAD
    (never the CDV test split, nor the held-out reports)."""
    docs, test_ids, test_texts = load_sources(config, say)
    train = [r for r in reports if r.id in data.train_ids]
    return build_entity_aspect_data(train, medquad_docs=docs, test_ids=test_ids, test_texts=test_texts,
                                    test_pairs=load_test_pairs(config) if docs else (),
                                    near_jaccard=config.near_duplicate_jaccard, dev_fraction=config.dev_fraction,
                                    seed=config.heldout_seed, log=say)


def build_recipe(model, data, config, rng: random.Random, entity=None):
    """The recipe object (with a ``step(optimizer)`` method) for ``config.recipe``; ``entity``: the
    entity-aspect data a ``combined`` recipe with ``entity_share`` joins."""
    if config.recipe in ("lexicon-triplet", "lexicon-mnrl"):
        return LexiconRecipe(model, data.lexicon, config, rng)
    if config.recipe == "findings-impression":
        return FindingsImpressionRecipe(model, data.pairs, config, rng)
    if config.recipe == "combined":
        return CombinedRecipe(model, data, config, rng, entity=entity)
    raise ConfigError(f"recipe {config.recipe!r} does not train a bi-encoder")


def _train_reranker(data, stats, config, out, base_path, rng, progress, say, start, evaluator) -> TrainResult:
    bi = Encoder.load(config.bi_encoder, max_seq_length=config.max_seq_length)
    say(f"mining negatives with {bi.name}")
    negatives = mine_rerank_negatives(lambda texts: bi.encode(texts, batch_size=64, progress=progress,
                                                              desc="mining"), data.lexicon, config.rerank_depth)
    model = build_cross_encoder(config.base_model, config.max_seq_length)
    recipe = RerankRecipe(model, data.lexicon, negatives, config, rng)
    optimizer = Optimizer(model.parameters(), config)
    loop = run_loop(lambda i: recipe.step(optimizer), config, desc="training rerank", progress=progress, log=say)
    say(f"trained {loop.steps} steps in {loop.seconds:.0f} s" + (" (time limit)" if loop.stopped_early else ""))
    model.eval()
    model.save(str(out))
    evaluation: dict[str, Any] = {}
    if config.evaluate and evaluator is not None:
        evaluation = evaluator("cross-encoder", model, data, config,
                               first_stage_encode=lambda texts: bi.encode(texts, batch_size=64))
        evaluation["first_stage_model"] = bi.name
    info = run_info(config, stats, loop.to_dict(), evaluation, base_path, "cross-encoder", start)
    info["bi_encoder"] = str(bi.path)
    write_model_card(out, info)
    return TrainResult(out, config, stats, loop.to_dict(), evaluation, time.monotonic() - start)
