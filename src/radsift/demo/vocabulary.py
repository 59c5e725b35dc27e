"""The closed vocabulary of the demo corpus: finding names, categories and locations.

Ground truth in the demo corpus speaks only these canonical names, so an evaluation can map
them onto any lexicon. Every phrase the generator writes for a finding is one of its
surface forms listed here or an obvious inflection of one (``effusions``, ``opacities``).
"""

from __future__ import annotations

from dataclasses import dataclass
from types import MappingProxyType
from typing import Mapping

PRESENT = "present"
ABSENT = "absent"
UNCERTAIN = "uncertain"
STATUSES = (PRESENT, ABSENT, UNCERTAIN)

# One ground-truth fact about a report: (finding, status, location or None).
Truth = tuple[str, str, "str | None"]


@dataclass(frozen=True)
class FindingInfo:
    """A canonical demo finding.

    Attributes:
        name: Canonical name used in the ground truth.
        category: ``disease``, ``device``, ``anatomy`` or ``postsurgical``.
        surfaces: Surface forms the generator writes for it (lower case, singular).
    """

    name: str
    category: str
    surfaces: tuple[str, ...]


def _f(name: str, category: str, *surfaces: str) -> tuple[str, FindingInfo]:
    return name, FindingInfo(name, category, tuple(surfaces))


FINDINGS: Mapping[str, FindingInfo] = MappingProxyType(
    dict(
        [
            _f("pneumothorax", "disease", "pneumothorax", "ptx"),
            _f("pleural effusion", "disease", "pleural effusion", "effusion", "costophrenic angle blunting"),
            _f("consolidation", "disease", "consolidation", "airspace disease", "airspace consolidation", "infiltrate"),
            _f("pneumonia", "disease", "pneumonia"),
            _f("atelectasis", "disease", "atelectasis"),
            _f("lung opacity", "disease", "opacity", "airspace opacity"),
            _f("cardiomegaly", "disease", "cardiomegaly", "enlarged heart", "heart size", "cardiac silhouette"),
            _f("pulmonary edema", "disease", "pulmonary edema", "edema"),
            _f("vascular congestion", "disease", "vascular congestion", "pulmonary vascular congestion"),
            _f("emphysema", "disease", "emphysema", "hyperinflation", "hyperinflated lungs", "copd"),
            _f("nodule", "disease", "nodule", "pulmonary nodule"),
            _f("mass", "disease", "mass", "hilar mass"),
            _f("granuloma", "disease", "granuloma", "calcified granuloma", "granulomatous disease"),
            _f("interstitial opacity", "disease", "interstitial opacity", "interstitial markings"),
            _f("scarring", "disease", "scarring"),
            _f("rib fracture", "disease", "rib fracture", "fracture of the rib"),
            _f("scoliosis", "anatomy", "scoliosis", "dextroscoliosis", "levoscoliosis"),
            _f("degenerative change", "anatomy", "degenerative change", "spondylosis", "osteophyte"),
            _f("hiatal hernia", "anatomy", "hiatal hernia"),
            _f("aortic tortuosity", "anatomy", "tortuous aorta", "tortuosity of the aorta"),
            _f(
                "atherosclerotic calcification",
                "anatomy",
                "aortic calcification",
                "calcified aortic knob",
                "aortic atherosclerosis",
            ),
            _f("sternotomy wires", "postsurgical", "sternotomy wires", "median sternotomy"),
            _f("surgical clips", "postsurgical", "surgical clips", "cholecystectomy clips"),
            _f("central venous catheter", "device", "central venous catheter", "picc", "central line"),
            _f("pacemaker", "device", "pacemaker", "pacer", "aicd"),
            _f("endotracheal tube", "device", "endotracheal tube", "et tube"),
            _f("nasogastric tube", "device", "nasogastric tube", "ng tube", "enteric tube"),
        ]
    )
)


