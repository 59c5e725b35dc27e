"""Scenarios: how the demo corpus writes about each abnormal finding.

A scenario writes one finding (sometimes with companions, e.g. an effusion with adjacent
atelectasis) as findings-section sentences plus impression phrases, and returns the ground
truth those words state. Templates are written for this project in the usual register of
chest radiograph reports; none is copied from a real report.

This module is the registry (prevalence weights, co-occurrence, what each scenario speaks for);
the scenarios themselves are :mod:`radsift.demo.cardiopulmonary` (pleura, lungs, heart) and
:mod:`radsift.demo.bones_devices` (bones, mediastinum, abdomen, post-surgical changes, devices),
with the small writers they share in :mod:`radsift.demo.phrasing`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from radsift.demo.bones_devices import (aorta, central_line, degenerative_change, endotracheal_tube, hiatal_hernia,
                                        nasogastric_tube, pacemaker, rib_fracture, scoliosis, sternotomy,
                                        surgical_clips)
from radsift.demo.cardiopulmonary import (atelectasis, cardiomegaly, consolidation, emphysema, granuloma,
                                          interstitial_opacity, lung_opacity, mass, nodule, pleural_effusion,
                                          pneumothorax, pulmonary_edema, scarring, vascular_congestion)
from radsift.demo.context import Block, Draw

# ---------------------------------------------------------------------------------------------
# The registry: prevalence weights, co-occurrence and what each scenario speaks for
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Scenario:
    """A way to write one abnormal finding.

    Attributes:
        key: Scenario name (also the main finding it writes, in most cases).
        build: ``build(draw, uncertain) -> Block``.
        reserves: Findings the scenario may state; they are reserved before it is built.
        weight: Base prevalence weight among abnormal studies.
        uncertain: Chance that the scenario is written with hedged language (0 = never).
        portable: Weight multiplier on portable AP exams (ICU patients).
        two_views: Weight multiplier on PA and lateral exams (outpatients).
        elderly: Weight multiplier for the 65+ age group.
        young: Weight multiplier for the 18-39 age group.
    """

    key: str
    build: Callable[[Draw, bool], Block]
    reserves: tuple[str, ...]
    weight: float
    uncertain: float = 0.0
    portable: float = 1.0
    two_views: float = 1.0
    elderly: float = 1.0
    young: float = 1.0

    def weight_for(self, d: Draw) -> float:
        w = self.weight
        if d.portable:
            w *= self.portable
        elif d.two_views:
            w *= self.two_views
        if d.age_group == "65+":
            w *= self.elderly
        elif d.age_group == "18-39":
            w *= self.young
        return w


SCENARIOS: tuple[Scenario, ...] = (
    Scenario("pneumothorax", pneumothorax, ("pneumothorax",), 3, 0.15, portable=1.5, young=1.5),
    Scenario(
        "pleural effusion", pleural_effusion, ("pleural effusion",), 10, 0.12, portable=1.8, elderly=1.5, young=0.5
    ),
    Scenario("consolidation", consolidation, ("consolidation", "pneumonia"), 8, 0.2, portable=1.3),
    Scenario("atelectasis", atelectasis, ("atelectasis",), 8, 0.15, portable=1.8),
    Scenario("lung opacity", lung_opacity, ("lung opacity",), 1.5),
    Scenario("cardiomegaly", cardiomegaly, ("cardiomegaly",), 9, 0.1, elderly=1.8, young=0.4),
    Scenario("pulmonary edema", pulmonary_edema, ("pulmonary edema",), 4, 0.15, portable=2.0, elderly=1.4, young=0.4),
    Scenario("vascular congestion", vascular_congestion, ("vascular congestion",), 3, portable=1.5, elderly=1.3),
    Scenario("emphysema", emphysema, ("emphysema", "lung volumes"), 5, two_views=1.2, elderly=1.3, young=0.3),
    Scenario("nodule", nodule, ("nodule",), 4, 0.2, two_views=1.2),
    Scenario("mass", mass, ("mass",), 1.8, 0.25, young=0.2),
    Scenario("granuloma", granuloma, ("granuloma",), 6, two_views=1.3),
    Scenario("interstitial opacity", interstitial_opacity, ("interstitial opacity",), 2.5, elderly=1.4, young=0.3),
    Scenario("scarring", scarring, ("scarring",), 4),
    Scenario("rib fracture", rib_fracture, ("rib fracture",), 2.5, 0.15),
    Scenario("scoliosis", scoliosis, ("scoliosis",), 3),
    Scenario("degenerative change", degenerative_change, ("degenerative change",), 8, elderly=1.8, young=0.3),
    Scenario("hiatal hernia", hiatal_hernia, ("hiatal hernia",), 2.5, elderly=1.5, young=0.3),
    Scenario("aorta", aorta, ("aortic tortuosity", "atherosclerotic calcification"), 6, elderly=2.0, young=0.1),
    Scenario("sternotomy wires", sternotomy, ("sternotomy wires",), 3.5, elderly=2.0, young=0.2),
    Scenario("surgical clips", surgical_clips, ("surgical clips",), 2.5),
    Scenario("central venous catheter", central_line, ("central venous catheter",), 3.5, portable=3.0, two_views=0.5),
    Scenario("pacemaker", pacemaker, ("pacemaker",), 2.5, elderly=2.5, young=0.2),
    Scenario("endotracheal tube", endotracheal_tube, ("endotracheal tube",), 2, portable=6.0, two_views=0.0),
    Scenario("nasogastric tube", nasogastric_tube, ("nasogastric tube",), 2, portable=5.0, two_views=0.0),
)

# Findings that travel together (heart failure, ICU support devices, post-CABG chest ...).
AFFINITY: dict[frozenset[str], float] = {
    frozenset(pair): factor
    for pair, factor in (
        (("cardiomegaly", "pulmonary edema"), 3.0),
        (("cardiomegaly", "vascular congestion"), 3.0),
        (("cardiomegaly", "pleural effusion"), 2.0),
        (("pulmonary edema", "pleural effusion"), 2.5),
        (("pleural effusion", "atelectasis"), 1.8),
        (("endotracheal tube", "nasogastric tube"), 5.0),
        (("endotracheal tube", "central venous catheter"), 2.5),
        (("sternotomy wires", "pacemaker"), 2.0),
        (("sternotomy wires", "cardiomegaly"), 1.5),
        (("emphysema", "scarring"), 1.5),
        (("emphysema", "nodule"), 1.3),
        (("granuloma", "scarring"), 1.3),
        (("degenerative change", "scoliosis"), 1.5),
        (("degenerative change", "aorta"), 1.5),
    )
}
