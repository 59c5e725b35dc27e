"""Scenarios: how the demo corpus writes about each abnormal finding.

A scenario writes one finding (sometimes with companions, e.g. an effusion with adjacent
atelectasis) as findings-section sentences plus impression phrases, and returns the ground
truth those words state. Templates are written for this project in the usual register of
chest radiograph reports; none is copied from a real report.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Sequence

from radsift.demo.context import Block, Draw
from radsift.demo.vocabulary import ABSENT, LOCATIONS, PRESENT, UNCERTAIN, a_an, cap

# ---------------------------------------------------------------------------------------------
# Small writers shared by the scenarios
# ---------------------------------------------------------------------------------------------


def _say(d: Draw, b: Block, *options: str, weights: Sequence[float] | None = None) -> str:
    """Append one of ``options`` to the block's findings sentences and return it."""
    sentence = d.pick(options, weights)
    b.sentences.append(sentence)
    return sentence


def _impress(d: Draw, b: Block, priority: int, *options: str) -> None:
    """Offer one of ``options`` to the impression with ``priority``."""
    b.impression.append((priority, d.pick(options)))


def _adj(d: Draw, location: str) -> str:
    return d.pick(LOCATIONS[location].adjectives)


def _prep(d: Draw, location: str) -> str:
    return d.pick(LOCATIONS[location].phrases)


def _mm(d: Draw) -> str:
    return f"{d.rng.randint(4, 9)} mm"


def _cm(d: Draw, low: float, high: float) -> str:
    return f"{d.rng.randint(round(low * 10), round(high * 10)) / 10:.1f} cm"


def _size(d: Draw) -> str:
    """A nodule size: millimetres or centimetres with one decimal."""
    return _mm(d) if d.chance(0.55) else _cm(d, 1.0, 2.8)


def _ordinal(n: int) -> str:
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


def _discussed(d: Draw) -> str:
    return d.pick(
        (
            " Findings were discussed with Dr. XXXX at XXXX on XXXX.",
            " These findings were communicated to the ordering provider at XXXX.",
            " Dr. XXXX was notified by telephone at XXXX.",
        )
    )


# ---------------------------------------------------------------------------------------------
# Pleura
# ---------------------------------------------------------------------------------------------


def pneumothorax(d: Draw, uncertain: bool) -> Block:
    side = d.pick(("right", "left"))
    location = f"{side} apical" if d.chance(0.5) else side
    adj = _adj(d, location)
    term = "PTX" if d.chance(0.04) else "pneumothorax"
    b = Block("pleura")
    if uncertain:
        b.items.append(("pneumothorax", UNCERTAIN, location))
        said = _say(
            d,
            b,
            f"Possible tiny {adj} {term}.",
            f"A small {adj} pneumothorax cannot be excluded.",
            f"Questionable thin pleural line {_prep(d, f'{side} apical')}, possibly a small pneumothorax.",
        )
        if "apex" in said and location == side:  # the sentence names the apex
            b.items[-1] = ("pneumothorax", UNCERTAIN, f"{side} apical")
        _impress(
            d,
            b,
            4,
            f"Possible small {side} pneumothorax.",
            f"Small {side} pneumothorax is not excluded; consider repeat radiograph.",
        )
        return b
    sev = d.pick(("tiny", "small", "moderate", "large"), (2, 4.5, 2.5, 1))
    b.items.append(("pneumothorax", PRESENT, location))
    _say(
        d,
        b,
        f"{cap(sev)} {adj} {term}.",
        f"There is {a_an(sev)} {sev} {adj} {term}.",
        f"{cap(sev)} {term} {_prep(d, location)}.",
        f"No significant change in the {sev} {adj} {term}.",
        f"Interval increase in the {adj} pneumothorax, now {sev}.",
        weights=(4, 3, 2, 0.8, 0.6),
    )
    if sev == "large" and d.chance(0.5):
        b.sentences.append("Mild shift of the mediastinum to the contralateral side.")
    phrase = d.pick((f"{cap(sev)} {adj} pneumothorax.", f"{cap(adj)} pneumothorax, {sev}."), (3, 1))
    if sev in ("moderate", "large") or d.chance(0.3):
        phrase += _discussed(d)
    b.impression.append((5, phrase))
    return b


