"""Training data: weak-label sentences and findings-impression pairs, on the training reports only.

:func:`prepare_data` reads the reports once, labels them (:func:`radsift.labels.build_weak_labels`),
holds out reports (:func:`radsift.models.training.split.heldout_ids`) and, when asked, the
findings of one fold (:func:`radsift.labels.split_findings`), and returns a
:class:`TrainingData` with both sides.

Sentences are the weak labels' unique sentences (deduplicated by normalized text). A unique
sentence is a training sentence when it occurs in a training report; the held-out side is the
unique sentences of the held-out reports. Boilerplate such as "No pneumothorax." occurs on both
sides: the split is by report, as the protocol asks; the model card reports the overlap.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field, replace
from typing import Any, Iterable, Sequence

from radsift.errors import CorpusError
from radsift.labels import build_weak_labels, split_findings
from radsift.labels.weak import Query, WeakLabels, opposite
from radsift.models.training.surrogates import NameFinder, surrogate_terms
from radsift.records import Report
from radsift.splits import heldout_ids
from radsift.text.tokens import tokenize


def text_key(text: str) -> str:
    """The identity of a text for "no duplicates in a batch": stemmed tokens, case, spacing,
    punctuation and a leading list number folded ("1. No acute disease." == "no acute disease")."""
    tokens = tokenize(text)
    while tokens and tokens[0].isdigit():
        tokens = tokens[1:]
    return " ".join(tokens)


@dataclass(frozen=True)
class LabeledSentence:
    """A unique sentence usable as a training positive or negative.

    Attributes:
        id: The weak labels' unique-sentence id.
        text: The sentence.
        labels: Its yes/no queries restricted to the training findings.
        all_labels: Every yes/no query of the sentence (used to avoid false negatives).
        uncertain: Findings mentioned as uncertain.
        names: ``finding -> (start, end)`` of the finding's name in :attr:`text`, for findings
            mentioned exactly once and by a synonym (not "heart size is normal"): the spans name
            swapping may replace (:mod:`radsift.models.training.surrogates`).
    """

    id: str
    text: str
    labels: frozenset[Query]
    all_labels: frozenset[Query]
    uncertain: frozenset[str]
    names: tuple[tuple[str, int, int], ...] = ()

    def name_span(self, finding: str) -> tuple[int, int] | None:
        """Where ``finding`` is named in the text, if it may be swapped."""
        for f, start, end in self.names:
            if f == finding:
                return start, end
        return None

    def matches(self, query: Query) -> bool:
        """Whether this sentence must not be a negative for ``query`` (it carries it, or is uncertain)."""
        return query in self.all_labels or query.finding in self.uncertain


@dataclass
class LexiconData:
    """The weak-label training set: sentences and, per training query, its sentences.

    Attributes:
        sentences: Training sentences (index = position).
        by_query: Training query -> indices of its sentences (sentences carrying both
            polarities of the finding are left out: they cannot teach negation).
        surrogates: Surrogate finding names for name swapping (empty when it is off).
        descriptions: Finding -> its lexicon descriptions (query surrogates; empty when unused).
    """

    sentences: list[LabeledSentence]
    by_query: dict[Query, list[int]]
    surrogates: list[str] = field(default_factory=list)
    descriptions: dict[str, tuple[str, ...]] = field(default_factory=dict)

    @property
    def n_entries(self) -> int:
        return sum(len(v) for v in self.by_query.values())

    def opposite_of(self, query: Query) -> Query | None:
        """The opposite-negation query when it has training sentences."""
        opp = opposite(query)
        return opp if self.by_query.get(opp) else None


@dataclass(frozen=True)
class SectionPair:
    """A report's findings and its own impression."""

    report_id: str
    findings: str
    impression: str
    findings_key: str
    impression_key: str


@dataclass
class TrainingData:
    """Everything a recipe trains on and the held-out side it is evaluated on.

    Attributes:
        weak: Weak labels of all reports (both sides).
        train_ids: Training report ids.
        heldout_ids: Held-out report ids.
        test_findings: Findings excluded from training (the held-out fold), empty if none.
        lexicon: Weak-label training examples.
        pairs: Findings-impression pairs of training reports.
        heldout_pairs: Findings-impression pairs of held-out reports.
        heldout_sentences: Unique sentences of held-out reports (labeled or not).
    """

    weak: WeakLabels
    train_ids: set[str]
    heldout_ids: set[str]
    test_findings: set[str]
    lexicon: LexiconData
    pairs: list[SectionPair]
    heldout_pairs: list[SectionPair]
    heldout_sentences: list[LabeledSentence] = field(default_factory=list)

    def stats(self) -> dict[str, Any]:
        """Data statistics for the model card."""
        train_texts = {s.text for s in self.lexicon.sentences}
        held_labeled = [s for s in self.heldout_sentences if s.all_labels]
        by_q = self.lexicon.by_query
        return {
            "reports": len(self.train_ids) + len(self.heldout_ids),
            "train_reports": len(self.train_ids),
            "heldout_reports": len(self.heldout_ids),
            "unique_sentences": len(self.weak.sentences),
            "train_labeled_sentences": len(self.lexicon.sentences),
            "train_entries": self.lexicon.n_entries,
            "train_queries": len(by_q),
            "train_positive_queries": sum(1 for q in by_q if q.polarity == "yes"),
            "train_negative_queries": sum(1 for q in by_q if q.polarity == "no"),
            "train_queries_with_opposite": sum(1 for q in by_q if self.lexicon.opposite_of(q)),
            "test_findings": sorted(self.test_findings),
            "name_swap_surrogates": len(self.lexicon.surrogates),
            "train_sentences_with_swappable_names": sum(1 for s in self.lexicon.sentences if s.names),
            "train_pairs": len(self.pairs),
            "train_distinct_impressions": len({p.impression_key for p in self.pairs}),
            "heldout_pairs": len(self.heldout_pairs),
            "heldout_unique_sentences": len(self.heldout_sentences),
            "heldout_labeled_sentences": len(held_labeled),
            "heldout_sentences_also_in_training": sum(1 for s in held_labeled if s.text in train_texts),
        }


