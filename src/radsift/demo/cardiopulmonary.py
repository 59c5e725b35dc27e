"""Scenarios of the pleura, the lungs and the heart: how the demo corpus writes each of those findings
(pneumothorax, effusion, consolidation ... cardiomegaly, edema, nodules, scarring).

Each returns the :class:`~radsift.demo.context.Block` of findings sentences and impression phrases
it wrote, with the ground truth those words state (the registry is :mod:`radsift.demo.scenarios`).
"""

from __future__ import annotations

from radsift.demo.context import Block, Draw
from radsift.demo.phrasing import _adj, _cm, _discussed, _impress, _mm, _prep, _say, _size
from radsift.demo.vocabulary import ABSENT, PRESENT, UNCERTAIN, a_an, cap

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