def pleural_effusion(d: Draw, uncertain: bool) -> Block:
    side = d.pick(("right", "left", "bilateral"), (3.5, 3.5, 3))
    b = Block("pleura")
    if uncertain:
        side = d.pick(("right", "left"))
        b.items.append(("pleural effusion", UNCERTAIN, side))
        _say(
            d,
            b,
            f"Blunting of the {side} costophrenic angle may represent a small pleural effusion.",
            f"Possible small {side} pleural effusion.",
            f"Trace {side} pleural effusion is not excluded.",
            f"Blunting of the {side} costophrenic angle, likely a small effusion.",
        )
        _impress(d, b, 3, f"Possible small {side} pleural effusion.", f"Questionable trace {side} effusion.")
        return b
    sev = d.pick(("trace", "small", "small to moderate", "moderate", "large"), (1, 5, 1, 3, 1))
    plural = side == "bilateral"
    term = d.pick(("pleural effusions", "effusions")) if plural else d.pick(("pleural effusion", "effusion"), (3, 1))
    prep = "bilaterally" if plural else f"on the {side}"
    b.items.append(("pleural effusion", PRESENT, side))
    be, art = ("are", "") if plural else ("is", f"{a_an(sev)} ")
    angle, fluid = ("angles", "effusions") if plural else ("angle", f"{a_an(sev)} {sev} effusion")
    if plural:
        fluid = f"{sev} effusions"
    sentence = d.pick(
        (
            f"{cap(sev)} {side} {term}.",
            f"There {be} {art}{sev} {side} {term}.",
            f"{cap(sev)} {term} {prep}.",
            f"No change in the {sev} {side} {term}.",
            f"Unchanged {sev} {side} {term}.",
            f"Interval decrease in the {side} {term}, now {sev}.",
            f"Blunting of the {side} costophrenic {angle} consistent with {fluid}.",
        ),
        (4, 3, 2, 1, 1, 0.7, 0.8),
    )
    if d.free("atelectasis") and d.chance(0.25) and sentence.startswith(cap(sev)):
        d.reserve("atelectasis")
        sentence = sentence[:-1] + d.pick((" with adjacent atelectasis.", " with associated compressive atelectasis."))
        b.items.append(("atelectasis", PRESENT, side))
    b.sentences.append(sentence)
    _impress(
        d,
        b,
        4,
        f"{cap(sev)} {side} {term}.",
        f"{cap(side)} {term}, {sev}.",
        f"{cap(sev)} {side} pleural {'effusions' if plural else 'effusion'}.",
    )
    return b


# ---------------------------------------------------------------------------------------------
# Lung parenchyma
# ---------------------------------------------------------------------------------------------

_AIRSPACE_LOCATIONS = (
    ("right lower lobe", 5),
    ("left lower lobe", 4),
    ("right middle lobe", 2),
    ("right upper lobe", 1.5),
    ("left upper lobe", 1),
    ("lingula", 1),
    ("retrocardiac", 2),
    ("right basilar", 2),
    ("left basilar", 2),
    ("bilateral basilar", 1.5),
)


def _airspace_location(d: Draw) -> str:
    names, weights = zip(*_AIRSPACE_LOCATIONS)
    return d.pick(names, weights)


