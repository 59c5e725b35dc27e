"""Weak labels and the query dictionary (Shi et al. 2022, section 2.2).

Every sentence of every report is labeled with the lexicon findings it mentions and their
status. A *present* finding gives the label ``("yes", finding)``, an *absent* one
``("no", finding)``; *uncertain* mentions are kept in the exports but make no query. Each
such label is a query ("pneumothorax", "no pneumothorax") whose relevant documents are the
sentences (or reports) carrying it, so the labels double as training pairs and as judged
queries for evaluation, without annotators.

Sentences are deduplicated by normalized text (case, spacing and a final period folded):
radiology repeats "No pneumothorax or pleural effusion." thousands of times. Each unique
sentence keeps the :attr:`~radsift.records.Sentence.uid` of every occurrence and the ids of
the reports it occurs in.

Exports (:meth:`WeakLabels.write`):

* ``labeled_sentences.jsonl``: one unique sentence with at least one mention per line:
  ``id``, ``text``, ``labels`` (qids), ``opposites`` (the opposite-negation qid of each label),
  ``uncertain`` (findings), ``mentions``, ``sentence_uids``, ``report_ids``.
* ``queries.tsv``: ``qid<TAB>query text`` (qid ``yes:pleural_effusion``; text "pleural effusion").
* ``qrels.sentence.trec`` / ``qrels.report.trec``: ``qid 0 docid 1``, docid a sentence uid
  or a report id.
* ``stats.json``: the summary statistics of :meth:`WeakLabels.stats`.
"""

from __future__ import annotations

import json
import random
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable

from radsift.errors import CorpusError
from radsift.labels.lexicon import slugify
from radsift.records import Mention, Report
from radsift.text import report_sentences

YES, NO = "yes", "no"
POLARITY_OF_STATUS = {"present": YES, "absent": NO}
DEFAULT_SECTIONS = ("findings", "impression")

_YES_TEMPLATES = (
    "{x}",
    "evidence of {x}",
    "there is {x}",
    "{x} is present",
    "presence of {x}",
    "findings of {x}",
    "{x} is seen",
    "positive for {x}",
)
_NO_TEMPLATES = (
    "no {x}",
    "no evidence of {x}",
    "absence of {x}",
    "there is no {x}",
    "without {x}",
    "{x} is absent",
    "negative for {x}",
    "free of {x}",
)
_SPACE_RE = re.compile(r"\s+")

if TYPE_CHECKING:  # the labeler imports spaCy; the structures here do not need it
    from radsift.labels.labeler import Labeler


@dataclass(frozen=True, order=True)
class Query:
    """A weak-label query: a polarity (``yes``/``no``) and a finding name."""

    polarity: str
    finding: str

    def __post_init__(self) -> None:
        if self.polarity not in (YES, NO):
            raise ValueError(f"polarity must be 'yes' or 'no', not {self.polarity!r}")

    @property
    def qid(self) -> str:
        """TREC-safe id: ``yes:pleural_effusion``."""
        return f"{self.polarity}:{slugify(self.finding)}"

    @property
    def text(self) -> str:
        """The plain phrasing: ``pleural effusion`` or ``no pleural effusion``."""
        return query_text(self)


def opposite(query: Query) -> Query:
    """The opposite-negation query: ``yes:X`` <-> ``no:X``."""
    return Query(NO if query.polarity == YES else YES, query.finding)


def phrasings(query: Query) -> list[str]:
    """Natural phrasings of a query, the plain one first ("pneumothorax", "evidence of pneumothorax", ...)."""
    templates = _YES_TEMPLATES if query.polarity == YES else _NO_TEMPLATES
    return [t.format(x=query.finding) for t in templates]


def query_text(query: Query, variant: int = 0) -> str:
    """One phrasing of a query; ``variant`` indexes :func:`phrasings` (modulo its length)."""
    options = phrasings(query)
    return options[variant % len(options)]


def normalize_sentence(text: str) -> str:
    """The deduplication key of a sentence: case-folded, single-spaced, no final period."""
    return _SPACE_RE.sub(" ", text).strip().rstrip(" .").casefold()


