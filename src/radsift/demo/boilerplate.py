"""Boilerplate of chest radiograph reports: normal statements, negation lists, impressions.

Most sentences in real reports are routine: "The lungs are clear.", "No pneumothorax or
pleural effusion.", "No acute cardiopulmonary abnormality." This module writes them in
varied phrasings, and records a ground-truth ``absent`` fact whenever a sentence names a
finding, so a retriever that ignores negation is measurably punished on the demo corpus.
"""

from __future__ import annotations

from radsift.demo.context import Draw
from radsift.demo.vocabulary import ABSENT, LOCATIONS, Truth, cap

# Surface forms for findings inside negation lists, with weights.
_NEGATED_SURFACES: dict[str, tuple[tuple[str, float], ...]] = {
    "consolidation": (
        ("focal consolidation", 4),
        ("focal airspace disease", 2),
        ("airspace consolidation", 1),
        ("focal airspace consolidation", 1),
        ("consolidation", 1),
        ("infiltrate", 0.5),
    ),
    "pleural effusion": (("pleural effusion", 5), ("pleural effusions", 1.5), ("effusion", 1.5)),
    "pneumothorax": (("pneumothorax", 10), ("PTX", 0.3)),
    "pulmonary edema": (("pulmonary edema", 3), ("edema", 1)),
}

_CARDIOMEGALY_ABSENT = (
    ("Heart size is normal.", 4),
    ("The heart is normal in size.", 3),
    ("Normal heart size.", 2),
    ("The heart is not enlarged.", 1.5),
    ("Heart size is within normal limits.", 2),
    ("No cardiomegaly.", 1),
    ("The cardiac silhouette is normal in size.", 1),
    ("The heart and mediastinum are normal.", 1),
)
_CARDIOMEGALY_ABSENT_TERSE = (("Heart size normal.", 3), ("Normal heart size.", 2), ("No cardiomegaly.", 1))
_CARDIOMEDIASTINAL = (
    ("The cardiomediastinal silhouette is within normal limits.", 4),
    ("The cardiomediastinal silhouette is normal in size and contour.", 3),
    ("Cardiomediastinal contours are unremarkable.", 1.5),
    ("Normal cardiomediastinal silhouette.", 1.5),
    ("The cardiomediastinal silhouette is stable.", 0.7),
)
_CARDIOMEDIASTINAL_TERSE = (
    ("Normal cardiomediastinal silhouette.", 3),
    ("Cardiomediastinal silhouette unremarkable.", 1),
)
_MEDIASTINUM = (
    ("The mediastinum is unremarkable.", 2),
    ("Mediastinal contours are normal.", 1.5),
    ("Trachea is midline.", 1.5),
    ("The hilar and mediastinal contours are normal.", 1),
)
_LUNGS_CLEAR = (
    ("The lungs are clear.", 6),
    ("Lungs are clear bilaterally.", 2),
    ("The lungs are well expanded and clear.", 2),
    ("The lungs are normally inflated and clear.", 1.5),
    ("Both lungs are clear.", 1),
    ("Clear lungs.", 1),
)
_LUNGS_CLEAR_TERSE = (("Lungs clear.", 4), ("Clear lungs.", 1.5), ("Lungs are clear.", 2))
_LUNGS_OTHERWISE = (
    ("The lungs are otherwise clear.", 3),
    ("Lungs otherwise clear.", 2),
    ("Otherwise, the lungs are clear.", 1),
)
_VASCULATURE = (
    ("Pulmonary vascularity is within normal limits.", 2),
    ("Normal pulmonary vasculature.", 1.5),
    ("The pulmonary vasculature is normal.", 1),
)
_BONES = (
    ("No acute osseous abnormality.", 4),
    ("The visualized osseous structures are unremarkable.", 2),
    ("Osseous structures are within normal limits for patient age.", 1.5),
    ("No acute bony abnormality.", 2),
    ("Bony structures are intact.", 1),
    ("The visualized bony structures show no acute abnormalities.", 1),
)
_BONES_TERSE = (("No acute osseous abnormality.", 3), ("Bones unremarkable.", 1), ("No acute bony findings.", 1))

