"""Body places outside the lung: the spine and its levels, the shoulder girdle, the sternum and ribs, the neck,
the abdomen and the veins lines enter by, named in a query beside its device or finding, and in units.

"thoracic spine hardware" is hardware in the thoracic spine, not a shoulder prosthesis; "left subclavian central
line" a line through the subclavian vein, not one through the jugular. The location tier
(:mod:`radsift.ranking.places`) ranks the units naming the query's place above the other units of their reading
tier, as it ranks the query's lobe first (:mod:`radsift.text.locations`) and the lung against the mediastinum
(:mod:`radsift.text.compartments`). A unit naming no place and one naming another place keep the default tier (a
"humeral prosthesis" may still be a shoulder's).

A place is a set of bits (:data:`BODY`, above the lobes' bits 1-32, :data:`~radsift.text.compartments.MEDIASTINUM`
64 and :data:`~radsift.text.compartments.LUNG` 128), read the same way from queries and units: a text names a
place when it holds every word of one of the place's word groups (:data:`PLACE_WORDS`, words before stemming, in
any order; a unit's from its BM25 postings at search time, never stored with an index). Two places match when
their bits overlap: "humeral head" is the shoulder and the humerus. A word group naming a whole family (the spine:
"spine", "vertebral") gives way to a part of it named in the same text (:func:`resolve`): "thoracic spine" is the
thoracic spine, "lower cervical spinal fusion" the cervical spine, while "spinal rods" meets every level.
"""

from __future__ import annotations

import re

from radsift.text import locations
from radsift.text.tokens import stem, token_spans, word_groups

#: Place bits: the three levels of the spine, then one bit per place.
SPINE_C, SPINE_T, SPINE_L = 1 << 8, 1 << 9, 1 << 10
SHOULDER, SCAPULA, HUMERUS, CLAVICLE, STERNUM, RIBS = 1 << 11, 1 << 12, 1 << 13, 1 << 14, 1 << 15, 1 << 16
NECK, ABDOMEN, SUBCLAVIAN, JUGULAR, AXILLA = 1 << 17, 1 << 18, 1 << 19, 1 << 20, 1 << 21
#: The parts of the thoracic aorta a film shows apart (above the noncalcified pattern's bit, 45): the arch (its knob),
#: the ascending and the descending aorta. "Aortic" alone names the whole, as a unit naming no place does.
AORTIC_ARCH, ASCENDING_AORTA, DESCENDING_AORTA = 1 << 46, 1 << 47, 1 << 48
#: The whole spine (a word naming no level).
SPINE = SPINE_C | SPINE_T | SPINE_L
#: Every place bit.
BODY = SPINE | SHOULDER | SCAPULA | HUMERUS | CLAVICLE | STERNUM | RIBS | NECK | ABDOMEN | SUBCLAVIAN | JUGULAR | AXILLA \
    | AORTIC_ARCH | ASCENDING_AORTA | DESCENDING_AORTA
#: Places whose whole gives way to a part named beside it (:func:`resolve`).
FAMILIES = (SPINE,)


#: (word group, place bits): a text holding every word of a group names its place. "thoracic" alone is no level
#: of the spine (the thoracic aorta, the thoracic cavity); "cervical" alone is (in chest reports, the cervical spine).
PLACE_WORDS: tuple[tuple[tuple[str, ...], int], ...] = (
    word_groups(SPINE, "spine", "spines", "spinal", "vertebra", "vertebrae", "vertebral", "paraspinal", "paravertebral",
                "scoliosis", "levoscoliosis", "dextroscoliosis", "kyphosis", "vertebroplasty", "kyphoplasty")
    + word_groups(SPINE_C, "cervical")
    + word_groups(SPINE_C | SPINE_T, "cervicothoracic")
    + tuple((("thoracic", w), SPINE_T) for w in ("spine", "spinal", "vertebra", "vertebrae", "vertebral", "kyphosis",
                                                  "scoliosis", "fusion", "vertebroplasty", "kyphoplasty"))
    + word_groups(SPINE_T, "midthoracic")
    + word_groups(SPINE_T | SPINE_L, "thoracolumbar")
    + word_groups(SPINE_L, "lumbar", "lumbosacral")
    + word_groups(SHOULDER, "shoulder", "shoulders", "glenohumeral", "glenoid", "acromion", "acromial")
    + ((("rotator", "cuff"), SHOULDER), (("humeral", "head"), SHOULDER | HUMERUS))
    + word_groups(SHOULDER | CLAVICLE, "acromioclavicular")
    + word_groups(SCAPULA, "scapula", "scapulae", "scapular")
    + word_groups(HUMERUS, "humerus", "humeri", "humeral")
    + word_groups(CLAVICLE, "clavicle", "clavicles", "clavicular")
    + word_groups(CLAVICLE | STERNUM, "sternoclavicular")
    + word_groups(STERNUM, "sternum", "sternal", "sternotomy", "manubrium", "manubrial")
    + word_groups(RIBS, "rib", "ribs")
    # the thyroid bed and the thoracic inlet ("clips from a thyroidectomy": "surgical clips at the thoracic inlet")
    + word_groups(NECK, "neck", "supraclavicular", "thyroid", "thyroidectomy", "thyroidal")
    + ((("thoracic", "inlet"), NECK),)
    + word_groups(ABDOMEN, "abdomen", "abdominal", "quadrant", "ruq", "luq", "epigastric", "epigastrium")
    + word_groups(SUBCLAVIAN, "subclavian")
    + word_groups(JUGULAR, "jugular", "ij")
    + word_groups(AXILLA, "axilla", "axillae", "axillary")
    # "calcified aortic knob", "the arch of the aorta", "ectatic ascending aorta", "tortuous descending thoracic aorta";
    # "knob" alone is the aortic knob in a chest report
    + ((("aortic", "arch"), AORTIC_ARCH), (("arch", "aorta"), AORTIC_ARCH), (("transverse", "aorta"), AORTIC_ARCH))
    + word_groups(AORTIC_ARCH, "knob", "knuckle")
    + ((("ascending", "aorta"), ASCENDING_AORTA), (("ascending", "aortic"), ASCENDING_AORTA),
       (("descending", "aorta"), DESCENDING_AORTA), (("descending", "aortic"), DESCENDING_AORTA))
)

