"""What a sentence says when the lexicon reads no finding in it: that all is normal, nothing, or something else.

The labels hold what a sentence states of the lexicon's findings ("No effusion.": effusion absent;
"Heart size is normal.": cardiomegaly absent), but reports also say that everything is normal in words
that name no finding ("The lungs are clear.", "No acute cardiopulmonary process.", "Negative chest."),
and say things about the examination itself ("Comparison: none.", "PA and lateral views of the chest were
obtained."). :func:`sentence_kind` reads a sentence's words for that, so that ranking can tell a unit that
only says all is normal from one that may state a finding (:func:`radsift.ranking.tiers.normal_keys`).

The rules are deliberately narrow: a sentence is **normal** when it opens with a denial ("no ...",
"negative ...", "without ...") that nothing turns ("but", "except", "however") and that is no statement of
no change ("no interval change"), or when it calls something normal ("clear", "normal", "unremarkable",
"intact", "well aerated") and every other word is an organ, a view or a word around them; it is **exam**
when every word is one of the examination's (views, comparison, the film) or it says only that the anatomy
is stable or unchanged. Everything else is **other**: whatever the lexicon does not know ("calcified
hilar nodes", "hyperinflated lungs") may be what a query is looking for.
"""

from __future__ import annotations

import re

#: Kinds of a sentence the lexicon reads nothing in.
NORMAL, EXAM, OTHER = "normal", "exam", "other"

_NUMBERING = re.compile(r"^\s*(?:\d+\s*[.)]\s*)+")
#: De-identification tokens (Open-i's ``XXXX``): they say nothing.
_MASK = re.compile(r"\bx{2,}\b", re.IGNORECASE)
#: "x-XXXX": an x-ray, its second half masked.
_XRAY = re.compile(r"\bx-x{2,}\b")
_DENIAL = re.compile(r"^(?:there\s+(?:is|are|was|were)\s+)?(?:no|negative|without)\b")
#: A denial of change is no statement that all is normal ("no interval change in the effusion").
_NO_CHANGE = re.compile(r"^(?:there\s+(?:is|are|was|were)\s+)?no\s+(?:\w+\s+)?(?:change|changes|interval|difference)\b")
#: Words that turn a sentence: what follows them may state a finding.
_TURN = re.compile(r"\b(?:but|however|although|though|except|other\s+than|besides|aside\s+from|yet|while|whereas|"
                   r"apart\s+from|save\s+for)\b")
#: Words that call something normal; not "bigger than normal", "not normal".
_NORMAL_WORD = re.compile(r"(?<!than )(?<!not )\b(?:clear|normal|normally|unremarkable|intact|negative|healthy|okay|ok|fine|"
                          r"within\s+normal\s+limits|not\s+remarkable|well[- ]?(?:aerated|expanded|inflated|ventilated))\b")
#: Words of the examination and its comparison: a sentence of these alone states nothing of the patient.
_EXAM_WORDS = re.compile(
    r"\b(?:comparison|compared|none|prior|previous|exam|examination|exams|study|consists?|of|the|a|an|and|with|"
    r"frontal|lateral|pa|ap|oblique|decubitus|swimmers?|portable|upright|supine|single|two|three|four|one|view|views|"
    r"radiographs?|radiography|images?|films?|x\s*-?\s*rays?|chest|thorax|cxr|obtained|submitted|available|"
    r"performed|provided|for|review|reviewed|were|was|is|are|on|at|dated|end|report|\d+)\b")
_STABLE_WORD = re.compile(r"\b(?:stable|unchanged|similar|stably|in\s+the\s+interval|change|changes)\b")
#: What a normal statement may say beside its normal word: the organ, the view and the words around them.
_SAID_NORMAL = re.compile(
    r"\b(?:is|are|was|were|be|been|looks?|appears?|appearing|seems?|remains?|the|both|and|or|a|an|of|all|in|to|"
    r"with|for|as|on|there|completely|entirely|otherwise|grossly|overall|bilaterally|bilateral|visualized|visible|"
    r"seen|limits|size|sizes|configuration|contours?|silhouettes?|lungs?|fields?|zones?|parenchyma|interstitium|"
    r"markings|heart|cardiac|chest|thorax|thoracic|mediastin\w*|cardiomediastin\w*|hila|hilar|hilum|pleura\w*|"
    r"spaces?|bones?|bony|osseous|elements|structures?|soft|tissues?|skeleton|skeletal|aorta|aortic|diaphragms?|"
    r"hemidiaphragms?|trachea|airways?|pulmonary|vascular\w*|vasculature|volumes?|expanded|expansion|aerated|"
    r"aeration|inflated|ventilated|well|costophrenic|angles?|sulci|ribs?|spine|upper|abdomen|abdominal|x\W?rays?|"
    r"films?|study|exam\w*|radiographs?|appearance|no|acute|active|abnormality|abnormalities|finding|findings|"
    r"process|disease|cardiopulmonary|intrathoracic|radiographic|have|has|had|relatively|reasonably|today|current|"
    r"this|on|left|right|remainder|rest|symmetric|central|frontal|lateral|views?|show|shows)\b")
_LETTER = re.compile(r"[^\W\d_]")
_POSSESSIVE = re.compile(r"['\u2019]s\b")


def _words(text: str) -> str:
    text = _MASK.sub(" ", _XRAY.sub("x-ray", _NUMBERING.sub("", text.strip().lower())))
    return " ".join(re.sub(r"[^\w\s-]", " ", _POSSESSIVE.sub("", text)).split())


#: A query asking for its findings alone: "granuloma, otherwise normal", "scoliosis and nothing else", "hiatal hernia,
#: no other abnormality" (:func:`asks_alone`).
_ALONE = re.compile(
    r"\b(?:otherwise[\s-]+(?:normal|unremarkable|negative|clear|healthy|fine|ok(?:ay)?|within\s+normal\s+limits|no\b)|"
    r"nothing\s+else|no\s+other\s+(?:findings?|abnormalit(?:y|ies)|disease|problems?|issues?)|"
    r"(?:the\s+)?only\s+(?:finding|abnormality))")


def asks_alone(query: str) -> bool:
    """Whether a query asks for its findings with nothing else wrong ("tortuous aorta, otherwise normal"): then the
    reports stating them rank by how few other findings they state (:mod:`radsift.ranking.alone`)."""
    return bool(_ALONE.search(_words(query)))


def sentence_kind(text: str) -> str:
    """:data:`NORMAL`, :data:`EXAM` or :data:`OTHER` for a sentence the lexicon reads no finding in (see the module)."""
    words = _words(text)
    if not _LETTER.search(words):
        return EXAM
    turned = bool(_TURN.search(words))
    if _DENIAL.search(words) and not _NO_CHANGE.search(words) and not turned:
        return NORMAL
    if not _LETTER.search(_EXAM_WORDS.sub(" ", words)):
        return EXAM
    if turned:
        return OTHER
    if _NORMAL_WORD.search(words) and not _LETTER.search(_SAID_NORMAL.sub(" ", _NORMAL_WORD.sub(" ", words))):
        return NORMAL
    if _STABLE_WORD.search(words) and not _LETTER.search(_SAID_NORMAL.sub(" ", _STABLE_WORD.sub(" ", words))):
        return EXAM  # "stable cardiomediastinal silhouette": the anatomy as before, no finding stated
    return OTHER


__all__ = ["EXAM", "NORMAL", "OTHER", "asks_alone", "sentence_kind"]
