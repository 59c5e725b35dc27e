"""Open-vocabulary negation: findings outside the lexicon, read with the same ConText rules.

A query such as "no intracranial hemorrhage" names a finding the chest X-ray lexicon does not
know. :class:`PhraseReader` reads it without a lexicon entry:

1. **In the query**: the ConText cues found in it ("no", "is not seen", "possible") are taken
   out; what remains, split at "and", "or", "with" and commas, are the finding phrases. Each
   phrase keeps its content words (stop words, side words and severity words out): their
   Snowball stems (the BM25 tokenizer's, :func:`radsift.text.tokens.stem`) must all occur in a
   unit for it to mention the finding, so "hemorrhages" and "hemorrhagic" match "hemorrhage".
   The phrase's status is what ConText decides for its head word (the last content word) in
   the query.
2. **In a unit**: every occurrence of the head word with the phrase's other content words
   within :data:`WINDOW` tokens is a mention; ConText decides its status from the cues around
   the head word ("kidneys show no stone formation": stone, absent). When the phrase says where its
   finding is ("a shadow on the lung"), a word of it that another structure modifies in the unit is
   that structure's, not the phrase's (:data:`OTHER_STRUCTURES`: "nipple shadows ... overlie the lung
   bases" is no shadow on the lung); a phrase that says nowhere keeps them ("heart murmur" is a murmur).
   A phrase calling an organ normal ("lungs are clear") is not met by a statement about part of it
   ("remaining lungs are clear", "lungs are otherwise clear": :data:`PARTIAL_WORDS`), which names
   something abnormal beside it.

A negation between a subject and what is said of it ("lungs are not clear") negates the
statement: the phrase is read whole ("lungs are clear", absent), not split at the cue.

Side words (left, right, bilateral, both, bibasilar) are read as the query's side, not as
content words (:data:`SIDE_WORDS`); locations ("right upper lobe", "RLL", "lingular":
:mod:`radsift.text.locations`) likewise, as the query's location.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from radsift.labels.lexicon import Concept
from radsift.labels.phrase_tokens import SPELLINGS
from radsift.labels.spotter import Match
from radsift.records import Mention
from radsift.text import locations
from radsift.text.sides import SIDE_WORDS
from radsift.text.tokens import TOKEN_RE, stem

#: Content words of a phrase must lie within this many tokens of its head word.
WINDOW = 10
#: Words that never make a finding: function words, and words queries use around findings.
STOP_WORDS = frozenset(
    "a an the of in on at to for from by with and or any is are was were be been being there this that these "
    "those it its as into onto per patient patients study exam finding findings evidence sign signs "
    "seen noted present identified demonstrated shows show showing".split()
    # the imaging, not a finding ("normal chest x-ray": reports write "x-XXXX", "radiograph", "film" or nothing)
    + "x ray xray x-ray radiograph radiographs radiography film films image images imaging view views".split())
#: Severity and time words: kept in the phrase text, not required in a unit.
OPTIONAL_WORDS = frozenset(
    "small large tiny trace minimal mild mildly moderate moderately severe severely marked markedly acute "
    "chronic new old subtle prominent extensive diffuse focal multiple single few several".split())
#: Stems of spelling variants folded to one ("disk" and "disc"), as the lexicon's normalizer folds them.
_STEM_SPELLINGS = {stem(k): stem(v) for k, v in SPELLINGS.items()}
#: Structures other than the one a phrase places its finding in, and words saying a shadow is cast from
#: outside the lung: directly before a word of a phrase that says where ("on the lung") in a unit ("nipple
#: shadows", "overlying breast shadows", "vascular shadows", "bone lesion"), the word is theirs and no mention
#: of the phrase (unless the phrase names them).
OTHER_STRUCTURES = tuple(tuple(w.split()) for w in (
    "nipple", "nipples", "breast", "breasts", "soft tissue", "soft tissues", "skin", "vascular", "vessel",
    "vessels", "bone", "bony", "osseous", "rib", "ribs", "costal", "scapular", "clavicular", "cardiac", "heart",
    "thyroid", "overlying", "overlapping", "superimposed"))
#: Prepositions by which a phrase says where its finding is ("a shadow on the lung", "a lump in the lung").
LOCATIVE = re.compile(r"\b(?:on|in|within|inside|around|over|under|beneath|behind|along)\s", re.IGNORECASE)
#: Words that call an organ normal: a phrase holding one is a normal statement ("lungs are clear").
NORMAL_WORDS = frozenset("clear normal unremarkable".split())
#: Words saying a normal statement holds for part of the organ only ("remaining lungs are clear", "lungs are
#: otherwise clear", "clear except for ..."): the report names something abnormal beside it, so the statement
#: is no mention of the whole organ called normal (:data:`PARTIAL_SPAN` tokens before its head, 3 after).
PARTIAL_WORDS = frozenset("otherwise remaining remainder rest elsewhere except excepting apart aside besides".split())
PARTIAL_SPAN = 8
#: Verbs joining a subject to what is said of it: a negation right after one negates the statement.
COPULAS = frozenset("is are was were appear appears remain remains".split())
_SPLIT = frozenset({"and", "or", "with", "plus", ",", ";", "/", "versus", "vs"})
#: Separators joining subjects that share what is said after them ("heart and lungs are normal").
_JOINING = frozenset({"and", ","})
_WORD = re.compile(r"[A-Za-z]")
#: Negation ends that are words of time: they end a denial ("no pleural effusion after bypass surgery" states the
#: CABG) and split phrases, but stay words of the text a concept is linked from ("partly closed after surgery").
_KEPT_CUES = frozenset({"after", "following"})
#: Words of an organ working as it should ("not working", "not fully inflated", "not opening up"): "not" before one
#: states a finding, so it is no denial of a state with its copula left out (:func:`_negated_statement`).
_WORKING = frozenset("working functioning moving pumping opening inflated inflating expanded expanding aerated "
                     "breathing clear normal well fully properly completely right".split())
_NORMAL_STEMS = frozenset(stem(w) for w in NORMAL_WORDS)


@dataclass(frozen=True)
class Phrase:
    """A finding phrase read from a query.

    Attributes:
        text: The phrase as written ("intracranial hemorrhage").
        stems: Stems of its required content words, the head word's last.
        status: What the query asks: ``present``, ``absent`` or ``uncertain``.
        cue: The query's cue that decided the status, if any.
    """

    text: str
    stems: tuple[str, ...]
    status: str = "present"
    cue: str | None = None

    @property
    def head(self) -> str:
        return self.stems[-1]

    @property
    def located(self) -> bool:
        """Whether the phrase says where its finding is ("shadow on the lung"): see :data:`OTHER_STRUCTURES`."""
        return LOCATIVE.search(self.text) is not None


def query_side(query: str) -> str | None:
    """The side a query names: ``left``, ``right``, ``bilateral`` or None (none, or both named); a heart chamber's side
    counts ("right atrium": right), :func:`radsift.text.sides.names_chamber_side` says when it is one."""
    sides = {SIDE_WORDS[w] for w in (m.group().lower() for m in TOKEN_RE.finditer(query)) if w in SIDE_WORDS}
    if {"left", "right"} <= sides:
        sides = (sides - {"left", "right"}) | {"bilateral"}
    return sides.pop() if len(sides) == 1 else None


class PhraseReader:
    """Finds finding phrases in queries and reads their status in units.

    Args:
        detector: The labeler's :class:`~radsift.labels.negation.NegationDetector` (its rules decide).
    """

    def __init__(self, detector) -> None:
        self.detector = detector

    # -- the query -----------------------------------------------------------------------------
    def _cues(self, query: str):
        """The query as a doc, and the token positions of its ConText cues."""
        doc = self._doc(query)
        self.detector.context(doc)
        in_cue = set()
        for mod in doc._.context_graph.modifiers:
            in_cue.update(range(*mod.modifier_span))
        return doc, in_cue

    def finding_text(self, query: str) -> tuple[str, str, str | None]:
        """The query without its cue words, and the status and cue the query asks for.

        ``"no fluid around the lungs"`` -> ``("fluid around the lungs", "absent", "no")``: what a
        concept linker compares with concept descriptions (:mod:`radsift.search.concepts`). The
        status is that of the query's first finding phrase (``present`` when it has none).
        """
        doc, in_cue = self._cues(query)
        text = " ".join(t.text for i, t in enumerate(doc)
                        if (i not in in_cue or t.lower_ in _KEPT_CUES) and _WORD.search(t.text))
        phrases = self.phrases(query)
        status, cue = (phrases[0].status, phrases[0].cue) if phrases else ("present", None)
        return text, status, cue

    def phrases(self, query: str) -> list[Phrase]:
        """The finding phrases of a query, each with the status the query asks for."""
        doc, in_cue = self._cues(query)
        groups: list[list[int]] = [[]]
        joined: list[bool] = []  # per finished group: whether "and" or a comma joined it to the next
        for i, token in enumerate(doc):
            if i in in_cue and _negated_statement(doc, i, in_cue, groups[-1]):
                continue  # "lungs are not clear": one phrase, the cue read for its head
            if _inner_hyphen(doc, i):
                continue  # "x-ray", "well-defined": one word, not two phrases
            if i in in_cue or token.lower_ in _SPLIT or not _WORD.search(token.text):
                if groups[-1]:
                    groups.append([])
                    joined.append(token.lower_ in _JOINING)
                elif joined:
                    joined[-1] = joined[-1] and token.lower_ in _JOINING
                continue
            groups[-1].append(i)
        out = []
        places = [(loc.start, loc.end) for loc in locations.read_locations(query)] if locations.enabled() else []
        bare: list[bool] = []  # per phrase: whether "and" or a comma joins it to the next
        for g, group in enumerate(groups):
            words = [doc[i] for i in group if doc[i].lower_ not in STOP_WORDS and doc[i].lower_ not in SIDE_WORDS
                     and not any(a <= doc[i].idx < b for a, b in places)]
            required = [t for t in words if t.lower_ not in OPTIONAL_WORDS]
            if not required:
                if bare:
                    bare[-1] = bare[-1] and (joined[g] if g < len(joined) else False)
                continue
            head = required[-1]
            status, cue = self._status(doc, head.i)
            text = "".join(t.text_with_ws for t in doc[words[0].i: words[-1].i + 1] if t.i not in in_cue).strip()
            out.append(Phrase(text, tuple(_stem(t.lower_) for t in required), status, cue))
            bare.append(joined[g] if g < len(joined) else False)
        return _shared_normal(out, bare)

    def _doc(self, text: str):
        doc = self.detector.nlp.make_doc(text)
        for i, token in enumerate(doc):
            token.is_sent_start = i == 0
        return doc

    def _status(self, doc, i: int) -> tuple[str, str | None]:
        head = doc[i]
        match = Match(_concept(head.text), "synonym", head.idx, head.idx + len(head.text), i, i + 1, head.text)
        (mention,) = self.detector.read_matches(doc.text, [match], doc, differential=False)
        return mention.status, mention.cue

    # -- a unit --------------------------------------------------------------------------------
    def read(self, phrase: Phrase, text: str) -> list[Mention]:
        """Mentions of ``phrase`` in ``text`` (one per occurrence of its head word), with statuses."""
        spans = [(m.start(), m.end(), _stem(m.group().lower())) for m in TOKEN_RE.finditer(text)]
        stems = [s for _, _, s in spans]
        if phrase.located:  # a word another structure modifies is not the phrase's ("nipple shadows")
            words = [text[a:b].lower() for a, b, _ in spans]
            joined = [i > 0 and not text[spans[i - 1][1]:spans[i][0]].strip() for i in range(len(spans))]
            named = set(phrase.stems)
            stems = [None if _other_structure(words, joined, i, named) else s for i, s in enumerate(stems)]
        others = phrase.stems[:-1]
        partial = _normal_phrase(phrase) and [text[a:b].lower() for a, b, _ in spans]
        matches = []
        for i, s in enumerate(stems):
            if s != phrase.head:
                continue
            if partial and PARTIAL_WORDS.intersection(partial[max(0, i - PARTIAL_SPAN): i + 4]):
                continue  # "remaining lungs are clear": something abnormal is named beside it
            near = set(stems[max(0, i - WINDOW): i + WINDOW + 1])
            if all(o in near for o in others):
                start, end = spans[i][0], spans[i][1]
                matches.append(Match(_concept(phrase.text), "synonym", start, end, i, i + 1, text[start:end]))
        if not matches:
            return []
        return self.detector.read_matches(text, matches)


def _inner_hyphen(doc, i: int) -> bool:
    """Whether token ``i`` is a hyphen inside a word ("x-ray": no space on either side, a word on both)."""
    token = doc[i]
    return (token.text == "-" and 0 < i < len(doc) - 1 and not doc[i - 1].whitespace_ and not token.whitespace_
            and _WORD.search(doc[i - 1].text) is not None and _WORD.search(doc[i + 1].text) is not None)


def _other_structure(words: list[str], joined: list[bool], i: int, named: set[str]) -> bool:
    """Whether the words right before ``words[i]`` (only spaces between them: "Cardiac: Chest pain" is none)
    are one of :data:`OTHER_STRUCTURES` the phrase does not name."""
    for structure in OTHER_STRUCTURES:
        n = len(structure)
        if (i >= n and tuple(words[i - n:i]) == structure and all(joined[i - n + 1:i + 1])
                and not {_stem(w) for w in structure} <= named):
            return True
    return False


def _shared_normal(phrases: list[Phrase], joined: list[bool]) -> list[Phrase]:
    """Subjects sharing a normal statement's predicate: in "heart and lungs are normal" the heart is called normal
    too, so the phrase "heart" (a subject with no word of its own saying anything of it) takes the statement's
    normal word, status and cue; in "normal heart and lungs" the lungs take it. ``joined[i]``: whether "and" or a comma joins phrase ``i`` to the next."""
    out = list(phrases)
    for i in range(len(out) - 2, -1, -1):
        after = out[i + 1]
        if (joined[i] and len(out[i].stems) <= 2 and not _normal_phrase(out[i])
                and _normal_phrase(after) and after.head in _NORMAL_STEMS):
            word = after.text.split()[-1]
            out[i] = Phrase(f"{out[i].text} {word}", (*out[i].stems, after.head), after.status, after.cue)
    for i in range(1, len(out)):  # "normal heart and lungs": the lungs are called normal too
        before = out[i - 1]
        if (joined[i - 1] and len(out[i].stems) <= 2 and not _normal_phrase(out[i])
                and _normal_phrase(before) and before.stems[0] in _NORMAL_STEMS):
            word = before.text.split()[0]
            out[i] = Phrase(f"{word} {out[i].text}", (before.stems[0], *out[i].stems), before.status, before.cue)
    return out


def _normal_phrase(phrase: Phrase) -> bool:
    """Whether a phrase calls an organ normal ("lungs are clear", "normal heart"): one of :data:`NORMAL_WORDS`."""
    return any(w in phrase.stems for w in _NORMAL_STEMS)


def _negated_statement(doc, i: int, in_cue: set[int], group: list[int]) -> bool:
    """Whether cue token ``i`` negates a statement inside a phrase: it follows a copula after the phrase's
    subject ("lungs are not clear"), or is "not" right after the subject ("lungs not overexpanded"), and a word
    that is no cue follows it."""
    j = i
    while j > 0 and j - 1 in in_cue:  # the cue's first token
        j -= 1
    k = i
    while k < len(doc) and k in in_cue:
        k += 1
    # the copula may be left out where "not" follows the subject and denies a state ("lungs not overexpanded"), not
    # a working ("diaphragm not working", "lungs not fully inflated": the finding is there, as before)
    # (a group holds no cue nor split word: the subject's last word is the group's)
    elided = i == j and doc[i].lower_ == "not" and j - 1 in group and k < len(doc) and doc[k].lower_ not in _WORKING
    if not group or j == 0 or (doc[j - 1].lower_ not in COPULAS and not elided):
        return False
    return k < len(doc) and _WORD.search(doc[k].text) is not None and doc[k].lower_ not in _SPLIT


def _stem(word: str) -> str:
    """The Snowball stem of a lower-case word, spelling variants folded ("disks" -> "disc")."""
    s = stem(word)
    return _STEM_SPELLINGS.get(s, s)


def _concept(name: str) -> Concept:
    return Concept(name=name, category="finding", synonyms=(name,))


__all__ = ["COPULAS", "LOCATIVE", "NORMAL_WORDS", "OPTIONAL_WORDS", "OTHER_STRUCTURES", "PARTIAL_WORDS", "Phrase",
           "PhraseReader", "SIDE_WORDS", "STOP_WORDS", "WINDOW", "query_side"]
