"""Reading tiers: negation-aware ranking by the query's reading of each finding it names.

A query is read as findings with a wanted status ("no cardiomegaly": cardiomegaly absent) and,
optionally, a side ("small left pneumothorax": left). Each unit gets a *tier* from what it states
about those findings, and units rank by tier first, then by their retrieval score.

Per finding, the tier of a unit (:data:`TIER_OF`; lower is better):

=================  =======  ==============  =========  =======
query asks for     same     no reading      uncertain  opposite
=================  =======  ==============  =========  =======
present ("X")      0        1               2          3
absent ("no X")    0        1               2          3
uncertain ("X?")   0        2 (none)        --         3
=================  =======  ==============  =========  =======

For an uncertain query ("possible X") a unit affirming X (tier 1) ranks above one that does not
mention it (2) and one denying it (3) ranks last. A unit that states several readings of one
finding ("no left ..., small right pneumothorax") takes its best. Normal-organ statements the
labeler reads as absent ("Heart size is normal.") state the absent reading like any other.

Several findings ("cardiomegaly with pulmonary edema and bilateral effusions") combine
lexicographically: a unit that denies any wanted finding (tier 3 in any column) ranks below
all that deny none; among those, the sum of the per-finding tiers orders (stating all beats
stating some). Where a query asks some findings present and some absent ("port, no pneumothorax"), the
findings asked present weigh more (:func:`weights`): a report stating the port and nothing of a
pneumothorax leads one denying a pneumothorax alone. At report level the per-finding tier of a report
is the best its units state, so a report is judged on its whole text ("Heart size is normal." anywhere
in it denies cardiomegaly), and the unit that stands for it is its best unit.

Sides add a second key within a reading tier: same side 0, no side word (or both sides named)
1, the opposite side 2 (for "bilateral": one side only is the opposite). A query naming a lobe
(:mod:`radsift.ranking.places`) puts a location key before the side key: same lobe, no lobe,
another lobe, each holding the three side tiers (``slots`` 9 instead of 3).

Below every other key, for a query asking for a finding (present or uncertain), the **normal key**
(:func:`with_normal`): within one tier, a unit (at report level: first its report, then the unit) that says
only all is normal ("The lungs are clear.", "No acute cardiopulmonary process."; every label a denial) or
nothing of the patient ("Chest.") ranks after one that may state a finding (:func:`normal_keys`). A query
whose finding no unit states ("wet lungs", read as an open phrase) then falls back on similarity among the
units that state something, never on the normal statements that only share its words. With calibrated
boosts (``gap``) the search adds no normal key: it would multiply the cost of every tier.

The tiers are strict (:func:`apply_tiers`): a lower tier outranks any score. ``gap`` turns
them into calibrated boosts instead (each tier costs ``gap`` times the score range); see
``docs/measurements.md`` for the comparison that chose strict tiers.
"""

from __future__ import annotations

from typing import Callable, Mapping, Sequence

import numpy as np

from radsift.text.sides import CHAMBER_WORDS, SIDES, chamber_sides, side_words, text_sides
from radsift.text.tokens import stem

#: Signed polarity of a stated reading (uncertain mentions have none).
POLARITY = {"present": 1, "absent": -1}
#: Finding statuses as stored in an index's ``label_status.npy``.
STATUS_CODES = {"present": 1, "absent": -1, "uncertain": 0}
#: Wanted status -> (stated status -> tier); :data:`NO_READING` for units that state nothing.
TIER_OF = {
    "present": {"present": 0, "uncertain": 2, "absent": 3},
    "absent": {"absent": 0, "uncertain": 2, "present": 3},
    "uncertain": {"uncertain": 0, "present": 1, "absent": 3},
}
NO_READING = {"present": 1, "absent": 1, "uncertain": 2}
OPPOSITE_TIER = 3
#: The tier of a report that denies a finding asked absent in one unit and states it in another.
CONTRADICTED = 2
#: Side tiers within one reading tier (same, none, opposite).
SIDE_SLOTS = 3


def apply_tiers(scores: np.ndarray, tiers: np.ndarray | None, gap: float | None = None) -> np.ndarray:
    """Scores lowered by tier, so that units rank by (tier, score).

    Args:
        scores: One score per unit.
        tiers: One non-negative integer per unit (0 = best), or None for no tiers.
        gap: None (strict): each tier costs more than the whole score range, so any unit of a
            lower tier outranks every unit of a higher one. A number: each tier costs ``gap``
            times the score range (a calibrated boost: a much better score can cross a tier).
    """
    if tiers is None or not len(scores):
        return scores
    tiers = np.asarray(tiers)
    if not tiers.any():
        return scores
    scores = np.array(scores, dtype=np.float32, copy=True)
    spread = float(scores.max() - scores.min())
    step = spread + 1.0 if gap is None else gap * max(spread, 1e-6)
    return scores - tiers.astype(np.float32) * np.float32(step)