def consolidation(d: Draw, uncertain: bool) -> Block:
    location = _airspace_location(d)
    adj, prep = _adj(d, location), _prep(d, location)
    b = Block("lung")
    if uncertain and d.free("lung opacity") and d.free("atelectasis"):
        # A present opacity whose cause is uncertain.
        d.reserve("lung opacity", "atelectasis")
        b.items += [
            ("lung opacity", PRESENT, location),
            ("atelectasis", UNCERTAIN, location),
            ("pneumonia", UNCERTAIN, location),
        ]
        _say(
            d,
            b,
            f"Patchy {adj} opacity, atelectasis versus pneumonia.",
            f"Patchy opacity {prep} may represent atelectasis or early pneumonia.",
            f"Hazy {adj} opacity which could reflect atelectasis or pneumonia.",
        )
        _impress(
            d,
            b,
            4,
            f"{cap(adj)} opacity, atelectasis versus pneumonia.",
            f"{cap(adj)} opacity may represent atelectasis or pneumonia.",
        )
        return b
    noun = d.pick(("consolidation", "airspace disease", "airspace consolidation", "infiltrate"), (5, 2, 1.5, 0.7))
    mode = d.pick(("plain", "concerning", "pneumonia", "improving"), (3, 3, 2.5, 0.8))
    b.items.append(("consolidation", PRESENT, location))
    qual = d.pick(("Focal", "Patchy", "Dense", "")) if noun != "infiltrate" else d.pick(("Patchy", ""))
    if mode == "plain":
        _say(d, b, f"{cap(adj)} {noun}.", f"{qual} {noun} {prep}.", f"There is {qual.lower()} {noun} {prep}.")
        _impress(
            d, b, 4, f"{cap(adj)} {noun}.", f"{cap(adj)} {noun}. Recommend follow-up radiographs after treatment."
        )
    elif mode == "concerning":
        cue = d.pick(("concerning for", "suspicious for", "which may represent", "likely", "possibly"))
        b.items.append(("pneumonia", UNCERTAIN, location))
        _say(d, b, f"{cap(adj)} {noun}, {cue} pneumonia.", f"{cap(noun)} {prep}, {cue} pneumonia.")
        _impress(
            d,
            b,
            5,
            f"{cap(adj)} {noun}, {cue} pneumonia.",
            f"Findings may represent {adj} pneumonia.",
            f"Possible {adj} pneumonia.",
        )
    elif mode == "pneumonia":
        b.items.append(("pneumonia", PRESENT, location))
        if d.chance(0.5):
            _say(
                d, b, f"{cap(adj)} {noun} consistent with pneumonia.", f"{cap(noun)} {prep} compatible with pneumonia."
            )
        else:
            _say(d, b, f"{cap(adj)} {noun}.", f"{cap(noun)} {prep}.")
        _impress(
            d,
            b,
            5,
            f"{cap(adj)} pneumonia.",
            f"{cap(adj)} pneumonia. Follow-up radiographs recommended to document clearing.",
            f"Findings consistent with {adj} pneumonia.",
        )
    else:
        _say(
            d,
            b,
            f"Improving {adj} {noun}.",
            f"Interval improvement in the {adj} {noun}.",
            f"Decreased {noun} {prep}.",
        )
        _impress(d, b, 4, f"Improving {adj} {noun}.", f"Residual {adj} {noun}, improved.")
    return b


def atelectasis(d: Draw, uncertain: bool) -> Block:
    location = d.pick(
        (
            "bilateral basilar",
            "left basilar",
            "right basilar",
            "retrocardiac",
            "right middle lobe",
            "lingula",
            "left lower lobe",
        ),
        (5, 3, 2, 2, 1, 1, 1),
    )
    adj = _adj(d, location)
    b = Block("lung")
    opacity_ok = d.free("lung opacity")
    if uncertain and opacity_ok:
        d.reserve("lung opacity")
        b.items += [("lung opacity", PRESENT, location), ("atelectasis", UNCERTAIN, location)]
        _say(d, b, f"Streaky {adj} opacities, likely atelectasis.", f"Linear {adj} opacity, probably atelectasis.")
        _impress(d, b, 3, f"{cap(adj)} opacities, likely atelectasis.", f"Probable {adj} atelectasis.")
        return b
    kind = d.pick(("Mild", "Minimal", "Subsegmental", "Plate-like", "Linear", ""), (3, 1.5, 2, 1, 1, 2))
    if opacity_ok and d.chance(0.2):
        d.reserve("lung opacity")
        b.items += [("lung opacity", PRESENT, location), ("atelectasis", PRESENT, location)]
        _say(
            d,
            b,
            f"Streaky {adj} opacities compatible with atelectasis.",
            f"{cap(adj)} opacities consistent with atelectasis.",
        )
    else:
        b.items.append(("atelectasis", PRESENT, location))
        options = [f"{kind} {adj} atelectasis.", f"There is {kind.lower()} atelectasis {_prep(d, location)}."]
        if d.free("lung volumes"):  # not with hyperinflated lungs
            options.append(f"Low lung volumes with {adj} atelectasis.")
        if _say(d, b, *options).startswith("Low"):
            d.reserve("lung volumes")
    _impress(d, b, 3, f"{cap(adj)} atelectasis.", f"Mild {adj} atelectasis.")
    return b


