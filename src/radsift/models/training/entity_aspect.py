"""Recipe ``entity-aspect``: CAPR's self-supervision (Grundmann, Arnold & Löser) on clinical notes and MedQuAD.

Notes are split into passages at their headings (:func:`radsift.text.aspects.note_passages`; a
passage longer than :data:`~radsift.text.aspects.WINDOW_WORDS` words becomes overlapping
windows); the dictionary NER (:mod:`radsift.labels.entities`) finds the entities of each
passage; the self-supervised query of a passage is ``(entity, aspect)`` with the aspect its
heading normalised (:func:`radsift.text.aspects.entity_aspect_text`). MedQuAD documents give
passages too: each answer, its aspect the question type, its entity the document's focus.

Training data never includes a document of the CDV test split (:func:`radsift.corpus.medquad.test_document_ids`)
nor a passage whose text equals a test passage; ``dev_fraction`` of the remaining MedQuAD
documents are held out as the development split (the one tuned on).

Each example has one hard negative from its own note, as CAPR draws them: the same entity under
another aspect, or the same aspect without the entity (else a passage of the same aspect from
another note). The loss is the listwise in-batch cross-entropy (multiple-negatives ranking loss)
over the batch's positives and hard negatives. No batch holds two examples of one note or one
entity, nor a passage that answers another example's query (no false negatives).

The same examples train the poly-encoder (``model_type: poly``; in-batch cross-entropy on its
scores) and the cross-encoder (``model_type: cross``; cross-entropy over the positive, the hard
negative and ``rerank_negatives`` other passages of the batch).
"""

from __future__ import annotations

import random
import re
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Sequence

from radsift.errors import ConfigError, CorpusError
from radsift.records import Report

#: Where ``radsift train`` looks for MedQuAD and the CDV split when no folder is given (beside the project).
DEFAULT_DATA_DIR = Path("../shared/data")
#: Where a run with ``eval_every`` keeps its latest checkpoint (removed once the final model is saved).
CHECKPOINT_DIR = "checkpoint"
#: Entities of one passage that become queries (the first ones in reading order).
MAX_ENTITIES_PER_PASSAGE = 3
_WS = re.compile(r"\s+")


def _key(text: str) -> str:
    return _WS.sub(" ", text).strip().casefold()


@dataclass(frozen=True)
class EAPassage:
    """A training passage: its note, source, aspect, text and the entity keys it mentions."""

    note: str
    source: str
    aspect: str
    text: str
    entities: frozenset[str]


@dataclass(frozen=True)
class EAExample:
    """One self-supervised example: the query's entity (as written) and aspect, its passage row."""

    entity: str
    key: str
    aspect: str
    positive: int
    note: str
    source: str

    @property
    def query(self) -> str:
        from radsift.text.aspects import entity_aspect_text

        return entity_aspect_text(self.entity, self.aspect)


@dataclass
class EAData:
    """Passages and examples of the recipe, with the development split.

    Attributes:
        passages: Training passages.
        examples: Training examples.
        dev_docs: Held-out MedQuAD documents (development split; never trained on).
        test_ids: Document ids of the CDV test split (excluded).
        stats: Counts for the model card.
    """

    passages: list[EAPassage]
    examples: list[EAExample]
    dev_docs: list = field(default_factory=list)
    test_ids: frozenset[str] = frozenset()
    stats: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.by_note: dict[str, list[int]] = defaultdict(list)
        self.by_aspect: dict[str, list[int]] = defaultdict(list)
        for i, p in enumerate(self.passages):
            self.by_note[p.note].append(i)
            self.by_aspect[p.aspect].append(i)

    def notes(self) -> set[str]:
        """Every note/document id that gave a training passage."""
        return {p.note for p in self.passages}


def resolve_data_dirs(medquad_dir: str | None, cdv_dir: str | None) -> tuple[Path | None, Path | None]:
    """MedQuAD and CDV folders: as given, else ``../shared/data/{medquad,medquad-cdv-test}`` when present."""
    mq = Path(medquad_dir) if medquad_dir else DEFAULT_DATA_DIR / "medquad"
    cdv = Path(cdv_dir) if cdv_dir else DEFAULT_DATA_DIR / "medquad-cdv-test"
    if medquad_dir and not mq.is_dir():
        raise ConfigError(f"medquad_dir: {mq} is not a folder")
    if cdv_dir and not cdv.is_dir():
        raise ConfigError(f"cdv_dir: {cdv} is not a folder")
    return (mq if mq.is_dir() else None), (cdv if cdv.is_dir() else None)


