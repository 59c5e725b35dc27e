"""radsift.labels: automated annotation of report sentences (findings + negation), no annotators.

* :func:`load_lexicon` / :class:`Lexicon`: the finding lexicon (packaged chest X-ray lexicon
  ``data/chest_xray.yaml`` or a user file; format in :mod:`radsift.labels.lexicon`).
* :class:`Spotter`: longest-match phrase spotting over normalized tokens.
* :func:`load_rules` / :class:`Rules`: ConText cues and normal-state predicates
  (``data/radiology_rules.yaml``; format in :mod:`radsift.labels.rules`).
* :class:`Labeler`: sentence -> :class:`~radsift.records.Mention` list, each present, absent
  or uncertain, with the cue and rule that decided it.
* :func:`build_weak_labels` / :class:`WeakLabels`: weak labels, the query dictionary and
  the TREC exports (Shi et al. 2022); :func:`split_findings` for cross-validation by finding.
* :func:`load_gold` / :func:`score`: a gold set and the labeler's precision and recall.
"""

from __future__ import annotations

import importlib

# Lazy exports: the lexicon and weak-label structures must not pull in spaCy/medspaCy.
_EXPORTS = {
    "GoldSentence": "gold",
    "Score": "gold",
    "load_gold": "gold",
    "score": "gold",
    "Labeler": "labeler",
    "Concept": "lexicon",
    "Symptom": "lexicon",
    "Lexicon": "lexicon",
    "load_lexicon": "lexicon",
    "slugify": "lexicon",
    "Rules": "rules",
    "load_rules": "rules",
    "Match": "spotter",
    "Spotter": "spotter",
    "Query": "weak",
    "UniqueSentence": "weak",
    "WeakLabels": "weak",
    "build_weak_labels": "weak",
    "opposite": "weak",
    "phrasings": "weak",
    "query_text": "weak",
    "split_findings": "weak",
}
__all__ = sorted(_EXPORTS)


def __getattr__(name: str):
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'radsift.labels' has no attribute {name!r}")
    return getattr(importlib.import_module(f"radsift.labels.{module}"), name)
