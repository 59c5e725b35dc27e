"""A pattern the query asks of its finding's look: "streaky left basilar opacity", "platelike atelectasis", "bibasilar
subsegmental atelectasis", "perihilar opacities", "patchy airspace disease", "diffuse osteopenia"; and how a pacemaker is wired, as a film shows it:
"single lead pacemaker", "dual chamber pacemaker", "biventricular pacemaker".

The finding is read as before; the pattern (one or more of :data:`NAMES`) is a bit each (:data:`PATTERN`, above the
degrees' bits: the region mask is 64 bits wide) in the same region mask, read from queries by their words
(:func:`query_pattern`) and from units by report words (:data:`UNIT_WORDS`, a unit's from its BM25 postings at search
time, never stored). The location tier (:mod:`radsift.ranking.places`) ranks, within each of its tiers, the units
saying a pattern asked ("Streaky left basilar opacity.") before those that do not, as it ranks a degree
(:mod:`radsift.text.degrees`); a unit stating the finding in other words still ranks before any unit that does not
state it.

A query's patterns are asked together: a unit saying any of them says the pattern ("patchy or streaky"). Lay words:
"a thin white line at the bottom of the lung" is a plate-like (linear) one. "focal" is left out: "No focal
consolidation." says no pattern of a finding it denies, and nearly every report says it.
"""

from __future__ import annotations

import re

#: Pattern bits (of a 64-bit region mask): streaky, plate-like (linear, discoid), subsegmental, patchy, interstitial
#: (reticular), perihilar, nodular, hazy, diffuse. "Hazy" is haze alone: an ill-defined or vague opacity is no hazy
#: one (the newcomer judges' reading of *hazy areas in the lungs*).
STREAKY, PLATE, SUBSEGMENTAL, PATCHY, INTERSTITIAL, PERIHILAR, NODULAR, HAZY, DIFFUSE = (1 << b for b in range(32, 41))
#: Not calcified: the look a report gives a nodule that may be new ("2 cm noncalcified nodule in the right lower
#: lobe"; queries_v16 dev *noncalcified lung nodule* led with nodules saying nothing of it). Above the measured size's
#: bit (44).
NONCALCIFIED = 1 << 45
#: Ill-defined (vague, poorly marginated, indistinct): the margin a report gives a nodule or an opacity (above the old
#: finding's bit, 41, and the lobes-apart query bit, 42). A family of its own (:data:`MARGIN`): asked beside a pattern
#: ("ill-defined nodular density") it is asked as well, not as one more pattern a unit may say instead.
ILL_DEFINED = 1 << 43
#: A cardiac device's leads (above the aorta's parts, 46-48): one lead, two (atrium and ventricle), or a third through
#: the coronary sinus to the left ventricle (biventricular, cardiac resynchronization). A report says them by the
#: leads' tips ("leads within the right atrium and ventricle", "leads overlie the right ventricle and a lateral cardiac
#: vein") more often than by the device's name; the dev device queries *single lead pacemaker* (v14) and
#: *biventricular pacemaker* (v5) led with pacemakers wired otherwise.
SINGLE_LEAD, DUAL_LEAD, BIVENTRICULAR = 1 << 50, 1 << 51, 1 << 52
#: A tunneled line (a Hickman, Broviac or Groshong catheter, a tunneled dialysis catheter): a central venous
#: catheter whose tunnel under the skin a report names; the dev device query *Hickman catheter* (v5) led with central
#: lines saying nothing of one.
TUNNELED = 1 << 53
#: Every pattern bit.
PATTERN = (STREAKY | PLATE | SUBSEGMENTAL | PATCHY | INTERSTITIAL | PERIHILAR | NODULAR | HAZY | DIFFUSE | NONCALCIFIED
           | SINGLE_LEAD | DUAL_LEAD | BIVENTRICULAR | TUNNELED)
#: Every margin bit.
MARGIN = ILL_DEFINED
#: The name of each pattern, as the reading shows it.
NAMES = {STREAKY: "streaky", PLATE: "plate-like", SUBSEGMENTAL: "subsegmental", PATCHY: "patchy",
         INTERSTITIAL: "interstitial", PERIHILAR: "perihilar", NODULAR: "nodular", HAZY: "hazy", DIFFUSE: "diffuse",
         NONCALCIFIED: "noncalcified", ILL_DEFINED: "ill-defined", SINGLE_LEAD: "single lead", DUAL_LEAD: "dual lead",
         BIVENTRICULAR: "biventricular", TUNNELED: "tunneled"}

