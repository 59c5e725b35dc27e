"""The words that rule concepts in or out when a query is linked (:mod:`radsift.search.concepts`).

A finding text's words of place, substance, direction, size, tone, bend, height, metal and shape, and the texts that
link to nothing (a symptom, a part of the body no chest film shows, a normal statement): each table below is read
from the query's words, and, for a concept, from its name or synonyms (or, for heights, from each of its phrases).
The linker's module docstring gives each rule with its examples.
"""

from __future__ import annotations

import re
from typing import Sequence

from radsift.labels.organs import placed_off_chest
from radsift.text.locations import LUNG_PART_WORDS

_DET = r"(?:(?:the|my|his|her|their|a|one|both|either|each|right|left|\w+al)\s+){0,2}"
#: Places a finding text may name, each as (the words that name it in a query, the words that put a
#: concept there in its name or synonyms, the places it rules out). A query naming a place links only
#: to concepts of that place; ``lung`` (inside the lung) rules the pleura and the pericardium out.
PLACES: dict[str, tuple[re.Pattern, re.Pattern | None, tuple[str, ...]]] = {
    "pleura": (re.compile(r"\b(?:around|surrounding|encasing|outside|about|lining(?:\s+of)?|covering|beside|alongside|"
                          r"next\s+to|adjacent\s+to|by)\s+" + _DET
                          + r"lungs?\b|\b(?:fluid|water|liquid|blood|pus)\s+on\s+" + _DET
                          + r"lungs?\b|\blungs?\W+lining|\bpleura\w*|\bchest\s+wall\s+and\s+" + _DET
                          + r"lungs?\b|\bbetween\s+" + _DET + r"lungs?\s+and\b", re.IGNORECASE),
               re.compile(r"\bpleura|\b\w*thorax\b|\bempyema\b|^effusion$", re.IGNORECASE), ()),
    "pericardium": (re.compile(r"\b(?:around|surrounding|encasing|squeezing)\s+" + _DET + r"heart\b|\bsac\b.{0,30}"
                               r"\bheart\b|\bpericardi\w*", re.IGNORECASE),
                    re.compile(r"\bpericardi", re.IGNORECASE), ()),
    "spine": (re.compile(r"\b(?:spine|spinal|backbone|vertebra\w*|dis[ck]s?|lumbar|thoracolumbar|lumbosacral)\b",
                         re.IGNORECASE),
              re.compile(r"spin(?:e|al)|vertebr|scolio|kypho|spondyl|osteophyt|\bdis[ck]s?\b", re.IGNORECASE), ()),
    "nodes": (re.compile(r"\b(?:glands?|glandular|nodes?|nodal|lymph\w*)\b", re.IGNORECASE),
              re.compile(r"lymph|\bnodes?\b|\bnodal\b|adenopathy", re.IGNORECASE), ()),
    "lung": (re.compile(r"\b(?:in|inside|within|filling|into|throughout)\s+" + _DET
                        + r"lungs?\b(?!\s+(?:bases?|apex|apices|linings?)\b)", re.IGNORECASE),
             None, ("pleura", "pericardium", "nodes")),
    # Blood in the vessels is in no serous space: "blood backing up in the vessels of my lungs" is no hemothorax.
    "vessels": (re.compile(r"\b(?:vessels?|arter(?:y|ies|ial)|veins?|venous|vascular\w*)\b", re.IGNORECASE),
                None, ("pleura", "pericardium")),
    # The belly is no part of the chest: a query naming it links only to concepts of the belly, one naming the
    # chest cavity to none of them ("intestine in the left hemithorax" is no pneumoperitoneum).
    "belly": (re.compile(r"\b(?:belly|tummy|abdom\w*|peritone\w*|intraperitoneal)\b", re.IGNORECASE),
              re.compile(r"peritone|abdom|subdiaphragm|cholecyst|gallbladder", re.IGNORECASE), ()),
    "chest": (re.compile(r"\b(?:hemi)?thora(?:x|ces|cic)\b|\bintrathoracic\b|\b(?:in|into|inside)\s+(?:the|my|his|her)\s+"
                         r"chest\b", re.IGNORECASE), None, ("belly",)),
}
#: Substances a finding text or a concept may name (the query's words; the concept's name and synonyms).
SUBSTANCES: dict[str, re.Pattern] = {
    "air": re.compile(r"pneumo(?!n)|\bair\b|\bgas\b", re.IGNORECASE),
    "fluid": re.compile(r"\bhydro|fluid|effusion|\bliquid|\bwater|\bwet\b|\bedema|\boedema", re.IGNORECASE),
    "blood": re.compile(r"\bhaem|\bhem(?!i)|\bblood|\bbleed", re.IGNORECASE),
    "pus": re.compile(r"empyema|pyothorax|\bpus\b|purulent|\binfected\s+(?:[\w-]+\s+){0,2}?(?:fluid|liquid|effusion|collection)",
                      re.IGNORECASE),
}
#: Blood and pus are fluids: a query for fluid may find them, a query for blood finds a fluid.
KIND_OF = {"blood": "fluid", "pus": "fluid"}
#: Words of more and of less air, size or density, made with a prefix: a text naming one direction links to no
#: concept named with the other ("underinflated lungs" is no hyperinflation).
DIRECTIONS: dict[str, re.Pattern] = {
    "more": re.compile(r"\b(?:hyper|over)[- ]?(?:inflat|expan|aerat|lucen|dens|distend|distens)\w*", re.IGNORECASE),
    "less": re.compile(r"\b(?:hypo|under)[- ]?(?:inflat|expan|aerat|lucen|dens|distend|distens|ventil)\w*",
                       re.IGNORECASE),
}
_OPPOSITE = {"top": "bottom", "bottom": "top", "more": "less", "less": "more", "dark": "white", "white": "dark", "small": "large", "large": "small",
             "sideways": "forward", "forward": "sideways"}
