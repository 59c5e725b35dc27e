"""Assemble synthetic chest X-ray reports with ground truth.

Each report is drawn from its own random stream seeded by ``(seed, index)``, so the corpus
is reproducible byte for byte, and the first reports of a larger corpus equal a smaller one.
A report is either normal (only negated boilerplate) or abnormal (1-4 present findings
written by :mod:`radsift.demo.scenarios`), wrapped in boilerplate for the organs that were
not described, and closed by an impression consistent with the findings.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass

from radsift.demo import boilerplate as bp
from radsift.demo.context import GROUP_ORDER, Block, Draw, Style
from radsift.demo.scenarios import AFFINITY, SCENARIOS, Scenario
from radsift.demo.vocabulary import ABSENT, PRESENT, Truth, cap
from radsift.errors import ConfigError
from radsift.records import Report

EXAMS = ("XR CHEST PA AND LATERAL", "XR CHEST PORTABLE AP", "XR CHEST 1 VIEW")
AGE_GROUPS = ("18-39", "40-64", "65+")
SITES = ("north", "south")
MAX_PRESENT = 4

# Chance of a normal study by age group and exam; averages to about 35% over the corpus.
_NORMAL_BY_AGE = {"18-39": 0.6, "40-64": 0.4, "65+": 0.22}
_NORMAL_BY_EXAM = {EXAMS[0]: 1.1, EXAMS[1]: 0.35, EXAMS[2]: 0.9}
_SITE_STYLE = {
    # terse, numbered, nospace, newline, xxxx
    "north": (0.2, 0.35, 0.015, 0.05, 0.08),
    "south": (0.5, 0.7, 0.03, 0.1, 0.12),
}


@dataclass(frozen=True)
class DemoReport:
    """A synthetic report and what it truly says.

    Attributes:
        report: The report (id ``demo-00001``, sections, metadata).
        truth: ``(finding, status, location | None)`` for every finding the text mentions,
            status being ``present``, ``absent`` or ``uncertain``.
    """

    report: Report
    truth: tuple[Truth, ...]

    @property
    def id(self) -> str:
        return self.report.id

    @property
    def is_normal(self) -> bool:
        """True when no finding is present or uncertain (negated boilerplate only)."""
        return not any(status != ABSENT for _, status, _ in self.truth)

    def findings(self, status: str) -> tuple[str, ...]:
        """Names of the findings with ``status`` (in order of mention, without repeats)."""
        return tuple(dict.fromkeys(f for f, s, _ in self.truth if s == status))

    def truth_dict(self) -> dict:
        return {
            "id": self.id,
            "normal": self.is_normal,
            "findings": [{"finding": f, "status": s, "location": loc} for f, s, loc in self.truth],
        }


def generate_reports(n: int = 2000, seed: int = 7) -> list[DemoReport]:
    """Generate ``n`` synthetic chest radiograph reports with ground truth.

    Args:
        n: Number of reports (ids ``demo-00001`` ... ).
        seed: Random seed; the same seed gives identical reports.

    Returns:
        The reports, in id order.

    Raises:
        ConfigError: ``n`` is negative.
    """
    if n < 0:
        raise ConfigError(f"demo corpus size n must be >= 0, got {n}")
    width = max(5, len(str(n)))
    return [_report(i, seed, width) for i in range(1, n + 1)]


# ---------------------------------------------------------------------------------------------
# One report
# ---------------------------------------------------------------------------------------------


def _report(index: int, seed: int, width: int) -> DemoReport:
    # String seeds are hashed with SHA-512 by `random`, so this is stable across runs and platforms.
    rng = random.Random(f"radsift-demo:{seed}:{index}")
    sex = rng.choice(("F", "M"))
    age_group = rng.choices(AGE_GROUPS, weights=(25, 40, 35))[0]
    site = rng.choices(SITES, weights=(55, 45))[0]
    exam_weights = (58, 30, 12) if age_group == "65+" else (70, 17, 13)
    exam = rng.choices(EXAMS, weights=exam_weights)[0]
    terse, numbered, nospace, newline, xxxx = _SITE_STYLE[site]
    style = Style(
        terse=rng.random() < terse, numbered=numbered, nospace=nospace, newline=rng.random() < newline, xxxx=xxxx
    )
    d = Draw(rng, style, exam, age_group, sex, site)

    sections: dict[str, str] = {}
    indication = bp.indication(d) if d.chance(0.06) else None
    if indication:
        sections["indication"] = indication
    if d.chance(0.05):
        sections["comparison"] = bp.comparison(d)

    normal = d.chance(_NORMAL_BY_AGE[age_group] * _NORMAL_BY_EXAM[exam])
    blocks = [] if normal else _abnormal_blocks(d)
    items: list[Truth] = [item for b in blocks for item in b.items]
    findings = _findings_text(d, blocks, items, has_comparison="comparison" in sections)
    impression = _impression_text(d, blocks, items, indication)
    sections["findings"] = findings
    sections["impression"] = impression
    if d.site == "south" and d.chance(0.03):
        # Some dictation systems still emit all caps.
        sections = {k: v.upper() for k, v in sections.items()}

    report = Report(
        id=f"demo-{index:0{width}d}",
        sections=sections,
        metadata={"exam": exam, "sex": sex, "age_group": age_group, "site": site},
    )
    return DemoReport(report=report, truth=tuple(dict.fromkeys(items)))


def _abnormal_blocks(d: Draw) -> list[Block]:
    target = d.pick((1, 2, 3, 4), (42, 31, 17, 10))
    blocks: list[Block] = []
    chosen: list[str] = []
    present = 0
    for _ in range(20):
        if present >= target:
            break
        scenario = _choose(d, chosen)
        if scenario is None:
            break
        before = set(d.reserved)
        block = _build(d, scenario, uncertain=d.chance(scenario.uncertain))
        gained = sum(1 for _, s, _ in block.items if s == PRESENT)
        if present + gained > MAX_PRESENT:
            d.reserved = before  # drop the block and everything it spoke for
            continue
        blocks.append(block)
        chosen.append(scenario.key)
        present += gained
    while present == 0:  # every draw was hedged: add one certain finding
        scenario = _choose(d, chosen)
        if scenario is None:  # pragma: no cover - the registry holds far more than 4 findings
            break
        block = _build(d, scenario, uncertain=False)
        blocks.append(block)
        chosen.append(scenario.key)
        present += sum(1 for _, s, _ in block.items if s == PRESENT)
    return blocks


def _choose(d: Draw, chosen: list[str]) -> Scenario | None:
    options: list[Scenario] = []
    weights: list[float] = []
    for s in SCENARIOS:
        if s.key in chosen or not all(d.free(f) for f in s.reserves):
            continue
        w = s.weight_for(d) * math.prod(AFFINITY.get(frozenset((s.key, c)), 1.0) for c in chosen)
        if w > 0:
            options.append(s)
            weights.append(w)
    return d.pick(options, weights) if options else None


def _build(d: Draw, scenario: Scenario, uncertain: bool) -> Block:
    d.reserve(*scenario.reserves)
    return scenario.build(d, uncertain)


def _clean(sentence: str) -> str:
    return cap(" ".join(sentence.split()))


def _findings_text(d: Draw, blocks: list[Block], items: list[Truth], has_comparison: bool) -> str:
    by_group: dict[str, list[str]] = {g: [] for g in GROUP_ORDER}
    for b in blocks:
        by_group[b.group].extend(_clean(s) for s in b.sentences)
    groups = {b.group for b in blocks}

    def add(group: str, sentence: str | None) -> None:
        if sentence:
            by_group[group].append(sentence)

    add("technique", bp.technique(d))
    if "heart" not in groups:
        add("heart", bp.heart(d, items))
    if not any("mediastin" in s.lower() for s in by_group["heart"]):  # "The heart and mediastinum are normal."
        add("mediastinum", bp.mediastinum(d))
    parenchymal = "lung" in groups
    neg_sentences, said_clear = bp.negations(d, items, lungs_clear_ok=not parenchymal)
    if not said_clear:
        add("lung", bp.lungs(d, parenchymal))
    add("lung", bp.vasculature(d))
    by_group["pleura"].extend(neg_sentences)
    add("other", bp.resolution(d, items))
    add("bone", bp.bones(d, items, has_bone_finding="bone" in groups))
    if has_comparison and d.chance(0.3):
        add("other", "No significant interval change." if not blocks else "Otherwise no significant interval change.")

    order = list(GROUP_ORDER)
    if d.chance(0.15):  # some radiologists put the pleura before the lungs
        i, j = order.index("lung"), order.index("pleura")
        order[i], order[j] = order[j], order[i]
    sentences = [s for g in order for s in by_group[g]]
    return _join(d, sentences, "\n" if d.style.newline else " ")


def _join(d: Draw, sentences: list[str], sep: str) -> str:
    out = ""
    for k, s in enumerate(sentences):
        if k:
            out += "" if d.chance(d.style.nospace) else sep
        out += s
    return out


def _impression_text(d: Draw, blocks: list[Block], items: list[Truth], indication: str | None) -> str:
    ranked: list[tuple[int, str]] = []
    for b in blocks:
        for priority, phrase in b.impression:
            # Acute findings always reach the impression; devices often, chronic findings seldom.
            keep = 1.0 if priority >= 3 else (0.85 if b.acute else 0.6) if priority == 2 else 0.3
            if d.chance(keep):
                ranked.append((priority, _clean(phrase)))
    ranked.sort(key=lambda p: -p[0])  # stable: ties keep the findings order
    phrases = [p for _, p in ranked[:4]]
    if not any(p >= 3 for p, _ in ranked):
        phrases.insert(0, bp.normal_impression(d, acute_only=bool(blocks)))
    _impression_negatives(d, items, phrases, blocks, indication)
    if (len(phrases) >= 2 and d.chance(d.style.numbered)) or (len(phrases) == 1 and d.chance(d.style.numbered * 0.25)):
        sep = "\n" if d.chance(0.3) else " "
        return sep.join(f"{k}. {p}" for k, p in enumerate(phrases, 1))
    return _join(d, phrases, " ")


def _impression_negatives(
    d: Draw, items: list[Truth], phrases: list[str], blocks: list[Block], indication: str | None
) -> None:
    """Now and then the impression repeats an important negative ("No pneumothorax.")."""
    absent = {f for f, s, _ in items if s == ABSENT}
    if d.chance(0.1) and ("pneumothorax" in absent or d.free("pneumothorax")):
        if d.free("pneumothorax"):
            d.reserve("pneumothorax")
            items.append(("pneumothorax", ABSENT, None))
        phrases.append(d.pick(("No pneumothorax.", "No evidence of pneumothorax.")))
    asks_infection = indication is not None and ("cough" in indication.lower() or "fever" in indication.lower())
    if not blocks and d.free("pneumonia") and d.chance(0.5 if asks_infection else 0.04):
        d.reserve("pneumonia")
        items.append(("pneumonia", ABSENT, None))
        phrases.append(d.pick(("No evidence of pneumonia.", "No radiographic evidence of pneumonia.")))
    if blocks and d.chance(0.06) and ("pleural effusion" in absent or d.free("pleural effusion")):
        if d.free("pleural effusion"):
            d.reserve("pleural effusion")
            items.append(("pleural effusion", ABSENT, None))
        phrases.append("No pleural effusion.")


__all__ = ["AGE_GROUPS", "DemoReport", "EXAMS", "SITES", "generate_reports"]
