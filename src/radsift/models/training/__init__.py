"""radsift.models.training: fine-tune a retriever on a site's own reports, without human labels.

Recipes (``radsift train --recipe NAME``; :data:`DEFAULT_RECIPE` when none is named):

* ``lexicon-triplet`` (Shi et al. 2022): weak-label (query, matched, unmatched sentence)
  triplets, cosine triplet loss, random/hardest/mega-batch negatives (:mod:`.lexicon`).
* ``lexicon-mnrl``: the same examples with the multiple-negatives ranking loss (:mod:`.lexicon`).
* ``findings-impression`` (RadSearch): findings paired with their own impression (:mod:`.findings_impression`).
* ``combined``: both, alternating batches (:mod:`.combined`).
* ``rerank``: a cross-encoder with bi-encoder-mined negatives (:mod:`.rerank`).
* ``entity-aspect`` (CAPR): passages by (entity, aspect) from notes and MedQuAD, for a bi-encoder,
  a poly-encoder or a cross-encoder (:mod:`.entity_aspect`).

Entry points: :func:`load_config` (the one way to build a :class:`TrainConfig`: YAML file or
mapping, overrides, recipe defaults, values checked by field type) and
:func:`train` (data, loop, model folder with a model card). Training never imports
:mod:`radsift.evaluation`: the caller hands :func:`train` its evaluator (:mod:`.evaluator`).
"""

from radsift.models.training.config import DEFAULT_RECIPE, RECIPES, TrainConfig, load_config
from radsift.models.training.result import TrainResult
from radsift.models.training.runner import train

__all__ = ["DEFAULT_RECIPE", "RECIPES", "TrainConfig", "TrainResult", "load_config", "train"]
