"""The lung against the mediastinum and hila: a query that places its finding in the lung, and units that
place theirs in the mediastinum or a hilum.

A mass, a nodule or an opacity "in the lung" is not one in the mediastinum: a right paratracheal, aortopulmonary
window or hilar mass is (most often) lymphadenopathy or a mediastinal tumour, not a lung mass. The location
tier (:mod:`radsift.ranking.places`) ranks such units below the others when the query names the lung as the
place of its finding ("lung mass", "pulmonary nodule", "a lump in the lung"), as it ranks another lobe below
the query's own.

Two bits beside the lobes' (:mod:`radsift.text.locations`, bits 1-32) in the same masks:

* :data:`MEDIASTINUM` in a *unit's* mask: the unit names the mediastinum or a hilum (:data:`MEDIASTINAL_WORDS`)
  and nothing of the lung (no lobe, no :data:`LUNG_WORDS`): "Right paratracheal mass." but not "Right hilar and
  right upper lobe masses." nor "Hilar and perihilar opacities" (perihilar is lung). Read from the units' BM25
  postings at search time (:func:`radsift.ranking.places.with_compartments`), never stored with an index, so
  no stored location flag changes and this module does not enter the lobes' fingerprint.
* :data:`LUNG` in a *query's* mask: the query places its finding in the lung (:func:`lung_place`) and names no
  lobe (a lobe is the finer place, ranked by the lobe tiers).
* :data:`HILA` and :data:`MIDDLE` in a *query's* mask: the query places its finding in a hilum ("right hilar mass")
  or in the mediastinum proper ("mediastinal mass", "paratracheal lymph nodes"): :func:`mediastinal_place`, no lobe
  and no lung place named. The units of that place alone (a unit's mask holds the same bit beside
  :data:`MEDIASTINUM`) then rank first, as a body place's units do: a hilar mass is no mediastinal one.

Where the lung is not the finding's place, the query names no place: the lung as what is stated ("lungs are
clear", "collapsed lung", "over-inflated lungs"), a place outside it ("fluid around the lungs", "the lung
lining" is the pleura), its vessels ("pulmonary artery", "pulmonary embolism": the pulmonary arteries run
through the hila) and its volumes.
"""

from __future__ import annotations

import re

from radsift.text import locations

#: Unit bit: names the mediastinum or a hilum and nothing of the lung.
MEDIASTINUM = 64
#: Query bit: the query places its finding in the lung (no lobe named).
LUNG = 128
#: Bits naming which: a hilum, the mediastinum proper (above the body places' bits, :mod:`radsift.text.bodyplaces`).
HILA, MIDDLE = 1 << 22, 1 << 23
#: The lobes' bits (:mod:`radsift.text.locations`).
LOBES = locations.RIGHT | locations.LEFT

#: Word groups (before stemming) naming the mediastinum or a hilum as a place; a unit holding every word of
#: one names it. "Perihilar" and "parahilar" are the lung around a hilum, not the hilum (other tokens).
MEDIASTINAL_WORDS: tuple[tuple[str, ...], ...] = tuple((w,) for w in (
    "mediastinum", "mediastinal", "hilum", "hila", "hilar", "paratracheal", "aortopulmonary", "subcarinal",
    "precarinal", "prevascular", "paraesophageal")) + (("ap", "window"),)
#: Everyday words for the mediastinum in a query: "metal clips near the heart" (reports: "mediastinal clips"), "a
#: mass in the middle of the chest", "a growth between the lungs". Not "around the heart" ("fluid around the heart" is
#: the pericardium's).
LAY_MIDDLE = re.compile(r"\b(?:(?:near|next\s+to|beside|by)\s+(?:the\s+|my\s+|his\s+|her\s+)?heart|"
                        r"(?:in\s+)?the\s+(?:middle|center|centre)\s+of\s+(?:the\s+|my\s+)?chest|"
                        r"between\s+(?:the\s+|my\s+|both\s+)?(?:two\s+)?lungs)\b", re.IGNORECASE)
#: Those of :data:`MEDIASTINAL_WORDS` naming a hilum (:data:`HILA`); the others name the mediastinum (:data:`MIDDLE`).
HILAR_WORDS: tuple[tuple[str, ...], ...] = (("hilum",), ("hila",), ("hilar",))
#: Words placing something in the lung; a unit holding one (or naming a lobe) is not a mediastinal one.
LUNG_WORDS: tuple[tuple[str, ...], ...] = tuple((w,) for w in (
    "lung", "lungs", "pulmonary", "intrapulmonary", "parenchyma", "parenchymal", "perihilar", "parahilar", "infrahilar",
    "suprahilar", "airspace", "alveolar", "lobe", "lobes", "lobar", "lingula", "lingular"))

