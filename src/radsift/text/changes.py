"""Change over time: a query asking how a finding changed since the last study, and the units that say so.

"new pleural effusion", "pneumonia getting better", "stable cardiomegaly", "PICC line removed", "heart got bigger
since last time": the finding is read as before (the labeler reads "resolved" and "removed" as absent), and the
change is one of :data:`NAMES`. The location tier (:mod:`radsift.ranking.places`) then ranks, within each of its
tiers, the units that say that change ("Interval development of a right effusion", "Interval improvement in the
left base consolidation") above those that do not, as it ranks the query's lobe first: a unit stating the finding
with no change word still follows, before any unit that does not state it.

A change is a bit (:data:`CHANGE`, above the body places' bits and the hila's) in the same region mask, read from queries by
their everyday words (:func:`query_change`) and from units by report words (:data:`UNIT_WORDS`, words before
stemming, a unit's from its BM25 postings at search time, never stored with an index). The words are the
sentence's, not the finding's ("No new opacity" says the same as before, and new): "Stable cardiomegaly. New left effusion." are two units, so each change stays
with its finding; a sentence joining two findings with one change word counts for both.
"""

from __future__ import annotations

import re

from radsift.text.tokens import word_groups

#: Change bits: the finding is new, worse, better, gone (resolved, removed) or the same as before.
NEW, WORSE, BETTER, GONE, SAME = 1 << 24, 1 << 25, 1 << 26, 1 << 27, 1 << 28
#: The finding is old (healed, chronic, remote): its age, the other end of "new" (above the patterns' bits).
OLD = 1 << 41
#: Every change bit.
CHANGE = NEW | WORSE | BETTER | GONE | SAME | OLD
#: The name of each change, as the reading shows it.
NAMES = {NEW: "new", WORSE: "worse", BETTER: "better", GONE: "gone", SAME: "unchanged", OLD: "old"}


#: (word group, change bit): a unit holding every word of a group says that change. Words whose stem a state
#: shares are left out: "enlarging" stems as "enlarged", "cleared" as "clear", "appeared" as "appears";
#: "resolving" stems as "resolved" (counted as gone).
UNIT_WORDS: tuple[tuple[tuple[str, ...], int], ...] = (
    word_groups(NEW, "new", "newly", "developed", "developing", "development", "placement", "inserted",
                "insertion")
    + word_groups(WORSE, "increased", "increasing", "increase", "worsened", "worsening", "worse", "progressed",
                  "progression", "progressive", "larger", "bigger")
    + word_groups(BETTER, "improved", "improving", "improvement", "decreased", "decreasing", "decrease", "smaller",
                  "diminished")
    + word_groups(GONE, "resolved", "resolution", "removed", "removal", "extubated", "extubation")
    + ((("no", "longer"), GONE), (("no", "new"), SAME), (("no", "change"), SAME), (("no", "changes"), SAME))
    + word_groups(SAME, "stable", "stably", "unchanged", "persistent", "persists", "persisting", "again", "similar",
                  "redemonstrated", "remains")
    # an old finding: "Old healed left rib fractures", "chronic compression deformity", "sequela of prior
    # granulomatous disease" ("healing" stems as "healed": a healing fracture is no new one either)
    + word_groups(OLD, "old", "healed", "chronic", "chronically", "remote", "longstanding", "sequela", "sequelae")
)

#: Two sides compared, no change over time: "Bilateral effusions, left larger than right", "airspace disease, left
#: worse right", "right greater than the left", "interstitial prominence, worse in the right lung base".
SIDE_COMPARISON = re.compile(r"\b(?:left|right)(?:\s+(?:side|sided|lung|base|hemithorax))?(?:\s+(?:is|are|being))?\s+"
                             r"(?:slightly\s+|much\s+|somewhat\s+)?(?:worse|larger|bigger|greater|more)"
                             r"(?:\s+than)?(?:\s+(?:the|on\s+the))?\s+(?:right|left)\b|"
                             r"\b(?:worse|larger|greater)\s+(?:in|at|on)\s+(?:the\s+)?(?:left|right)\b", re.IGNORECASE)
#: Low lung volumes, a state and never an improvement: "Decreased lung volumes", "lung volumes are diminished".
LOW_VOLUMES = re.compile(r"\b(?:decreased|diminished|decreasing|decrease)\s+(?:in\s+)?(?:the\s+)?(?:lung\s+|inspiratory\s+)?"
                         r"volumes?\b|\bvolumes?\s+(?:are|is|were)\s+(?:\w+\s+)?(?:decreased|diminished)\b",
                         re.IGNORECASE)
#: Per change a unit's words may say falsely: (its words, the words a unit holds beside them that call for its text to
#: be read, the phrases in which the change words say a state, not a change).
STATES_NOT_CHANGES = {
    WORSE: (frozenset(w[0] for w, bit in UNIT_WORDS if bit == WORSE and len(w) == 1), ("left", "right"), SIDE_COMPARISON),
    BETTER: (frozenset(w[0] for w, bit in UNIT_WORDS if bit == BETTER and len(w) == 1), ("volume", "volumes"),
             LOW_VOLUMES),
}