def lung_opacity(d: Draw, uncertain: bool) -> Block:
    location = _airspace_location(d)
    adj = _adj(d, location)
    b = Block("lung")
    b.items.append(("lung opacity", PRESENT, location))
    _say(d, b, f"Patchy {adj} opacity.", f"Ill-defined opacity {_prep(d, location)}.", f"Subtle {adj} opacity.")
    _impress(d, b, 3, f"{cap(adj)} opacity. Recommend follow-up radiographs.", f"Nonspecific {adj} opacity.")
    return b


def cardiomegaly(d: Draw, uncertain: bool) -> Block:
    b = Block("heart")
    if uncertain:
        b.items.append(("cardiomegaly", UNCERTAIN, None))
        _say(
            d,
            b,
            "Borderline cardiomegaly.",
            "Heart size is borderline enlarged.",
            "Possible mild cardiomegaly, accentuated by AP technique.",
        )
        b.impression.append((2, "Borderline cardiomegaly."))
        return b
    sev = d.pick(("mild", "moderate", "marked", ""), (4, 2.5, 1, 2))
    ly = {"mild": "mildly", "moderate": "moderately", "marked": "markedly", "": ""}[sev]
    b.items.append(("cardiomegaly", PRESENT, None))
    sentence = d.pick(
        (
            f"{sev} cardiomegaly.",
            f"The heart is {ly} enlarged.",
            f"The cardiac silhouette is {ly} enlarged.",
            "Enlarged cardiac silhouette.",
            f"{ly} enlarged heart.",
            f"Stable {sev} cardiomegaly.",
            f"No significant change in {sev} cardiomegaly.",
            f"Heart size is {ly} enlarged.",
        ),
        (4, 2, 1.5, 1, 0.8, 1.5, 0.7, 1),
    )
    sentence = cap(" ".join(sentence.split()))
    if d.free("pulmonary edema") and d.chance(0.25) and sentence.endswith("cardiomegaly."):
        d.reserve("pulmonary edema")
        b.items.append(("pulmonary edema", ABSENT, None))
        sentence = sentence[:-1] + d.pick((" without pulmonary edema.", " without evidence of edema."))
    b.sentences.append(sentence)
    _impress(d, b, 3, f"{sev} cardiomegaly.", "Cardiomegaly.", f"Stable {sev} cardiomegaly.", f"{ly} enlarged heart.")
    return b


def pulmonary_edema(d: Draw, uncertain: bool) -> Block:
    b = Block("lung")
    sev = d.pick(("mild", "moderate", "severe"), (4, 3, 1))
    if uncertain and d.free("interstitial opacity"):
        d.reserve("interstitial opacity")
        b.items += [("interstitial opacity", PRESENT, "bilateral"), ("pulmonary edema", UNCERTAIN, "bilateral")]
        _say(
            d,
            b,
            f"Bilateral interstitial opacities may represent {sev} edema.",
            f"Increased interstitial markings bilaterally, possibly {sev} pulmonary edema.",
        )
        _impress(d, b, 4, "Bilateral interstitial opacities, possibly edema.", f"Possible {sev} pulmonary edema.")
        return b
    b.items.append(("pulmonary edema", PRESENT, None))
    choice = d.rng.random()
    if choice < 0.45:
        _say(
            d,
            b,
            f"{cap(sev)} pulmonary edema.",
            f"{cap(sev)} interstitial pulmonary edema.",
            f"Findings consistent with {sev} pulmonary edema.",
        )
    elif choice < 0.65 and d.free("lung opacity"):
        d.reserve("lung opacity")
        b.items = [("lung opacity", PRESENT, "bilateral"), ("pulmonary edema", PRESENT, "bilateral")]
        b.sentences.append(f"Diffuse bilateral airspace opacities consistent with {sev} pulmonary edema.")
    elif choice < 0.85 and d.free("vascular congestion"):
        d.reserve("vascular congestion")
        b.items.append(("vascular congestion", PRESENT, None))
        b.sentences.append(f"Pulmonary vascular congestion with {sev} interstitial edema.")
    else:
        _say(
            d,
            b,
            "Improved pulmonary edema.",
            "Interval improvement in pulmonary edema.",
            f"Persistent {sev} pulmonary edema.",
        )
    _impress(
        d, b, 4, f"{cap(sev)} pulmonary edema.", f"{cap(sev)} pulmonary edema, similar to prior.", "Pulmonary edema."
    )
    return b


