"""The typed training configuration (:class:`TrainConfig`), its recipe defaults and YAML loading.

One flat dataclass holds every setting of every recipe, grouped below by concern, so that a
YAML file, the CLI and the model card all speak the same field names. The field defaults are the
default recipe's (``TrainConfig()`` is what ``radsift train`` runs with no option); each other
recipe changes some of them (:data:`RECIPE_DEFAULTS`: ``lexicon-triplet`` uses the triplet loss,
``lexicon-mnrl`` the multiple-negatives ranking loss ...); values given by the user win.

One way to build a configuration: :func:`load_config` (a YAML file or a mapping of settings, with
keyword overrides on top, recipe defaults under both). Every value is checked against its field's
type, whichever way it came (:func:`load_config` or the dataclass itself): a YAML
``freeze_embeddings: "no"`` is an error naming the file and the field, not a true value.

Example YAML (every key optional; unknown keys are an error)::

    recipe: lexicon-triplet
    seed: 0
    negatives: hardest        # hardest (HS) | random (RS)
    mega_batch_size: 128      # MB: mine negatives from 128 examples (= batch_size: no MB)
    max_steps: 300
"""

from __future__ import annotations

import difflib
import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass, fields
from os import PathLike
from pathlib import Path
from types import UnionType
from typing import Any, Union, get_args, get_origin, get_type_hints

from radsift.errors import ConfigError
from radsift.splits import DEFAULT_FOLDS, DEFAULT_HOLDOUT_FRACTION, DEFAULT_SEED

RECIPES = ("combined", "lexicon-triplet", "lexicon-mnrl", "findings-impression", "rerank", "entity-aspect")
#: The recipe ``radsift train`` runs when none is named (the best on Open-i; see the README).
DEFAULT_RECIPE = "combined"
LOSSES = ("triplet", "mnrl", "cached-mnrl", "mnrl+triplet")
NEGATIVES = ("hardest", "random")
#: What ``entity-aspect`` trains: a bi-encoder, a poly-encoder or a cross-encoder.
MODEL_TYPES = ("bi", "poly", "cross")
#: What ``entity-aspect`` trains on: the notes alone (CAPR's zero-shot promise; no MedQuAD text, label or
#: name) or the notes and MedQuAD's own metadata ("supervised by MedQuAD's metadata, in-collection").
SETTINGS = ("in-collection", "notes-only")

#: The settings of the default recipe's lexicon term that the other recipes do not share.
_PLAIN_LEXICON = {"loss": "triplet", "query_margin": 0.0, "name_swap": 0.0}

#: Per-recipe changes to the field defaults of :class:`TrainConfig` (which are the default
#: recipe's), applied before the user's values.
RECIPE_DEFAULTS: dict[str, dict[str, Any]] = {
    "lexicon-triplet": dict(_PLAIN_LEXICON),
    "lexicon-mnrl": {**_PLAIN_LEXICON, "loss": "mnrl"},
    "findings-impression": dict(_PLAIN_LEXICON),
    "combined": {},
    "rerank": {**_PLAIN_LEXICON, "batch_size": 32, "learning_rate": 5e-5, "max_steps": 400},
    # CAPR: MNRL over (entity, aspect) queries. Passages read to 96 word pieces and 600 steps of 32: the
    # measured run (development split R@1 86.8 at 96 pieces, 85.8 read at 256; flat from step 200 on).
    "entity-aspect": {**_PLAIN_LEXICON, "loss": "mnrl", "batch_size": 32,
                      "section_max_seq_length": 96, "max_steps": 600, "symmetric": False,
                      # The zero-shot setting by default: a site's own notes, nothing of MedQuAD (issue 31).
                      "setting": "notes-only"},
}