# Finer concepts another vocabulary (radsift's chest X-ray lexicon, CheXpert ...) may report for
# text the demo corpus labels with one coarser finding. An evaluation of a labeler against
# the demo truth should fold these into the demo finding before comparing.
EQUIVALENT_CONCEPTS: Mapping[str, tuple[str, ...]] = MappingProxyType(
    {
        "pleural effusion": ("blunted costophrenic angle",),
        "consolidation": ("airspace disease", "infiltrate"),
        "emphysema": ("hyperinflation", "chronic obstructive pulmonary disease", "diaphragmatic flattening"),
        "granuloma": ("calcified granuloma",),
        "rib fracture": ("fracture",),
        "central venous catheter": ("PICC",),
        "pacemaker": ("implantable defibrillator",),
        "sternotomy wires": ("CABG",),
        "surgical clips": ("cholecystectomy",),
        "hiatal hernia": ("air-fluid level",),
        "interstitial opacity": ("interstitial lung disease",),
    }
)


@dataclass(frozen=True)
class Location:
    """A canonical location and the ways the generator writes it.

    Attributes:
        name: Canonical name used in the ground truth (``right lower lobe``).
        adjectives: Forms placed before the finding (``right lower lobe consolidation``).
        phrases: Prepositional forms placed after it (``consolidation in the right lower lobe``).
    """

    name: str
    adjectives: tuple[str, ...]
    phrases: tuple[str, ...]


def _loc(name: str, adjectives: tuple[str, ...], phrases: tuple[str, ...]) -> tuple[str, Location]:
    return name, Location(name, adjectives, phrases)


LOCATIONS: Mapping[str, Location] = MappingProxyType(
    dict(
        [
            _loc("right", ("right",), ("on the right",)),
            _loc("left", ("left",), ("on the left",)),
            _loc("bilateral", ("bilateral",), ("bilaterally",)),
            _loc("right upper lobe", ("right upper lobe",), ("in the right upper lobe",)),
            _loc("right middle lobe", ("right middle lobe",), ("in the right middle lobe",)),
            _loc("right lower lobe", ("right lower lobe",), ("in the right lower lobe",)),
            _loc("left upper lobe", ("left upper lobe",), ("in the left upper lobe",)),
            _loc("left lower lobe", ("left lower lobe",), ("in the left lower lobe",)),
            _loc("lingula", ("lingular",), ("in the lingula",)),
            _loc("right basilar", ("right basilar", "right base"), ("at the right lung base", "in the right base")),
            _loc("left basilar", ("left basilar", "left base"), ("at the left lung base", "in the left base")),
            _loc("bilateral basilar", ("bibasilar",), ("at both lung bases", "in the lung bases bilaterally")),
            _loc("right apical", ("right apical",), ("at the right apex", "in the right apex")),
            _loc("left apical", ("left apical",), ("at the left apex", "in the left apex")),
            _loc("bilateral apical", ("biapical",), ("at both apices", "in the lung apices")),
            _loc("retrocardiac", ("retrocardiac",), ("in the retrocardiac region",)),
            _loc("right midlung", ("right midlung",), ("in the right midlung",)),
            _loc("left midlung", ("left midlung",), ("in the left midlung",)),
            _loc("right hilar", ("right hilar",), ("in the right hilum",)),
            _loc("left hilar", ("left hilar",), ("in the left hilum",)),
        ]
    )
)


def a_an(phrase: str) -> str:
    """``a`` or ``an`` for ``phrase`` (by sound for the numbers the generator writes)."""
    first = phrase.split()[0].lower() if phrase.split() else ""
    # "8 mm", "11 mm", "18 mm" and "80" start with a vowel sound.
    if first[:1] == "8" or first.startswith(("11", "18")):
        return "an"
    return "an" if first[:1] in "aeio" else "a"


def cap(text: str) -> str:
    """Upper-case the first character only (keeps ``PICC``, ``XXXX`` and ``mm`` intact)."""
    return text[:1].upper() + text[1:] if text else text
