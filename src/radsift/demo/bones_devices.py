"""Scenarios of the bones, mediastinum and abdomen, post-surgical changes and devices: how the demo
corpus writes each of those findings (rib fracture, scoliosis ... sternotomy wires, lines and tubes).

Each returns the :class:`~radsift.demo.context.Block` of findings sentences and impression phrases
it wrote, with the ground truth those words state (the registry is :mod:`radsift.demo.scenarios`).
"""

from __future__ import annotations

from radsift.demo.context import Block, Draw
from radsift.demo.phrasing import _discussed, _impress, _ordinal, _say
from radsift.demo.vocabulary import PRESENT, UNCERTAIN

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