def demote(scores: np.ndarray, rows: np.ndarray | None) -> np.ndarray:
    """Move ``rows`` below every other unit, keeping their order among themselves (one strict tier)."""
    if rows is None or not len(rows) or not len(scores):
        return scores
    tiers = np.zeros(len(scores), dtype=np.int32)
    tiers[np.asarray(rows, dtype=np.int64)] = 1
    return apply_tiers(scores, tiers)


#: Placeholder in :func:`stated_tiers` for a unit that states nothing about a finding.
UNSTATED = 9


def stated_tiers(n_units: int, label_row: np.ndarray, label_finding: np.ndarray, label_status: np.ndarray,
                 wanted: Sequence[tuple[int, str]]) -> np.ndarray:
    """Per-unit, per-finding tiers of what each unit states (``(n_units, len(wanted))``, int8).

    A unit stating several readings of a finding takes its best; one stating none holds
    :data:`UNSTATED` (resolved by :func:`unit_tiers`, after report-level aggregation).

    Args:
        n_units: Number of units.
        label_row, label_finding, label_status: One entry per (unit, finding) mention: unit
            row, finding code, status code (:data:`STATUS_CODES`).
        wanted: ``(finding code, wanted status)`` per query finding, in query order.
    """
    out = np.full((n_units, len(wanted)), UNSTATED, dtype=np.int8)
    names = {v: k for k, v in STATUS_CODES.items()}
    for j, (code, status) in enumerate(wanted):
        sel = label_finding == code
        if sel.any():
            table = np.array([TIER_OF[status][names[c]] for c in (-1, 0, 1)], dtype=np.int8)
            col = out[:, j].copy()
            np.minimum.at(col, label_row[sel], table[label_status[sel] + 1])
            out[:, j] = col
    return out


def _resolve(stated: np.ndarray, statuses: Sequence[str]) -> np.ndarray:
    out = stated.copy()
    for j, status in enumerate(statuses):
        col = out[:, j]
        col[col == UNSTATED] = NO_READING[status]
    return out


def own_reading(stated: np.ndarray, statuses: Sequence[str], by_report: bool) -> np.ndarray:
    """What each unit states of the query's findings, as its own key within its report's tier: at report level, a
    finding asked present (or uncertain) that a unit says nothing of counts as stated where the unit states another
    finding asked present (the report is judged on its whole text first), so that "Mild bibasilar atelectasis." in a
    report whose next sentence states cardiomegaly ranks by its place and side as "Cardiomegaly with bibasilar
    atelectasis." does. Beside a finding asked present, one asked absent is never filled: for "X without Y",
    "X without Y." leads "X." (the absence qualifies the finding, and the sentence denying it answers the query
    whole), and a unit denying Y alone states nothing asked present. A query asking only absences ("no effusion or
    pneumothorax") fills them all, as it does the present ones. A unit saying nothing that fills keeps its own, and
    at sentence level (``by_report`` False) every unit keeps its own."""
    if not by_report or stated.shape[1] < 2:
        return stated
    asked = np.array([status != "absent" for status in statuses], dtype=bool)
    if not asked.any():
        asked[:] = True  # only absences asked: each is as much the query as another
    says = ((stated != UNSTATED) & asked).any(axis=1, keepdims=True)
    return np.where(says & asked & (stated == UNSTATED), np.int8(0), stated).astype(np.int8)


def weights(statuses: Sequence[str] | None, n: int) -> np.ndarray:
    """Each finding's weight in :func:`combine`: where a query asks some findings present (or uncertain) and some
    absent, a finding asked present weighs :data:`OPPOSITE_TIER` (more than any tier an absence not denied can
    cost), so that for "port, no pneumothorax" a report stating the port and nothing of a pneumothorax leads one
    denying a pneumothorax and naming no port: the absence qualifies what is asked, it is not asked alone. Else 1."""
    if not statuses or len(statuses) != n:
        return np.ones(n, dtype=np.int64)
    asked = np.array([status != "absent" for status in statuses], dtype=bool)
    return np.where(asked, OPPOSITE_TIER, 1).astype(np.int64) if asked.any() and not asked.all() \
        else np.ones(n, dtype=np.int64)