def medquad_aspect(qtype: str) -> str | None:
    """The aspect of a MedQuAD question type (None when the map has none)."""
    from radsift.evaluation.protocols.passage_retrieval import CDV_ASPECTS
    from radsift.text.aspects import AspectError, resolve_aspect

    try:
        return CDV_ASPECTS.get(qtype) or resolve_aspect(qtype)
    except AspectError:
        return None


def split_medquad(docs: Iterable, test_ids: frozenset[str], dev_fraction: float, seed: int) -> tuple[list, list]:
    """MedQuAD documents outside the test split, as (training, development): ``dev_fraction`` of them,
    drawn by :func:`radsift.splits.heldout_ids` with ``seed``, form the development split."""
    from radsift.splits import heldout_ids

    docs = [d for d in docs if d.id not in test_ids]
    dev_ids = heldout_ids([d.id for d in docs], dev_fraction, seed) if docs and dev_fraction > 0 else set()
    return [d for d in docs if d.id not in dev_ids], [d for d in docs if d.id in dev_ids]


def build_entity_aspect_data(reports: Iterable[Report], *, medquad_docs: Iterable = (), test_ids: frozenset[str] = frozenset(),
                             test_texts: Iterable[str] = (), dev_fraction: float = 0.1, seed: int = 0,
                             dictionary=None, max_words: int | None = None,
                             log: Callable[[str], None] | None = None) -> EAData:
    """Passages and (entity, aspect) examples from notes and MedQuAD documents.

    Args:
        reports: Clinical notes (their sections are the passages; duplicate texts count once).
        medquad_docs: MedQuAD documents (:class:`radsift.corpus.medquad.MedQuADDocument`).
        test_ids: Document ids never to use (the CDV test split).
        test_texts: Passage texts never to train on (the test split's answers).
        dev_fraction: Share of the remaining MedQuAD documents held out for development.
        seed: Seed of the development split.
        dictionary: An :class:`radsift.labels.entities.EntityDictionary` (default: built from the
            training MedQuAD documents and the packaged lexicon).
        max_words: Window size for long passages (default :data:`radsift.text.aspects.WINDOW_WORDS`).
    """
    from radsift.labels.entities import build_entity_dictionary
    from radsift.text.aspects import OTHER, UNSPECIFIED, WINDOW_OVERLAP, WINDOW_WORDS, aspect_map, passage_windows

    say = log or (lambda m: None)
    max_words = max_words or WINDOW_WORDS
    amap = aspect_map()
    banned_text = {_key(t) for t in test_texts}
    train_docs, dev_docs = split_medquad(medquad_docs, test_ids, dev_fraction, seed)
    if dictionary is None:
        dictionary = build_entity_dictionary(train_docs)
    passages: list[EAPassage] = []
    examples: list[EAExample] = []
    seen_text: set[str] = set()
    dropped = {"test_text": 0, "duplicate": 0}

    def add_passage(note: str, source: str, aspect: str, text: str, entities: frozenset[str]) -> int | None:
        k = _key(text)
        if k in banned_text:
            dropped["test_text"] += 1
            return None
        if k in seen_text:
            dropped["duplicate"] += 1
            return None
        seen_text.add(k)
        passages.append(EAPassage(note, source, aspect, text, entities))
        return len(passages) - 1

    # Notes: sections -> windows -> dictionary NER.
    pending: list[tuple[str, str, str]] = []
    seen_notes: set[str] = set()
    for r in reports:
        whole = _key(r.text())
        if not whole or whole in seen_notes or r.id in test_ids:
            continue
        seen_notes.add(whole)
        for heading, text in r.sections.items():
            aspect = amap.aspect_of(heading)
            if aspect in (OTHER, UNSPECIFIED) or not text.strip():
                continue
            for w in passage_windows(text, max_words, WINDOW_OVERLAP):
                pending.append((r.id, aspect, w))
    say(f"entity-aspect: {len(seen_notes)} distinct notes, {len(pending)} note passages; dictionary NER "
        f"({len(dictionary)} entities, {dictionary.phrase_count} phrases) ...")
    mentions = dictionary.find_many([t for _, _, t in pending])
    for (note, aspect, text), found in zip(pending, mentions):
        names = list(dict.fromkeys(m.entity for m in found))
        if not names:
            continue
        row = add_passage(note, "notes", aspect, text, frozenset(_key(n) for n in names))
        if row is None:
            continue
        surface = {m.entity: m.text for m in reversed(found)}  # the first mention's wording
        for name in names[:MAX_ENTITIES_PER_PASSAGE]:
            examples.append(EAExample(surface[name], _key(name), aspect, row, note, "notes"))
    n_note_examples = len(examples)
    # MedQuAD training documents: each answer, its focus entity, its question type as aspect.
    for d in train_docs:
        keys = frozenset([_key(d.focus)] + [_key(s) for s in d.synonyms])
        for qa in d.qa:
            aspect = medquad_aspect(qa.qtype)
            if aspect is None:
                continue
            for w in passage_windows(qa.answer.strip(), max_words, WINDOW_OVERLAP)[:1]:
                row = add_passage(d.id, "medquad", aspect, w, keys)
                if row is not None:
                    examples.append(EAExample(d.focus, _key(d.focus), aspect, row, d.id, "medquad"))
    data = EAData(passages, examples, dev_docs=dev_docs, test_ids=frozenset(test_ids))
    leaked = data.notes() & set(test_ids)
    if leaked:  # a guard, not a filter: the code above must never let one through
        raise CorpusError(f"test-split documents reached the training data: {sorted(leaked)[:3]}")
    if not examples:
        raise CorpusError("entity-aspect: no (entity, aspect) example: no known heading with a dictionary entity "
                          "in the notes, and no MedQuAD training document")
    data.stats = {"notes": len(seen_notes), "medquad_train_docs": len(train_docs), "medquad_dev_docs": len(dev_docs),
                  "test_docs_excluded": len(test_ids), "passages": len(passages), "examples": len(examples),
                  "note_examples": n_note_examples, "medquad_examples": len(examples) - n_note_examples,
                  "dropped_test_text": dropped["test_text"], "dropped_duplicate_text": dropped["duplicate"],
                  "dictionary_entities": len(dictionary), "dictionary_phrases": dictionary.phrase_count}
    say("entity-aspect data: " + ", ".join(f"{k} {v}" for k, v in data.stats.items()))
    return data


