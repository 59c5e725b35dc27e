"""Negation and uncertainty rules: ConText cues and normal-state predicates, loaded from YAML.

File format (the packaged radiology rules are ``data/radiology_rules.yaml``)::

    version: 1
    rules:                                # groups of ConText cues sharing settings
      - category: NEGATED_EXISTENCE       # NEGATED_EXISTENCE -> absent, POSSIBLE_EXISTENCE -> uncertain,
                                          # HYPOTHETICAL (indications, evaluations, recommendations: "evaluate
                                          # for", "evaluation for X is limited") -> uncertain, HISTORICAL
                                          # ("history of") -> uncertain, DIFFERENTIAL (findings joined as
                                          # alternatives: "atelectasis or scarring") -> uncertain unless a
                                          # negation also modifies the finding ("no effusion or pneumothorax"),
                                          # PSEUDO_NEGATION (direction PSEUDO), TERMINATE (direction
                                          # TERMINATE: ends every scope), NEGATION_END (direction
                                          # TERMINATE: ends only NEGATED_EXISTENCE scopes)
        direction: FORWARD                # FORWARD | BACKWARD | BIDIRECTIONAL | PSEUDO | TERMINATE
        max_scope: 8                      # optional: scope in tokens (default: the sentence)
        negatable: true                   # optional, POSSIBLE_EXISTENCE only: a negation before
                                          # the cue makes the finding absent ("no opacity suggestive of ...")
        cues: [no, without, negative for] # phrases (whole tokens, any case)
        negation_end: false               # optional, NEGATED_EXISTENCE only: NEGATION_END cues do not end
                                          # this group's scope ("denies difficulty with cough or hemoptysis")
        types: [finding, disease]         # optional: the lexicon categories the cues modify (default: all)
      - name: comma before a severity word  # or one spaCy token pattern with a name
        category: TERMINATE
        direction: TERMINATE
        pattern: [{"TEXT": ","}, {"LOWER": {"IN": [mild, moderate]}}]
    normal_forms:                         # predicates for the lexicon's normal_subjects
      after: [normal, within normal limits, not enlarged]   # "heart size is normal"
      before: [normal]                                      # "normal heart size"
      coordination: [and, ","]            # between subjects: "heart size and vascularity are normal"
      links: [is, are, remains]           # between the last subject and an "after" predicate
      others: [lungs, soft tissues]       # optional: no finding's subject, listed beside them ("heart and lungs")
    anaphoric_hedges:                     # a sentence pointing back with a hedged mimic ("This may be artifact.")
      anaphors: [this, these, it]         # how the sentence opens (after a list number)
      hedges: [may be, could represent]   # then a hedge ...
      mimics: [artifact, nipple shadow]   # ... followed within ``gap`` tokens by a mimic
      gap: 3                              # optional (default 3)

Unknown keys, categories or directions, and a cue listed twice are
:class:`~radsift.errors.LexiconError` naming the file and line.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from radsift.errors import LexiconError
from radsift.labels.yamlfile import LineDict, LineList, check_keys, load_yaml, read_text, string_list

PACKAGED_RULES = "radiology_rules.yaml"
NEGATED = "NEGATED_EXISTENCE"
POSSIBLE = "POSSIBLE_EXISTENCE"
PSEUDO = "PSEUDO_NEGATION"
TERMINATE = "TERMINATE"
# Ends only a negation's scope: "may be compatible with scarring" stays uncertain, while
# "no acute abnormality, findings compatible with emphysema" no longer denies emphysema.
NEGATION_END = "NEGATION_END"
# Mentions that are not assertions of the finding now (ConText's categories, Harkema et al. 2009): an
# indication, evaluation or recommendation ("evaluate for pneumothorax"), a history ("history of
# pneumonia"), an alternative of a differential ("atelectasis or scarring"). None states the finding, so
# each reads ``uncertain``; the rule name on the mention ("HISTORICAL:history of") says which it was.
HYPOTHETICAL = "HYPOTHETICAL"
HISTORICAL = "HISTORICAL"
# Yields to any negation of the same finding: "no pneumothorax or effusion" stays absent.
DIFFERENTIAL = "DIFFERENTIAL"
# ConText category -> mention status.
STATUS_OF = {NEGATED: "absent", POSSIBLE: "uncertain", HYPOTHETICAL: "uncertain", HISTORICAL: "uncertain",
             DIFFERENTIAL: "uncertain"}
CATEGORIES = (NEGATED, POSSIBLE, HYPOTHETICAL, HISTORICAL, DIFFERENTIAL, PSEUDO, TERMINATE, NEGATION_END)
# Categories that are written with direction TERMINATE.
_TERMINATORS = (TERMINATE, NEGATION_END)
DIRECTIONS = ("FORWARD", "BACKWARD", "BIDIRECTIONAL", "PSEUDO", "TERMINATE")
_TOP_KEYS = {"version", "rules", "normal_forms", "anaphoric_hedges"}
_GROUP_KEYS = {"category", "direction", "cues", "pattern", "name", "max_scope", "negatable", "negation_end", "types"}
_NORMAL_KEYS = {"after", "before", "coordination", "links", "others"}
_ANAPHORIC_KEYS = {"anaphors", "hedges", "mimics", "gap"}


@dataclass(frozen=True)
class CueRule:
    """One ConText cue.

    Attributes:
        literal: The cue phrase (or the rule's name for a token pattern).
        category: One of :data:`CATEGORIES`.
        direction: One of :data:`DIRECTIONS`.
        pattern: A spaCy token pattern, or None to match ``literal``.
        max_scope: Scope limit in tokens, or None for the whole sentence.
        negatable: A negation before this uncertainty cue rules the finding out.
        negation_end: NEGATION_END cues end this negation's scope (False for clinical denials, whose
            lists run through "with").
        types: The lexicon categories (lower case) the cue modifies; empty for all.
        line: Line in the rules file.
    """

    literal: str
    category: str
    direction: str
    pattern: list[dict[str, Any]] | None = None
    max_scope: int | None = None
    negatable: bool = False
    line: int = 0
    negation_end: bool = True
    types: tuple[str, ...] = ()

    @property
    def name(self) -> str:
        """Rule name recorded on mentions: ``NEGATED_EXISTENCE:no evidence of``."""
        return f"{self.category}:{self.literal}"


@dataclass(frozen=True)
class NormalForms:
    """Normal-state predicate phrases (see the module docstring)."""

    after: tuple[str, ...] = ()
    before: tuple[str, ...] = ()
    coordination: tuple[str, ...] = ()
    links: tuple[str, ...] = ()
    #: Structures that are no finding's normal subject but stand in a list of subjects ("the heart and lungs are
    #: normal"): skipped between coordinated subjects, so the predicate still reaches the heart.
    others: tuple[str, ...] = ()


@dataclass(frozen=True)
class AnaphoricHedges:
    """A sentence that opens by pointing back (an anaphor), hedges and names a mimic within ``gap`` tokens
    of the hedge ("This may be artifactual ...") makes the findings the sentence before it states uncertain
    (:mod:`radsift.labels.anaphora`). Phrases are lower case, whole tokens."""

    anaphors: tuple[str, ...] = ()
    hedges: tuple[str, ...] = ()
    mimics: tuple[str, ...] = ()
    gap: int = 3


@dataclass(frozen=True)
class Rules:
    """Loaded rules: ConText cues, normal forms and the hedges that reach back one sentence."""

    cues: tuple[CueRule, ...]
    normal_forms: NormalForms
    source: str
    anaphoric: AnaphoricHedges = AnaphoricHedges()


def _plain(value: Any) -> Any:
    """LineDict/LineList back to plain dict/list (for spaCy patterns)."""
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


def parse_rules(text: str, source: str) -> Rules:
    """Parse rules YAML text (see the module docstring for the format).

    Raises:
        LexiconError: Naming ``source`` and the line of the first problem.
    """
    data = load_yaml(text, source)
    if data is None:
        raise LexiconError(f"{source}: empty rules file")
    check_keys(data, _TOP_KEYS, {"rules"}, source, "rules file")
    if "version" in data and data["version"] != 1:
        raise LexiconError(f"{source}:{data.line_of('version')}: unsupported rules version {data['version']!r}")
    groups = data["rules"]
    if not isinstance(groups, LineList) or not groups:
        raise LexiconError(f"{source}:{data.line_of('rules')}: 'rules' must be a non-empty list")
    cues: list[CueRule] = []
    seen: dict[str, int] = {}
    for i, group in enumerate(groups):
        if not isinstance(group, LineDict):
            raise LexiconError(f"{source}:{groups.line_of(i)}: each rule group must be a mapping")
        check_keys(group, _GROUP_KEYS, {"category", "direction"}, source, "rule group")
        category, direction = group["category"], group["direction"]
        if category not in CATEGORIES:
            raise LexiconError(
                f"{source}:{group.line_of('category')}: unknown category {category!r} (one of {', '.join(CATEGORIES)})"
            )
        if not isinstance(direction, str) or direction.upper() not in DIRECTIONS:
            raise LexiconError(
                f"{source}:{group.line_of('direction')}: unknown direction {direction!r} (one of {', '.join(DIRECTIONS)})"
            )
        direction = direction.upper()
        if category in _TERMINATORS:
            allowed = ("TERMINATE",)
        elif category == PSEUDO:
            allowed = ("PSEUDO",)
        else:
            allowed = ("FORWARD", "BACKWARD", "BIDIRECTIONAL")
        if direction not in allowed:
            raise LexiconError(f"{source}:{group.line_of('direction')}: category {category} needs direction "
                               f"{' or '.join(allowed)}")
        max_scope = group.get("max_scope")
        if max_scope is not None and (not isinstance(max_scope, int) or isinstance(max_scope, bool) or max_scope < 1):
            raise LexiconError(f"{source}:{group.line_of('max_scope')}: max_scope must be a positive integer")
        negatable = group.get("negatable", False)
        if not isinstance(negatable, bool) or (negatable and category != POSSIBLE):
            raise LexiconError(
                f"{source}:{group.line_of('negatable')}: negatable must be true/false and only on {POSSIBLE}"
            )
        negation_end = group.get("negation_end", True)
        if not isinstance(negation_end, bool) or (not negation_end and category != NEGATED):
            raise LexiconError(
                f"{source}:{group.line_of('negation_end')}: negation_end must be true/false and only on {NEGATED}"
            )
        types = tuple(t.casefold() for t, _ in string_list(group, "types", source, "rule group"))
        has_cues, has_pattern = "cues" in group, "pattern" in group
        if has_cues == has_pattern:
            raise LexiconError(f"{source}:{group.line}: a rule group needs either 'cues' or 'pattern' (not both)")
        if has_pattern:
            pattern = group["pattern"]
            name = group.get("name")
            if not isinstance(name, str) or not name.strip():
                raise LexiconError(f"{source}:{group.line}: a 'pattern' rule needs a 'name'")
            if not isinstance(pattern, LineList) or not pattern or not all(isinstance(p, dict) for p in pattern):
                raise LexiconError(f"{source}:{group.line_of('pattern')}: 'pattern' must be a list of token mappings")
            entries = [(name.strip(), group.line_of("pattern"), _plain(pattern))]
        else:
            if "name" in group:
                raise LexiconError(f"{source}:{group.line_of('name')}: 'name' is only for 'pattern' rules")
            entries = [(c, ln, None) for c, ln in string_list(group, "cues", source, "rule group")]
            if not entries:
                raise LexiconError(f"{source}:{group.line_of('cues')}: 'cues' is empty")
        for literal, line, pattern in entries:
            key = " ".join(literal.casefold().split())
            if key in seen:
                raise LexiconError(f"{source}:{line}: cue {literal!r} is listed twice (first at line {seen[key]})")
            seen[key] = line
            cues.append(CueRule(key if pattern is None else literal, category, direction, pattern, max_scope,
                                negatable, line, negation_end, types))
    normal = NormalForms()
    if "normal_forms" in data:
        node = data["normal_forms"]
        check_keys(node, _NORMAL_KEYS, set(), source, "normal_forms")
        lists = {}
        for key in _NORMAL_KEYS:
            items = string_list(node, key, source, f"normal_forms.{key}")
            firsts: dict[str, int] = {}
            for phrase, line in items:
                k = " ".join(phrase.casefold().split())
                if k in firsts:
                    raise LexiconError(f"{source}:{line}: {key} phrase {phrase!r} is listed twice")
                firsts[k] = line
            lists[key] = tuple(p for p, _ in items)
        normal = NormalForms(**lists)
    return Rules(cues=tuple(cues), normal_forms=normal, source=source, anaphoric=_anaphoric(data, source))


def _anaphoric(data: LineDict, source: str) -> AnaphoricHedges:
    """The ``anaphoric_hedges`` section (empty when absent)."""
    if "anaphoric_hedges" not in data:
        return AnaphoricHedges()
    node = data["anaphoric_hedges"]
    check_keys(node, _ANAPHORIC_KEYS, {"anaphors", "hedges", "mimics"}, source, "anaphoric_hedges")
    lists = {}
    for key in ("anaphors", "hedges", "mimics"):
        items = [" ".join(p.casefold().split()) for p, _ in string_list(node, key, source, f"anaphoric_hedges.{key}")]
        if not items:
            raise LexiconError(f"{source}:{node.line_of(key)}: anaphoric_hedges.{key} is empty")
        lists[key] = tuple(items)
    gap = node.get("gap", 3)
    if not isinstance(gap, int) or isinstance(gap, bool) or gap < 0:
        raise LexiconError(f"{source}:{node.line_of('gap')}: anaphoric_hedges.gap must be a whole number >= 0")
    return AnaphoricHedges(gap=gap, **lists)


def load_rules(path: str | Path | None = None) -> Rules:
    """Load a rules file, or the packaged radiology rules when ``path`` is None.

    Raises:
        LexiconError: The file cannot be read or is malformed; the message names the file and line.
    """
    if path is None:
        return _packaged()
    source, text = read_text(path, PACKAGED_RULES, "rules")
    return parse_rules(text, source)


@lru_cache(maxsize=1)
def _packaged() -> Rules:
    source, text = read_text(None, PACKAGED_RULES, "rules")
    return parse_rules(text, source)