def combine(per_finding: np.ndarray, statuses: Sequence[str] | None = None) -> np.ndarray:
    """One tier per row from per-finding tiers: (denies any, weighted sum of tiers), lexicographically; the weights
    are :func:`weights` of the findings' wanted ``statuses`` (all 1 without them)."""
    n, f = per_finding.shape
    if f == 1:
        return per_finding[:, 0].astype(np.int64)
    w = weights(statuses, f)
    denies = (per_finding == OPPOSITE_TIER).any(axis=1).astype(np.int64)
    return denies * (OPPOSITE_TIER * int(w.sum()) + 1) + (per_finding.astype(np.int64) * w).sum(axis=1)


def side_tiers(side: str, has_left: np.ndarray, has_right: np.ndarray, has_bilateral: np.ndarray) -> np.ndarray:
    """Per-unit side tier for a query side: same 0, no side word (or both sides) 1, the opposite side 2."""
    if side not in SIDES:
        raise ValueError(f"side must be one of {', '.join(SIDES)}, not {side!r}")
    both = has_bilateral | (has_left & has_right)
    tiers = np.ones(len(has_left), dtype=np.int64)
    if side == "bilateral":
        tiers[both] = 0
        tiers[~both & (has_left | has_right)] = 2
    else:
        own, other = (has_left, has_right) if side == "left" else (has_right, has_left)
        tiers[own & ~other] = 0  # a unit naming both sides ("right pneumothorax on the left decubitus") is no match
        tiers[other & ~own] = 2
    return tiers