class EASampler:
    """Batches of compatible examples, each with one hard negative from its own note.

    Args:
        data: The passages and examples.
        batch_size: Examples per batch.
        rng: Seeded random source.
        medquad_share: Share of examples drawn from MedQuAD (the rest from the notes), when both exist.
        hard_negatives: Draw the note's hard negatives (False: a random passage of another note).
    """

    def __init__(self, data: EAData, batch_size: int, rng: random.Random, medquad_share: float = 0.5,
                 hard_negatives: bool = True) -> None:
        self.data, self.batch_size, self.rng, self.hard = data, batch_size, rng, hard_negatives
        self.pools = {s: [i for i, e in enumerate(data.examples) if e.source == s] for s in ("notes", "medquad")}
        self.share = medquad_share if self.pools["notes"] and self.pools["medquad"] else (
            1.0 if self.pools["medquad"] else 0.0)

    def relevant(self, passage: int, example: EAExample) -> bool:
        """Whether ``passage`` answers ``example``'s query (then it must not be its negative)."""
        p = self.data.passages[passage]
        return p.aspect == example.aspect and example.key in p.entities

    def negative(self, e: EAExample) -> int:
        """A hard negative of ``e``: same note, same entity other aspect / same aspect other entity."""
        d, rng = self.data, self.rng
        if self.hard:
            same = [i for i in d.by_note[e.note] if i != e.positive and not self.relevant(i, e)]
            other_aspect = [i for i in same if e.key in d.passages[i].entities]
            other_entity = [i for i in same if d.passages[i].aspect == e.aspect]
            options = [o for o in (other_aspect, other_entity) if o]
            if options:
                return rng.choice(rng.choice(options))
            pool = d.by_aspect[e.aspect]
        else:
            pool = range(len(d.passages))
        for _ in range(20):
            i = pool[rng.randrange(len(pool))] if isinstance(pool, list) else rng.randrange(len(d.passages))
            if d.passages[i].note != e.note and not self.relevant(i, e):
                return i
        n = len(d.passages)  # last resort: the next passage of another note, from a random place
        first = rng.randrange(n)
        for k in range(n):
            i = (first + k) % n
            if d.passages[i].note != e.note and not self.relevant(i, e):
                return i
        return first

    def next_batch(self) -> list[tuple[EAExample, int]]:
        """Up to ``batch_size`` (example, negative row) pairs, no passage relevant to another's query."""
        batch: list[tuple[EAExample, int]] = []
        notes, keys = set(), set()
        tries = 0
        while len(batch) < self.batch_size and tries < 50 * self.batch_size:
            tries += 1
            pool = self.pools["medquad"] if self.rng.random() < self.share else self.pools["notes"]
            e = self.data.examples[pool[self.rng.randrange(len(pool))]]
            if e.note in notes or e.key in keys:
                continue
            neg = self.negative(e)
            rows = [e.positive, neg]
            if any(self.relevant(r, o) for o, _ in batch for r in rows) or any(
                    self.relevant(r, e) for o, n in batch for r in (o.positive, n)):
                continue
            batch.append((e, neg))
            notes.add(e.note)
            keys.add(e.key)
        return batch