@dataclass(frozen=True)
class TrainConfig:
    """Every setting of ``radsift train`` (defaults are CPU-sensible and the default recipe's).

    Build one with :func:`load_config`: calling the dataclass with another ``recipe`` does not
    apply that recipe's :data:`RECIPE_DEFAULTS`. Either way each value is coerced to its field's
    type or refused (:func:`_coerce`).

    Attributes:
        recipe: One of :data:`RECIPES`.
        seed: Seeds python, numpy and torch (sampling, mining, dropout, the classifier head).
        base_model: Model folder to start from (None = the packaged all-MiniLM-L6-v2).
        bi_encoder: ``rerank`` only: the trained bi-encoder that mines the negatives
            (None = the base model).
        label_sections: Sections whose sentences are weakly labeled.
        findings_section: Section used as the query side of findings-impression pairs.
        impression_section: Section used as the document side.
        heldout_fraction: Share of reports held out for evaluation (split by report id).
        heldout_seed: Seed of the held-out split.
        split_by_finding: Lexicon recipes: train only on findings outside this fold of
            :func:`radsift.labels.split_findings` (None = all findings).
        finding_folds: Number of finding folds.
        finding_seed: Seed of the finding folds.
        max_seq_length: Truncation (tokens) for sentences and queries.
        section_max_seq_length: Truncation for whole sections (findings-impression).
        batch_size: Examples per gradient step (lexicon and rerank).
        mega_batch_size: Lexicon: hard negatives are mined from this many examples
            (a multiple of ``batch_size``; equal to it means no mega-batching).
        negatives: ``hardest`` (HS: the most similar unmatched sentence by a no-grad forward
            pass) or ``random`` (RS).
        loss: Lexicon loss: ``triplet`` (cosine distance, ``margin``), ``mnrl`` (in-batch
            sentences plus the mined negative), ``cached-mnrl`` (the same with GradCache, for
            large ``batch_size``) or ``mnrl+triplet`` (their sum on shared embeddings: in-batch
            ranking plus the triplet margin against the mined negative).
        margin: Triplet margin (cosine distance).
        query_margin: Lexicon: a second triplet term anchored on the matched *sentence*: it must be
            closer to its own query phrasing than to the opposite-negation phrasing ("No
            pneumothorax." nearer "no pneumothorax" than "pneumothorax") by this cosine margin.
            This trains the embedding separation of Shi et al.'s Table 3 directly; 0 = off.
        scale: MNRL similarity scale (1 / temperature).
        symmetric: MNRL also ranks queries for each document (``doc_to_query``): pushes a
            sentence closer to its own query than to the opposite-negation query.
        mini_batch_size: ``cached-mnrl`` mini-batch size.
        query_sampling_alpha: Lexicon queries are drawn with probability ∝ count^alpha
            (0 = uniform over queries, 1 = uniform over labeled entries).
        pair_batch_size: Findings-impression pairs per step.
        pair_share: ``combined``: share of steps that are findings-impression steps (of the steps
            that are not entity-aspect steps).
        entity_share: ``combined``: share of steps that are CAPR entity-aspect steps on the
            corpus's section passages and MedQuAD outside the CDV test split (0 = none).
        learning_rate: AdamW peak learning rate.
        weight_decay: AdamW weight decay.
        warmup_ratio: Share of steps with linear warm-up.
        max_grad_norm: Gradient clipping norm.
        max_steps: Gradient steps.
        freeze_embeddings: Keep the token, position and type embeddings of the base model fixed.
            Otherwise only the word pieces of the training findings move; frozen, a finding never
            seen in training keeps its place next to them (no gain measured on Open-i, README).
        base_weight: Weight-space ensemble with the base model after training (WiSE-FT, Wortsman
            et al., CVPR 2022): each weight becomes ``(1 - w) * trained + w * base``. 0 = off;
            meant for robustness on findings unseen in training (on Open-i: +0.015 mAP on unseen
            findings, separation 0.53 -> 0.38; README).
        name_swap: Lexicon: share of example groups whose finding name is swapped, in the query
            and the matched sentence alike, for a surrogate term of the site's own text that is
            not in the lexicon (:mod:`radsift.models.training.surrogates`): teaches the model to
            copy a name it was never taught instead of pulling it toward a taught one. 0 = off.
        description_share: Lexicon: share of examples whose query is one of the finding's plain-language
            lexicon ``descriptions`` ("no " + it for a negative query) instead of a phrasing of its name,
            so the model learns how non-radiologists describe findings.
        time_limit_minutes: Stop early (and say so in the model card) past this wall time.
        rerank_negatives: ``rerank``: negatives per positive pair; ``entity-aspect`` cross-encoder: in-batch
            negatives per query besides its hard negative.
        rerank_depth: ``rerank``: negatives come from this many bi-encoder top hits.
        medquad_dir: ``entity-aspect``: MedQuAD folder (None = ``../shared/data/medquad`` when present).
        cdv_dir: ``entity-aspect``: the CDV test split folder whose documents are never trained on
            (None = ``../shared/data/medquad-cdv-test`` when present).
        medquad_share: ``entity-aspect``: share of examples drawn from MedQuAD (the rest from the notes).
        entity_hard_negatives: ``entity-aspect``: one hard negative per example from its own note.
        dev_fraction: ``entity-aspect``: share of MedQuAD training documents held out as the development split.
        model_type: ``entity-aspect``: ``bi`` (bi-encoder), ``poly`` (poly-encoder) or ``cross`` (cross-encoder).
        setting: ``entity-aspect``: ``notes-only`` (its default: the corpus's notes alone, a held-out note split, the
            dictionary from the notes: :mod:`radsift.models.training.entity_aspect_notes`) or
            ``in-collection`` (also MedQuAD's focus names and question types, near-duplicates of the
            test split removed: supervised by MedQuAD's metadata; never a zero-shot figure).
        near_duplicate_jaccard: ``entity-aspect`` in-collection: drop a training passage whose word-shingle
            Jaccard similarity with a test passage reaches this.
        poly_codes: Codes of a poly-encoder (CAPR and Humeau et al.: m).
        dev_max_queries: Development queries evaluated at the end (a seeded sample).
        eval_every: ``entity-aspect``: every this many steps, save the model to ``OUT/checkpoint``
            and score its (entity, aspect) queries on the development split (the learning curve in
            ``training.json``; an interrupted run keeps its last checkpoint); 0 = only at the end.
        threads: torch threads (None = torch's default).
        evaluate: Evaluate on the held-out reports at the end (figures in the model card).
    """

    recipe: str = DEFAULT_RECIPE
    seed: int = 0
    base_model: str | None = None
    bi_encoder: str | None = None
    # data and splits
    label_sections: tuple[str, ...] = ("findings", "impression")
    findings_section: str = "findings"
    impression_section: str = "impression"
    # The split defaults are radsift bench's, so both hold out the same reports and findings.
    heldout_fraction: float = DEFAULT_HOLDOUT_FRACTION
    heldout_seed: int = DEFAULT_SEED
    split_by_finding: int | None = None
    finding_folds: int = DEFAULT_FOLDS
    finding_seed: int = DEFAULT_SEED
    # lengths and batches
    max_seq_length: int = 128
    section_max_seq_length: int = 256
    batch_size: int = 32
    mega_batch_size: int = 128
    # lexicon recipe
    negatives: str = "hardest"
    # The default recipe's lexicon term: on the 2-fold split by finding of Open-i the summed loss
    # balanced mAP and separation best among the lexicon losses, and the query-margin term lifted
    # the separation from 0.33 to 0.56 on fold 0 at a cost of 0.01 mAP (benchmarks/bench_train.py,
    # the README). The other recipes use the triplet loss without it (RECIPE_DEFAULTS).
    loss: str = "mnrl+triplet"
    margin: float = 0.5
    query_margin: float = 0.5
    scale: float = 20.0
    symmetric: bool = True
    mini_batch_size: int = 16
    query_sampling_alpha: float = 0.5
    # findings-impression / combined
    pair_batch_size: int = 32
    pair_share: float = 0.4
    entity_share: float = 0.0
    # optimisation
    learning_rate: float = 5e-5
    weight_decay: float = 0.01
    warmup_ratio: float = 0.1
    max_grad_norm: float = 1.0
    max_steps: int = 400
    freeze_embeddings: bool = False
    base_weight: float = 0.0
    # Name swapping in a quarter of the lexicon groups raised mAP on the unseen findings (negative
    # queries +0.03 at 100 steps; a half did worse), the README says by how much.
    name_swap: float = 0.25
    # Off until measured to help descriptions never seen (docs/measurements.md, "Descriptions as training queries").
    description_share: float = 0.0
    time_limit_minutes: float | None = 20.0
    # rerank
    rerank_negatives: int = 3
    rerank_depth: int = 20
    # entity-aspect (CAPR)
    medquad_dir: str | None = None
    cdv_dir: str | None = None
    medquad_share: float = 0.5
    entity_hard_negatives: bool = True
    dev_fraction: float = 0.1
    model_type: str = "bi"
    setting: str = "in-collection"
    near_duplicate_jaccard: float = 0.5
    poly_codes: int = 16
    dev_max_queries: int = 400
    eval_every: int = 0
    # runtime
    threads: int | None = None
    evaluate: bool = True

    def __post_init__(self) -> None:
        for f in fields(self):
            object.__setattr__(self, f.name, _coerce(f.name, getattr(self, f.name)))
        if self.recipe not in RECIPES:
            raise ConfigError(f"recipe: {self.recipe!r} is not one of {', '.join(RECIPES)}")
        if self.loss not in LOSSES:
            raise ConfigError(f"loss: {self.loss!r} is not one of {', '.join(LOSSES)}")
        if self.model_type not in MODEL_TYPES:
            raise ConfigError(f"model_type: {self.model_type!r} is not one of {', '.join(MODEL_TYPES)}")
        if self.setting not in SETTINGS:
            raise ConfigError(f"setting: {self.setting!r} is not one of {', '.join(SETTINGS)}")
        if not 0.0 < self.near_duplicate_jaccard <= 1.0:
            raise ConfigError(f"near_duplicate_jaccard: {self.near_duplicate_jaccard} must lie in (0, 1]")
        if not 0.0 <= self.medquad_share <= 1.0 or not 0.0 <= self.dev_fraction < 1.0:
            raise ConfigError("medquad_share must lie in [0, 1] and dev_fraction in [0, 1)")
        if self.poly_codes < 1 or self.dev_max_queries < 1:
            raise ConfigError("poly_codes and dev_max_queries: must be positive integers")
        if self.eval_every < 0:
            raise ConfigError(f"eval_every: {self.eval_every} must be 0 (off) or a number of steps")
        if self.negatives not in NEGATIVES:
            raise ConfigError(f"negatives: {self.negatives!r} is not one of {', '.join(NEGATIVES)}")
        for name in ("max_seq_length", "section_max_seq_length", "batch_size", "mega_batch_size", "max_steps",
                     "pair_batch_size", "mini_batch_size", "finding_folds", "rerank_negatives", "rerank_depth"):
            if getattr(self, name) < 1:
                raise ConfigError(f"{name}: must be a positive integer, not {getattr(self, name)!r}")
        if self.batch_size < 2 or self.pair_batch_size < 2:
            raise ConfigError("batch_size and pair_batch_size: in-batch negatives need at least 2 examples")
        if self.mega_batch_size < self.batch_size or self.mega_batch_size % self.batch_size:
            raise ConfigError(
                f"mega_batch_size: {self.mega_batch_size} must be a multiple of batch_size ({self.batch_size})"
            )
        if not 0.0 < self.heldout_fraction < 1.0:
            raise ConfigError(f"heldout_fraction: {self.heldout_fraction} must lie strictly between 0 and 1")
        for name in ("pair_share", "entity_share", "warmup_ratio"):
            if not 0.0 <= getattr(self, name) <= 1.0:
                raise ConfigError(f"{name}: {getattr(self, name)} must lie between 0 and 1")
        if self.split_by_finding is not None and not 0 <= self.split_by_finding < self.finding_folds:
            raise ConfigError(
                f"split_by_finding: fold {self.split_by_finding} does not exist (finding_folds={self.finding_folds})"
            )
        if self.learning_rate <= 0 or self.margin < 0 or self.query_margin < 0 or self.scale <= 0 or self.query_sampling_alpha < 0:
            raise ConfigError("learning_rate and scale must be > 0; margin and query_sampling_alpha >= 0")
        if not 0.0 <= self.description_share <= 1.0:
            raise ConfigError(f"description_share: {self.description_share} must lie in [0, 1]")
        if not 0.0 <= self.name_swap < 1.0:
            raise ConfigError(f"name_swap: {self.name_swap} must lie in [0, 1) (1 would leave no real finding name)")
        if not 0.0 <= self.base_weight < 1.0:
            raise ConfigError(f"base_weight: {self.base_weight} must lie in [0, 1) (1 would discard the training)")
        if self.query_margin > 0 and self.loss == "cached-mnrl":
            raise ConfigError("query_margin: not available with loss cached-mnrl (GradCache runs its own passes)")
        if self.time_limit_minutes is not None and self.time_limit_minutes <= 0:
            raise ConfigError("time_limit_minutes: must be > 0 (or null for no limit)")

    # ------------------------------------------------------------------ construction
    @classmethod
    def for_recipe(cls, recipe: str | None = None, **settings: Any) -> "TrainConfig":
        """``load_config({**settings, "recipe": recipe})``: kept only for tests/test_reranker.py."""
        return load_config({**settings, "recipe": recipe})

    def to_dict(self) -> dict[str, Any]:
        """Plain values (lists for tuples), for JSON, YAML and the model card."""
        out = asdict(self)
        out["label_sections"] = list(self.label_sections)
        return out

    def to_yaml(self) -> str:
        import yaml

        return yaml.safe_dump(self.to_dict(), sort_keys=False)

    @property
    def is_lexicon(self) -> bool:
        """Whether the recipe trains on the weak-label (query, sentence) examples (rerank too)."""
        return self.recipe in ("lexicon-triplet", "lexicon-mnrl", "combined", "rerank")

    @property
    def uses_pairs(self) -> bool:
        """Whether the recipe trains on findings-impression pairs."""
        return self.recipe in ("findings-impression", "combined")