def side_flags(n_units: int, units_with: Callable[[str], Sequence[int]],
               texts: Callable[[Sequence[int]], Mapping[int, str]] | None = None, chambers: bool = False,
               ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per unit: whether it has a left, a right and a bilateral side word (:data:`radsift.text.sides.SIDE_WORDS`).

    Args:
        n_units: Number of units.
        units_with: A word's stem (:func:`radsift.text.tokens.stem`) -> the units holding it.
        texts: Unit rows -> their texts. When given, the units holding a side word and a heart chamber's word
            are read (only those), and a side word naming a chamber ("tip in the right atrium") is no side of the
            chest (:func:`radsift.text.sides.text_sides`).
        chambers: With ``texts``: the sides of the chambers the units name instead ("enlarged left atrium": left;
            a unit naming no chamber's side has none), for a query whose side is a chamber's.

    Returns:
        ``(has left, has right, has bilateral)``, the arguments of :func:`side_tiers`.
    """
    flags = []
    for side in SIDES:
        has = np.zeros(n_units, dtype=bool)
        for word in side_words(side):
            has[np.asarray(units_with(stem(word)), dtype=np.int64)] = True
        flags.append(has)
    if texts is None:
        return flags[0], flags[1], flags[2]
    chamber = np.zeros(n_units, dtype=bool)
    for word in CHAMBER_WORDS:
        chamber[np.asarray(units_with(stem(word)), dtype=np.int64)] = True
    rows = np.flatnonzero(chamber & (flags[0] | flags[1]))
    if chambers:
        flags = [np.zeros(n_units, dtype=bool) for _ in SIDES]
    for row, text in (texts(rows.tolist()).items() if rows.size else ()):
        named = chamber_sides(text) if chambers else text_sides(text)
        flags[0][row], flags[1][row] = "left" in named, "right" in named
    return flags[0], flags[1], flags[2]


#: What a sentence states, for :func:`normal_keys`: some finding present or uncertain (a stored label), only
#: normal or absent things (its labels all deny, or its words call all normal: :mod:`radsift.text.normality`),
#: something the lexicon does not read, or nothing of the patient (the examination, a comparison).
SAYS_FINDING, SAYS_NORMAL, SAYS_OTHER, SAYS_NOTHING = 0, 1, 2, 3


def asks_finding(statuses: Sequence[str]) -> bool:
    """Whether a reading asks for some finding to be there (present or uncertain): then a unit that only says all
    is normal answers it less than one that may state a finding (:func:`normal_keys`)."""
    return any(s != "absent" for s in statuses)


def normal_only(said: np.ndarray, owner: np.ndarray, n: int) -> np.ndarray:
    """Per owner (unit or report, ``0..n-1``), whether its sentences say only normal things or nothing of the
    patient: none :data:`SAYS_FINDING` nor :data:`SAYS_OTHER` ("Clear lungs.", "Chest.")."""
    said = np.asarray(said)
    owner = np.asarray(owner, dtype=np.int64)
    may_state = (said == SAYS_FINDING) | (said == SAYS_OTHER)
    return np.bincount(owner[may_state], minlength=n)[:n] == 0


#: How many values the normal key of :func:`normal_keys` takes: at sentence level (the unit's) and at report
#: level (the report's, then the unit's).
NORMAL_SCALE = {False: 2, True: 4}


def normal_keys(said: np.ndarray, n_units: int, unit_of: np.ndarray | None = None,
                group_of: np.ndarray | None = None) -> np.ndarray:
    """The normal key of every unit: 1 where the unit says only normal things (:func:`normal_only`), else 0; at
    report level (``group_of``) 2 more where its report does. :func:`with_normal` ranks by it within each tier.

    Args:
        said: What each sentence states (:data:`SAYS_FINDING` ... :data:`SAYS_NOTHING`).
        n_units: Number of units.
        unit_of: Sentence row -> unit row (section units); None when units are sentences.
        group_of: Report of each unit (report level), None at sentence level.
    """
    said = np.asarray(said)
    unit = np.arange(said.shape[0], dtype=np.int64) if unit_of is None else np.asarray(unit_of, dtype=np.int64)
    keys = normal_only(said, unit, n_units).astype(np.int64)
    if group_of is not None:
        group_of = np.asarray(group_of, dtype=np.int64)
        n_groups = int(group_of.max(initial=-1)) + 1
        report = normal_only(said, group_of[unit], n_groups)
        keys += 2 * report[group_of].astype(np.int64)
    return keys


def with_normal(tiers: np.ndarray, keys: np.ndarray | None, by_report: bool) -> np.ndarray:
    """Tiers with the normal key below every other key: within one tier (reading, side, location, a link beside),
    a report (or unit) that may state a finding ranks before one that says only all is normal, so that a query
    asking for a finding no unit states falls back on similarity among the units that state something.

    Args:
        tiers: One tier per unit (:func:`unit_tiers`).
        keys: :func:`normal_keys` of every unit (None: ``tiers`` as they are).
        by_report: Report level (keys up to 3) or not (0 or 1).
    """
    if keys is None:
        return tiers
    return np.asarray(tiers, dtype=np.int64) * NORMAL_SCALE[bool(by_report)] + np.asarray(keys, dtype=np.int64)


def stating(tiers: np.ndarray, slots: int = SIDE_SLOTS) -> np.ndarray:
    """Units (of :func:`unit_tiers`) that state the query's whole reading, whatever their side and location (at report
    level, in a report stating it all, a unit stating a part of it and nothing against it: :func:`own_reading`)."""
    return np.asarray(tiers) < slots


def unit_tiers(stated: np.ndarray | None, statuses: Sequence[str], sides: np.ndarray | None = None,
               group_of: np.ndarray | None = None, slots: int = SIDE_SLOTS) -> np.ndarray | None:
    """The tier of every unit: its reading first, then its side; at report level the report's reading first.

    Args:
        stated: :func:`stated_tiers`, or None when the query names no finding.
        statuses: The wanted status of each column of ``stated``.
        sides: :func:`side_tiers`, or None when the query names no side; with a location, the location
            and side key (:func:`radsift.ranking.places.where_tiers`, below ``slots``).
        group_of: Report of every unit (report level), or None (sentence level).
        slots: Keys of ``sides`` within one reading tier (:data:`SIDE_SLOTS`; 9 with a location).

    Returns:
        One int per unit (lower ranks first), or None when the query asks for no reading.
    """
    if stated is None and sides is None:
        return None
    n = len(stated) if stated is not None else len(sides)
    if stated is None:
        reading = np.zeros(n, dtype=np.int64)
    else:
        reading = combine(_resolve(own_reading(stated, statuses, group_of is not None), statuses), statuses)
    tiers = reading * slots + (0 if sides is None else sides)
    if group_of is not None and stated is not None and n:
        # A report is judged on its whole text: per finding, the best reading any of its units states.
        group_of = np.asarray(group_of, dtype=np.int64)
        report = combine(_resolve(report_readings(stated, statuses, group_of, int(group_of.max()) + 1), statuses),
                         statuses)
        tiers = report[group_of] * (int(tiers.max()) + 1) + tiers
    return tiers


#: What a unit (or a report) states about the query's whole reading (:func:`reading_classes`).
STATES, PARTIAL, OPPOSITE, NO_READING_CLASS = 0, 1, 2, 3
CLASS_NAMES = ("states", "partial", "opposite", "none")


def reading_classes(stated: np.ndarray, statuses: Sequence[str], group_of: np.ndarray | None = None,
                    n_groups: int | None = None, opposite: Sequence[np.ndarray] | None = None
                    ) -> tuple[np.ndarray, np.ndarray | None]:
    """What each unit, and each report, states about the query's findings, as one class each:

    ``STATES`` every finding with the wanted status; ``OPPOSITE`` the opposite of any of them (and
    not all of them as wanted); ``PARTIAL`` anything else (some of them, uncertainly, or nothing).
    A report is judged on its whole text: per finding, the best any of its units states (so
    "Heart size is normal." anywhere in a report makes it state "no cardiomegaly"). Sides are not
    read here: they order units within a class.

    Args:
        stated: :func:`stated_tiers` (``UNSTATED`` where a unit says nothing of a finding).
        statuses: The wanted status of each column.
        group_of: Report of every unit, or None (no report classes).
        n_groups: Number of reports (default: the largest in ``group_of`` plus one).
        opposite: Per finding, the reports holding a unit that states its opposite, read from all their units
            (:func:`opposite_reports`) when ``stated`` holds only some (default: read from ``stated``).

    Returns:
        ``(unit classes, report classes or None)``, int8.
    """
    def classify(per: np.ndarray) -> np.ndarray:
        per = _resolve(per, statuses)
        out = np.full(per.shape[0], PARTIAL, dtype=np.int8)
        out[(per == OPPOSITE_TIER).any(axis=1)] = OPPOSITE
        out[(per == 0).all(axis=1)] = STATES
        return out

    units = classify(stated)
    if group_of is None:
        return units, None
    group_of = np.asarray(group_of, dtype=np.int64)
    n = int(group_of.max(initial=-1)) + 1 if n_groups is None else int(n_groups)
    return units, classify(report_readings(stated, statuses, group_of, n, opposite))


def opposite_reports(stated: np.ndarray, group_of: np.ndarray) -> list[np.ndarray]:
    """Per finding (column of ``stated``), the reports holding a unit whose own best reading is the opposite."""
    return [np.asarray(group_of)[stated[:, j] == OPPOSITE_TIER] for j in range(stated.shape[1])]


def report_readings(stated: np.ndarray, statuses: Sequence[str], group_of: np.ndarray, n: int,
                    opposite: Sequence[np.ndarray] | None = None) -> np.ndarray:
    """Per report and finding, the reading its whole text states (``(n, len(statuses))``, int8).

    The best reading any of its units states, except for a denial the report contradicts: a report
    asked for "no X" that denies X in one sentence and states X in another ("Multiple small nodules
    ... No nodules or masses.") does not deny X as a whole, and holds :data:`CONTRADICTED` (the
    uncertain tier) instead of 0. A report asked for X that also denies it somewhere still states
    X ("no left effusion, small right effusion"): a finding stated anywhere is there, a denial holds
    only if nothing in the report states it.

    Args:
        stated: :func:`stated_tiers` of every unit.
        statuses: The wanted status of each column.
        group_of: Report (0 to ``n - 1``) of every unit.
        n: Number of reports.
        opposite: See :func:`reading_classes` (default: :func:`opposite_reports` of ``stated``).
    """
    best = np.full((n, stated.shape[1]), UNSTATED, dtype=np.int8)
    np.minimum.at(best, group_of, stated)
    if opposite is None:
        opposite = opposite_reports(stated, group_of)
    for j, status in enumerate(statuses):
        best[:, j] = contradicted(np.arange(n), best[:, j], opposite[j], status)
    return best


def contradicted(reports: np.ndarray, best: np.ndarray, opposite: np.ndarray, wanted: str) -> np.ndarray:
    """Reports' best tiers for one finding with :data:`CONTRADICTED` where a denial is contradicted.

    Args:
        reports: Report rows.
        best: The best tier any unit of each states for a query wanting ``wanted``.
        opposite: Reports (any order, repeats allowed) with a unit stating the opposite reading.
        wanted: The wanted status: only a wanted ``absent`` is ever contradicted.

    Returns:
        A copy of ``best`` (int8) (see :func:`report_readings`).
    """
    best = np.array(best, dtype=np.int8)
    if wanted == "absent" and len(opposite):
        best[(best == 0) & np.isin(reports, opposite)] = CONTRADICTED
    return best
