"""Another organ's cancer: a generic tumor word named for an organ outside the lungs is no lung finding.

The chest X-ray lexicon names lung cancer by generic words too ("carcinoma", "malignancy", "neoplasm",
"tumor"), because a chest report's unqualified "malignancy" is the lung's. Named for another organ ("known
breast carcinoma", "renal cell carcinoma", "history of prostate malignancy", "known brain tumor") the word is
that organ's cancer, which the chest film does not show: the match is dropped before its status is read
(:func:`drop_other_organs`), as the newcomer's check judges it ("mentioned for another structure").

The same holds for the bones' density: "density" alone is a lung opacity in a chest report, but "bone density is
decreased" and "bony density over the clavicle" are the skeleton's (:data:`BONE_WORDS`), and "low bone density" in
a query asks for thin bones, not for a lung opacity; and for granulomas: "splenic granulomas" (:data:`GRANULOMA_ORGANS`) are
no lung granulomas.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from radsift.labels.spotter import Match

#: Generic tumor words (lower case, singular and plural) that take their organ from the word before them.
TUMOR_WORDS = frozenset("carcinoma carcinomas cancer cancers malignancy malignancies neoplasm neoplasms tumor tumors "
                        "tumour tumours".split())
#: Organs (and their adjectives) outside the lungs and pleura whose cancers a chest report names as history.
OTHER_ORGANS = frozenset(
    "breast breasts prostate prostatic colon colonic colorectal rectal rectum renal kidney bladder urothelial thyroid "
    "brain cerebral ovarian ovary pancreatic pancreas gastric stomach cervical cervix uterine uterus endometrial "
    "testicular laryngeal larynx hepatic hepatocellular liver esophageal esophagus skin head neck tongue tonsillar "
    "adrenal".split())
#: Words that may stand between the organ and the tumor word ("renal cell carcinoma", "breast ductal carcinoma").
BETWEEN = frozenset("cell ductal lobular papillary follicular medullary squamous transitional primary".split())
#: Granuloma words that take their organ from the word before them: "splenic granulomas" are the spleen's.
GRANULOMA_WORDS = frozenset("granuloma granulomas granulomata".split())
#: Organs below the diaphragm whose granulomas a chest film shows (calcified, in the upper abdomen).
GRANULOMA_ORGANS = frozenset("splenic spleen hepatic liver".split())
#: Words for a shadow on the film that take their organ from the word before them ("bone density").
DENSITY_WORDS = frozenset("density densities".split())
#: Words naming the skeleton: a density named for it is no lung opacity.
BONE_WORDS = frozenset("bone bones bony osseous".split())
#: Parts of the body no chest film shows (the limbs, the head, below the diaphragm) and the soft tissues: a clinical
#: note's "pitting edema of both lower extremities", "cerebral edema", "knee effusion", "left hip fracture", "liver
#: mass" or "thyroid nodule" is no finding of the chest, though its generic word ("edema", "effusion", "fracture",
#: "mass", "nodule") alone is one in a chest report.
LIMBS = frozenset(
    "leg legs lower extremity extremities limb limbs ankle ankles foot feet pedal toe toes knee knees hip hips thigh "
    "thighs calf calves shin shins wrist wrists hand hands finger fingers elbow elbows forearm forearms femur femoral "
    "tibia tibial fibula fibular patella patellar ulna ulnar metacarpal metatarsal phalanx phalangeal heel achilles "
    "malleolus malleolar tibiotalar suprapatellar".split())
HEAD = frozenset("cerebral brain scalp skull facial face periorbital orbital eyelid eyelids macular corneal retinal optic "
                 "nasal mandible mandibular jaw dental tongue lip lips ear ears".split())
BELOW = frozenset("scrotal scrotum testicular penile vulvar labial pelvic pelvis adnexal ovarian uterine renal kidney "
                  "kidneys bladder hepatic liver splenic spleen pancreatic bowel colonic mesenteric abdominal sacral "
                  "coccyx".split())
SOFT_TISSUES = frozenset("subcutaneous cutaneous skin tissue tissues".split())
OFF_CHEST = LIMBS | HEAD | BELOW
EDEMA_WORDS = frozenset("edema oedema".split())
#: Where an edema of no lung lies, and the words that say an edema is the body's, not the lungs' ("pitting edema").
EDEMA_PLACES = OFF_CHEST | SOFT_TISSUES | frozenset("pitting peripheral dependent wall marrow mucosal airway".split())
EFFUSION_WORDS = frozenset("effusion effusions".split())
#: Joints and other spaces an effusion fills outside the pleura ("knee effusion", "middle ear effusion").
JOINT_PLACES = LIMBS | frozenset("joint joints synovial shoulder glenohumeral ear subdural".split())
MASS_WORDS = frozenset("mass masses nodule nodules".split())
MASS_PLACES = OTHER_ORGANS | BELOW | SOFT_TISSUES | LIMBS | frozenset("adrenal neck parotid flank scalp vocal".split())
#: A mass that is no lesion: the body's own ("body mass index", "muscle mass", "lean body mass", "bone mass") and a
#: brain's "mass effect"; the words before and the word after that say so.
MASS_SENSES_BEFORE = frozenset("body muscle muscular fat lean bone".split())
MASS_SENSES_AFTER = frozenset("index effect effects".split())
FRACTURE_WORDS = frozenset("fracture fractures fx".split())
FRACTURE_PLACES = LIMBS | HEAD | frozenset("pelvic pelvis sacral coccyx acetabular".split())
#: Words that may stand between a place and its generic word ("left hip fracture" reads "hip"; "2+ pitting edema").
SIDE_WORDS = frozenset("left right bilateral both lower upper distal proximal mild moderate severe trace".split())
_WORD = re.compile(r"[A-Za-z]+")
#: After the generic word, the place it is of or in: "edema of both lower extremities", "fracture of the left hip".
_PLACE_AFTER = re.compile(r"\s+(?:of|in|involving|at|to)\s+((?:(?:the|both|his|her|bilateral|left|right|lower|upper|distal|"
                          r"proximal)\s+){0,3})([A-Za-z]+)", re.IGNORECASE)
#: (generic words, words that may stand between them and the organ, organs outside the lungs, whether the place may
#: follow the word, words right after it that make it no finding): a generic word right after one of its organs (or,
#: where allowed, of or in one, or right before one of those words) is that organ's, no lung finding.
RULES = ((TUMOR_WORDS, BETWEEN, OTHER_ORGANS, False, frozenset()),
         (GRANULOMA_WORDS, frozenset({"calcified", "calcific"}), GRANULOMA_ORGANS, False, frozenset()),
         (DENSITY_WORDS, frozenset(), BONE_WORDS, False, frozenset()),
         (EDEMA_WORDS, SIDE_WORDS, EDEMA_PLACES, True, frozenset()),
         (EFFUSION_WORDS, SIDE_WORDS, JOINT_PLACES, True, frozenset()),
         (MASS_WORDS, SIDE_WORDS, MASS_PLACES | MASS_SENSES_BEFORE, True, MASS_SENSES_AFTER),
         (FRACTURE_WORDS, SIDE_WORDS, FRACTURE_PLACES, True, frozenset()))
#: The generic words whose place the rules with a place after them read (:func:`placed_off_chest`).
_OFF_CHEST_WORDS = frozenset().union(*(words for words, _, _, after, _ in RULES if after))


def drop_other_organs(text: str, matches: Sequence[Match]) -> list[Match]:
    """``matches`` without those whose text is a generic word of :data:`RULES` right after one of its organs (at most
    one of its in-between words between them): :data:`TUMOR_WORDS` after :data:`OTHER_ORGANS`,
    :data:`GRANULOMA_WORDS` after :data:`GRANULOMA_ORGANS`, a bare density (:data:`DENSITY_WORDS`) after
    :data:`BONE_WORDS`."""
    return [m for m in matches if not _another_organs(text, m)]


def placed_off_chest(text: str) -> bool:
    """Whether ``text`` holds a generic finding word placed outside the chest by the rules of edema, effusion, mass,
    nodule and fracture ("calcified thyroid nodule", "pedal edema"): a query's words so placed link to no concept of
    the chest either (:func:`radsift.search.linkwords.off_film`)."""
    return any(_placed(text, w.start(), w.end(), w.group().lower()) for w in _WORD.finditer(text)
               if w.group().lower() in _OFF_CHEST_WORDS)


def _another_organs(text: str, m: Match) -> bool:
    return _placed(text, m.start, m.end, m.text.lower())


def _placed(text: str, start: int, end: int, word: str) -> bool:
    for words, between, organs, after, senses in RULES:
        if word in words:
            before = [w.lower() for w in _WORD.findall(text[:start])[-2:]]
            if before and before[-1] in between:
                before = before[:-1]
            if before and before[-1] in organs:
                return True
            if senses and (_WORD.findall(text[end:])[:1] or [""])[0].lower() in senses:
                return True  # "mass effect", "body mass index"
            place = _PLACE_AFTER.match(text, end) if after else None
            return place is not None and place.group(2).lower() in organs
    return False


__all__ = ["BETWEEN", "BONE_WORDS", "DENSITY_WORDS", "EDEMA_PLACES", "FRACTURE_PLACES", "GRANULOMA_ORGANS",
           "GRANULOMA_WORDS", "JOINT_PLACES", "MASS_PLACES", "MASS_SENSES_AFTER", "MASS_SENSES_BEFORE", "OFF_CHEST",
           "OTHER_ORGANS", "RULES", "TUMOR_WORDS", "drop_other_organs", "placed_off_chest"]