def load_config(source: str | Path | Mapping[str, Any] | None = None, /, **overrides: Any) -> TrainConfig:
    """The one way to build a :class:`TrainConfig`: settings from ``source``, ``overrides`` on top.

    The recipe (``recipe`` in either; default :data:`DEFAULT_RECIPE`) supplies its defaults
    (:data:`RECIPE_DEFAULTS`) under both.

    Args:
        source: A YAML file (see the module docstring), a mapping of settings (``None`` values
            mean null, as in YAML: ``time_limit_minutes: None`` is no limit), or None.
        overrides: Settings on top (``radsift train``'s flags); ``None`` means "not given", so
            flags left unset keep the file's (or the recipe's) values.

    Raises:
        ConfigError: Unreadable file, not a mapping, unknown recipe or key, or a value that does
            not fit its field's type or range; the message names the file (when the value came
            from one) and the field.
    """
    where = None
    if source is None:
        values: Any = {}
    elif isinstance(source, Mapping):
        values = source
    else:
        import yaml

        path = Path(source)
        where = str(path)
        try:
            values = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
        except OSError as exc:
            raise ConfigError(f"{path}: cannot read the configuration ({exc.strerror})") from exc
        except yaml.YAMLError as exc:
            raise ConfigError(f"{path}: not valid YAML ({exc})") from exc
    if not isinstance(values, Mapping):
        raise ConfigError(f"{where or 'configuration'}: expected a mapping of settings, got {type(values).__name__}")
    settings = {**_checked(values, where), **_checked({k: v for k, v in overrides.items() if v is not None}, None)}
    recipe = settings.pop("recipe", None) or DEFAULT_RECIPE
    try:
        if recipe not in RECIPES:
            raise ConfigError(f"recipe: {recipe!r} is not one of {', '.join(RECIPES)}")
        return TrainConfig(**{**RECIPE_DEFAULTS[recipe], **settings, "recipe": recipe})
    except ConfigError as exc:
        raise ConfigError(f"{where}: {exc}" if where else str(exc)) from None


