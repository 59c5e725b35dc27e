"""Frozen embeddings and the WiSE-FT interpolation (radsift.models.training.weights)."""

from __future__ import annotations

import random

import pytest
import torch

from radsift.errors import ConfigError
from radsift.models.training import load_config
from radsift.models.training.loop import Optimizer
from radsift.models.training.weights import freeze_embeddings, interpolate_with_base, transformer_embeddings

pytestmark = pytest.mark.slow


def _model():
    from sentence_transformers import SentenceTransformer

    from radsift.models import default_model_path

    return SentenceTransformer(str(default_model_path()), device="cpu", local_files_only=True)


def test_frozen_embeddings_do_not_move_while_the_layers_do():
    from radsift.labels import Query
    from radsift.models.training.batching import LexiconExample
    from radsift.models.training.data import LabeledSentence, LexiconData
    from radsift.models.training.lexicon import LexiconRecipe

    q_yes, q_no = Query("yes", "pneumothorax"), Query("no", "pneumothorax")
    sentences = [LabeledSentence("s1", "Small left pneumothorax.", frozenset({q_yes}), frozenset({q_yes}), frozenset()),
                 LabeledSentence("s2", "No pneumothorax.", frozenset({q_no}), frozenset({q_no}), frozenset())]
    data = LexiconData(sentences, {q_yes: [0], q_no: [1]})
    cfg = load_config(recipe="lexicon-triplet", batch_size=2, mega_batch_size=2, max_seq_length=16,
                      learning_rate=1e-3, warmup_ratio=0.0, max_steps=2, freeze_embeddings=True)
    model = _model()
    n = freeze_embeddings(model)
    assert n == sum(p.numel() for p in transformer_embeddings(model).parameters()) > 0
    emb_before = {k: v.clone() for k, v in transformer_embeddings(model).state_dict().items()}
    layer = model[0].auto_model.encoder.layer[0].attention.self.query.weight
    layer_before = layer.detach().clone()
    rec = LexiconRecipe(model, data, cfg, random.Random(0))
    batch = rec.mine([[LexiconExample(q_yes, "pneumothorax", 0), LexiconExample(q_no, "no pneumothorax", 1)]])[0]
    optimizer = Optimizer(model.parameters(), cfg)
    optimizer.step(rec.batch_loss(batch))
    for k, v in transformer_embeddings(model).state_dict().items():
        assert torch.equal(v, emb_before[k]), k
    assert not torch.equal(layer.detach(), layer_before)


def test_interpolation_with_the_base_is_the_weighted_mean():
    from radsift.models import default_model_path

    model = _model()
    base = {k: v.clone() for k, v in model.state_dict().items()}
    with torch.no_grad():
        for p in model.parameters():
            p.add_(1.0)  # "trained": every weight moved by +1
    assert interpolate_with_base(model, default_model_path(), 0.25) > 0
    for k, v in model.state_dict().items():
        if v.is_floating_point():
            torch.testing.assert_close(v, base[k] + 0.75, msg=k)  # 0.75 * (base + 1) + 0.25 * base
    assert interpolate_with_base(model, default_model_path(), 0.0) == 0
    with pytest.raises(ConfigError, match="base_weight"):
        interpolate_with_base(model, default_model_path(), 1.0)


def test_interpolation_refuses_a_different_base(tmp_path):
    from radsift.models import default_model_path

    model = _model()
    with torch.no_grad():
        model[0].auto_model.embeddings.word_embeddings.weight.data = torch.zeros(10, 384)
    with pytest.raises(ConfigError, match="not the model training started from"):
        interpolate_with_base(model, default_model_path(), 0.5)


def test_base_weight_is_checked_in_the_configuration():
    with pytest.raises(ConfigError, match="base_weight"):
        load_config(recipe="combined", base_weight=1.0)
    with pytest.raises(ConfigError, match="base_weight"):
        load_config(recipe="combined", base_weight=-0.1)
    assert load_config(recipe="combined", base_weight=0.3, freeze_embeddings=True).base_weight == 0.3
