"""Name swapping: surrogate finding names, so the model learns to read the name, not recall it.

A bi-encoder trained on the weak labels of a lexicon learns its findings as a closed set: on
Open-i's 2-fold split by finding, a finding never taught ("no pneumonitis") is pulled toward a
taught neighbour ("No pneumothorax." ranks first). BM25 gets such queries right because it only
copies the name. Name swapping teaches the copying to the dense model with no extra labels: in
a share of the lexicon examples (``name_swap``) the finding's name is replaced, in the query *and*
in the matched sentence, by a surrogate term drawn from the site's own text, so that

* ``no sarcoidosis`` is paired with "No sarcoidosis or pleural effusion." (swapped from "No
  pneumothorax or pleural effusion."), and
* its opposite-negation partner gets the same surrogate ("sarcoidosis" with "Small right
  sarcoidosis.", swapped from "Small right pneumothorax."), so the batch still holds both
  polarities of the surrogate,

while the unswapped original ("No pneumothorax or pleural effusion.") is a valid hard negative
for the swapped query. The polarity cue and the sentence around the name are real report text;
only the name is new. This is entity-replacement augmentation (as in the counterfactual and
entity-swap augmentations of NLP robustness work) applied to the weak-label triplets of Shi et
al. (2022).

Surrogates are words (and adjacent word pairs) of the training reports that are *not* in the
lexicon (no synonym, absent phrase or normal subject of any concept, compared by stem), not
negation or uncertainty cues, not function words and not de-identification tokens. Excluding
every lexicon word keeps swapped examples from clashing with real labels, and on the split by
finding it means the held-out findings' names are never seen as queries: the measured gain on
unseen findings is not a leak.
"""

from __future__ import annotations

import re
from collections import Counter
from typing import Iterable

from radsift.text.tokens import stem

_WORD_RE = re.compile(r"[A-Za-z]+")
#: Function and reporting words that make poor finding names ("no there", "no which").
_FUNCTION_WORDS = frozenset("""
a about above after again against all also although among an and any are as at be because been
before being below between both but by can could did do does done down during each either else
every few for from further had has have having here how however if in into is it its itself just
less may might more most much must near neither nor not now of off on once only or other our out
over own per same seen shall should show shows shown since so some such than that the their them
then there these they this those though through thus to too under until up upon very via was were
what when where whether which while who whom whose why will with within without would yet
again appear appears appearance change changes compared comparison demonstrate demonstrated
evidence exam examination finding findings given identified image images impression interval
noted otherwise patient previous prior radiograph radiographs redemonstrated remain remains
stable study today unchanged view views visualized
""".split())
#: De-identification placeholders in Open-i ("XXXX") and similar runs of one letter.
_PLACEHOLDER_RE = re.compile(r"^(x)\1+$", re.IGNORECASE)
MIN_LETTERS = 4
MIN_COUNT = 2


def excluded_stems(lexicon, rules=None) -> set[str]:
    """Stems of every word of the lexicon's phrases and of the rules' cues and normal forms."""
    phrases: list[str] = []
    for concept in lexicon:
        phrases += [concept.name, *concept.synonyms, *concept.absent_phrases, *concept.normal_subjects]
    if rules is not None:
        phrases += [c.literal for c in rules.cues]
        forms = rules.normal_forms
        phrases += [*forms.after, *forms.before, *forms.coordination, *forms.links]
    return {stem(w.lower()) for p in phrases for w in _WORD_RE.findall(p)}


def _eligible(word: str, excluded: set[str]) -> bool:
    lower = word.lower()
    return (len(lower) >= MIN_LETTERS and lower not in _FUNCTION_WORDS and not _PLACEHOLDER_RE.match(lower)
            and stem(lower) not in excluded)


def surrogate_terms(texts: Iterable[str], lexicon, rules=None, min_count: int = MIN_COUNT) -> list[str]:
    """Surrogate finding names from ``texts`` (the training sentences), sorted for determinism.

    Args:
        texts: Sentences of the training reports.
        lexicon: The :class:`~radsift.labels.lexicon.Lexicon` whose words are excluded.
        rules: The :class:`~radsift.labels.rules.Rules` whose cue words are excluded (optional).
        min_count: A word or word pair must occur in at least this many sentences (drops typos).

    Returns:
        Lower-case single words and adjacent pairs of eligible words ("sarcoidosis",
        "known sarcoidosis").
    """
    excluded = excluded_stems(lexicon, rules)
    counts: Counter[str] = Counter()
    for text in texts:
        words = _WORD_RE.findall(text)
        seen: set[str] = set()
        for i, w in enumerate(words):
            if not _eligible(w, excluded):
                continue
            seen.add(w.lower())
            if i + 1 < len(words) and _eligible(words[i + 1], excluded):
                seen.add(f"{w.lower()} {words[i + 1].lower()}")
        counts.update(seen)
    return sorted(t for t, n in counts.items() if n >= min_count)


class NameFinder:
    """Finds the finding names a weak-label sentence may have swapped.

    A name is a mention of a finding named exactly once in the sentence, by one of its synonyms
    word for word (plurals folded): not a normal form ("heart size is normal"), an absent phrase
    or a ``*`` gap match ("lungs remain hypoinflated"), whose text is no name to swap.

    Args:
        lexicon: The :class:`~radsift.labels.lexicon.Lexicon` that labeled the sentences.
    """

    def __init__(self, lexicon) -> None:
        self.word = lexicon.normalizer.word
        self.plain = {c.name: {self.key(p) for p in c.synonyms if "*" not in p} for c in lexicon}

    def key(self, text: str) -> tuple[str, ...]:
        return tuple(self.word(w) for w in _WORD_RE.findall(text))

    def __call__(self, sentence) -> tuple[tuple[str, int, int], ...]:
        """``(finding, start, end)`` of the swappable names of ``sentence`` (a weak-label unique sentence)."""
        from radsift.labels.negation import ABSENT_PHRASE_RULE, NORMAL_FORM_RULE

        count = Counter(m.finding for m in sentence.mentions)
        return tuple((m.finding, m.start, m.end) for m in sentence.mentions
                     if count[m.finding] == 1 and m.status in ("present", "absent")
                     and m.rule not in (NORMAL_FORM_RULE, ABSENT_PHRASE_RULE)
                     and self.key(m.text) in self.plain.get(m.finding, ()))


def swap_span(text: str, start: int, end: int, term: str) -> str:
    """``text`` with ``text[start:end]`` replaced by ``term`` (capitalised at a sentence start)."""
    if start == 0 or not text[:start].strip():
        term = term[:1].upper() + term[1:]
    return text[:start] + term + text[end:]


def mentions_term(text: str, term: str) -> bool:
    """Whether ``text`` contains ``term`` as whole words (case-folded): such a sentence is no negative for it."""
    return re.search(rf"\b{re.escape(term)}\b", text, re.IGNORECASE) is not None