@dataclass
class UniqueSentence:
    """A distinct sentence text, its labels and where it occurs.

    Attributes:
        id: ``s000001``-style id (first-seen order).
        text: The text of its first occurrence (mention offsets refer to it).
        mentions: The labeler's mentions.
        labels: Its yes/no queries.
        sentence_uids: Every occurrence's :attr:`~radsift.records.Sentence.uid`.
        report_ids: The reports it occurs in (first-seen order, no repeats).
    """

    id: str
    text: str
    mentions: tuple[Mention, ...] = ()
    labels: frozenset[Query] = frozenset()
    sentence_uids: list[str] = field(default_factory=list)
    report_ids: list[str] = field(default_factory=list)

    @property
    def uncertain(self) -> list[str]:
        """Findings mentioned as uncertain (no query is made of them)."""
        return sorted({m.finding for m in self.mentions if m.status == "uncertain"})

    def to_dict(self) -> dict[str, Any]:
        labels = sorted(self.labels)
        return {
            "id": self.id,
            "text": self.text,
            "labels": [q.qid for q in labels],
            "opposites": [opposite(q).qid for q in labels],
            "uncertain": self.uncertain,
            "mentions": [_mention_dict(m) for m in self.mentions],
            "sentence_uids": list(self.sentence_uids),
            "report_ids": list(self.report_ids),
        }


def _mention_dict(m: Mention) -> dict[str, Any]:
    return {
        "finding": m.finding,
        "category": m.category,
        "start": m.start,
        "end": m.end,
        "text": m.text,
        "status": m.status,
        "cue": m.cue,
        "rule": m.rule,
    }


@dataclass
class WeakLabels:
    """Labeled unique sentences and the query dictionary built from them.

    Attributes:
        sentences: Every unique sentence, labeled or not, in first-seen order.
        reports: Number of reports read.
        occurrences: Number of sentences read (before deduplication).
        sections: The sections that were labeled.
        lexicon: The lexicon's source (file name).
    """

    sentences: list[UniqueSentence]
    reports: int = 0
    occurrences: int = 0
    sections: tuple[str, ...] = DEFAULT_SECTIONS
    lexicon: str = ""

    def __post_init__(self) -> None:
        self._by_id = {s.id: s for s in self.sentences}

    def sentence(self, sentence_id: str) -> UniqueSentence:
        """A unique sentence by id."""
        return self._by_id[sentence_id]

    @property
    def queries(self) -> dict[Query, list[str]]:
        """The query dictionary: each yes/no query -> ids of the unique sentences carrying it (sorted queries)."""
        table: dict[Query, list[str]] = {}
        for s in self.sentences:
            for q in s.labels:
                table.setdefault(q, []).append(s.id)
        return dict(sorted(table.items()))

    def entries(self) -> list[tuple[str, Query]]:
        """Labeled entries: ``(unique sentence id, query)`` pairs."""
        return [(s.id, q) for s in self.sentences for q in sorted(s.labels)]

    def entry_counts(self) -> dict[str, int]:
        """Labeled entries per finding (yes and no together)."""
        counts: dict[str, int] = {}
        for s in self.sentences:
            for q in s.labels:
                counts[q.finding] = counts.get(q.finding, 0) + 1
        return dict(sorted(counts.items()))

    def qrels(self, level: str = "sentence") -> dict[str, list[str]]:
        """qid -> relevant docids: sentence uids (``level="sentence"``) or report ids (``"report"``)."""
        if level not in ("sentence", "report"):
            raise ValueError(f"level must be 'sentence' or 'report', not {level!r}")
        out: dict[str, list[str]] = {}
        for query, ids in self.queries.items():
            docs: dict[str, None] = {}
            for sid in ids:
                s = self._by_id[sid]
                for doc in s.sentence_uids if level == "sentence" else s.report_ids:
                    docs[doc] = None
            out[query.qid] = sorted(docs)
        return out

    def stats(self) -> dict[str, Any]:
        """Summary statistics like Shi et al.'s: entries, unique sentences, queries, per finding."""
        queries = self.queries
        per: dict[str, dict[str, int]] = {}
        for q, ids in queries.items():
            row = per.setdefault(q.finding, {YES: 0, NO: 0, "uncertain": 0, "reports_yes": 0, "reports_no": 0})
            row[q.polarity] = len(ids)
            row[f"reports_{q.polarity}"] = len({r for sid in ids for r in self._by_id[sid].report_ids})
        uncertain = 0
        for s in self.sentences:
            for finding in s.uncertain:
                uncertain += 1
                per.setdefault(finding, {YES: 0, NO: 0, "uncertain": 0, "reports_yes": 0, "reports_no": 0})
                per[finding]["uncertain"] += 1
        entries = sum(len(s.labels) for s in self.sentences)
        positive = sum(1 for s in self.sentences for q in s.labels if q.polarity == YES)
        return {
            "reports": self.reports,
            "sentences": self.occurrences,
            "unique_sentences": len(self.sentences),
            "labeled_unique_sentences": sum(1 for s in self.sentences if s.labels),
            "labeled_entries": entries,
            "positive_entries": positive,
            "negative_entries": entries - positive,
            "uncertain_entries": uncertain,
            "queries": len(queries),
            "positive_queries": sum(1 for q in queries if q.polarity == YES),
            "negative_queries": sum(1 for q in queries if q.polarity == NO),
            "findings_with_queries": len({q.finding for q in queries}),
            "sections": list(self.sections),
            "lexicon": self.lexicon,
            "per_finding": dict(sorted(per.items())),
        }

    def write(self, out_dir: str | Path) -> dict[str, Path]:
        """Write the exports (see the module docstring) into ``out_dir`` (created if needed).

        Returns:
            Export name -> path.
        """
        out = Path(out_dir)
        out.mkdir(parents=True, exist_ok=True)
        paths = {
            "labeled_sentences": out / "labeled_sentences.jsonl",
            "queries": out / "queries.tsv",
            "qrels_sentence": out / "qrels.sentence.trec",
            "qrels_report": out / "qrels.report.trec",
            "stats": out / "stats.json",
        }
        with paths["labeled_sentences"].open("w", encoding="utf-8") as f:
            for s in self.sentences:
                if s.mentions:
                    f.write(json.dumps(s.to_dict(), ensure_ascii=False) + "\n")
        with paths["queries"].open("w", encoding="utf-8") as f:
            for q in self.queries:
                f.write(f"{q.qid}\t{q.text}\n")
        for level in ("sentence", "report"):
            with paths[f"qrels_{level}"].open("w", encoding="utf-8") as f:
                for qid, docs in self.qrels(level).items():
                    for doc in docs:
                        f.write(f"{qid} 0 {doc} 1\n")
        paths["stats"].write_text(json.dumps(self.stats(), indent=2) + "\n", encoding="utf-8")
        return paths