def says_no_change(text: str, bit: int) -> bool:
    """Whether every word of change ``bit`` (:data:`STATES_NOT_CHANGES`) in ``text`` says a state instead: two sides
    compared ("left worse than right": no worsening), low lung volumes ("decreased lung volumes": no improvement).
    A unit's postings alone hold the word of change and cannot tell.

    >>> says_no_change("Bibasilar airspace disease, left worse than right.", WORSE)
    True
    >>> says_no_change("Left effusion has increased, left larger than right.", WORSE)
    False
    >>> says_no_change("Opacity in the right base, worse than on the prior study.", WORSE)
    False
    >>> says_no_change("Decreased lung volumes with bibasilar atelectasis.", BETTER)
    True
    >>> says_no_change("Decreased left effusion. Decreased lung volumes.", BETTER)
    False
    """
    words, _, states = STATES_NOT_CHANGES[bit]
    rest = states.sub(" ", text)
    return not any(w in words for w in re.findall(r"[a-z]+", rest.lower()))


#: A query's words for each change, most specific first (the first that matches is the query's change).
_QUERY = (
    # "no significant change", "no increase in the effusion": not worse, as reports say "stable" ("not enlarged" is a
    # size, not a change: "heart not enlarged")
    (SAME, r"(?:nothing|no|not?\s+any)\s+new|no\s+(?:(?:significant|appreciable|definite|further|real)\s+)?"
           r"(?:interval\s+)?(?:change|increase|progression|worsening)|not\s+(?:increased|worsened|progressed)|"
           r"(?:has|have)\s*n[o']t\s+changed|not\s+changed|"
           # "not worse than before", "no worse", "not any bigger": the same, not worse
           r"(?:not?|isn'?t|aren'?t)\s+(?:any\s+)?(?:worse|bigger|larger)|"
           r"unchanged|stable|same\s+as\s+(?:before|last)|persistent|persisting|still\s+there"),
    (GONE, r"resolved|gone(?:\s+away)?|went\s+away|cleared(?:\s+up)?|removed|removal|taken\s+out|pulled(?!\s+(?:away|apart)\b)(?:\s+out)?|"
           r"no\s+longer|extubated"),
    (BETTER, r"(?:getting|got|gotten|becoming)\s+(?:better|smaller)|better|improv(?:ed|ing|ement)|shrinking|shrunk|"
             r"decreas(?:ed|ing)|resolving|clearing(?:\s+up)?|(?:smaller|less)\s+than\s+(?:before|last|prior)"),
    (WORSE, r"(?:getting|got|grown|grew|growing)\s+(?:bigger|larger|worse)|worse(?:ning|ned)?|increasing|"
            r"progress(?:ing|ion|ed)|enlarging|bigger\s+than\s+(?:before|last)|"
            # "is growing", "growing nodule", "has grown"; not "nothing growing in the lungs" (no mass at all)
            r"(?<!nothing\s)(?<!anything\s)growing(?!\s+(?:in|on|inside|within|out|from)\b)|(?:has|have)\s+grown|grew"),
    (NEW, r"new(?:ly)?|developed|developing|appeared"),
    # "old compression fracture", "healed rib fracture" ("chronic obstructive" names a disease, not its age; "old
    # x-rays" are earlier studies; a past cause, "from an old infection", is taken out by the query reader first)
    (OLD, r"old(?!\s+(?:x-?rays?|films?|stud(?:y|ies)|images?|exams?|comparisons?|reports?)\b)|healed|"
          r"chronic(?!\s+obstructive)|remote|long-?standing"),
)
_QUERY_RES = tuple((bits, re.compile(rf"\b(?:{pattern})\b", re.IGNORECASE)) for bits, pattern in _QUERY)
#: Words that only place a change in time ("since last time", "than before", "interval"): a query of them and a
#: change alone ("worse than last time", "interval improvement") names no finding.
TIME_WORDS = re.compile(r"\b(?:since|than|the|last|time|before|prior|previous|previously|interval|study|studies|"
                        r"exam|exams|film|films|x-?rays?|xrays?|cxr|compared|comparison|one|a|an|my|is|are|has|have|"
                        r"been|was|were|it|now|there|what|on)\b", re.IGNORECASE)


def query_change(query: str) -> tuple[str | None, int]:
    """``(the query's words for its change, its change bit)``; ``(None, 0)`` for none.

    >>> query_change("pneumonia getting better")
    ('getting better', 67108864)
    >>> query_change("nothing new since the last x-ray")[1] == SAME
    True
    """
    for bits, pattern in _QUERY_RES:
        m = pattern.search(query)
        if m:
            return m.group(0).lower(), bits
    return None, 0


def only_change(text: str, words: str) -> bool:
    """Whether ``text`` (a phrase read from the query) holds nothing but the change's ``words`` and words that place
    it in time ("worse than last time"): it names no finding."""
    rest = re.sub(re.escape(words), " ", text, flags=re.IGNORECASE) if words else text
    for _, pattern in _QUERY_RES:
        rest = pattern.sub(" ", rest)
    return not re.search(r"[a-z]", TIME_WORDS.sub(" ", rest), re.IGNORECASE)


__all__ = ["BETTER", "CHANGE", "GONE", "LOW_VOLUMES", "NAMES", "NEW", "OLD", "SAME", "SIDE_COMPARISON", "STATES_NOT_CHANGES",
           "TIME_WORDS", "UNIT_WORDS", "WORSE", "only_change", "query_change", "says_no_change"]
