"""The per-report drawing context shared by the scenario and boilerplate writers.

A :class:`Draw` carries the report's random stream, its style and metadata, and the set of
findings already spoken for. Reserving a finding before writing about it is what keeps the
ground truth consistent: a report never says "small left effusion" and "no pleural effusion".
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Sequence, TypeVar

from radsift.demo.vocabulary import ABSENT, Truth

T = TypeVar("T")


@dataclass(frozen=True)
class Style:
    """How one report is written (sites differ; radiologists differ within a site).

    Attributes:
        terse: Prefer telegraphic sentences ("Lungs clear.").
        numbered: Chance that a multi-item impression is numbered "1. ... 2. ...".
        nospace: Chance that two sentences are joined without a space ("effusion.Heart").
        newline: Join findings sentences with line breaks instead of spaces.
        xxxx: Chance of a de-identification token where the generator allows one.
    """

    terse: bool
    numbered: float
    nospace: float
    newline: bool
    xxxx: float


@dataclass
class Block:
    """What one scenario contributes to a report.

    Attributes:
        group: Where its sentences go in the findings section (see ``GROUP_ORDER``).
        sentences: Findings-section sentences, each ending with a period.
        impression: ``(priority, phrase)`` candidates for the impression (higher first).
        items: Ground-truth facts the sentences and phrases state.
        acute: Whether the finding belongs in the impression of most radiologists.
    """

    group: str
    sentences: list[str] = field(default_factory=list)
    impression: list[tuple[int, str]] = field(default_factory=list)
    items: list[Truth] = field(default_factory=list)
    acute: bool = True


GROUP_ORDER = ("technique", "device", "heart", "mediastinum", "lung", "pleura", "bone", "abdomen", "other")


class Draw:
    """Random choices for one report, plus the findings it has already committed to."""

    def __init__(self, rng: random.Random, style: Style, exam: str, age_group: str, sex: str, site: str) -> None:
        self.rng = rng
        self.style = style
        self.exam = exam
        self.age_group = age_group
        self.sex = sex
        self.site = site
        self.reserved: set[str] = set()

    # -- random helpers -------------------------------------------------------------------
    def chance(self, p: float) -> bool:
        return self.rng.random() < p

    def pick(self, options: Sequence[T], weights: Sequence[float] | None = None) -> T:
        if weights is None:
            return options[self.rng.randrange(len(options))]
        return self.rng.choices(options, weights=weights, k=1)[0]

    # -- reservations ---------------------------------------------------------------------
    def free(self, finding: str) -> bool:
        """True when nothing has been written about ``finding`` yet."""
        return finding not in self.reserved

    def reserve(self, *findings: str) -> None:
        self.reserved.update(findings)

    def claim_absent(self, finding: str, p: float, items: list[Truth]) -> bool:
        """With chance ``p``, claim a free finding as explicitly negated and record it."""
        if finding in self.reserved or not self.chance(p):
            return False
        self.reserved.add(finding)
        items.append((finding, ABSENT, None))
        return True

    @property
    def portable(self) -> bool:
        return "PORTABLE" in self.exam

    @property
    def two_views(self) -> bool:
        return "LATERAL" in self.exam