def build_weak_labels(
    reports: Iterable[Report],
    labeler: Labeler | None = None,
    sections: Iterable[str] = DEFAULT_SECTIONS,
    progress: bool = True,
) -> WeakLabels:
    """Label the sentences of ``reports`` and build the query dictionary.

    Args:
        reports: Reports (e.g. from :func:`radsift.corpus.read_corpus`).
        labeler: The labeler (default: packaged lexicon and rules).
        sections: Sections whose sentences are labeled.
        progress: Show a progress bar while labeling.

    Raises:
        CorpusError: A report id contains whitespace (it could not be a TREC docid).
    """
    from radsift.labels.labeler import Labeler

    labeler = labeler or Labeler()
    sections = tuple(sections)
    uniques: dict[str, UniqueSentence] = {}
    n_reports = n_sentences = 0
    for report in reports:
        n_reports += 1
        if any(c.isspace() for c in report.id):
            raise CorpusError(f"report id {report.id!r} contains whitespace; it cannot be a TREC docid")
        for sent in report_sentences(report, sections):
            n_sentences += 1
            key = normalize_sentence(sent.text)
            if not key:
                continue
            u = uniques.get(key)
            if u is None:
                u = uniques[key] = UniqueSentence(id=f"s{len(uniques) + 1:06d}", text=sent.text)
            u.sentence_uids.append(sent.uid)
            if not u.report_ids or u.report_ids[-1] != report.id:  # a report's sentences come together
                u.report_ids.append(report.id)
    items = list(uniques.values())
    labeled = labeler.label_many([u.text for u in items], progress=progress)
    for u, mentions in zip(items, labeled):
        u.mentions = tuple(mentions)
        u.labels = frozenset(
            Query(POLARITY_OF_STATUS[m.status], m.finding) for m in mentions if m.status in POLARITY_OF_STATUS
        )
    return WeakLabels(
        sentences=items,
        reports=n_reports,
        occurrences=n_sentences,
        sections=sections,
        lexicon=labeler.lexicon.source,
    )


def split_findings(weak_labels: WeakLabels, folds: int = 2, seed: int = 0) -> list[set[str]]:
    """Divide the labeled findings into ``folds`` groups with about equal labeled entries.

    Greedy balancing: findings in decreasing entry count (ties shuffled by ``seed``) each go
    to the fold with the fewest entries so far. Used for cross-validation by finding: train
    on the queries of some findings, evaluate on the others.

    Returns:
        ``folds`` disjoint sets of finding names covering every finding with a label.
    """
    if folds < 1:
        raise ValueError("folds must be >= 1")
    counts = weak_labels.entry_counts()
    names = sorted(counts)
    random.Random(seed).shuffle(names)
    names.sort(key=lambda n: -counts[n])  # stable: the shuffle only breaks ties
    groups: list[set[str]] = [set() for _ in range(folds)]
    totals = [0] * folds
    for name in names:
        i = min(range(folds), key=lambda k: (totals[k], len(groups[k]), k))
        groups[i].add(name)
        totals[i] += counts[name]
    return groups