def vascular_congestion(d: Draw, uncertain: bool) -> Block:
    b = Block("lung")
    b.items.append(("vascular congestion", PRESENT, None))
    sentence = d.pick(
        (
            "Mild pulmonary vascular congestion.",
            "Pulmonary vascular congestion.",
            "Central pulmonary vascular congestion.",
            "Mild vascular congestion.",
        )
    )
    if d.free("pulmonary edema") and d.chance(0.35):
        d.reserve("pulmonary edema")
        b.items.append(("pulmonary edema", ABSENT, None))
        sentence = sentence[:-1] + d.pick((" without frank edema.", " without overt pulmonary edema."))
    b.sentences.append(sentence)
    _impress(d, b, 3, "Mild vascular congestion.", "Pulmonary vascular congestion.")
    return b


def emphysema(d: Draw, uncertain: bool) -> Block:
    b = Block("lung", acute=False)
    b.items.append(("emphysema", PRESENT, None))
    _say(
        d,
        b,
        "The lungs are hyperinflated, consistent with emphysema.",
        "Hyperinflated lungs.",
        "Emphysematous changes in the upper lobes.",
        "Changes of COPD.",
        "Hyperexpanded lungs with flattening of the diaphragms, consistent with emphysema.",
        "Emphysema.",
        weights=(3, 2, 2, 1, 1.5, 1),
    )
    _impress(
        d, b, 1, "Emphysema.", "COPD.", "Hyperinflation compatible with emphysema.", "Chronic changes of emphysema."
    )
    return b


def nodule(d: Draw, uncertain: bool) -> Block:
    location = d.pick(
        (
            "right upper lobe",
            "left upper lobe",
            "right lower lobe",
            "left lower lobe",
            "right middle lobe",
            "right midlung",
            "left midlung",
        ),
        (3, 2.5, 2, 2, 1, 1, 1),
    )
    adj, prep = _adj(d, location), _prep(d, location)
    size = _size(d)
    b = Block("lung")
    if uncertain:
        b.items.append(("nodule", UNCERTAIN, location))
        _say(
            d,
            b,
            f"Possible {size} nodule {prep}.",
            f"A small {adj} nodule cannot be excluded.",
            f"Questionable nodule {prep}, which may represent a nipple shadow.",
        )
        _impress(
            d,
            b,
            3,
            f"Possible {adj} nodule; recommend repeat PA view with nipple markers.",
            f"Possible {adj} pulmonary nodule. CT chest may be obtained for further evaluation.",
        )
        return b
    if d.chance(0.12):
        b.items.append(("nodule", PRESENT, "bilateral"))
        _say(d, b, "Multiple bilateral pulmonary nodules.", "Numerous small nodules are present bilaterally.")
        b.impression.append(
            (4, "Multiple bilateral pulmonary nodules, concerning for metastatic disease. CT chest recommended.")
        )
        return b
    b.items.append(("nodule", PRESENT, location))
    _say(
        d,
        b,
        f"{cap(a_an(size))} {size} nodule {prep}.",
        f"{cap(a_an(size))} {size} {adj} nodule.",
        f"There is {a_an(size)} {size} pulmonary nodule {prep}.",
        f"Stable {size} nodule {prep}.",
    )
    _impress(
        d,
        b,
        4,
        f"{size} {adj} nodule. Recommend CT chest for further evaluation.",
        f"{cap(a_an(size))} {size} {adj} pulmonary nodule, CT recommended.",
        f"{cap(adj)} pulmonary nodule.",
    )
    return b


def mass(d: Draw, uncertain: bool) -> Block:
    b = Block("lung")
    if uncertain:
        side = d.pick(("right", "left"))
        b.items.append(("mass", UNCERTAIN, f"{side} hilar"))
        _say(
            d,
            b,
            f"Fullness of the {side} hilum; a hilar mass cannot be excluded.",
            f"Prominent {side} hilar contour, possibly a mass.",
        )
        b.impression.append((4, f"Possible {side} hilar mass; recommend CT chest."))
        return b
    location = d.pick(
        ("right upper lobe", "left upper lobe", "right hilar", "left hilar", "right lower lobe", "left lower lobe"),
        (3, 3, 1.5, 1.5, 1, 1),
    )
    adj, prep = _adj(d, location), _prep(d, location)
    size = _cm(d, 3.0, 7.9)
    b.items.append(("mass", PRESENT, location))
    _say(
        d,
        b,
        f"{cap(a_an(size))} {size} mass {prep}.",
        f"{cap(adj)} mass measuring {size}.",
        f"Large {adj} mass, concerning for malignancy.",
        f"There is {a_an(size)} {size} lobulated mass {prep}.",
    )
    phrase = d.pick(
        (
            f"{size} {adj} mass, concerning for malignancy. Recommend CT chest.",
            f"{cap(adj)} mass. Further evaluation with CT is recommended.",
        )
    )
    b.impression.append((5, phrase + (_discussed(d) if d.chance(0.3) else "")))
    return b


