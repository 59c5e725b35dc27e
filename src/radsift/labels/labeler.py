"""The labeler: findings and their status in sentences (spotter + negation, with a cache)."""

from __future__ import annotations

import threading
from dataclasses import replace
from pathlib import Path
from typing import Iterable, Sequence

from radsift.labels.anaphora import AnaphoricHedgeReader
from radsift.labels.lexicon import Lexicon, load_lexicon
from radsift.labels.negation import NegationDetector
from radsift.labels.observations import doubted_by_impression, questioned_in_sentence
from radsift.labels.openvocab import Phrase, PhraseReader
from radsift.labels.organs import drop_other_organs
from radsift.labels.rules import Rules, load_rules
from radsift.labels.spotter import Match, Spotter
from radsift.progress import progress_bar
from radsift.records import Mention

_CACHE_LIMIT = 1_000_000  # unique sentences kept; radiology repeats sentences a lot


class Labeler:
    """Labels sentences with lexicon findings, each present, absent or uncertain.

    Args:
        lexicon: A :class:`Lexicon`, a path to a lexicon file, or None for the packaged
            chest X-ray lexicon.
        rules: A :class:`Rules`, a path to a rules file, or None for the packaged radiology rules.

    Example:
        >>> labeler = Labeler()
        >>> [(m.finding, m.status) for m in labeler.label("No pneumothorax or pleural effusion.")]
        [('pneumothorax', 'absent'), ('pleural effusion', 'absent')]
    """

    def __init__(self, lexicon: Lexicon | str | Path | None = None, rules: Rules | str | Path | None = None) -> None:
        self.lexicon = lexicon if isinstance(lexicon, Lexicon) else load_lexicon(lexicon)
        self.rules = rules if isinstance(rules, Rules) else load_rules(rules)
        self.spotter = Spotter(self.lexicon)
        self.detector = NegationDetector(self.rules, self.lexicon.normalizer)
        self.anaphora = AnaphoricHedgeReader(self.rules.anaphoric)
        self._cache: dict[str, tuple[Mention, ...]] = {}
        self.phrase_reader = PhraseReader(self.detector)
        self._phrase_cache: dict[tuple[tuple[str, ...], str], tuple[Mention, ...]] = {}
        self._lock = threading.Lock()  # one labeler may serve several threads (the search server)

    def label(self, sentence: str) -> list[Mention]:
        """The findings of one sentence, in reading order, with spans into ``sentence``."""
        return self.label_many([sentence])[0]

    def label_many(
        self, texts: Iterable[str], batch_size: int = 512, progress: bool = False,
        follows: Sequence[bool] | None = None,
    ) -> list[list[Mention]]:
        """Label many sentences; identical sentences are labeled once.

        Args:
            texts: Sentences.
            batch_size: spaCy tokenizer batch size.
            progress: Show a progress bar (rich) over the distinct new sentences.
            follows: For each text, whether it comes right after the text before it in the same section
                of a report; a sentence that points back with a hedged mimic ("This may be artifactual.")
                then makes the findings of the one before it uncertain (:mod:`radsift.labels.anaphora`).
                None: every text stands alone.

        Returns:
            One list of mentions per input text, in input order.
        """
        texts = list(texts)
        with self._lock:
            todo = [t for t in dict.fromkeys(texts) if t not in self._cache]
            if todo:
                self._label_new(todo, batch_size, progress)
            out = [list(self._cache[t]) for t in texts]
        if follows is not None and any(follows):
            out = self.anaphora.carry_back(texts, out, follows)
        return out

    def label_sentences(self, sentences: Sequence[str]) -> list[list[Mention]]:
        """The findings of consecutive sentences of one section, each read with the next (see ``follows``
        of :meth:`label_many`)."""
        return self.label_many(sentences, follows=[i > 0 for i in range(len(sentences))])

    def read_reports(self, mentions: list[list[Mention]], sections: Sequence[str],
                     reports: Sequence[object] | None = None) -> list[list[Mention]]:
        """Sentences' mentions (from :meth:`label_many`) read with the rest of their report: an impression
        that only doubts a finding makes its descriptions elsewhere uncertain
        (:func:`radsift.labels.observations.doubted_by_impression`).

        Args:
            mentions: Each sentence's mentions.
            sections: Each sentence's section name.
            reports: Each sentence's report (any hashable id; None: one report).
        """
        return doubted_by_impression(self.lexicon, sections, mentions, reports)

    def _label_new(self, texts: Sequence[str], batch_size: int, progress: bool) -> None:
        if len(self._cache) + len(texts) > _CACHE_LIMIT:
            self._cache.clear()
        spotted = []
        need_doc = []
        for text in texts:
            tokens = self.spotter.tokens(text)
            matches = drop_other_organs(text, self.spotter.spot(text, tokens))
            spotted.append((text, tokens, matches))
            if any(m.kind == "synonym" for m in matches):
                need_doc.append(text)
        docs = iter(self.detector.make_docs(need_doc, batch_size=batch_size))

        with progress_bar(disable=None if progress else True) as bar:
            task = bar.add_task("labeling sentences", total=len(texts))
            for i, (text, tokens, matches) in enumerate(spotted):
                doc = next(docs) if any(m.kind == "synonym" for m in matches) else None
                mentions = questioned_in_sentence(self.lexicon, self.detector.mentions(text, tokens, matches, doc))
                self._cache[text] = tuple(self._with_parts(_with_inner(mentions, matches)))
                if i % 256 == 255 or i == len(spotted) - 1:
                    bar.update(task, completed=i + 1)

    def _with_parts(self, mentions: list[Mention]) -> list[Mention]:
        """Each mention followed by its compound parts (lexicon ``parts``), same span and status:
        "large left hydropneumothorax" states pneumothorax and pleural effusion."""
        out = []
        for m in mentions:
            out.append(m)
            if m.finding not in self.lexicon:
                continue
            concept = self.lexicon[m.finding]
            if not (concept.parts or concept.phrase_parts):
                continue
            for part in concept.parts_of(self.lexicon.normalizer.phrase(m.text)):
                out.append(replace(m, finding=part, category=self.lexicon[part].category))
        return out

    def label_query(self, query: str) -> list[Mention]:
        """The findings of a query, read as :meth:`label` reads a sentence except that findings joined as
        alternatives keep their status: "pleural effusion or pneumothorax" asks for either, present."""
        with self._lock:
            tokens = self.spotter.tokens(query)
            matches = drop_other_organs(query, self.spotter.spot(query, tokens))
            # organs listed beside a subject are asked of apart ("heart and lungs are okay": both normal)
            mentions = self.detector.mentions(query, tokens, matches, None, differential=False, others=False)
            return self._with_parts(_with_inner(mentions, matches))

    def query_phrases(self, query: str) -> list[Phrase]:
        """Finding phrases of a query outside the lexicon, each with the status asked for
        (see :mod:`radsift.labels.openvocab`)."""
        with self._lock:
            return self.phrase_reader.phrases(query)

    def query_finding_text(self, query: str) -> tuple[str, str, str | None]:
        """The query without its cue words, with the status and cue it asks for (concept linking)."""
        with self._lock:
            return self.phrase_reader.finding_text(query)

    def read_phrase(self, phrase: Phrase, texts: Iterable[str]) -> list[list[Mention]]:
        """Mentions of an open-vocabulary ``phrase`` in each text, with statuses (cached)."""
        texts = list(texts)
        with self._lock:
            if len(self._phrase_cache) + len(texts) > _CACHE_LIMIT:
                self._phrase_cache.clear()
            out = []
            for text in texts:
                key = (phrase.stems, text)
                found = self._phrase_cache.get(key)
                if found is None:
                    found = self._phrase_cache[key] = tuple(self.phrase_reader.read(phrase, text))
                out.append(list(found))
            return out

    def clear_cache(self) -> None:
        """Forget labeled sentences (after changing rules in place, say)."""
        with self._lock:
            self._cache.clear()
            self._phrase_cache.clear()


def _with_inner(mentions: list[Mention], matches: Sequence[Match]) -> list[Mention]:
    """Each mention followed by the findings inside its gapped phrase (:attr:`Match.inner`), with its status:
    "Tortuous, calcified thoracic aorta" states atherosclerotic calcification as well as tortuosity."""
    inner = {(m.start, m.end): m.inner for m in matches if m.inner}
    if not inner:
        return mentions
    out = []
    for mention in mentions:
        out.append(mention)
        for m in inner.get((mention.start, mention.end), ()):
            out.append(replace(mention, finding=m.concept.name, category=m.concept.category, start=m.start,
                               end=m.end, text=m.text))
    return out