class EntityAspectRecipe:
    """Bi-encoder steps: MNRL over (query, positive, hard negative) with in-batch negatives."""

    kind = "entity-aspect"

    def __init__(self, model, data: EAData, config, rng: random.Random) -> None:
        from sentence_transformers.sentence_transformer.losses import MultipleNegativesRankingLoss

        self.model, self.data, self.config = model, data, config
        self.sampler = EASampler(data, config.batch_size, rng, config.medquad_share, config.entity_hard_negatives)
        self.loss = MultipleNegativesRankingLoss(model, scale=config.scale)

    def columns(self, batch) -> list[list[str]]:
        p = self.data.passages
        return [[e.query for e, _ in batch], [p[e.positive].text for e, _ in batch], [p[n].text for _, n in batch]]

    def step(self, optimizer):
        from radsift.models.training.embedding import embed_columns_bucketed
        from radsift.models.training.loop import StepResult

        self.model.train(True)
        self.model.max_seq_length = self.config.section_max_seq_length
        embs = embed_columns_bucketed(self.model, self.columns(self.sampler.next_batch()))
        return StepResult(self.kind, optimizer.step(self.loss.compute_loss_from_embeddings(embs, None)))


class PolyRecipe(EntityAspectRecipe):
    """Poly-encoder steps: cross-entropy of each query over the batch's positives and hard negatives."""

    kind = "entity-aspect-poly"

    def __init__(self, poly, data: EAData, config, rng: random.Random) -> None:
        self.poly, self.model, self.data, self.config = poly, poly.model, data, config
        self.sampler = EASampler(data, config.batch_size, rng, config.medquad_share, config.entity_hard_negatives)

    def step(self, optimizer):
        import torch

        from radsift.models.training.loop import StepResult
        from radsift.models.poly_encoder import PolyHead

        self.model.train(True)
        self.model.max_seq_length = self.config.section_max_seq_length
        queries, positives, negatives = self.columns(self.sampler.next_batch())
        q = self.poly.forward_queries(queries)
        codes = self.poly.forward_passages(positives + negatives)
        scores = PolyHead.scores(q, codes) * self.config.scale
        loss = torch.nn.functional.cross_entropy(scores, torch.arange(len(queries)))
        return StepResult(self.kind, optimizer.step(loss))


class CrossRecipe(EntityAspectRecipe):
    """Cross-encoder steps: listwise in-batch cross-entropy, as CAPR trains all three models.

    Each query's group is its positive, its hard negative and ``rerank_negatives`` passages of other
    examples in the batch (their positives or hard negatives; the sampler keeps them irrelevant to
    it): the library's cross-encoder multiple-negatives ranking loss over the group's scores.
    """

    kind = "entity-aspect-cross"

    def __init__(self, model, data: EAData, config, rng: random.Random) -> None:
        import torch
        from sentence_transformers.cross_encoder.losses import MultipleNegativesRankingLoss

        self.model, self.data, self.config, self.rng = model, data, config, rng
        self.sampler = EASampler(data, config.batch_size, rng, config.medquad_share, config.entity_hard_negatives)
        # The loss draws its in-batch negatives with torch's generator: seed it for a reproducible run.
        torch.manual_seed(config.seed)
        self.loss = MultipleNegativesRankingLoss(model, num_negatives=config.rerank_negatives)

    def step(self, optimizer):
        import torch

        from radsift.models.training.loop import StepResult

        self.model.train(True)
        columns = self.columns(self.sampler.next_batch())
        return StepResult(self.kind, optimizer.step(self.loss(columns, torch.zeros(len(columns[0])))))


