"""Negation and uncertainty: a status for each spotted finding.

Three mechanisms decide a mention's status, each recorded on the mention (``cue``, ``rule``):

* **ConText** (medspaCy's implementation of Harkema et al. 2009) for lexicon synonyms:
  cues such as "no", "without", "negative for" (absent) or "possible", "cannot be
  excluded" (uncertain) modify the findings in their scope; pseudo-cues ("no change in")
  modify nothing; terminators ("but", "however", ";") end a scope, and negation ends
  (", findings compatible with", "represents") end only a negation's scope. The cues are radsift's
  own radiology rules (:mod:`radsift.labels.rules`), not medspaCy's general clinical ones.
  A mention in several scopes takes the nearest cue's status. Rule name:
  ``NEGATED_EXISTENCE:no evidence of``; a mention with no cue is ``present`` (rule ``default``).
* **Normal forms** for the lexicon's ``normal_subjects``: "heart size is within normal
  limits", "normal heart size and pulmonary vascularity", "the heart is not enlarged" give
  the findings *absent*. Rule ``normal-form``, cue the predicate.
* **Absent phrases** of the lexicon: always *absent*. Rule ``absent-phrase``.

The spaCy pipeline is ``spacy.blank("en")``'s tokenizer plus the ConText component; the
lexicon mentions are put in ``doc.ents`` directly, so no target matcher or model is loaded.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from radsift.labels.spacy_light import ConText, ConTextRule, Doc, spacy
from radsift.labels.rules import (DIFFERENTIAL, HISTORICAL, HYPOTHETICAL, NEGATED, NEGATION_END, POSSIBLE, STATUS_OF,
                                  NormalForms, Rules)
from radsift.labels.spotter import Match
from radsift.labels.phrase_tokens import BARRIERS, Normalizer, Token
from radsift.records import Mention

DEFAULT_RULE = "default"
NORMAL_FORM_RULE = "normal-form"
ABSENT_PHRASE_RULE = "absent-phrase"
#: The rules file's name of the question-mark cue (HYPOTHETICAL): back to the sentence's start where it closes the
#: sentence, else over the words right after it (:func:`_question_reaches`).
QUESTION_RULE = "question mark"
#: How many tokens after a question mark that does not close its sentence a finding may start ("? right lower lobe
#: pneumonia").
QUESTION_REACH = 4


@dataclass(frozen=True)
class _Predicate:
    start_char: int
    end_char: int
    text: str


class NormalFormResolver:
    """Finds the normal-state predicate describing a normal subject, if any.

    Args:
        forms: The predicate, coordination and link phrases.
        normalizer: The lexicon's normalizer (so "limits" matches "limit").
    """

    def __init__(self, forms: NormalForms, normalizer: Normalizer) -> None:
        self._norm = normalizer
        self._after: dict[str, list[tuple[str, ...]]] = {}
        self._before: dict[str, list[tuple[str, ...]]] = {}
        for phrase in forms.after:
            key = self._key(phrase)
            self._after.setdefault(key[0], []).append(key)
        for phrase in forms.before:
            key = self._key(phrase)
            self._before.setdefault(key[-1], []).append(key)
        for table in (self._after, self._before):
            for keys in table.values():
                keys.sort(key=len, reverse=True)
        self._coordination = {self._word(w) for w in forms.coordination}
        self._links = {self._word(w) for w in forms.links}
        self._others_first: dict[str, list[tuple[str, ...]]] = {}
        self._others_last: dict[str, list[tuple[str, ...]]] = {}
        for phrase in forms.others:
            key = self._key(phrase)
            if key:
                self._others_first.setdefault(key[0], []).append(key)
                self._others_last.setdefault(key[-1], []).append(key)
        for table in (self._others_first, self._others_last):
            for keys in table.values():
                keys.sort(key=len, reverse=True)

    def _word(self, word: str) -> str:
        word = word.strip()
        return word if word in BARRIERS else self._norm.word(word)

    def _key(self, phrase: str) -> tuple[str, ...]:
        return tuple(t.norm for t in self._norm.tokens(phrase))

    def resolve(self, text: str, tokens: list[Token], subject: Match, subjects: list[Match],
                others: bool = True) -> _Predicate | None:
        """The predicate that states ``subject`` is normal, or None.

        Args:
            text: The sentence.
            tokens: Its tokens.
            subject: A ``subject`` match.
            subjects: All subject matches of the sentence (coordinated subjects are skipped).
            others: Skip the structures listed beside the subjects (:attr:`~radsift.labels.rules.NormalForms.others`:
                "the heart and lungs are normal"); False for a query, whose organs are each asked of apart.
        """
        norms = [t.norm for t in tokens]
        starts = {m.first: m for m in subjects}
        ends = {m.last - 1: m for m in subjects}
        n = len(norms)
        # Right: [coordination | other subjects]* then [links]* then an "after" predicate.
        j, coordinating = subject.last, True
        while j < n:
            found = self._longest(self._after.get(norms[j], ()), norms, j, forward=True)
            if found:
                return self._predicate(text, tokens, j, j + found)
            if coordinating and norms[j] in self._coordination:
                j += 1
                continue
            if coordinating and j in starts:
                j = starts[j].last
                continue
            other = self._longest(self._others_first.get(norms[j], ()), norms, j, forward=True) \
                if coordinating and others else 0
            if other and j > subject.last:  # a structure listed beside ("the heart and lungs"), after a joining word
                j += other
                continue
            if norms[j] in self._links:
                coordinating = False
                j += 1
                continue
            break
        # Left: a "before" predicate, possibly ahead of other subjects joined by coordination words.
        j = subject.first - 1
        while j >= 0:
            found = self._longest(self._before.get(norms[j], ()), norms, j, forward=False)
            if found:
                return self._predicate(text, tokens, j - found + 1, j + 1)
            k = j
            while k >= 0 and norms[k] in self._coordination:
                k -= 1
            if k < j and k in ends:
                j = ends[k].first - 1
                continue
            other = self._longest(self._others_last.get(norms[k], ()), norms, k, forward=False) \
                if others and 0 <= k < j else 0
            if other:  # a structure listed before ("normal lungs and heart"), then a joining word
                j = k - other
                continue
            break
        return None

    @staticmethod
    def _longest(keys, norms: list[str], j: int, forward: bool) -> int:
        for key in keys:  # longest first
            size = len(key)
            window = norms[j : j + size] if forward else norms[max(0, j - size + 1) : j + 1]
            if tuple(window) == key:
                return size
        return 0

    @staticmethod
    def _predicate(text: str, tokens: list[Token], first: int, last: int) -> _Predicate:
        start, end = tokens[first].start, tokens[last - 1].end
        return _Predicate(start, end, text[start:end])


class NegationDetector:
    """Decides present / absent / uncertain for spotted matches.

    Args:
        rules: The ConText cues and normal forms.
        normalizer: The lexicon's normalizer.
    """

    def __init__(self, rules: Rules, normalizer: Normalizer) -> None:
        self.rules = rules
        self.nlp = spacy.blank("en")
        self.context = ConText(
            self.nlp,
            rules=None,
            span_attrs=None,
            prune_on_modifier_overlap=True,
            prune_on_target_overlap=True,  # "free air" is a finding, not the cue "free"
        )
        context_rules = []
        for cue in rules.cues:
            # medspaCy's TERMINATE direction ends every scope; a negation end is a cue whose
            # scope spans the sentence (so it meets any negation scope around it) and that
            # only negation rules list in terminated_by. It modifies no status (not in STATUS_OF).
            direction = "BIDIRECTIONAL" if cue.category == NEGATION_END else cue.direction
            context_rules.append(
                ConTextRule(
                    literal=cue.literal,
                    category=cue.category,
                    pattern=cue.pattern,
                    direction=direction,
                    max_scope=cue.max_scope,
                    terminated_by=_terminated_by(cue),
                    allowed_types={t.upper() for t in cue.types} or None,
                    metadata={"name": cue.name, "negatable": cue.negatable},
                )
            )
        self.context.add(context_rules)
        self.normal_forms = NormalFormResolver(rules.normal_forms, normalizer)

    def make_docs(self, texts, batch_size: int = 512):
        """Tokenize many sentences with spaCy (batched)."""
        return self.nlp.tokenizer.pipe(texts, batch_size=batch_size)

    def mentions(self, text: str, tokens: list[Token], matches: list[Match], doc: Doc | None = None,
                 differential: bool = True, others: bool = True) -> list[Mention]:
        """Mentions with statuses for the matches of one sentence.

        Args:
            text: The sentence.
            tokens: Its spotter tokens.
            matches: Its spotter matches.
            doc: Its spaCy doc when already tokenized (needed only if there are synonym matches).
            differential: Read findings joined as alternatives ("effusion or atelectasis") as uncertain;
                False for a query, where "effusion or pneumothorax" asks for either.
            others: Let a normal form reach a subject across the structures listed beside it ("the heart and lungs
                are normal"); False for a query, whose organs are each asked of apart.
        """
        out: list[Mention] = []
        subjects = [m for m in matches if m.kind == "subject"]
        predicates = []
        for m in subjects:
            pred = self.normal_forms.resolve(text, tokens, m, subjects, others)
            if pred is not None:
                predicates.append(pred)
                out.append(_mention(m, "absent", pred.text, NORMAL_FORM_RULE))
        if predicates:
            # A finding phrase inside a normal predicate describes the subject, not a finding:
            # "osseous structures are without acute abnormality".
            matches = [
                m for m in matches if not any(m.start < p.end_char and p.start_char < m.end for p in predicates)
            ]
        for m in matches:
            if m.kind == "absent":
                out.append(_mention(m, "absent", m.text, ABSENT_PHRASE_RULE))
        synonyms = [m for m in matches if m.kind == "synonym"]
        if synonyms:
            spent = [(p.start_char, p.end_char) for p in predicates]
            out.extend(self.read_matches(text, synonyms, doc, differential, spent))
        out.sort(key=lambda x: (x.start, x.end))
        return out

    def read_matches(self, text: str, matches: list[Match], doc: Doc | None = None,
                     differential: bool = True, spent: Sequence[tuple[int, int]] = ()) -> list[Mention]:
        """ConText statuses of spotted matches (non-overlapping, in order) of one sentence.

        Also used for phrases outside the lexicon (:mod:`radsift.labels.openvocab`). ``differential``:
        see :meth:`mentions`. ``spent``: character spans of normal predicates already read (:meth:`mentions`):
        a cue inside one describes its subject and modifies nothing else ("The heart is not enlarged, the lungs
        are hyperinflated." states the hyperinflation).
        """
        if doc is None:
            doc = self.nlp.make_doc(text)
        for i, token in enumerate(doc):
            token.is_sent_start = i == 0
        spans, kept = [], []
        last_end = -1
        for m in matches:  # already non-overlapping and in order
            span = doc.char_span(m.start, m.end, label=m.concept.category.upper(), alignment_mode="expand")
            if span is None or span.start < last_end:
                continue  # tokenization disagreement: keep the earlier mention
            spans.append(span)
            kept.append(m)
            last_end = span.end
        doc.ents = spans
        self.context(doc)
        # The findings each list of alternatives joins: "atelectasis or scarring" is a differential,
        # "infection/pneumonia" (one finding twice) and "residual or recurrent pneumonia" (one) are not.
        joined: dict[int, set[str]] = {}
        for span, m in zip(doc.ents, kept):
            for mod in span._.modifiers:
                if mod.category == DIFFERENTIAL:
                    joined.setdefault(id(mod), set()).add(m.concept.name)
        alternatives = {key for key, names in joined.items() if len(names) > 1}
        out = []
        spent_tokens = [(sp.start, sp.end) for sp in (doc.char_span(x, y, alignment_mode="expand") for x, y in spent)
                        if sp is not None]
        for span, m in zip(doc.ents, kept):
            status, cue, rule = _decide(doc, span, differential, alternatives, spent_tokens)
            out.append(_mention(m, status, cue, rule))
        return out


def _terminated_by(cue) -> set[str] | None:
    """The categories besides TERMINATE that end a cue's scope."""
    if cue.category == NEGATED:
        return {NEGATION_END} if cue.negation_end else None
    if cue.category == DIFFERENTIAL:
        # A new assertion or another cue ends a list of alternatives: "consolidation with residual or recurrent
        # pneumonia" leaves the consolidation stated, "opacity may represent atelectasis or pneumonia" the opacity.
        return {NEGATION_END, POSSIBLE, HYPOTHETICAL, HISTORICAL}
    return None


def _question_reaches(doc: Doc, span, mod) -> bool:
    """Whether a :data:`QUESTION_RULE` cue reaches ``span`` (other cues always do): a mark closing its sentence (no
    word after it) reaches back ("Pneumonia?" asks); one followed by words reaches the finding starting within
    :data:`QUESTION_REACH` tokens after it ("fever and cough, ? pneumonia", an indication's mark: the pneumonia is
    asked, the fever and the cough stated)."""
    if not str(mod.rule.metadata.get("name")).endswith(f":{QUESTION_RULE}"):  # names are "CATEGORY:name"
        return True
    end = mod.modifier_span[1]
    if not any(t.is_alpha or t.is_digit for t in doc[end:]):
        return span.end <= mod.modifier_span[0]
    return 0 <= span.start - end < QUESTION_REACH


def _in_later_parenthesis(doc: Doc, span, mod) -> bool:
    """Whether ``span`` lies in a parenthesis opened after ``mod``'s cue: a parenthesis is a statement of its
    own, which a negation before it does not reach ("No ... large pleural effusion identified (blunting of
    costophrenic recesses bilaterally may represent small effusions ..." states the blunting)."""
    end = mod.modifier_span[1]
    depth = 0
    for token in doc[end:span.start] if end <= span.start else ():
        if token.text == "(":
            depth += 1
        elif token.text == ")":
            depth = max(depth - 1, 0)
    return depth > 0


def _distance(span, mod) -> int:
    start, end = mod.modifier_span
    if end <= span.start:
        return span.start - end
    if start >= span.end:
        return start - span.end
    return 0


def _decide(doc: Doc, span, differential: bool = True, alternatives: frozenset | set = frozenset(),
            spent: Sequence[tuple[int, int]] = ()) -> tuple[str, str | None, str]:
    mods = [m for m in span._.modifiers if m.category in STATUS_OF and _question_reaches(doc, span, m)
            and not (m.category == NEGATED and _in_later_parenthesis(doc, span, m))
            and not any(a <= m.modifier_span[0] and m.modifier_span[1] <= b for a, b in spent)]
    if not differential or any(m.category == NEGATED for m in mods):
        # "No pneumothorax or pleural effusion": a negation of the list beats the alternatives in it.
        mods = [m for m in mods if m.category != DIFFERENTIAL]
    mods = [m for m in mods if m.category != DIFFERENTIAL or id(m) in alternatives]
    if not mods:
        return "present", None, DEFAULT_RULE
    # Nearest cue wins; on a tie negation beats uncertainty.
    best = min(mods, key=lambda m: (_distance(span, m), m.category != NEGATED))
    if best.category == POSSIBLE:
        negs = [m for m in mods if m.category == NEGATED and m.modifier_span[1] <= best.modifier_span[0]]
        if not best.rule.metadata.get("negatable"):
            # "no evidence of possible pneumonia": a negation right before any uncertainty cue denies
            # the hedged finding; with words between ("no effusion, possible atelectasis") it does not.
            negs = [m for m in negs if m.modifier_span[1] == best.modifier_span[0]]
        # "no opacity suggestive of pneumonia": a negation ahead of an evidential cue rules it out.
        if negs:
            best = max(negs, key=lambda m: m.modifier_span[0])
    elif best.category in (HISTORICAL, HYPOTHETICAL):
        # "denies a history of tuberculosis", "no evidence to suggest ... for": a negation ahead of a
        # history or an indication denies the finding.
        negs = [m for m in mods if m.category == NEGATED and m.modifier_span[1] <= best.modifier_span[0]]
        if negs:
            best = max(negs, key=lambda m: m.modifier_span[0])
    start, end = best.modifier_span
    return STATUS_OF[best.category], doc[start:end].text, best.rule.metadata["name"]


def _mention(m: Match, status: str, cue: str | None, rule: str) -> Mention:
    return Mention(
        finding=m.concept.name,
        category=m.concept.category,
        start=m.start,
        end=m.end,
        text=m.text,
        status=status,
        cue=cue,
        rule=rule,
    )