#: (word group, pattern bit): a unit holding every word of a group says that pattern ("plate-like" is two tokens).
UNIT_WORDS: tuple[tuple[tuple[str, ...], int], ...] = (
    tuple(((w,), STREAKY) for w in ("streaky", "streak", "streaks", "strandy", "stranding"))
    + tuple(((w,), PLATE) for w in ("platelike", "plate", "discoid", "linear", "bandlike"))
    + ((("subsegmental",), SUBSEGMENTAL),)
    + ((("patchy",), PATCHY),)
    + tuple(((w,), INTERSTITIAL) for w in ("interstitial", "reticular", "reticulonodular", "reticulation"))
    + tuple(((w,), PERIHILAR) for w in ("perihilar", "parahilar", "juxtahilar"))
    + ((("nodular",), NODULAR),)
    + tuple(((w,), HAZY) for w in ("hazy", "haziness", "haze"))
    + ((("ill", "defined"), ILL_DEFINED), (("illdefined",), ILL_DEFINED), (("poorly", "defined"), ILL_DEFINED),
       (("poorly", "marginated"), ILL_DEFINED), (("poorly", "circumscribed"), ILL_DEFINED), (("vague",), ILL_DEFINED),
       (("indistinct",), ILL_DEFINED))
    + tuple(((w,), DIFFUSE) for w in ("diffuse", "diffusely", "widespread", "generalized"))
    + ((("noncalcified",), NONCALCIFIED), (("uncalcified",), NONCALCIFIED), (("non", "calcified"), NONCALCIFIED),
       # "a 1 cm diameter nodule that is not calcified": said in two words, beside the nodule ("not" and "calcified"
       # alone are also "a calcified node is not identified")
       (("not", "calcified", "nodule"), NONCALCIFIED))
    # "a single XXXX cardiac defibrillator" (Open-i masks "lead"), "single chamber"; two leads by their tips
    + ((("single",), SINGLE_LEAD),)
    + ((("dual",), DUAL_LEAD), (("two", "leads"), DUAL_LEAD), (("2", "leads"), DUAL_LEAD),
       (("atrium", "ventricle"), DUAL_LEAD), (("atrial", "ventricular"), DUAL_LEAD))
    + ((("biventricular",), BIVENTRICULAR), (("resynchronization",), BIVENTRICULAR), (("coronary", "sinus"), BIVENTRICULAR),
       (("cardiac", "vein"), BIVENTRICULAR), (("three", "leads"), BIVENTRICULAR), (("3", "leads"), BIVENTRICULAR))
    + tuple(((w,), TUNNELED) for w in ("tunneled", "tunnelled", "hickman", "broviac", "groshong", "permcath"))
)

#: A query's words for each pattern.
_QUERY = (
    (STREAKY, r"streaky|streaks?|strandy|stranding"),
    (PLATE, r"plate[\s-]?like|discoid|linear|band[\s-]?like|thin\s+(?:white\s+)?lines?"),
    (SUBSEGMENTAL, r"subsegmental"),
    (PATCHY, r"patchy|spotty"),
    (INTERSTITIAL, r"interstitial|reticular|reticulonodular"),
    (PERIHILAR, r"perihilar|parahilar|juxtahilar|(?:around|near|next\s+to|beside)\s+(?:the\s+|both\s+)?"
                r"(?:(?:right|left)\s+)?(?:hila|hilum)"),
    (NODULAR, r"nodular"),
    (HAZY, r"hazy|haziness|haze"),
    (DIFFUSE, r"diffuse(?:ly)?|widespread|generalized|all\s+over"),
    (NONCALCIFIED, r"non[\s-]?calcified|uncalcified|not\s+calcified"),
    (ILL_DEFINED, r"ill[\s-]?defined|poorly[\s-](?:defined|marginated|circumscribed)|vague|indistinct"),
    (SINGLE_LEAD, r"(?:single|one)[\s-]?(?:lead|chamber|wire)"),
    (DUAL_LEAD, r"(?:dual|double|two|2)[\s-]?(?:leads?|chamber|wires?)"),
    (BIVENTRICULAR, r"biventricular|bi[\s-]?v|resynchroni[sz]ation|crt(?:[\s-]?[dp])?|(?:three|3)[\s-]?(?:leads?|wires?)"),
    (TUNNELED, r"tunnell?ed|hickman|broviac|groshong|perm[\s-]?a?[\s-]?cath"),
)
_QUERY_RES = tuple((bits, re.compile(rf"\b(?:{pattern})\b", re.IGNORECASE)) for bits, pattern in _QUERY)


def query_pattern(query: str) -> tuple[str | None, int]:
    """``(the query's words for its patterns, their bits)``; ``(None, 0)`` for none.

    >>> query_pattern("streaky left basilar opacity") == ("streaky", STREAKY)
    True
    >>> query_pattern("left basilar opacity")
    (None, 0)
    """
    words, bits = [], 0
    for bit, pattern in _QUERY_RES:
        m = pattern.search(query)
        if m:
            words.append(" ".join(m.group(0).lower().split()))
            bits |= bit
    return (", ".join(words), bits) if bits else (None, 0)


def pattern_names(bits: int) -> str | None:
    """The names of the pattern bits in ``bits`` (:data:`NAMES`), joined; None for none."""
    names = [name for bit, name in NAMES.items() if bits & bit]
    return ", ".join(names) if names else None


__all__ = ["BIVENTRICULAR", "DIFFUSE", "DUAL_LEAD", "HAZY", "ILL_DEFINED", "INTERSTITIAL", "MARGIN", "NAMES",
           "NODULAR", "NONCALCIFIED", "PATCHY", "PATTERN", "PERIHILAR", "PLATE", "SINGLE_LEAD", "STREAKY",
           "SUBSEGMENTAL", "TUNNELED", "UNIT_WORDS", "pattern_names", "query_pattern"]