#: Words of smallness and of largeness: a text naming one links to no concept whose name or synonyms name the other
#: ("a little round shadow" is no mass, "a big lump" no micronodule). A mass is large by definition (over 3 cm).
SIZES: dict[str, re.Pattern] = {
    "small": re.compile(r"\b(?:small|smaller|little|tiny|minute|pea|speck|punctate|micro\w+|sub-?centimet\w*)\b",
                        re.IGNORECASE),
    "large": re.compile(r"\b(?:large|larger|big|bigger|huge|giant|bulky|massive|mass|masses|enlarged|enlargement)\b|"
                        r"megaly\b", re.IGNORECASE),
}
#: Words of darkness and of whiteness on a film: a text naming one links to no concept whose own name names the
#: other ("large lucent lungs" is no lung opacity, "a white patch" no lucency). Read from a concept's name only: a
#: synonym such as "cavitary opacity" does not make a cavity white.
TONES: dict[str, re.Pattern] = {
    "dark": re.compile(r"\b(?:hyper|radio)?lucen\w*|\bdark\w*|\bblack\w*", re.IGNORECASE),
    "white": re.compile(r"\bwhit(?:e|er|ish|eness|ening)\b|\bopaci\w*|\b(?:radio)?opaque\b", re.IGNORECASE),
}
#: Words of a spine's bend, sideways and forward: a text naming one links to no concept whose own name names the
#: other ("increased forward curvature of the thoracic spine" is no scoliosis, a curve to one side, though an
#: embedding hears "curvature" in both). Read from a concept's name only, as tones are.
BENDS: dict[str, re.Pattern] = {
    "sideways": re.compile(r"\bsideways\b|\bside\s+to\s+side\b|\bto\s+(?:one|the)\s+side\b|\bs[-\s]?(?:shaped|curved?)\b|"
                           r"\blateral(?:ly)?\s+(?:bend|bent|curv|deviat)\w*|\bscolio\w*", re.IGNORECASE),
    "forward": re.compile(r"\bforwards?\b|\bbackwards?\b|\bhunch\w*|\bstoop\w*|\bhump\w*|\bkypho\w*", re.IGNORECASE),
}
#: Words of height in the chest: a phrase placed at one end links no text placed at the other ("a thin white line at
#: the bottom of the lung" is not "a sharp white line at the top of the lung", a pneumothorax's example). Read per
#: phrase, not per concept: a concept may lie at either end.
HEIGHTS: dict[str, re.Pattern] = {
    "top": re.compile(r"\b(?:top|tops|apex|apices|apical|upper|uppermost)\b", re.IGNORECASE),
    "bottom": re.compile(r"\b(?:bottom|bottoms|bases?|basal|basilar|bibasilar|lower|lowest)\b", re.IGNORECASE),
}
#: Words of metal: what a film shows as metal was put there (a device, a procedure's hardware, a foreign body), so a
#: text naming metal links only to concepts of the ``device`` and ``procedure`` categories ("metal fixing my
#: collarbone after a break" is no fracture, whatever "break" says).
METAL = re.compile(r"\bmetal(?:lic|s)?\b", re.IGNORECASE)
#: The lexicon categories of what is put into a body (what :data:`METAL` may name).
PLACED_CATEGORIES = frozenset({"device", "procedure"})
#: Leading articles and possessives a query may put before a concept's own name ("a lump in the lung").
EXACT_ARTICLES = re.compile(r"^(?:(?:a|an|the|my|his|her|their|some)\s+)+", re.IGNORECASE)
#: Words that open where a thing is: after a concept's own name they say where, not what ("a breathing tube in the
#: windpipe").
PLACE_PREPOSITIONS = frozenset({"in", "on", "at", "around", "inside", "within", "near", "into", "through", "over",
                                "under", "behind", "beside", "along", "across"})