def prepare_data(
    reports: Iterable[Report],
    config,
    *,
    labeler=None,
    progress: bool = True,
) -> TrainingData:
    """Label ``reports`` and divide them into the training and held-out sides of ``config``.

    Args:
        reports: The corpus.
        config: A :class:`~radsift.models.training.config.TrainConfig`.
        labeler: A :class:`radsift.labels.Labeler` (default: packaged lexicon and rules).
        progress: Show the labeling progress bar.

    Raises:
        CorpusError: No report, duplicate ids, or nothing to train on for the recipe.
    """
    from radsift.labels.labeler import Labeler  # spaCy: imported only when labeling

    reports = list(reports)
    if not reports:
        raise CorpusError("the training corpus holds no report")
    ids = [r.id for r in reports]
    dupes = [i for i, n in Counter(ids).items() if n > 1]
    if dupes:
        raise CorpusError(f"duplicate report id {dupes[0]!r} in the training corpus (ids must be unique)")
    held = heldout_ids(ids, config.heldout_fraction, config.heldout_seed)
    train = set(ids) - held
    if not train:
        raise CorpusError("every report fell in the held-out split: the corpus is too small to train on")
    labeler = labeler or Labeler()
    weak = build_weak_labels(reports, labeler, sections=config.label_sections, progress=progress)
    test_findings: set[str] = set()
    if config.split_by_finding is not None:
        folds = split_findings(weak, folds=config.finding_folds, seed=config.finding_seed)
        test_findings = set(folds[config.split_by_finding])

    lexicon = _lexicon_data(weak, train, test_findings)
    if config.name_swap > 0:
        texts = (s.text for s in weak.sentences if any(r in train for r in s.report_ids))
        lexicon.surrogates = surrogate_terms(texts, labeler.lexicon, labeler.rules)
        names = NameFinder(labeler.lexicon)
        lexicon.sentences = [replace(s, names=names(weak.sentence(s.id))) for s in lexicon.sentences]
    if config.description_share > 0:
        lexicon.descriptions = {c.name: c.descriptions for c in labeler.lexicon if c.descriptions}
    heldout_sentences = [labeled_sentence(s, set()) for s in weak.sentences if any(r in held for r in s.report_ids)]
    pairs = _pairs(reports, train, config)
    heldout_pairs = _pairs(reports, held, config)
    data = TrainingData(weak, train, held, test_findings, lexicon, pairs, heldout_pairs, heldout_sentences)
    if config.is_lexicon and not lexicon.by_query:
        raise CorpusError("no weakly labeled sentence in the training reports: the lexicon recipes have nothing to learn")
    if config.uses_pairs and len(pairs) < 2:
        raise CorpusError(
            f"fewer than 2 training reports have both a {config.findings_section!r} and an "
            f"{config.impression_section!r} section (map them with --section)"
        )
    return data


def labeled_sentence(s, test_findings: set[str]) -> LabeledSentence:
    """A weak-label sentence for training or evaluation: its labels without the ``test_findings``."""
    return LabeledSentence(
        id=s.id,
        text=s.text,
        labels=frozenset(q for q in s.labels if q.finding not in test_findings),
        all_labels=frozenset(s.labels),
        uncertain=frozenset(s.uncertain),
    )


def _lexicon_data(weak: WeakLabels, train: set[str], test_findings: set[str]) -> LexiconData:
    sentences: list[LabeledSentence] = []
    by_query: dict[Query, list[int]] = {}
    for s in weak.sentences:
        if not s.labels or not any(r in train for r in s.report_ids):
            continue
        item = labeled_sentence(s, test_findings)
        if not item.labels:
            continue
        idx = len(sentences)
        sentences.append(item)
        for q in item.labels:
            if opposite(q) in item.all_labels:  # "no left but small right pneumothorax": ambiguous
                continue
            by_query.setdefault(q, []).append(idx)
    return LexiconData(sentences, dict(sorted(by_query.items())))


def _pairs(reports: Sequence[Report], ids: set[str], config) -> list[SectionPair]:
    out = []
    for r in reports:
        if r.id not in ids:
            continue
        f = " ".join(r.sections.get(config.findings_section, "").split())
        i = " ".join(r.sections.get(config.impression_section, "").split())
        if f and i:
            out.append(SectionPair(r.id, f, i, text_key(f), text_key(i)))
    return out