def granuloma(d: Draw, uncertain: bool) -> Block:
    location = d.pick(
        (
            "right upper lobe",
            "left upper lobe",
            "right lower lobe",
            "left lower lobe",
            "right midlung",
            "left midlung",
            "right hilar",
        )
    )
    prep = _prep(d, location)
    b = Block("lung", acute=False)
    if d.chance(0.25):
        b.items.append(("granuloma", PRESENT, None))
        _say(
            d,
            b,
            "Scattered calcified granulomas.",
            "Multiple calcified granulomas, consistent with prior granulomatous disease.",
        )
    else:
        b.items.append(("granuloma", PRESENT, location))
        size = _mm(d)
        _say(
            d,
            b,
            f"Calcified granuloma {prep}.",
            f"{cap(a_an(size))} {size} calcified granuloma {prep}.",
            f"Stable calcified granuloma {prep}.",
            f"Granuloma {prep}.",
        )
    _impress(d, b, 1, "Stable calcified granuloma.", "Old granulomatous disease.", "Calcified granuloma.")
    return b


def interstitial_opacity(d: Draw, uncertain: bool) -> Block:
    location = d.pick(("bilateral", "bilateral basilar"), (2, 1))
    b = Block("lung")
    b.items.append(("interstitial opacity", PRESENT, location))
    if location == "bilateral":
        _say(
            d,
            b,
            "Diffuse bilateral interstitial opacities.",
            "Increased interstitial markings bilaterally.",
            "Coarse interstitial markings throughout both lungs, bilateral and symmetric.",
        )
    else:
        _say(d, b, "Bibasilar interstitial opacities.", "Coarsened interstitial markings at both lung bases.")
    _impress(
        d,
        b,
        2,
        "Chronic interstitial opacities, unchanged.",
        "Bilateral interstitial opacities.",
        "Stable chronic interstitial markings.",
    )
    return b


def scarring(d: Draw, uncertain: bool) -> Block:
    location = d.pick(
        (
            "bilateral apical",
            "right apical",
            "left apical",
            "left basilar",
            "right basilar",
            "lingula",
            "right middle lobe",
        ),
        (3, 1.5, 1.5, 1.5, 1, 1, 1),
    )
    adj = _adj(d, location)
    b = Block("lung", acute=False)
    b.items.append(("scarring", PRESENT, location))
    _say(
        d,
        b,
        f"{cap(adj)} pleural-parenchymal scarring.",
        f"Linear scarring {_prep(d, location)}.",
        f"Mild {adj} scarring.",
        f"Stable {adj} scarring.",
    )
    _impress(d, b, 1, f"Chronic {adj} scarring.", f"Stable {adj} scarring.")
    return b


# ---------------------------------------------------------------------------------------------
# Bones, mediastinum, abdomen
# ---------------------------------------------------------------------------------------------


def rib_fracture(d: Draw, uncertain: bool) -> Block:
    side = d.pick(("right", "left"))
    rib = _ordinal(d.rng.randint(3, 10))
    where = d.pick(("", "lateral ", "posterior ", "anterior "), (3, 1.5, 1.5, 0.5))
    b = Block("bone")
    if uncertain:
        b.items.append(("rib fracture", UNCERTAIN, side))
        _say(
            d,
            b,
            f"Possible nondisplaced fracture of the {side} {where}{rib} rib.",
            f"Questionable {side} {rib} rib fracture; correlate with point tenderness.",
        )
        b.impression.append((2, f"Possible {side} {rib} rib fracture."))
        return b
    b.items.append(("rib fracture", PRESENT, side))
    if d.chance(0.45):
        _say(
            d,
            b,
            f"Acute nondisplaced fracture of the {side} {where}{rib} rib.",
            f"Mildly displaced fracture of the {side} {where}{rib} rib.",
        )
        _impress(d, b, 4, f"Acute {side} {rib} rib fracture.", f"Nondisplaced {side} {where}{rib} rib fracture.")
    else:
        b.acute = False
        _say(
            d,
            b,
            f"Healed fracture of the {side} {where}{rib} rib.",
            f"Old healed {side} rib fractures.",
            f"Deformity of the {side} {where}{rib} rib consistent with a healing fracture.",
        )
        b.impression.append((1, f"Old healed {side} rib fractures."))
    return b


