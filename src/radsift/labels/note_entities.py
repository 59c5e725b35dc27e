"""An entity dictionary from clinical notes alone: the packaged lexicon, the notes' own diagnosis and
procedure headings, and the noun phrases of their text.

CAPR (Grundmann et al.) finds the entities of a note with a biomedical NER model. None installs
offline here (no spaCy pipeline with a parser or NER is installed: :func:`spacy_noun_chunks_available`),
so the notes' entities come from three sources, none of which reads anything but the notes and the
packaged lexicon (the notes-only setting of the ``entity-aspect`` recipe: no MedQuAD name reaches it):

1. the packaged finding lexicon (:func:`radsift.labels.entities.lexicon_entities`);
2. **heading items**: the text under a note's diagnosis and procedure headings (``PREOPERATIVE
   DIAGNOSIS``, ``PROCEDURE PERFORMED`` ...) is a list of entity names ("1. Left spermatocele.
   2. Family planning.") when it is short (:data:`MAX_LIST_WORDS`): each item, cut at list markers, sentence and clause punctuation and
   linking words ("with", "secondary to", "status post"), laterality dropped, of
   :data:`MAX_WORDS` words or fewer, is an entity (:func:`heading_items`);
3. **noun phrases**: runs of content words in any section (function words, verbs, numbers and
   units end a run; :func:`noun_phrases`), kept when their last word (the English noun phrase's
   head) is the head of a heading item or has a clinical suffix (``-itis``, ``-ectomy`` ...), and when
   they occur in at least :data:`MIN_NOTES` notes and at most :data:`MAX_NOTE_SHARE` of them.

What it misses: entities never named under such a heading and without a clinical head word (most
drugs), abbreviations, and anything a trained NER would resolve by context.
"""

from __future__ import annotations

import re
from collections import Counter
from typing import Iterable, Sequence

from radsift.labels.entities import MIN_CHARS, Entity, EntityDictionary, lexicon_entities
from radsift.records import Report

#: Heading items and noun phrases of at most this many words become entities.
MAX_WORDS = 5
#: A noun phrase must occur in this many notes at least ...
MIN_NOTES = 3
#: ... and in at most this share of them (more is boilerplate: "blood pressure", "the patient").
MAX_NOTE_SHARE = 0.05
#: A word must end this many heading items to count as a clinical head word.
MIN_HEAD_ITEMS = 2
#: Endings of clinical head words (diseases, procedures, findings).
CLINICAL_SUFFIXES = ("itis", "osis", "oma", "omas", "emia", "algia", "ectomy", "otomy", "ostomy", "plasty", "scopy",
                     "pathy", "trophy", "plegia", "paresis", "penia", "cytosis", "uria", "rrhea", "rrhage", "megaly",
                     "lithiasis", "sclerosis", "stenosis", "ectasis", "ectasia", "spasm", "cele", "iasis", "oid",
                     "graphy", "gram", "tomy", "desis", "pexy", "rrhaphy", "lysis", "plasia", "sarcoma", "carcinoma")
_ITEM_SPLIT = re.compile(r"(?:^|\s)\d{1,2}[.)]\s+|[.;:,()\[\]\n]|(?:^|\s)(?:and|with|without|plus|versus|vs|secondary to|"
                         r"due to|status post|s/p|consistent with|suggestive of|rule out|r/o|history of|"
                         r"likely|possible|probable|presumed|resolved|including|from|after|for|on|at|in the|of the "
                         r"(?:left|right))(?:\s|$)", re.IGNORECASE)
_LATERAL = re.compile(r"^(?:(?:left|right|bilateral|lt|rt|l|r)\s+)+", re.IGNORECASE)
_WORD_RE = re.compile(r"[A-Za-z][A-Za-z'-]*|\S")
# Function words, frequent verbs and adverbs, units and note boilerplate: a noun phrase never holds one.
_STOP = frozenset("""a an the this that these those there here his her their its our your my he she it they we you
    i me him them us who whom which what when where why how and or but nor so yet if then than as of to in on at by
    for from with without into onto upon over under above below between about after before during through up down
    out off is are was were be been being am has have had do does did will would shall should can could may might
    must not no none any some all each every both either neither other another such same own very also too just
    only still again further once well now today yesterday tomorrow currently recently previously approximately
    about there patient patients pt mr mrs ms dr doctor year years old month months week weeks day days hour hours
    minute minutes time times mg ml cc kg lb lbs cm mm mcg units unit percent daily twice once per prn left right
    bilateral noted seen given placed taken made used performed obtained showed shows show reveals revealed
    states stated denies denied reports reported including include includes includes status post history
    normal abnormal mild moderate severe significant new old likely possible probable small large positive negative
    please see above below following follow followed same prior current recent good fair poor stable unchanged
    any further then area areas side sides level levels number type types form findings finding note notes removed
    change year-old white black male female man woman gentleman lady patient's""".split())
