"""MedQuAD as pools of answer passages and the queries over them (the passages protocol's data).

Two pools are built from :mod:`radsift.corpus.medquad`:

* the CDV test split (:func:`load_cdv`): every annotated answer, each query asked as its
  (entity, aspect) pair and as its natural-language question;
* the development split (:func:`dev_passage_data`): every answer of the MedQuAD documents that
  ``radsift train --recipe entity-aspect`` holds out (:func:`radsift.splits.split_medquad`),
  queried the same two ways.

Aspects are radsift's (:mod:`radsift.text.aspects`): the CDV split's aspect names and MedQuAD's
question types map onto them through :data:`CDV_ASPECTS` and the aspect map.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from radsift.corpus.medquad import read_cdv_test
from radsift.text.aspects import AspectError, entity_aspect_text, resolve_aspect

#: The CDV split's aspect names that are not headings of radsift's aspect map.
CDV_ASPECTS = {"exams and tests": "tests", "genetic changes": "genetics", "susceptibility": "risk_factors",
               "information": "information"}


@dataclass
class PassageQuery:
    """One query: its id, its texts by kind and its gold passage rows."""

    id: str
    texts: dict[str, str]
    gold: frozenset[int]


@dataclass
class PassageData:
    """A pool of passages and the queries over it."""

    passages: list[str]
    passage_ids: list[str]
    queries: list[PassageQuery]
    source: str = ""
    notes: list[str] = field(default_factory=list)


def cdv_aspect(aspect: str) -> str:
    """The radsift aspect of a CDV aspect name (``exams and tests`` -> ``tests``)."""
    return CDV_ASPECTS.get(aspect) or resolve_aspect(aspect)


def medquad_aspect(qtype: str) -> str | None:
    """The aspect of a MedQuAD question type (None when the map has none)."""
    try:
        return CDV_ASPECTS.get(qtype) or resolve_aspect(qtype)
    except AspectError:
        return None


def load_cdv(cdv_dir: str | Path, medquad_dir: str | Path) -> PassageData:
    """The CDV test split as a :class:`PassageData` (both query kinds)."""
    split = read_cdv_test(cdv_dir, medquad_dir)
    rows = {p.id: i for i, p in enumerate(split.passages)}
    queries = [PassageQuery(q.id, {"entity-aspect": entity_aspect_text(q.entity, cdv_aspect(q.aspect)),
                                   "natural": q.text}, frozenset(rows[g] for g in q.gold))
               for q in split.queries]
    return PassageData([p.text for p in split.passages], [p.id for p in split.passages], queries,
                       source=f"{cdv_dir} + {medquad_dir}")


def dev_passage_data(dev_docs) -> PassageData:
    """The development split as the passages protocol's data: every answer of the held-out MedQuAD
    documents, queried by (focus, aspect) and by its own question.

    A document that answers the same question in several parts (SeniorHealth splits "What is high
    blood cholesterol?" into up to 19 answers) gives one query whose gold is every part, as the CDV
    test split has one query per (entity, aspect): one query per part would ask the same text with
    different golds, and no ranking could score more than k of them at R@k.
    """
    texts, ids = [], []
    golds: dict[tuple[str, str], list[int]] = {}
    for d in dev_docs:
        for qa in d.qa:
            aspect = medquad_aspect(qa.qtype)
            if aspect is None:
                continue
            ids.append(f"{d.id}-{qa.qid}")
            texts.append(qa.answer.strip())
            golds.setdefault((entity_aspect_text(d.focus, aspect), qa.question), []).append(len(texts) - 1)
    queries = [PassageQuery(f"dev{i + 1}", {"entity-aspect": ea, "natural": question}, frozenset(rows))
               for i, ((ea, question), rows) in enumerate(golds.items())]
    return PassageData(texts, ids, queries, source="development split (held-out MedQuAD training documents)")


def passage_data_to_json(data: PassageData) -> dict:
    """A JSON-ready form of ``data`` (to carry a benchmark's pool and queries to another machine)."""
    return {"passages": list(data.passages), "passage_ids": list(data.passage_ids), "source": data.source,
            "notes": list(data.notes), "queries": [[q.id, q.texts, sorted(q.gold)] for q in data.queries]}


def passage_data_from_json(obj: dict) -> PassageData:
    """The inverse of :func:`passage_data_to_json`."""
    return PassageData(list(obj["passages"]), list(obj["passage_ids"]),
                       [PassageQuery(i, dict(texts), frozenset(gold)) for i, texts, gold in obj["queries"]],
                       source=obj.get("source", ""), notes=list(obj.get("notes", [])))