def _checked(values: Mapping[str, Any], where: str | None) -> dict[str, Any]:
    """``values`` coerced field by field; an unknown key or a bad value names ``where`` and the field."""
    unknown = sorted(str(k) for k in values if k not in _FIELD_TYPES)
    try:
        if unknown:
            close = {m for k in unknown for m in difflib.get_close_matches(k, _FIELD_TYPES, n=1)}
            raise ConfigError(f"unknown training setting(s): {', '.join(unknown)}"
                              + (f" (did you mean {', '.join(sorted(close))}?)" if close else ""))
        # recipe None: the default recipe (what load_config() picks when none is named)
        return {k: v if k == "recipe" and v is None else _coerce(k, v) for k, v in values.items()}
    except ConfigError as exc:
        raise ConfigError(f"{where}: {exc}" if where else str(exc)) from None


# ------------------------------------------------------------------ coercion by field type
def _field_types() -> dict[str, tuple[type, bool]]:
    """Field name -> (base type, accepts None), read from the annotations of :class:`TrainConfig`.

    The supported types are ``bool``, ``int``, ``float``, ``str`` and ``tuple[str, ...]``, each
    optionally ``| None``; a field of another type fails here, at import, not at run time.
    """
    hints = get_type_hints(TrainConfig)
    out: dict[str, tuple[type, bool]] = {}
    for f in fields(TrainConfig):
        hint, optional = hints[f.name], False
        if get_origin(hint) in (Union, UnionType):
            args = [a for a in get_args(hint) if a is not type(None)]
            optional = len(args) < len(get_args(hint))
            if len(args) != 1:
                raise TypeError(f"TrainConfig.{f.name}: unsupported type {hint!r}")
            hint = args[0]
        if get_origin(hint) is tuple and get_args(hint) == (str, Ellipsis):
            hint = tuple
        if hint not in (bool, int, float, str, tuple):
            raise TypeError(f"TrainConfig.{f.name}: unsupported type {hint!r}")
        out[f.name] = (hint, optional)
    return out