def dev_passage_data(dev_docs) -> "PassageData":  # noqa: F821
    """The development split as the passages protocol's data: every answer of the held-out MedQuAD
    documents, queried by (focus, aspect) and by its own question.

    A document that answers the same question in several parts (SeniorHealth splits "What is high
    blood cholesterol?" into up to 19 answers) gives one query whose gold is every part, as the CDV
    test split has one query per (entity, aspect): one query per part would ask the same text with
    different golds, and no ranking could score more than k of them at R@k.
    """
    from radsift.evaluation.protocols.passage_retrieval import PassageData, PassageQuery
    from radsift.text.aspects import entity_aspect_text

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


def load_sources(config, say):
    """MedQuAD training candidates, the test split's document ids and passage texts."""
    from radsift.corpus.medquad import read_cdv_test, read_medquad, test_document_ids

    mq, cdv = resolve_data_dirs(config.medquad_dir, config.cdv_dir)
    docs, test_ids, test_texts = [], frozenset(), []
    if mq is not None:
        docs = list(read_medquad(mq))
        if cdv is None:
            raise ConfigError(f"MedQuAD found at {mq} but not the CDV test split: give cdv_dir so that its documents "
                              "are kept out of training")
        test_ids = test_document_ids(cdv)
        test_texts = [p.text for p in read_cdv_test(cdv, mq).passages]
        say(f"MedQuAD: {len(docs)} documents with answers, {len(test_ids)} test-split documents excluded ({cdv})")
    else:
        say("MedQuAD: not found (pass medquad_dir): training on the notes alone")
    return docs, test_ids, test_texts