#: Words of the body's own contour: a text naming one links to no device (a device has no such shape in a query).
SHAPES = re.compile(r"\b(?:sunken|sunk|caved|cave[sd]?\s+in|hollow(?:ed)?|dented|dips?\s+in(?:ward)?|concave|hunched|"
                    r"humped|hunchback\w*|misshapen|deformed|deformity)\b", re.IGNORECASE)

#: What a patient feels, not what a film shows: a finding text made only of these (with where and how they are
#: felt, :data:`FELT`) links to no concept ("chest pain", "back pain", "shortness of breath").
SYMPTOMS = re.compile(
    r"\b(?:pains?|painful|aches?|aching|achy|hurts?|hurting|sore(?:ness)?|tender(?:ness)?|cough(?:s|ing)?|"
    r"fevers?|feverish|febrile|chills|(?:short(?:ness)?|lack)\s+of\s+breath|breathless(?:ness)?|dyspno?ea|"
    r"wheez(?:e|es|ing|y)|fatigue|tired(?:ness)?|dizz(?:y|iness)|nausea|vomiting|headaches?|cramps?|"
    r"numb(?:ness)?|tingling|itch(?:y|ing)?|discomfort|pressure)\b", re.IGNORECASE)
#: Words that say where or how a symptom is felt, or when (a clause from "when", "while", "on" or "after" on).
FELT = re.compile(
    r"\b(?:when|while|on\s+exertion|after|during)\b.*$|\b(?:my|the|a|an|i|of|in|at|and|or|with|some|very|"
    r"chest|back|neck|head|belly|abdomen|abdominal|arm|arms|leg|legs|side|sides|shoulders?|joints?|ears?|flank|"
    r"muscles?|lower|upper|left|right|sharp|dull|sudden|severe|mild|chronic|constant|intermittent|bad|new|"
    r"acute|persistent|recurrent|lingering|daily|night|nightly|worse|worsening)\b", re.IGNORECASE)


#: Words that call something normal ("lungs are clear", "heart normal"); not "bigger than normal".
NORMAL = re.compile(r"(?<!than )(?<!not )\b(?:clear|normal|unremarkable|within\s+normal\s+limits|healthy|maintained|"
                    r"preserved|intact)\b",
                    re.IGNORECASE)
#: What a normal statement may say beside its normal word: the organ and the words around it, no finding.
_SAID_NORMAL = re.compile(
    r"\b(?:is|are|was|were|looks?|appears?|seems?|the|my|his|her|their|both|and|a|an|of|all|completely|perfectly|"
    r"entirely|totally|lungs?|lung\s+fields?|heart|cardiac|chest|mediastin\w*|cardiomediastinal|silhouette|contours?|"
    r"size|pleura\w*|spaces?|bones?|bony|osseous|structures?|aorta|aortic|diaphragms?|hila|hilar|x\s*ray|film|"
    r"study|exam|vertebra[el]?|vertebral|body|bodies|heights?|spine|spinal|dis[ck]s?|volumes?|well|"
    r"clavicles?|ribs?|sternum|scapulae?|humer(?:us|i|al\s+heads?)|thorax|skeleton|skeletal|"
    # where in the lung ("left lung base clear", "retrocardiac region clear")
    r"left|right|bilateral(?:ly)?|upper|middle|lower|regions?|areas?|zones?|" + LUNG_PART_WORDS + r")\b",
    re.IGNORECASE)