def _coerce(name: str, value: Any) -> Any:
    """``value`` as the type of field ``name``, or :class:`ConfigError` naming the field.

    bool: only true / false (YAML booleans; unquoted yes/no are booleans in YAML, quoted "no" is a
    string and refused). int: an integer or an integral float or numeric string (no bool: true is
    not 1). float: any finite number or numeric string (YAML reads ``1e-5`` as a string). str: a
    string (or a path). tuple of str: a list of strings (one string = a list of one). None only
    where the field is optional.
    """
    kind, optional = _FIELD_TYPES[name]
    if value is None:
        if optional:
            return None
        raise ConfigError(f"{name}: must be set (null is not allowed here)")
    expected = {bool: "true or false", int: "an integer", float: "a number", str: "a string",
                tuple: "a list of strings"}[kind]
    bad = ConfigError(f"{name}: expected {expected}, got {value!r}")
    if kind is bool:
        if isinstance(value, bool):
            return value
        raise bad
    if kind is str:
        if isinstance(value, (str, PathLike)):
            return str(value)
        raise bad
    if kind is tuple:
        items = [value] if isinstance(value, str) else value
        if isinstance(items, (list, tuple)) and all(isinstance(v, str) for v in items):
            return tuple(items)
        raise bad
    if isinstance(value, bool):
        raise bad
    number = value
    if isinstance(value, str):
        try:
            number = float(value)
        except ValueError:
            raise bad from None
    if not isinstance(number, (int, float)) or not math.isfinite(number):
        raise bad
    if kind is int:
        if isinstance(number, float) and not number.is_integer():
            raise bad
        return int(number)
    return float(number)


_FIELD_TYPES = _field_types()
