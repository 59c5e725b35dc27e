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
_WORD = re.compile(r"[A-Za-z]+")
#: (generic words, words that may stand between them and the organ, organs outside the lungs): a generic word right
#: after one of its organs is that organ's, no lung finding.
RULES = ((TUMOR_WORDS, BETWEEN, OTHER_ORGANS),
         (GRANULOMA_WORDS, frozenset({"calcified", "calcific"}), GRANULOMA_ORGANS),
         (DENSITY_WORDS, frozenset(), BONE_WORDS))


def drop_other_organs(text: str, matches: Sequence[Match]) -> list[Match]:
    """``matches`` without those whose text is a generic word of :data:`RULES` right after one of its organs (at most
    one of its in-between words between them): :data:`TUMOR_WORDS` after :data:`OTHER_ORGANS`,
    :data:`GRANULOMA_WORDS` after :data:`GRANULOMA_ORGANS`, a bare density (:data:`DENSITY_WORDS`) after
    :data:`BONE_WORDS`."""
    return [m for m in matches if not _another_organs(text, m)]


def _another_organs(text: str, m: Match) -> bool:
    word = m.text.lower()
    for words, between, organs in RULES:
        if word in words:
            before = [w.lower() for w in _WORD.findall(text[:m.start])[-2:]]
            if before and before[-1] in between:
                before = before[:-1]
            return bool(before) and before[-1] in organs
    return False


__all__ = ["BETWEEN", "BONE_WORDS", "DENSITY_WORDS", "GRANULOMA_ORGANS", "GRANULOMA_WORDS", "OTHER_ORGANS", "RULES",
           "TUMOR_WORDS", "drop_other_organs"]