#: Everyday names of the places in a query (pattern, the report word): read as the report words (queries only: units
#: keep :data:`PLACE_WORDS`).
_LAY_NAMES = ((r"shoulder[\s-]?blades?", "scapula"), (r"upper\s+arms?|arm\s+bones?", "humerus"),
              (r"collar[\s-]?bones?", "clavicle"), (r"breast[\s-]?bones?", "sternum"), (r"back[\s-]?bones?", "spine"))
LAY_PLACES = tuple((re.compile(rf"\b(?:{pattern})\b", re.IGNORECASE), word) for pattern, word in _LAY_NAMES)
#: A bone of the shoulder girdle, arm or breastbone named in a query, in report or everyday words: the concept linker
#: tries the finding's words with it written "bone" ("cracked shoulder blade": a cracked bone, its place read apart).
BONE_WORDS = re.compile(r"\b(?:the\s+|my\s+|his\s+|her\s+)?(?:(?:right|left)\s+)?(?:"
                        + "|".join(pattern for pattern, word in _LAY_NAMES if word != "spine")
                        + r"|scapulae?|humerus|humeri|clavicles?|sternum)\b", re.IGNORECASE)


def is_whole(bits: int) -> bool:
    """Whether a word group's bits are a whole family (:data:`FAMILIES`): they give way to a part named beside."""
    return bits in FAMILIES


def resolve(parts, wholes):
    """The place bits of texts from the bits of the word groups they hold: ``parts`` (the OR of the groups naming
    a part or a place) and ``wholes`` (the OR of those naming a whole family); a whole counts only where no part of
    it is named. Works on ints and on numpy arrays of them alike (the query and the units read one rule)."""
    out = parts
    for family in FAMILIES:
        out = out | (wholes & family) * ((parts & family) == 0)
    return out


def query_places(query: str) -> tuple[str | None, int]:
    """``(the words naming the query's body place, its bits)``; ``(None, 0)`` for none, or where locations are not
    read (``RADSIFT_LOCATIONS=off``)."""
    if not locations.enabled():
        return None, 0
    for pattern, word in LAY_PLACES:
        query = pattern.sub(word, query)
    spans = token_spans(query)
    stems = {s for _, _, s in spans}
    held = [(words, bits) for words, bits in PLACE_WORDS if all(stem(w) in stems for w in words)]
    parts = wholes = 0
    for _, bits in held:
        if is_whole(bits):
            wholes |= bits
        else:
            parts |= bits
    found = resolve(parts, wholes)
    if not found:
        return None, 0
    # the words of the groups that count (a whole given way to a part is not shown)
    used = {stem(w) for words, bits in held if bits & found == bits for w in words}
    text = " ".join(query[a:b].lower() for a, b, s in spans if s in used)
    return text, found


__all__ = ["ABDOMEN", "AORTIC_ARCH", "ASCENDING_AORTA", "AXILLA", "DESCENDING_AORTA", "BODY", "BONE_WORDS", "CLAVICLE", "FAMILIES", "HUMERUS", "JUGULAR", "LAY_PLACES", "NECK", "PLACE_WORDS",
           "RIBS",
           "SCAPULA", "SHOULDER", "SPINE", "SPINE_C", "SPINE_L", "SPINE_T", "STERNUM", "SUBCLAVIAN", "is_whole",
           "query_places", "resolve"]