# What follows a lung word when the lung is not the finding's place: its lining and surface (the pleura), its
# vessels, its volumes; after a lung word that would modify the finding, also a verb or a preposition ("lungs are
# clear", "lung is clear": the lung is what is stated).
_NOT_PLACE = (r"(?:linings?|surfaces?|pleura|pleural|membranes?|borders?|edges?|arter(?:y|ies|ial)|vascular(?:ity)?|"
              r"vasculature|vessels?|veins?|venous|hypertension|embol(?:ism|isms|us|i|ic)|trunk|outflow|hil(?:um|a|ar)|"
              r"volumes?)\b")
_NOT_MODIFIED = (r"(?:is|are|was|were|be|been|looks?|looked|appears?|appeared|seems?|remains?|and|or|with|without|"
                 r"from|to|of|in|on)\b")
_LUNG_ADJ = r"(?:lung|pulmonary|intrapulmonary|parenchymal)"
_LUNG_NOUN = r"(?:lungs?(?:\s+(?:fields?|parenchyma))?|pulmonary\s+parenchyma|parenchyma)"
_PATTERNS = [re.compile(p, re.I) for p in (
    # "lung mass", "pulmonary nodules", "parenchymal opacity": the lung word modifies the finding
    rf"\b(?P<lung>{_LUNG_ADJ})\s+(?!{_NOT_PLACE}|{_NOT_MODIFIED})(?=[a-z])",
    # "a lump in the lung", "spots on the lungs", "nodule within the left lung", "scarring of both lungs"
    rf"\b(?:in|within|inside|throughout|on|of|involving)\s+(?:the\s+|both\s+|each\s+|either\s+)?"
    rf"(?:(?:right|left)\s+)?(?P<lung>{_LUNG_NOUN})\b(?!\s+{_NOT_PLACE})",
)]


#: A place beside a hilum, in the lung around it: "scarring below the left hilum" (reports: "left infrahilar scarring").
NEAR_HILUM = re.compile(r"\b(?:below|under|beneath|above|around|near|next\s+to|beside)\s+(?:the\s+|both\s+)?"
                        r"(?:(?:right|left)\s+)?hil(?:um|a|ar)\b", re.IGNORECASE)


def lung_place(query: str) -> str | None:
    """The lung word that places the query's finding in the lung ("lung", "pulmonary", "lungs"), or None.

    None as well where locations are not read (``RADSIFT_LOCATIONS=off``) and where the query names a lobe,
    apex or base (the finer place, read by :mod:`radsift.text.locations`).
    """
    if not locations.enabled() or locations.read_locations(query):
        return None
    if NEAR_HILUM.search(query):
        return "lung"  # the lung beside a hilum, not the hilum
    for pattern in _PATTERNS:
        m = pattern.search(query)
        if m:
            return " ".join(m.group("lung").lower().split())
    return None


def mediastinal_place(query: str) -> str | None:
    """The word placing the query's finding in the mediastinum or a hilum (one of :data:`MEDIASTINAL_WORDS`:
    "mediastinal", "hilar", "paratracheal"), or None: None as well where locations are not read, where the query
    names a lobe, apex or base, or a lung word (:data:`LUNG_WORDS`: "hilar and right upper lobe masses", "perihilar
    opacity" are the lung's)."""
    if not locations.enabled() or locations.read_locations(query):
        return None
    words = [w.lower() for w in re.findall(r"[A-Za-z]+", query)]
    if LAY_MIDDLE.search(query) and not NEAR_HILUM.search(query):
        return "mediastinum"  # before the lung words: "between the lungs" names them to place what lies outside
    if any((w,) in LUNG_WORDS for w in words) or NEAR_HILUM.search(query):
        return None
    for group in MEDIASTINAL_WORDS:
        if all(g in words for g in group):
            return " ".join(group)
    return None


def place_bit(word: str) -> int:
    """The query bit of a word :func:`mediastinal_place` returned: :data:`HILA` or :data:`MIDDLE`."""
    return HILA if tuple(word.split()) in HILAR_WORDS else MIDDLE


__all__ = ["HILA", "HILAR_WORDS", "LAY_MIDDLE", "LOBES", "LUNG", "LUNG_WORDS", "MEDIASTINAL_WORDS", "MEDIASTINUM",
           "MIDDLE", "NEAR_HILUM", "lung_place", "mediastinal_place", "place_bit"]
