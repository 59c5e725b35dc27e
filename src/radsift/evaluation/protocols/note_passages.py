"""Protocol ``note-passages``: answer passages of held-out clinical notes, as CAPR measures on MIMIC-III.

CAPR (Grundmann et al.) also tests its models on the notes they come from: held-out notes, (entity,
aspect) queries extracted automatically from their headings and entities, candidates per query. Here,
on MTSamples (:mod:`radsift.models.training.entity_aspect_notes`):

* the notes are split by a hash of their text into training (80%), development (10%) and test
  (10%) notes; the notes-only training reads the training notes only;
* the pool is the passages of the held-out notes of one side (``dev`` to tune on, ``test`` to
  report): sections of known aspects, windows of 180 words;
* the entity dictionary is the notes-only one built from the training notes (packaged lexicon,
  heading items, noun phrases); each distinct (entity, aspect) found in the pool is one query, its
  gold every pool passage of that aspect mentioning that entity, asked when it has at most 3 golds;
* candidates, three rules: ``bm25-64`` (BM25's top 64 over the pool, no gold appended: the
  primary figure), ``bm25-64+gold`` (missed golds appended; secondary) and ``random-64`` (the golds
  among random pool passages, 64 in all, seeded: CAPR's rule for notes);
* scoring and ties as the ``passages`` protocol (:mod:`.passage_retrieval`): identical texts score
  alike, ties count as the expected value over their orders; R@1 and R@5 with Wilson intervals.
"""

from __future__ import annotations

from typing import Callable, Sequence

from radsift.corpus.medquad_passages import PassageData
from radsift.evaluation.protocols.base import ProtocolResult, no_log
from radsift.evaluation.protocols.passage_retrieval import (DEPTH, RULE_APPENDED, RULE_BM25, RULE_RANDOM, RULE_TEXT,
                                                            append_gold, bm25_candidates, ceiling, evaluate_rules,
                                                            random_candidates, rule_tables, sample_queries)
from radsift.evaluation.systems.passage_systems import BM25Passages
from radsift.labels.note_entities import notes_entity_dictionary
from radsift.models.training.entity_aspect_notes import note_passage_data, split_notes
from radsift.records import Report

KEY = "note-passages"
TITLE = "Answer passages of held-out clinical notes by (entity, aspect) (MTSamples, CAPR's notes protocol)"
KIND = "entity-aspect"
RULES = (RULE_BM25, RULE_APPENDED, RULE_RANDOM)
SPLITS = ("test", "dev")


def load_note_split(reports: Sequence[Report], split: str = "test") -> PassageData:
    """The held-out notes of ``split`` (``test`` or ``dev``) as the protocol's data, queried with the
    dictionary of the training notes (what the notes-only setting trains with)."""
    sides = split_notes(reports)
    dictionary = notes_entity_dictionary(sides["train"])
    return note_passage_data(sides[split], dictionary, source=f"{split} notes (held-out MTSamples, hash of the note)")


def note_candidates(data: PassageData, queries, depth: int = DEPTH, seed: int = 0) -> dict[str, dict[str, list]]:
    """rule -> {"entity-aspect": per-query candidate rows} for the three rules."""
    golds = [q.gold for q in queries]
    bm25 = BM25Passages()
    bm25.prepare(data.passages)
    primary = bm25_candidates(bm25, [q.texts[KIND] for q in queries], depth)
    return {RULE_BM25: {KIND: primary}, RULE_APPENDED: {KIND: append_gold(primary, golds)},
            RULE_RANDOM: {KIND: random_candidates(len(data.passages), golds, depth, seed)}}


def run_note_passages(data: PassageData, systems: Sequence, *, depth: int = DEPTH, max_queries: int | None = None,
                      seed: int = 0, log: Callable[[str], None] = no_log) -> ProtocolResult:
    """Score every system under the three candidate rules; R@1 and R@5 with Wilson intervals."""
    queries = sample_queries(data.queries, max_queries, seed)
    candidates = note_candidates(data, queries, depth, seed)
    results, per_query, seconds = evaluate_rules(systems, data.passages, queries, candidates, log=log)
    golds = [q.gold for q in queries]
    top = candidates[RULE_BM25][KIND]
    missed = sum(not set(c) & g for c, g in zip(top, golds))
    notes = {(RULE_BM25, KIND): f"{missed} of {len(queries)} queries have no gold among them: no system can pass "
                                f"{100 * ceiling(top, golds):.2f}% R@k.",
             (RULE_RANDOM, KIND): f"Seed {seed}."}
    tables = rule_tables(results, RULES, [KIND], len(queries), len(data.passages), notes)
    description = (__doc__ or "").split("\n\n", 1)[1].strip()
    data_out = {"systems": results, "queries": len(queries), "passages": len(data.passages), "depth": depth,
                "rules": {r: RULE_TEXT[r] for r in RULES}, "queries_without_gold": missed,
                "gold_per_query": round(sum(len(g) for g in golds) / max(1, len(golds)), 2),
                "ceiling": round(100 * ceiling(top, golds), 2), "source": data.source, "per_query_hit1": per_query,
                "seconds": seconds}
    return ProtocolResult(key=KEY, title=TITLE, description=description, tables=tables, data=data_out,
                          notes=list(data.notes))