def train_entity_aspect(reports, config, out: Path, base_path: Path, *, progress: bool = True,
                        log: Callable[[str], None] | None = None, start: float | None = None):
    """The ``entity-aspect`` recipe end to end (called by :func:`radsift.models.training.train`)."""
    import time

    from radsift.models.training.loop import Optimizer, run_loop
    from radsift.models.training.modelcard import write_model_card
    from radsift.models.training.runner import TrainResult, _info

    say = log or (lambda m: None)
    start = time.monotonic() if start is None else start
    docs, test_ids, test_texts = load_sources(config, say)
    data = build_entity_aspect_data(reports, medquad_docs=docs, test_ids=test_ids, test_texts=test_texts,
                                    dev_fraction=config.dev_fraction, seed=config.heldout_seed, log=say)
    rng = random.Random(config.seed)
    poly = None
    if config.model_type == "bi":
        from sentence_transformers import SentenceTransformer

        model = SentenceTransformer(str(base_path), device="cpu", local_files_only=True)
        recipe = EntityAspectRecipe(model, data, config, rng)
        params = list(model.parameters())
    elif config.model_type == "poly":
        from radsift.models.poly_encoder import PolyEncoder

        poly = PolyEncoder.new(str(base_path), config.poly_codes, seed=config.seed)
        model = poly.model
        recipe = PolyRecipe(poly, data, config, rng)
        params = list(model.parameters()) + [poly.codes]
    else:
        from radsift.models.training.rerank import build_cross_encoder

        model = build_cross_encoder(str(base_path), config.section_max_seq_length)
        recipe = CrossRecipe(model, data, config, rng)
        params = list(model.parameters())
    optimizer = Optimizer(params, config)
    curve: list[dict[str, Any]] = []
    checkpoint = out / CHECKPOINT_DIR

    def step(i: int):
        result = recipe.step(optimizer)
        if config.eval_every and (i + 1) % config.eval_every == 0 and i + 1 < config.max_steps:
            # Save, then score the dev split's (entity, aspect) queries: the learning curve, and a model
            # that survives an interrupted run. The dev split is the one tuned on, never the test split.
            _save(model, poly, checkpoint, config)
            if data.dev_docs:
                figures = evaluate_on_dev(checkpoint, config, data.dev_docs, say, kinds=("entity-aspect",))
                curve.append({"step": i + 1, "seconds": round(time.monotonic() - start, 1),
                              **{k: v for k, v in figures["dev"]["trained"]["entity-aspect"].items() if "CI" not in k}})
                say(f"step {i + 1}: development split (entity, aspect) R@1 {curve[-1]['R@1']}, R@5 {curve[-1]['R@5']}")
            model.train(True)
        return result

    loop = run_loop(step, config, desc=f"training entity-aspect ({config.model_type})", progress=progress, log=say)
    say(f"trained {loop.steps} steps in {loop.seconds:.0f} s" + (" (time limit)" if loop.stopped_early else ""))
    _save(model, poly, out, config)
    evaluation: dict[str, Any] = {}
    if config.evaluate and data.dev_docs:
        evaluation = evaluate_on_dev(out, config, data.dev_docs, say)
    if curve:
        evaluation["dev_curve"] = curve
    if checkpoint.is_dir():  # the final model is saved: the checkpoint has served
        import shutil

        shutil.rmtree(checkpoint, ignore_errors=True)
    kind = {"bi": "bi-encoder", "poly": "poly-encoder", "cross": "cross-encoder"}[config.model_type]
    info = _info(config, data.stats, loop.to_dict(), {}, base_path, kind, start)
    write_model_card(out, info)
    if evaluation:  # the card's held-out section speaks of weak labels: the dev figures get their own
        import json

        from radsift.models.training.modelcard import TRAINING_JSON

        (out / TRAINING_JSON).write_text(json.dumps({**info, "evaluation": evaluation}, indent=2, default=str) + "\n",
                                         encoding="utf-8")
        lines = ["", "## Development split", ""]
        if "dev" in evaluation:
            lines += [f"{evaluation['dev_queries']} queries over the answers of {len(data.dev_docs)} held-out MedQuAD "
                      "training documents (never the CDV test split), candidates BM25's top 64 plus the gold: "
                      "% R@1 / R@5.", "", "| system | query kind | R@1 | R@5 |", "|---|---|---|---|"]
            for name, by_kind in evaluation["dev"].items():
                for qkind, figures in by_kind.items():
                    lines.append(f"| {name} | {qkind} | {figures['R@1']} | {figures['R@5']} |")
        if curve:
            lines += ["", "Learning curve, (entity, aspect) queries of the development split:", "",
                      "| step | seconds | R@1 | R@5 |", "|---|---|---|---|"]
            lines += [f"| {c['step']} | {c['seconds']} | {c['R@1']} | {c['R@5']} |" for c in curve]
        with (out / "README.md").open("a", encoding="utf-8") as fh:
            fh.write("\n".join(lines) + "\n")
    return TrainResult(out, config, data.stats, loop.to_dict(), evaluation, time.monotonic() - start)


def _save(model, poly, out: Path, config) -> None:
    """Save the model being trained (bi-encoder, poly-encoder or cross-encoder) to ``out``."""
    model.eval()
    if poly is not None:
        poly.save(out)
        return
    if config.model_type == "bi":
        model.max_seq_length = config.section_max_seq_length
    model.save(str(out))


def evaluate_on_dev(model_dir: Path, config, dev_docs, say: Callable[[str], None],
                    kinds: Sequence[str] | None = None) -> dict[str, Any]:
    """R@1/R@5 of the trained model (and BM25) on the development split, the passages protocol's way
    (``kinds``: the query kinds to score, default both)."""
    from radsift.evaluation.protocols.passage_retrieval import report_json, run_passages
    from radsift.evaluation.systems.passage_systems import PassageSpec, build_passage_systems

    if config.model_type == "bi":
        spec = PassageSpec("dense", model=str(model_dir), name="trained")
    elif config.model_type == "poly":
        spec = PassageSpec("poly", model=str(model_dir), name="trained")
    else:  # the cross-encoder re-scores the head of the bi-encoder it started from (the packaged one by default)
        spec = PassageSpec("rerank", model=config.base_model, reranker=str(model_dir), name="trained")
    systems = build_passage_systems([PassageSpec("bm25"), spec], threads=config.threads)
    result = run_passages(dev_passage_data(dev_docs), systems, max_queries=config.dev_max_queries,
                          seed=config.seed, log=say, **({"kinds": tuple(kinds)} if kinds else {}))
    return {"dev": report_json(result), "dev_queries": result.data["queries"]}
