"""What is seen against what it is called: a doubt that names a finding outranks its description.

Some phrases of a finding describe what the film shows rather than name it (the lexicon's
``observations``: "enlarged cardiac silhouette" of cardiomegaly, "nodular opacity" of nodule). When the
report doubts the finding by name, the description is the thing seen and the name is the question, so the
description does not state the finding either:

- in one sentence: "Mildly enlarged cardiac silhouette; cardiomegaly versus pericardial effusion." The
  observation reads ``uncertain`` with the naming mention's cue (rule ``OBSERVATION_QUESTIONED:<cue>``).
- across a report: the findings section describes it plainly ("There is a 6 mm nodular opacity in the right
  upper lobe.") and the impression, the radiologist's conclusion, names the finding only to doubt it ("...
  true pulmonary nodule is a possibility."): every mention naming it in the impression is uncertain, none by
  a degree cue ("borderline cardiomegaly" grades a heart that is enlarged). Its observations anywhere in
  the report read ``uncertain`` (rule ``IMPRESSION_DOUBT:<cue>``).

A finding stated by name ("moderate cardiomegaly", "9 mm pulmonary nodule") keeps its status either way:
the radiologist said it once without doubt. Other findings have no observations and are never changed.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import replace

from radsift.labels.lexicon import Lexicon
from radsift.records import Mention

SENTENCE_RULE = "OBSERVATION_QUESTIONED"
REPORT_RULE = "IMPRESSION_DOUBT"
#: Sections that hold the report's conclusion (lower case).
IMPRESSION_SECTIONS = frozenset({"impression", "impressions", "conclusion", "conclusions"})
#: Uncertainty cues that grade a finding rather than doubt it (lower case).
DEGREE_CUES = frozenset({"borderline"})
#: The rules (``CATEGORY:cue``) that doubt a finding; a history, an evaluation or a recommendation
#: ("for evaluation of this nodule") names what was seen without doubting it.
DOUBT_RULES = ("POSSIBLE_EXISTENCE:", "DIFFERENTIAL:", "ANAPHORIC_HEDGE:")


def _observes(lexicon: Lexicon, m: Mention) -> bool:
    return m.finding in lexicon and lexicon[m.finding].observes(lexicon.normalizer.phrase(m.text))


def _doubts(m: Mention) -> bool:
    return m.status == "uncertain" and (m.rule or "").startswith(DOUBT_RULES) \
        and (m.cue or "").casefold() not in DEGREE_CUES


def _doubt(m: Mention, cue: str | None, rule: str) -> Mention:
    return replace(m, status="uncertain", cue=cue, rule=f"{rule}:{(cue or '').casefold()}")


def questioned_in_sentence(lexicon: Lexicon, mentions: list[Mention]) -> list[Mention]:
    """One sentence's mentions with each present observation of a finding the sentence doubts by name
    made uncertain (a hedge or a differential, not a history or an evaluation)."""
    named = {}
    for m in mentions:
        if _doubts(m) and m.finding in lexicon and lexicon[m.finding].observations and not _observes(lexicon, m):
            named.setdefault(m.finding, m.cue)
    if not named:
        return mentions
    return [_doubt(m, named[m.finding], SENTENCE_RULE)
            if m.status == "present" and m.finding in named and _observes(lexicon, m) else m for m in mentions]


def doubted_by_impression(lexicon: Lexicon, sections: Sequence[str], mentions: list[list[Mention]],
                          reports: Sequence[Hashable] | None = None) -> list[list[Mention]]:
    """Sentences' mentions with the observations of findings that their report's impression names only to
    doubt made uncertain.

    Args:
        lexicon: The lexicon whose ``observations`` say which mentions describe.
        sections: Each sentence's section name.
        mentions: Each sentence's mentions.
        reports: Each sentence's report (None: all sentences are one report's).

    Returns:
        One list of mentions per sentence, in input order.
    """
    keys = list(reports) if reports is not None else [0] * len(mentions)
    doubt: dict[Hashable, dict[str, str | None]] = {}
    plain: set[tuple[Hashable, str]] = set()
    for key, section, ms in zip(keys, sections, mentions):
        if section.casefold() not in IMPRESSION_SECTIONS:
            continue
        for m in ms:
            if m.finding not in lexicon or not lexicon[m.finding].observations or _observes(lexicon, m):
                continue  # the impression's own descriptions are read like the others'
            if _doubts(m):
                doubt.setdefault(key, {}).setdefault(m.finding, m.cue)
            elif m.status != "uncertain" or (m.cue or "").casefold() in DEGREE_CUES:
                plain.add((key, m.finding))  # stated, denied or graded; a history or evaluation is neither
    if not doubt:
        return mentions
    out = []
    for key, ms in zip(keys, mentions):
        doubted = doubt.get(key)
        out.append([_doubt(m, doubted[m.finding], REPORT_RULE)
                    if doubted and m.status == "present" and m.finding in doubted and (key, m.finding) not in plain
                    and _observes(lexicon, m) else m for m in ms])
    return out