def normal_statement(text: str, query: str | None = None) -> bool:
    """True when ``text`` only says an organ is normal or clear ("lungs are clear", "normal heart size"): a
    concept linked to it is what the text says is absent (its status flips, :func:`radsift.search.reading.
    read_query`). "A spot on an otherwise normal lung" is no normal statement. With ``query`` (the words
    ``text`` was read from, cue and all), the query must call it normal too: "lungs are not clear" does not."""
    if not NORMAL.search(text) or (query is not None and not NORMAL.search(query)):
        return False
    return not re.search(r"[^\W\d_]", _SAID_NORMAL.sub(" ", NORMAL.sub(" ", text)))


#: A finding placed in a part of the body no chest film shows ("in my groin", "in the left knee"): the arm, the
#: neck, the shoulder and the upper belly are on the film and are not here.
OFF_FILM = re.compile(r"\b(?:in|inside|within|into)\s+" + _DET + r"(?:groin|legs?|knees?|ankles?|feet|foot|toes?|"
                      r"hands?|fingers?|wrists?|thighs?|calf|calves|shins?|elbows?|forearms?|hips?|pelvis|"
                      r"kidneys?|liver|ureters?|bladder|brain|skull|head)\b", re.IGNORECASE)


def off_film(text: str) -> bool:
    """True when ``text`` places what it describes in a part of the body no chest film shows ("swollen glands in
    the groin", "calcified thyroid nodule", :func:`radsift.labels.organs.placed_off_chest`): no concept of the film
    is what it says."""
    return bool(OFF_FILM.search(text)) or placed_off_chest(text)


def symptom_only(text: str) -> bool:
    """True when ``text`` names a symptom and nothing else a film could show ("my back hurts when i bend over")."""
    if not SYMPTOMS.search(text):
        return False
    rest = FELT.sub(" ", SYMPTOMS.sub(" ", text))
    return not re.search(r"[^\W\d_]", rest)


def query_places(text: str) -> list[str]:
    """The places of :data:`PLACES` a finding text names ("fluid around the lungs" -> ``["pleura"]``)."""
    return [name for name, (words, _, _) in PLACES.items() if words.search(text)]


def heights_of(text: str) -> frozenset[str]:
    """The ends of the chest :data:`HEIGHTS` finds named in ``text``."""
    return frozenset(h for h, pattern in HEIGHTS.items() if pattern.search(text))


def substances_of(texts: Sequence[str]) -> frozenset[str]:
    """The substances of :data:`SUBSTANCES` the texts name, with what they are kinds of (blood -> fluid)."""
    found = {name for name, words in SUBSTANCES.items() if any(words.search(t) for t in texts)}
    return frozenset(found | {KIND_OF[s] for s in found if s in KIND_OF})


def directions_of(texts: Sequence[str]) -> frozenset[str]:
    """The directions of :data:`DIRECTIONS` the texts name ("overinflated lungs" -> ``{"more"}``)."""
    return frozenset(name for name, words in DIRECTIONS.items() if any(words.search(t) for t in texts))


def tones_of(texts: Sequence[str]) -> frozenset[str]:
    """The tones of :data:`TONES` the texts name ("large lucent lungs" -> ``{"dark"}``)."""
    return frozenset(name for name, words in TONES.items() if any(words.search(t) for t in texts))


def bends_of(texts: Sequence[str]) -> frozenset[str]:
    """The bends of :data:`BENDS` the texts name ("forward curvature of the spine" -> ``{"forward"}``)."""
    return frozenset(name for name, words in BENDS.items() if any(words.search(t) for t in texts))


def sizes_of(texts: Sequence[str]) -> frozenset[str]:
    """The sizes of :data:`SIZES` the texts name ("a little round shadow" -> ``{"small"}``)."""
    return frozenset(name for name, words in SIZES.items() if any(words.search(t) for t in texts))


def concept_substances(name: str, synonyms: Sequence[str]) -> frozenset[str]:
    """What a concept is made of: the substances its name names, else those of its synonyms. A synonym naming a
    variant ("hemopneumothorax" for hemothorax) adds nothing the concept needs: blood around the lung is a
    hemothorax whether or not air is there too."""
    return substances_of([name]) or substances_of(synonyms)


def concept_places(name: str, synonyms: Sequence[str]) -> frozenset[str]:
    """The places a concept's name or synonyms put it in (``pleural thickening`` -> pleura)."""
    own = [name, *synonyms]
    found = {place for place, (_, where, _) in PLACES.items()
             if where is not None and any(where.search(p) for p in own)}
    if "pericardium" in found:  # "pericardial effusion" is no pleural effusion
        found.discard("pleura")
    return frozenset(found)