def scoliosis(d: Draw, uncertain: bool) -> Block:
    b = Block("bone", acute=False)
    b.items.append(("scoliosis", PRESENT, None))
    _say(
        d,
        b,
        "Mild dextroscoliosis of the thoracic spine.",
        "Mild levoscoliosis of the thoracic spine.",
        "S-shaped scoliosis of the thoracolumbar spine.",
        "Thoracic scoliosis.",
        "Dextroconvex scoliosis of the thoracic spine.",
    )
    b.impression.append((1, "Scoliosis."))
    return b


def degenerative_change(d: Draw, uncertain: bool) -> Block:
    b = Block("bone", acute=False)
    b.items.append(("degenerative change", PRESENT, None))
    options = [
        "Degenerative changes of the thoracic spine.",
        "Mild degenerative changes in the thoracic spine.",
        "Multilevel thoracic spondylosis.",
        "Degenerative disc disease of the thoracic spine.",
        "Osteophytes of the thoracic spine.",
        "Degenerative changes of both shoulders.",
    ]
    weights = [4, 3, 1.5, 1.5, 1, 0.7]
    if d.two_views:
        options.append("Lateral view shows mild degenerative changes of the thoracic spine.")
        weights.append(2)
    said = _say(d, b, *options, weights=weights)
    where = "both shoulders" if "shoulders" in said else "the thoracic spine"
    b.impression.append((1, f"Degenerative changes of {where}."))
    return b


def hiatal_hernia(d: Draw, uncertain: bool) -> Block:
    b = Block("abdomen", acute=False)
    b.items.append(("hiatal hernia", PRESENT, None))
    _say(
        d,
        b,
        "Small hiatal hernia.",
        "Moderate hiatal hernia.",
        "Large hiatal hernia.",
        "Retrocardiac air-fluid level consistent with a hiatal hernia.",
        weights=(3, 2, 1, 2),
    )
    b.impression.append((1, "Hiatal hernia."))
    return b


def aorta(d: Draw, uncertain: bool) -> Block:
    b = Block("mediastinum", acute=False)
    kind = d.pick(("tortuous", "calcified", "both"), (3, 3, 2))
    if kind == "both":
        b.items += [("aortic tortuosity", PRESENT, None), ("atherosclerotic calcification", PRESENT, None)]
        _say(
            d,
            b,
            "Tortuous, calcified thoracic aorta.",
            "Atherosclerotic and tortuous thoracic aorta.",
            "The aorta is tortuous with atherosclerotic calcification of the aortic arch.",
        )
        b.impression.append((1, "Tortuous, atherosclerotic aorta."))
    elif kind == "tortuous":
        b.items.append(("aortic tortuosity", PRESENT, None))
        _say(
            d,
            b,
            "Tortuous thoracic aorta.",
            "The thoracic aorta is tortuous.",
            "Tortuosity of the descending thoracic aorta.",
            "Mild tortuosity of the aorta.",
        )
        b.impression.append((1, "Tortuous thoracic aorta."))
    else:
        b.items.append(("atherosclerotic calcification", PRESENT, None))
        _say(
            d,
            b,
            "Atherosclerotic calcification of the aortic arch.",
            "Calcified aortic knob.",
            "Aortic atherosclerosis.",
            "Calcification of the aortic arch.",
        )
        b.impression.append((1, "Aortic atherosclerosis."))
    return b


# ---------------------------------------------------------------------------------------------
# Post-surgical changes and devices
# ---------------------------------------------------------------------------------------------


