"""TrainConfig: one way to build it (load_config), recipe defaults, and coercion by field type."""

from __future__ import annotations

import typing
from dataclasses import fields
from pathlib import Path

import pytest

from radsift.errors import ConfigError
from radsift.models.training import TrainConfig, load_config
from radsift.models.training.config import RECIPES


def _yaml(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "train.yaml"
    path.write_text(text)
    return path


# ------------------------------------------------------------------------------ recipes and sources
def test_recipe_defaults_and_overrides():
    assert load_config(recipe="lexicon-triplet").loss == "triplet"
    assert load_config(recipe="lexicon-mnrl").loss == "mnrl"
    cfg = load_config(recipe="lexicon-triplet", loss="cached-mnrl", max_steps="12")
    assert cfg.loss == "cached-mnrl" and cfg.max_steps == 12
    assert load_config(recipe=None).recipe == "combined"


def test_the_dataclass_defaults_are_the_default_recipe():
    # TrainConfig() once said recipe "combined" with the triplet loss and no query margin, and a
    # benchmark timing "the default recipe" trained that instead of what radsift train runs.
    assert TrainConfig() == load_config() == load_config({}) == load_config(recipe="combined")
    assert (TrainConfig().loss, TrainConfig().query_margin, TrainConfig().name_swap) == ("mnrl+triplet", 0.5, 0.25)
    for recipe in RECIPES:
        if recipe != "combined":
            cfg = load_config(recipe=recipe)
            assert (cfg.query_margin, cfg.name_swap) == (0.0, 0.0), recipe
            assert cfg.loss == ("mnrl" if recipe in ("lexicon-mnrl", "entity-aspect") else "triplet"), recipe


def test_yaml_config_with_cli_overrides(tmp_path: Path):
    path = _yaml(tmp_path, "recipe: lexicon-triplet\nseed: 3\nnegatives: random\nmega_batch_size: 64\n"
                           "learning_rate: 1e-5\n")
    cfg = load_config(path, seed=None, max_steps=7)  # None: a flag left unset
    assert (cfg.recipe, cfg.seed, cfg.negatives, cfg.mega_batch_size, cfg.max_steps) == (
        "lexicon-triplet", 3, "random", 64, 7)
    assert cfg.learning_rate == pytest.approx(1e-5)  # YAML reads 1e-5 as a string
    assert load_config(path, recipe="findings-impression").recipe == "findings-impression"


def test_a_mapping_source_keeps_null_values():
    # In a mapping (as in YAML) None is a value: no time limit. As an override it means "not given".
    assert load_config({"time_limit_minutes": None}).time_limit_minutes is None
    assert load_config(time_limit_minutes=None).time_limit_minutes == 20.0
    assert load_config({"recipe": "rerank", "max_steps": 5}).max_steps == 5
    assert load_config({"max_steps": 5}, max_steps=6).max_steps == 6


def test_for_recipe_is_load_config():
    # kept for tests/test_reranker.py only
    assert TrainConfig.for_recipe("rerank", max_steps=2) == load_config(recipe="rerank", max_steps=2)
    assert TrainConfig.for_recipe() == load_config()


@pytest.mark.parametrize(
    "text, needle",
    [
        ("recipe: nope\n", "recipe"),
        ("batch_size: 32\nmega_batch_size: 48\n", "mega_batch_size"),
        ("negatives: sometimes\n", "negatives"),
        ("max_stepz: 3\n", "max_stepz"),
        ("split_by_finding: 2\n", "split_by_finding"),
        ("max_steps: many\n", "max_steps"),
        ("- a list\n", "mapping"),
        # the coercion by field type
        ('freeze_embeddings: "no"\n', "freeze_embeddings"),
        ('freeze_embeddings: "false"\n', "freeze_embeddings"),
        ("freeze_embeddings: 1\n", "freeze_embeddings"),
        ("evaluate: 0\n", "evaluate"),
        ("symmetric: null\n", "symmetric"),
        ("max_steps: true\n", "max_steps"),
        ("max_steps: 12.5\n", "max_steps"),
        ("max_steps: null\n", "max_steps"),
        ("seed: [1, 2]\n", "seed"),
        ("learning_rate: false\n", "learning_rate"),
        ("learning_rate: fast\n", "learning_rate"),
        ("learning_rate: .nan\n", "learning_rate"),
        ("margin: null\n", "margin"),
        ("loss: 3\n", "loss"),
        ("base_model: [a, b]\n", "base_model"),
        ("label_sections: [findings, 3]\n", "label_sections"),
        ("label_sections: {findings: 1}\n", "label_sections"),
    ],
)
def test_bad_config_names_file_and_field(tmp_path: Path, text: str, needle: str):
    path = _yaml(tmp_path, text)
    with pytest.raises(ConfigError) as err:
        load_config(path)
    assert str(path) in str(err.value) and needle in str(err.value)


def test_yaml_no_string_is_not_true(tmp_path: Path):
    with pytest.raises(ConfigError, match=r'train\.yaml: freeze_embeddings: expected true or false'):
        load_config(_yaml(tmp_path, 'freeze_embeddings: "no"\n'))
    # unquoted yes/no are YAML booleans
    assert load_config(_yaml(tmp_path, "freeze_embeddings: yes\nevaluate: no\n")).freeze_embeddings is True
    assert load_config(_yaml(tmp_path, "freeze_embeddings: false\n")).freeze_embeddings is False


def test_an_override_error_does_not_blame_the_file(tmp_path: Path):
    path = _yaml(tmp_path, "max_steps: 7\n")
    with pytest.raises(ConfigError) as err:
        load_config(path, evaluate="no")
    assert str(err.value).startswith("evaluate:") and str(path) not in str(err.value)


@pytest.mark.parametrize(
    "settings, expected",
    [
        ({"max_steps": 12.0}, {"max_steps": 12}),  # an integral float is an int
        ({"max_steps": "1e3"}, {"max_steps": 1000}),
        ({"learning_rate": 1}, {"learning_rate": 1.0}),  # floats accept ints
        ({"learning_rate": "2e-5"}, {"learning_rate": 2e-5}),
        ({"split_by_finding": None, "threads": None, "base_model": None, "time_limit_minutes": None},
         {"split_by_finding": None, "threads": None, "base_model": None, "time_limit_minutes": None}),
        ({"split_by_finding": 1, "threads": 2.0}, {"split_by_finding": 1, "threads": 2}),
        ({"label_sections": ["findings"]}, {"label_sections": ("findings",)}),
        ({"label_sections": "impression"}, {"label_sections": ("impression",)}),
        ({"base_model": Path("models/x")}, {"base_model": "models/x"}),
        ({"evaluate": False, "symmetric": False}, {"evaluate": False, "symmetric": False}),
    ],
)
def test_values_are_coerced_to_their_field_type(settings: dict, expected: dict):
    cfg = load_config(settings)
    for name, value in expected.items():
        got = getattr(cfg, name)
        assert got == value and type(got) is type(value), name


def test_the_dataclass_itself_coerces_by_type():
    # a direct construction (or dataclasses.replace) gets the same checks as load_config
    with pytest.raises(ConfigError, match="freeze_embeddings"):
        TrainConfig(freeze_embeddings="no")
    with pytest.raises(ConfigError, match="batch_size"):
        TrainConfig(batch_size=True)
    assert TrainConfig(max_steps=3.0).max_steps == 3 and type(TrainConfig(max_steps=3.0).max_steps) is int


def test_every_field_type_is_covered():
    # The coercion is derived from the annotations; pin that every field is one of the supported
    # kinds, so that a new field's type gets checked instead of slipping through.
    hints = typing.get_type_hints(TrainConfig)
    for f in fields(TrainConfig):
        value = getattr(TrainConfig(), f.name)
        with pytest.raises(ConfigError, match=f.name):
            load_config({f.name: {"not": "a value"}})
        assert load_config({f.name: value}) == TrainConfig(), f.name
        assert hints[f.name] is not typing.Any


def test_entity_aspect_trains_zero_shot_by_default():
    """The entity-aspect recipe reads a site's own notes alone unless asked (CAPR's zero-shot setting);
    MedQuAD's metadata is the named in-collection setting, given by flag or file."""
    from typer.testing import CliRunner

    from radsift.cli import app

    assert load_config(recipe="entity-aspect").setting == "notes-only"
    assert load_config(recipe="entity-aspect", setting="in-collection").setting == "in-collection"
    assert load_config({"recipe": "entity-aspect", "setting": "in-collection"}).setting == "in-collection"
    with pytest.raises(ConfigError, match="setting"):
        load_config(recipe="entity-aspect", setting="medquad")
    res = CliRunner().invoke(app, ["train", "--corpus", "no-such-corpus.csv", "--out", "x", "--recipe", "entity-aspect",
                                   "--setting", "medquad"])
    assert res.exit_code != 0 and "setting" in res.output
