"""The finding lexicon: concepts, their categories and the phrases that name them.

File format (YAML; the packaged chest X-ray lexicon is ``data/chest_xray.yaml``)::

    version: 1                      # optional, must be 1
    name: my lexicon                # optional
    description: free text          # optional
    categories: [finding, device]   # optional; when given, every concept must use one
    examples: my_examples.tsv       # optional: link examples, a file beside this one (below)
    symptoms:                       # optional: complaints a film cannot show, and what can cause them
      - name: shortness of breath   #   (below)
        words: [short of breath, dyspnea]
        causes: [pulmonary edema, pleural effusion]
    concepts:
      - name: pneumothorax          # canonical name: unique, used in labels and query ids
        category: finding           # required
        synonyms:                   # phrases that mention the finding (the name is one already)
          - PTX
          - collapsed lung
        absent_phrases:             # optional: phrases that state the finding is absent
          - lungs are fully expanded
        normal_subjects:            # optional: what "is normal" / "normal ..." describes
          - lung expansion          #   ("heart size" for cardiomegaly: "heart size is normal")
        parts: [pleural effusion]   # optional: concepts every mention of this one states too, with
                                    #   its status ("hydropneumothorax" states pneumothorax and effusion)
        phrase_parts:               # optional: the same for one of its phrases only
          hemopneumothorax: [pneumothorax]
        any_of: [consolidation]     # optional: concepts a report writes for it without naming it; a
                                    #   query for it accepts a unit stating any of them (the query reader)
        signs: [pulmonary edema]    # optional: concepts a film shows it by; a query for it, present or
                                    #   absent ("no signs of CHF"), accepts a unit stating or denying them
        observations: [enlarged cardiac silhouette]  # optional: its phrases that describe what is seen
                                    #   rather than name it; a doubt naming it ("cardiomegaly versus
                                    #   pericardial effusion") outranks them (radsift.labels.observations)
        description: free text      # optional
        descriptions:               # optional: how a referring clinician or a layperson would
          - air outside the lung that makes it fall in   #   describe it, without naming it;
                                    #   queries are linked to the concept by them (radsift.search.concepts)

Phrases match case-insensitively, singular and plural alike (``effusion`` also matches
``effusions``). A hyphenated word matches with or without its hyphen, and a hyphenated
phrase also with spaces (``air-space disease`` matches "air-space", "airspace" and "air
space disease"); punctuation other than hyphens ends a phrase. A ``*`` inside a phrase stands for up to four
words of the same clause that are not negations (``heart * enlarged`` matches "heart is
mildly enlarged" but not "heart is not enlarged"). A ``normal_subjects`` phrase yields the
finding as *absent* when a normal-state predicate of the rules file follows or precedes it
("heart size is within normal limits", "normal heart size", "heart is not enlarged"); on
its own it is not a mention.

The ``examples`` file (tab-separated, ``#`` lines are comments; a header ``concept<TAB>example``, more columns
allowed and ignored: the packaged file keeps each row's source) holds queries written for a concept by people who
were shown only its name, as a user would type them ("needle biopsy this morning, now breathless, ? lung peeled
away from the ribs"). Like descriptions, they only link queries, never label report text (:attr:`Concept.examples`).
An example naming an unknown concept, an empty one, or one that words another concept's phrase, description or
example is a :class:`~radsift.errors.LexiconError` naming the file and line.

A ``symptoms`` entry names a complaint the patient has and a film cannot show ("short of breath", "chest pain after a
fall"), the words a user types for it (its name is one) and the ``causes``: concepts of the lexicon a report states
when it explains the complaint (breathlessness: pulmonary edema, a pleural effusion ...). A query made only of
complaints asks for a report stating a cause (:mod:`radsift.search.symptoms`); report text is never labeled by them.
A cause that is no concept, a symptom without causes, or a word given to two symptoms is an error naming the line.

Unknown keys, a repeated concept name, or one phrase listed twice (in any concept, after
normalization) are :class:`~radsift.errors.LexiconError` naming the file and line. A
description is not a phrase (it is never spotted in reports), but one that equals a phrase or a
description of another concept is an error naming both concepts: a query worded so would link
to two concepts.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from functools import lru_cache
from pathlib import Path
from typing import Iterator

from radsift.errors import LexiconError
from radsift.labels.phrase_tokens import GAP, Normalizer, derive_irregulars, phrase_words
from radsift.labels.yamlfile import LineDict, LineList, check_keys, load_yaml, read_text, string_list

PACKAGED_LEXICON = "chest_xray.yaml"
MAX_GAP = 4  # words a "*" in a phrase may stand for

_TOP_KEYS = {"version", "name", "description", "categories", "concepts", "examples", "symptoms"}
_SYMPTOM_KEYS = {"name", "words", "causes"}
#: Where the packaged lexicon and its files are read from (:func:`radsift.labels.yamlfile.read_text`).
_PACKAGED_SOURCE = "radsift/labels/data/"
_CONCEPT_KEYS = {"name", "category", "synonyms", "absent_phrases", "normal_subjects", "description",
                 "descriptions", "parts", "phrase_parts", "observations", "any_of", "signs"}
_SLUG_RE = re.compile(r"[^a-z0-9]+")


def slugify(name: str) -> str:
    """A TREC-safe id for a finding name: ``pleural effusion`` -> ``pleural_effusion``."""
    return _SLUG_RE.sub("_", name.casefold()).strip("_")


@dataclass(frozen=True)
class Concept:
    """One finding of the lexicon.

    Attributes:
        name: Canonical name (``pleural effusion``).
        category: Its category (``finding``, ``disease``, ``device`` ...).
        synonyms: Phrases that mention it, the name first.
        absent_phrases: Phrases that state it is absent.
        normal_subjects: Phrases that, described as normal, state it is absent.
        description: Optional free text.
        descriptions: Plain-language descriptions a non-radiologist would type (query linking).
        line: Line of the concept in its file.
        parts: Concepts every mention of this one also states (a compound finding's parts).
        phrase_parts: ``(normalized phrase, concepts)``: the parts one phrase of it states.
        observations: Normalized keys of its phrases that describe what is seen rather than name it
            ("enlarged cardiac silhouette" of cardiomegaly, "nodular opacity" of nodule).
        any_of: Concepts a report writes for this one without naming it (pneumonia: consolidation, infiltrate,
            airspace disease): a query for it accepts a unit stating any of them
            (:func:`radsift.search.reading.read_query`); the stored labels are untouched.
        signs: Concepts a film shows this one by (congestive heart failure: pulmonary edema, vascular
            congestion): a query for it accepts a unit stating them, and a query denying it ("no signs of CHF") a
            unit denying them, where ``any_of`` holds for presence alone ("no consolidation" is no "no pneumonia").
        examples: Queries written for it by people shown only its name (the lexicon's ``examples`` file): they link
            queries as descriptions do.
    """

    name: str
    category: str
    synonyms: tuple[str, ...]
    absent_phrases: tuple[str, ...] = ()
    normal_subjects: tuple[str, ...] = ()
    description: str | None = None
    descriptions: tuple[str, ...] = ()
    line: int = 0
    parts: tuple[str, ...] = ()
    phrase_parts: tuple[tuple[tuple[str, ...], tuple[str, ...]], ...] = ()
    observations: tuple[tuple[str, ...], ...] = ()
    any_of: tuple[str, ...] = ()
    signs: tuple[str, ...] = ()
    examples: tuple[str, ...] = ()

    def observes(self, words: tuple[str, ...]) -> bool:
        """Whether a mention's normalized words are one of :attr:`observations` (a ``*`` spans 0 to
        :data:`MAX_GAP` words, as in the spotter)."""
        return any(_fits(key, words) for key in self.observations)

    def parts_of(self, key: tuple[str, ...]) -> tuple[str, ...]:
        """The concepts a mention of this one states too, given the mention's normalized words."""
        extra = tuple(p for k, names in self.phrase_parts if k == key for p in names)
        return self.parts + tuple(p for p in extra if p not in self.parts)

    @property
    def slug(self) -> str:
        """TREC-safe id (``pleural_effusion``)."""
        return slugify(self.name)


@dataclass(frozen=True)
class Symptom:
    """A complaint a patient has and a chest film cannot show, with the concepts that can cause it.

    Attributes:
        name: Its name ("shortness of breath").
        words: How a user names it, the name first ("short of breath", "dyspnea").
        causes: Lexicon concepts a report states when it explains the complaint (pulmonary edema ...).
        line: Line of the symptom in its file.
    """

    name: str
    words: tuple[str, ...]
    causes: tuple[str, ...]
    line: int = 0


@dataclass(frozen=True)
class Lexicon:
    """A loaded lexicon: concepts by name, its symptoms, plus the normalizer its phrases were checked with."""

    concepts: tuple[Concept, ...]
    source: str
    name: str | None = None
    categories: tuple[str, ...] = ()
    normalizer: Normalizer = field(default_factory=Normalizer, compare=False, repr=False)
    symptoms: tuple[Symptom, ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "_by_name", {c.name: c for c in self.concepts})
        object.__setattr__(self, "_by_slug", {c.slug: c for c in self.concepts})

    def __len__(self) -> int:
        return len(self.concepts)

    def __iter__(self) -> Iterator[Concept]:
        return iter(self.concepts)

    def __contains__(self, name: object) -> bool:
        return name in self._by_name  # type: ignore[attr-defined]

    def __getitem__(self, name: str) -> Concept:
        try:
            return self._by_name[name]  # type: ignore[attr-defined]
        except KeyError:
            raise KeyError(f"no concept {name!r} in lexicon {self.source}") from None

    def by_slug(self, slug: str) -> Concept:
        """The concept whose :attr:`Concept.slug` is ``slug``."""
        try:
            return self._by_slug[slug]  # type: ignore[attr-defined]
        except KeyError:
            raise KeyError(f"no concept with id {slug!r} in lexicon {self.source}") from None

    @property
    def names(self) -> list[str]:
        return [c.name for c in self.concepts]


def _fits(key: tuple[str, ...], words: tuple[str, ...]) -> bool:
    """Whether ``words`` are the phrase ``key`` whole, each ``*`` standing for 0 to MAX_GAP words."""
    if not key:
        return not words
    if key[0] != GAP:
        return bool(words) and words[0] == key[0] and _fits(key[1:], words[1:])
    return any(_fits(key[1:], words[n:]) for n in range(min(MAX_GAP, len(words)) + 1))


def _check_phrase(key: tuple[str, ...], phrase: str, source: str, line: int) -> None:
    if not key or key[0] == GAP or key[-1] == GAP:
        raise LexiconError(f"{source}:{line}: phrase {phrase!r} must start and end with a word")
    if any(a == GAP and b == GAP for a, b in zip(key, key[1:])):
        raise LexiconError(f"{source}:{line}: phrase {phrase!r} has two '*' in a row")


def _description_key(text: str) -> str:
    return " ".join(re.findall(r"[a-z0-9]+", text.casefold()))


def _check_descriptions(raw, phrases: dict, source: str) -> dict[str, str]:
    """A description that words another concept's phrase or description is an error naming both. Returns the concept
    each phrase's and description's words belong to (:func:`_description_key` -> concept name)."""
    by_words = {_description_key(phrase): (phrase, line, owner) for phrase, line, owner in phrases.values()}
    seen: dict[str, tuple[str, int, str]] = {}
    for _, name, _, lists in raw:
        for text, line in lists["descriptions"]:
            key = _description_key(text)
            other = by_words.get(key)
            if other is not None and other[2] != name:
                raise LexiconError(f"{source}:{line}: description {text!r} of {name!r} is a phrase of {other[2]!r} "
                                   f"(line {other[1]}): a query worded so would link to both")
            first = seen.get(key)
            if first is not None and first[2] != name:
                raise LexiconError(f"{source}:{line}: description {text!r} of {name!r} is also a description of "
                                   f"{first[2]!r} (line {first[1]})")
            seen.setdefault(key, (text, line, name))
    return {**{key: owner for key, (_, _, owner) in by_words.items()}, **{key: n for key, (_, _, n) in seen.items()}}


def _read_concepts(concepts_node: LineList, categories: tuple[str, ...],
                   source: str) -> list[tuple[LineDict, str, str, dict[str, list[tuple[str, int]]]]]:
    """Each concept's node, name, category and phrase lists (``(text, line)``), its keys and types checked."""
    raw: list[tuple[LineDict, str, str, dict[str, list[tuple[str, int]]]]] = []
    for i, node in enumerate(concepts_node):
        if not isinstance(node, LineDict):
            raise LexiconError(f"{source}:{concepts_node.line_of(i)}: each concept must be a mapping")
        check_keys(node, _CONCEPT_KEYS, {"name", "category"}, source, "concept")
        name, category = node["name"], node["category"]
        for key, value in (("name", name), ("category", category)):
            if not isinstance(value, str) or not value.strip():
                raise LexiconError(f"{source}:{node.line_of(key)}: concept {key!r} must be a non-empty string")
        if "description" in node and not isinstance(node["description"], (str, type(None))):
            raise LexiconError(f"{source}:{node.line_of('description')}: 'description' must be a string")
        name, category = " ".join(name.split()), category.strip()
        if categories and category not in categories:
            raise LexiconError(
                f"{source}:{node.line_of('category')}: category {category!r} of {name!r} is not one of "
                f"the declared categories ({', '.join(categories)})"
            )
        lists = {
            key: string_list(node, key, source, f"concept {name!r}")
            for key in ("synonyms", "absent_phrases", "normal_subjects", "descriptions")
        }
        raw.append((node, name, category, lists))
    return raw


def _read_parts(node: LineDict, name: str, normalizer: Normalizer, source: str):
    """A concept's ``parts`` as ``[(name, line)]`` and ``phrase_parts`` as ``[(phrase key, line, [(name, line)])]``."""
    parts = [(" ".join(p.split()), ln) for p, ln in string_list(node, "parts", source, f"concept {name!r}")]
    out = []
    if node.get("phrase_parts") is not None:
        mapping = node["phrase_parts"]
        if not isinstance(mapping, LineDict):
            raise LexiconError(f"{source}:{node.line_of('phrase_parts')}: concept {name!r}: 'phrase_parts' must map "
                               "a phrase to a list of concepts")
        for phrase in mapping:
            names = [(" ".join(p.split()), ln) for p, ln in string_list(mapping, phrase, source, f"concept {name!r}")]
            out.append((normalizer.phrase(str(phrase)), mapping.line_of(phrase), names))
    return parts, out


def _read_observations(node: LineDict, name: str, normalizer: Normalizer, phrases: dict,
                       source: str) -> tuple[tuple[str, ...], ...]:
    """A concept's ``observations`` as phrase keys, each checked to be one of its phrases."""
    out = []
    for phrase, ln in string_list(node, "observations", source, f"concept {name!r}"):
        key = normalizer.phrase(phrase)
        if phrases.get(key, (None, None, None))[2] != name:
            raise LexiconError(f"{source}:{ln}: observation {phrase!r} of {name!r} is not one of its phrases")
        out.append(key)
    return tuple(out)


def parse_lexicon(text: str, source: str) -> Lexicon:
    """Parse lexicon YAML text (see the module docstring for the format).

    Raises:
        LexiconError: Naming ``source`` and the line of the first problem.
    """
    data = load_yaml(text, source)
    _check_header(data, source)
    categories = tuple(c for c, _ in string_list(data, "categories", source, "lexicon"))
    concepts_node = data["concepts"]
    if not isinstance(concepts_node, LineList) or not concepts_node:
        raise LexiconError(f"{source}:{data.line_of('concepts')}: 'concepts' must be a non-empty list")

    raw = _read_concepts(concepts_node, categories, source)

    # Irregular plurals come from the lexicon's own vocabulary, so derive them before keying phrases.
    vocabulary = phrase_words(
        [name for _, name, _, _ in raw]
        + [p for *_, lists in raw for key, items in lists.items() if key != "descriptions" for p, _ in items]
    )
    normalizer = Normalizer(derive_irregulars(vocabulary))

    names: dict[str, int] = {}
    slugs: dict[str, str] = {}
    phrases: dict[tuple[str, ...], tuple[str, int, str]] = {}
    concepts = []
    pending: list[tuple[str, int, str]] = []  # (part, line, concept): checked once every name is known
    pending_any: list[tuple[str, int, str]] = []  # the same for any_of
    pending_signs: list[tuple[str, int, str]] = []  # and for signs
    for node, name, category, lists in raw:
        line = node.line
        if name.casefold() in names:
            raise LexiconError(
                f"{source}:{node.line_of('name')}: duplicate concept name {name!r} (first at line {names[name.casefold()]})"
            )
        names[name.casefold()] = node.line_of("name")
        slug = slugify(name)
        if not slug:
            raise LexiconError(f"{source}:{node.line_of('name')}: concept name {name!r} has no letters or digits")
        if slug in slugs:
            raise LexiconError(
                f"{source}:{node.line_of('name')}: concept name {name!r} gives the same id {slug!r} as {slugs[slug]!r}"
            )
        slugs[slug] = name
        entries = [(name, node.line_of("name"), "synonyms")] + [
            (p, ln, key) for key, items in lists.items() if key != "descriptions" for p, ln in items
        ]
        for phrase, ln, key in entries:
            pkey = normalizer.phrase(phrase)
            _check_phrase(pkey, phrase, source, ln)
            if key == "normal_subjects" and GAP in pkey:
                raise LexiconError(f"{source}:{ln}: normal subject {phrase!r} cannot contain '*'")
            if pkey in phrases:
                first, first_line, _ = phrases[pkey]
                raise LexiconError(
                    f"{source}:{ln}: duplicate phrase {phrase!r} in {name!r} "
                    f"(same as {first!r} at line {first_line}; plurals, case and hyphens are folded)"
                )
            phrases[pkey] = (phrase, ln, name)
        description = node.get("description")
        parts, phrase_parts = _read_parts(node, name, normalizer, source)
        observations = _read_observations(node, name, normalizer, phrases, source)
        any_of = _read_named(node, "any_of", name, source, pending_any)
        signs = _read_named(node, "signs", name, source, pending_signs)
        concepts.append(
            Concept(
                name=name,
                category=category,
                synonyms=(name, *(p for p, _ in lists["synonyms"])),
                absent_phrases=tuple(p for p, _ in lists["absent_phrases"]),
                normal_subjects=tuple(p for p, _ in lists["normal_subjects"]),
                description=description.strip() if isinstance(description, str) else None,
                descriptions=tuple(p for p, _ in lists["descriptions"]),
                line=line,
                parts=tuple(p for p, _ in parts),
                phrase_parts=tuple((k, tuple(p for p, _ in names)) for k, _, names in phrase_parts),
                observations=observations,
                any_of=tuple(p for p, _ in any_of),
                signs=tuple(p for p, _ in signs),
            )
        )
        for k, ln, _ in phrase_parts:
            if phrases.get(k, (None, None, None))[2] != name:
                raise LexiconError(f"{source}:{ln}: phrase_parts of {name!r}: {' '.join(k)!r} is not one of its phrases")
        for part, ln in parts + [p for *_, names in phrase_parts for p in names]:
            pending.append((part, ln, name))
    _check_named({n for _, n, _, _ in raw}, source, part=pending, any_of=pending_any, signs=pending_signs)
    taken = _check_descriptions(raw, phrases, source)
    if data.get("examples") is not None:
        concepts = _with_examples(concepts, data, taken, source)
    return Lexicon(
        concepts=tuple(concepts),
        source=source,
        name=data.get("name"),
        categories=categories,
        normalizer=normalizer,
        symptoms=_read_symptoms(data, {c.name for c in concepts}, source),
    )


def _read_symptoms(data, known: set[str], source: str) -> tuple[Symptom, ...]:
    """The lexicon's ``symptoms``, each checked: a name, causes that are concepts, no word given to two symptoms."""
    node = data.get("symptoms")
    if node is None:
        return ()
    if not isinstance(node, LineList):
        raise LexiconError(f"{source}:{data.line_of('symptoms')}: 'symptoms' must be a list")
    out, owner = [], {}
    for item in node:
        check_keys(item, _SYMPTOM_KEYS, {"name", "causes"}, source, "a symptom")
        name = item["name"]
        if not isinstance(name, str) or not name.strip():
            raise LexiconError(f"{source}:{item.line_of('name')}: a symptom's name must be a non-empty string")
        name = " ".join(name.split())
        words = [(name, item.line_of("name"))] + [(" ".join(w.split()), ln) for w, ln in
                                                  string_list(item, "words", source, f"symptom {name!r}")]
        causes = [(" ".join(c.split()), ln) for c, ln in string_list(item, "causes", source, f"symptom {name!r}")]
        if not causes:
            raise LexiconError(f"{source}:{item.line_of('causes')}: symptom {name!r} names no cause")
        for cause, ln in causes:
            if cause not in known:
                raise LexiconError(f"{source}:{ln}: cause {cause!r} of symptom {name!r} is no concept of the lexicon")
        for word, ln in words:
            first = owner.setdefault(word.casefold(), name)
            if first != name:
                raise LexiconError(f"{source}:{ln}: symptom word {word!r} of {name!r} is already one of {first!r}")
        out.append(Symptom(name, tuple(dict.fromkeys(w for w, _ in words)), tuple(dict.fromkeys(c for c, _ in causes)),
                           item.line))
    return tuple(out)


def _with_examples(concepts: list[Concept], data, taken: dict[str, str], source: str) -> list[Concept]:
    """The concepts with the link examples of the file the lexicon's ``examples`` key names (beside the lexicon; the
    packaged lexicon's in the package), each row checked against ``taken`` (the concept each phrase's and
    description's words belong to, :func:`_check_descriptions`)."""
    name = data["examples"]
    if not isinstance(name, str) or not name.strip():
        raise LexiconError(f"{source}:{data.line_of('examples')}: 'examples' must name a file")
    packaged = source.startswith(_PACKAGED_SOURCE)
    ex_source, text = read_text(None if packaged else Path(source).parent / name.strip(), name.strip(), "link examples")
    taken = dict(taken)
    known = {c.name for c in concepts}
    found: dict[str, list[str]] = {}
    rows = [(n, ln) for n, ln in enumerate(text.splitlines(), 1) if ln.strip() and not ln.startswith("#")]
    header = rows[0][1].split("\t") if rows else []
    if header[:2] != ["concept", "example"]:
        raise LexiconError(f"{ex_source}:{rows[0][0] if rows else 1}: the header must start with concept<TAB>example")
    for n, line in rows[1:]:
        cells = line.split("\t")
        concept, example = (" ".join(c.split()) for c in (cells + ["", ""])[:2])
        if concept not in known:
            raise LexiconError(f"{ex_source}:{n}: example of {concept!r}, which is no concept of {source}")
        if not example:
            raise LexiconError(f"{ex_source}:{n}: empty example of {concept!r}")
        owner = taken.setdefault(_description_key(example), concept)
        if owner != concept:
            raise LexiconError(f"{ex_source}:{n}: example {example!r} of {concept!r} words a phrase, description or "
                               f"example of {owner!r}: a query worded so would link to both")
        found.setdefault(concept, []).append(example)
    return [replace(c, examples=tuple(dict.fromkeys(found.get(c.name, ())))) for c in concepts]


def _check_header(data, source: str) -> None:
    """The lexicon file's top level: not empty, known keys, version 1, a name and a description as strings."""
    if data is None:
        raise LexiconError(f"{source}: empty lexicon file")
    check_keys(data, _TOP_KEYS, {"concepts"}, source, "lexicon")
    if "version" in data and data["version"] != 1:
        raise LexiconError(f"{source}:{data.line_of('version')}: unsupported lexicon version {data['version']!r}")
    for key in ("name", "description"):
        if key in data and not isinstance(data[key], str):
            raise LexiconError(f"{source}:{data.line_of(key)}: {key!r} must be a string")


def _read_named(node, key: str, name: str, source: str, pending: list[tuple[str, int, str]]) -> list[tuple[str, int]]:
    """A concept's list of other concepts under ``key`` (``any_of``, ``signs``) as ``(name, line)``, each also queued
    in ``pending`` for :func:`_check_named` once every name is known."""
    named = [(" ".join(p.split()), ln) for p, ln in string_list(node, key, source, f"concept {name!r}")]
    pending.extend((other, ln, name) for other, ln in named)
    return named


def _check_named(known: set[str], source: str, **named: list[tuple[str, int, str]]) -> None:
    """Every ``(other concept, line, concept)`` of each key (``part``, ``any_of``, ``signs``) names another known
    concept."""
    for key, items in named.items():
        for other, ln, name in items:
            if other not in known or other == name:
                raise LexiconError(f"{source}:{ln}: {key} {other!r} of {name!r} is not another concept of the lexicon")


def load_lexicon(path: str | Path | None = None) -> Lexicon:
    """Load a lexicon file, or the packaged chest X-ray lexicon when ``path`` is None.

    Raises:
        LexiconError: The file cannot be read or is malformed; the message names the file and line.
    """
    if path is None:
        return _packaged()
    source, text = read_text(path, PACKAGED_LEXICON, "lexicon")
    return parse_lexicon(text, source)


@lru_cache(maxsize=1)
def _packaged() -> Lexicon:
    source, text = read_text(None, PACKAGED_LEXICON, "lexicon")
    return parse_lexicon(text, source)