def sternotomy(d: Draw, uncertain: bool) -> Block:
    b = Block("mediastinum", acute=False)
    b.items.append(("sternotomy wires", PRESENT, None))
    if d.free("surgical clips") and d.chance(0.3):
        d.reserve("surgical clips")
        b.items.append(("surgical clips", PRESENT, None))
        b.sentences.append("Median sternotomy wires and mediastinal surgical clips.")
    else:
        _say(
            d,
            b,
            "Median sternotomy wires.",
            "Status post median sternotomy.",
            "Intact median sternotomy wires.",
            "Postsurgical changes of median sternotomy.",
            "Median sternotomy XXXX.",
        )
    _impress(d, b, 1, "Postoperative changes of median sternotomy.", "Status post median sternotomy.")
    return b


def surgical_clips(d: Draw, uncertain: bool) -> Block:
    b = Block("abdomen", acute=False)
    b.items.append(("surgical clips", PRESENT, None))
    _say(
        d,
        b,
        "Surgical clips in the right upper quadrant.",
        "Cholecystectomy clips.",
        "Postsurgical clips in the left axilla.",
        "Surgical clips project over the left upper quadrant.",
    )
    b.impression.append((0, "Postsurgical clips."))
    return b


def central_line(d: Draw, uncertain: bool) -> Block:
    b = Block("device", acute=False)
    b.items.append(("central venous catheter", PRESENT, None))
    tips = ("in the distal SVC", "at the cavoatrial junction", "in the mid SVC", "in the right atrium")
    tip = d.pick(tips, (3, 2, 2, 1))
    side = d.pick(("Right", "Left"))
    sentence, device = d.pick(
        (
            (f"Right internal jugular central venous catheter with tip {tip}.", "Central venous catheter"),
            (f"{side} PICC with tip {tip}.", f"{side} PICC"),
            (f"{side} upper extremity PICC line terminates {tip}.", "PICC"),
            (f"Left subclavian central line tip projects {tip}.", "Central line"),
        )
    )
    b.sentences.append(sentence)
    if "atrium" in tip:
        b.impression.append((2, f"{device} tip in the right atrium; consider retraction by 2 cm."))
    else:
        _impress(d, b, 2, f"{device} tip {tip}.", f"{device} in satisfactory position.")
    return b


def pacemaker(d: Draw, uncertain: bool) -> Block:
    b = Block("device", acute=False)
    b.items.append(("pacemaker", PRESENT, None))
    _say(
        d,
        b,
        "Left chest wall pacemaker with leads in the right atrium and right ventricle.",
        "Dual-chamber pacemaker in unchanged position.",
        "Right chest wall pacer device with intact leads.",
        "AICD with leads in expected position.",
        "Left-sided pacemaker.",
    )
    _impress(d, b, 1, "Pacemaker in stable position.", "Stable position of pacemaker leads.")
    return b


def endotracheal_tube(d: Draw, uncertain: bool) -> Block:
    b = Block("device")
    b.items.append(("endotracheal tube", PRESENT, None))
    dist = d.pick((f"{d.rng.randint(2, 6)} cm", f"{d.rng.randint(20, 65) / 10:.1f} cm"))
    if d.chance(0.1):
        b.sentences.append("Endotracheal tube tip is in the right mainstem bronchus; recommend retraction by 2 cm.")
        phrase = "Endotracheal tube in the right mainstem bronchus, recommend retraction."
        b.impression.append((5, phrase + _discussed(d)))
        return b
    # (findings sentence, impression phrase): the two must describe the same tip position.
    placed = d.pick(
        (
            (f"Endotracheal tube tip {dist} above the carina.", f"Endotracheal tube {dist} above the carina."),
            ("Endotracheal tube in appropriate position.", "Endotracheal tube in satisfactory position."),
            (f"ET tube terminates {dist} above the carina.", f"Endotracheal tube tip {dist} above the carina."),
            (
                "Interval placement of an endotracheal tube, tip at the level of the clavicular heads.",
                "Endotracheal tube in satisfactory position.",
            ),
        )
    )
    b.sentences.append(placed[0])
    b.impression.append((2, placed[1]))
    return b


def nasogastric_tube(d: Draw, uncertain: bool) -> Block:
    b = Block("device")
    b.items.append(("nasogastric tube", PRESENT, None))
    _say(
        d,
        b,
        "Nasogastric tube tip in the stomach.",
        "Enteric tube courses below the diaphragm, tip not visualized.",
        "NG tube with tip in the gastric body.",
        "Nasogastric tube side port at the GE junction; recommend advancing.",
    )
    _impress(d, b, 2, "Nasogastric tube in the stomach.", "Enteric tube in satisfactory position.")
    return b


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