_ENTITY_HEADINGS = re.compile(r"^(?:[a-z]+_)?diagnos[a-z]*$|^(?:procedures?|operations?)(?:_performed)?$|"
                              r"^name_of_(?:procedure|operation)$|^title_of_(?:procedure|operation)$")
#: A section listing entities is short: longer text under such a heading is a narrative, not a list.
MAX_LIST_WORDS = 40
#: Words a heading item may hold inside it (elsewhere a function word ends it).
_INNER = frozenset({"of", "the", "to"})
_JUNK = frozenset("""none same above see deferred pending n/a na unknown nil normal negative as above same as above
    family planning routine""".split())


def spacy_noun_chunks_available() -> bool:
    """Whether an installed spaCy pipeline can give noun chunks (it needs a parser); False here: no
    pipeline is installed, and a blank pipeline has none."""
    try:
        import spacy.util

        return bool(spacy.util.get_installed_models())
    except ImportError:  # pragma: no cover - spaCy is a dependency
        return False


def _clean(item: str) -> str:
    item = " ".join(item.replace("\u00a0", " ").split()).strip(" -*#'\"")
    return _LATERAL.sub("", item).strip()


def _usable(item: str) -> bool:
    words = item.split()
    if not 1 <= len(words) <= MAX_WORDS or len(item) < MIN_CHARS or item.casefold() in _JUNK:
        return False
    if any(ch.isdigit() for ch in item) or not all(w[0].isalpha() for w in words):
        return False
    if words[0].casefold() in _STOP or words[-1].casefold() in _STOP:
        return False
    return all(w.casefold() not in _STOP or w.casefold() in _INNER for w in words[1:-1])


def is_entity_heading(heading: str) -> bool:
    """Whether a section heading (radsift's canonical name, ``preoperative_diagnosis``) lists entity
    names: diagnoses, procedures and operations performed."""
    return bool(_ENTITY_HEADINGS.search(heading.casefold()))


def heading_items(text: str) -> list[str]:
    """Entity names listed in the text under a diagnosis or procedure heading (see the module docstring)."""
    out = []
    for part in _ITEM_SPLIT.split(text):
        item = _clean(part or "")
        if _usable(item):
            out.append(item)
    return list(dict.fromkeys(out))


def noun_phrases(text: str, max_words: int = MAX_WORDS) -> list[str]:
    """Candidate noun phrases of a text: every run of up to ``max_words`` content words ending where a
    run of content words ends (an English noun phrase ends in its head). Lower case."""
    out = []
    run: list[str] = []

    def flush() -> None:
        for n in range(1, min(max_words, len(run)) + 1):
            out.append(" ".join(run[-n:]))
        run.clear()

    for tok in _WORD_RE.findall(text):
        low = tok.casefold()
        if not tok[0].isalpha() or low in _STOP or len(low) < 2:
            if run:
                flush()
            continue
        run.append(low)
    if run:
        flush()
    return out


def _clinical_head(word: str, heads: set[str]) -> bool:
    return word in heads or (len(word) > 5 and word.endswith(CLINICAL_SUFFIXES))


def note_entities(reports: Iterable[Report]) -> list[Entity]:
    """The notes' own entities (heading items, then noun phrases), each once; see the module docstring.

    Args:
        reports: The notes (their sections; a text seen twice counts once).
    """
    items: Counter[str] = Counter()
    bodies: list[list[str]] = []
    seen: set[str] = set()
    for r in reports:
        key = " ".join(r.text().split()).casefold()
        if not key or key in seen:
            continue
        seen.add(key)
        texts = []
        for heading, text in r.sections.items():
            if is_entity_heading(heading) and len(text.split()) <= MAX_LIST_WORDS:
                items.update(i.casefold() for i in heading_items(text))
            texts.append(text)
        bodies.append(texts)
    heads = {w for w, n in Counter(i.split()[-1] for i in items for _ in range(items[i])).items()
             if n >= MIN_HEAD_ITEMS and w not in _STOP}
    df: Counter[str] = Counter()
    for texts in bodies:
        df.update({p for t in texts for p in noun_phrases(t) if _clinical_head(p.split()[-1], heads)})
    cap = max(MIN_NOTES, int(MAX_NOTE_SHARE * len(bodies)))
    names = list(items) + sorted(p for p, n in df.items() if MIN_NOTES <= n <= cap and p not in items and _usable(p))
    return [Entity(name, None, (), "notes") for name in names]


def notes_entity_dictionary(reports: Sequence[Report], *, lexicon: bool = True) -> EntityDictionary:
    """The notes-only setting's entity dictionary: the packaged lexicon's concepts (first, so that their
    canonical names win) plus :func:`note_entities` of ``reports`` (pass the training notes only)."""
    entries = lexicon_entities() if lexicon else []
    return EntityDictionary(entries + note_entities(reports))