# Normal impressions, weighted per site (north, south): sites have house styles, and the
# same boilerplate impression recurring across hundreds of reports is what real corpora look like.
_NORMAL_IMPRESSIONS = (
    ("No acute cardiopulmonary abnormality.", 8, 2),
    ("No acute cardiopulmonary process.", 2, 8),
    ("No acute cardiopulmonary disease.", 3, 2),
    ("No acute cardiopulmonary findings.", 1, 2),
    ("No active disease.", 2, 1),
    ("Negative chest.", 1, 1.5),
    ("Normal chest radiograph.", 1, 1),
    ("No acute radiographic cardiopulmonary process.", 1, 2),
    ("No evidence of acute cardiopulmonary disease.", 1, 1),
    ("Negative for acute abnormality.", 1, 0.7),
    ("No acute abnormality.", 1, 1),
    ("No acute cardiopulmonary abnormality identified.", 0.7, 0.3),
)

INDICATION_SYMPTOMS = (
    "chest pain",
    "shortness of breath",
    "cough",
    "cough and fever",
    "dyspnea",
    "hypoxia",
    "preoperative evaluation",
    "fall",
    "follow-up",
    "weakness",
    "hemoptysis",
    "palpitations",
)
COMPARISONS = (
    "None.",
    "XXXX",
    "Chest radiograph dated XXXX.",
    "PA and lateral chest radiographs XXXX.",
    "Portable chest radiograph from XXXX.",
    "XXXX, XXXX.",
)


def _pick_w(d: Draw, table: tuple[tuple[str, float], ...]) -> str:
    texts, weights = zip(*table)
    return d.pick(texts, weights)


def _join_list(d: Draw, terms: list[str]) -> str:
    if len(terms) == 1:
        return terms[0]
    if len(terms) == 2:
        return f"{terms[0]} or {terms[1]}"
    comma = d.pick((", or ", " or "), (3, 2))
    return ", ".join(terms[:-1]) + comma + terms[-1]


def heart(d: Draw, items: list[Truth]) -> str | None:
    """A normal heart/cardiomediastinal sentence, if the heart is not otherwise described."""
    if not d.free("cardiomegaly"):
        return None
    if d.chance(0.55):
        d.reserve("cardiomegaly")
        items.append(("cardiomegaly", ABSENT, None))
        return _pick_w(d, _CARDIOMEGALY_ABSENT_TERSE if d.style.terse else _CARDIOMEGALY_ABSENT)
    if d.chance(0.85):
        return _pick_w(d, _CARDIOMEDIASTINAL_TERSE if d.style.terse else _CARDIOMEDIASTINAL)
    return None


def mediastinum(d: Draw) -> str | None:
    if not (d.free("aortic tortuosity") and d.free("atherosclerotic calcification") and d.free("mass")):
        return None
    return _pick_w(d, _MEDIASTINUM) if d.chance(0.4) else None


def lungs(d: Draw, parenchymal: bool) -> str | None:
    """'The lungs are clear.' when nothing is wrong with them, 'otherwise clear' when something is."""
    if parenchymal:
        return _pick_w(d, _LUNGS_OTHERWISE) if d.chance(0.45) else None
    if d.chance(0.75):
        return _pick_w(d, _LUNGS_CLEAR_TERSE if d.style.terse else _LUNGS_CLEAR)
    return None


def vasculature(d: Draw) -> str | None:
    if d.free("pulmonary edema") and d.free("vascular congestion") and d.chance(0.15):
        return _pick_w(d, _VASCULATURE)
    return None


def negations(d: Draw, items: list[Truth], lungs_clear_ok: bool) -> tuple[list[str], bool]:
    """Negated findings: "No focal consolidation, pleural effusion, or pneumothorax."

    Returns:
        The sentences and whether one of them already says the lungs are clear.
    """
    candidates = [f for f in ("consolidation", "pleural effusion", "pneumothorax") if d.free(f)]
    if d.free("pulmonary edema") and d.free("vascular congestion") and d.chance(0.2):
        candidates.append("pulmonary edema")
    if not candidates:
        return [], False
    if len(candidates) > 1 and not d.chance(0.7):
        # Leave one out now and then: not every report lists every negative.
        candidates.pop(d.rng.randrange(len(candidates)))
    if d.chance(0.35):
        d.rng.shuffle(candidates)
    groups = [candidates]
    if len(candidates) >= 2 and d.chance(0.25):
        cut = d.rng.randint(1, len(candidates) - 1)
        groups = [candidates[:cut], candidates[cut:]]
    sentences: list[str] = []
    said_clear = False
    for group in groups:
        terms = [_pick_w(d, _NEGATED_SURFACES[f]) for f in group]
        for f in group:
            d.reserve(f)
            items.append((f, ABSENT, None))
        listed = _join_list(d, terms)
        frames: list[tuple[str, float]] = [
            ("No {L}.", 6),
            ("There is no {L}.", 2),
            ("No evidence of {L}.", 2),
            ("Negative for {L}.", 0.7),
            ("No {L} is seen.", 1),
            ("No {L} identified.", 0.7),
        ]
        if d.style.terse:
            frames = [("No {L}.", 6), ("Negative for {L}.", 0.5)]
        if lungs_clear_ok and not said_clear:
            frames += [
                ("The lungs are clear without evidence of {L}.", 2.5),
                ("The lungs are clear, without {L}.", 1),
                ("Lungs are free of {L}.", 0.5),
            ]
        if len(group) == 1:
            frames += [("{U} is not seen.", 0.5), ("{U} is not identified.", 0.3)]
        frame = _pick_w(d, tuple(frames))
        said_clear = said_clear or "clear" in frame or "free of" in frame
        sentence = frame.replace("{L}", listed).replace("{U}", cap(listed))
        if "No evidence of" in sentence and d.chance(d.style.xxxx):
            sentence = sentence.replace("No evidence of", "No XXXX of")
        sentences.append(sentence)
    return sentences, said_clear


def bones(d: Draw, items: list[Truth], has_bone_finding: bool) -> str | None:
    if d.free("rib fracture") and d.chance(0.12):
        d.reserve("rib fracture")
        items.append(("rib fracture", ABSENT, None))
        return d.pick(("No displaced rib fractures.", "No acute rib fracture."))
    if has_bone_finding:
        return None
    if d.chance(0.6):
        return _pick_w(d, _BONES_TERSE if d.style.terse else _BONES)
    return None


def technique(d: Draw) -> str | None:
    if d.portable and d.chance(0.25):
        return d.pick(("Single portable AP view of the chest.", "Portable semi-upright radiograph of the chest."))
    if d.two_views and d.chance(0.08):
        return "PA and lateral views of the chest were obtained."
    if not d.portable and not d.two_views and d.chance(0.2):
        return "Single frontal view of the chest."
    return None


def resolution(d: Draw, items: list[Truth]) -> str | None:
    """Rarely: a finding that has resolved since a prior study (absent, with a location)."""
    if not d.chance(0.03):
        return None
    if d.free("consolidation") and d.chance(0.5):
        location = d.pick(("right lower lobe", "left lower lobe", "right middle lobe", "lingula"))
        d.reserve("consolidation")
        items.append(("consolidation", ABSENT, location))
        adj = d.pick(LOCATIONS[location].adjectives)
        return d.pick(
            (
                f"Interval resolution of the previously seen {adj} consolidation.",
                f"The previously noted {adj} consolidation has resolved.",
            )
        )
    if d.free("pleural effusion"):
        side = d.pick(("right", "left"))
        d.reserve("pleural effusion")
        items.append(("pleural effusion", ABSENT, side))
        return f"The previously noted {side} pleural effusion has resolved."
    return None


def normal_impression(d: Draw, acute_only: bool = False) -> str:
    """A boilerplate normal impression in the site's house style.

    Args:
        d: The report's draw.
        acute_only: Only phrasings that deny *acute* disease (for reports whose findings
            mention chronic changes, where "Normal chest radiograph." would be false).
    """
    table = [row for row in _NORMAL_IMPRESSIONS if not acute_only or "acute" in row[0] or "active" in row[0]]
    texts = [t for t, _, _ in table]
    weights = [n if d.site == "north" else s for _, n, s in table]
    return d.pick(texts, weights)


def indication(d: Draw) -> str:
    symptom = d.pick(INDICATION_SYMPTOMS)
    if d.portable and d.chance(0.4):
        symptom = d.pick(("respiratory failure", "line placement", "hypoxia", "altered mental status"))
    sex = "female" if d.sex == "F" else "male"
    return d.pick(
        (
            f"{cap(symptom)}.",
            f"XXXX-year-old {sex} with {symptom}.",
            f"{cap(symptom)} x XXXX days.",
            f"{cap(sex)}, {symptom}.",
        ),
        (4, 3, 1, 1),
    )


def comparison(d: Draw) -> str:
    return d.pick(COMPARISONS, (3, 3, 2, 1, 1, 1))
