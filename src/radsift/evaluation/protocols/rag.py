"""Retrieval-augmented diagnosis and impression drafting (RadSearch's LLM experiment).

RadSearch (Radiology 2025) gave Llama 3.1 8B 100 finding descriptions: alone it named the right
diagnosis in 30, with the most similar full report (retrieved by the findings-to-impression model)
in its prompt in 61. This protocol repeats the design with any back-end
(:mod:`radsift.rag.llm`) and the bench's systems as retrievers:

**Diagnosis.** The finding descriptions of ``evaluation/data/rag_findings.yaml`` (written for radsift,
each with a reference diagnosis named as a lexicon concept, plus concepts accepted as the same
diagnosis) are answered (a) by the LLM alone, then with the top report retrieved by each system
(the description ranks the corpus's distinct impressions: findings-to-impression; the report of
the top impression, findings and impression, goes into the prompt as ``[1]``), and (e) by retrieval
alone: the diagnosis read off that report's impression. An answer is right when the labeler
(:class:`radsift.labels.Labeler`) reads the reference concept, by any of its lexicon names, as
present or uncertain in it. Accuracy gets a Wilson 95% interval; each condition is compared with
(a) by McNemar's test on the same descriptions (Bonferroni over the comparisons).

**Impression drafting.** Held-out reports (the split of ``radsift train``: ``--holdout-fraction``,
``--seed``) with both sections: their findings retrieve the 3 most similar impressions among the
other reports (the last system of the run retrieves), and the impression is (1) the top one,
unchanged (retrieval only), (2) drafted by the LLM from the findings alone, (3) drafted from the
findings and the retrieved impressions. Each is read by the labeler, as is the real impression:
finding-level F1 over (finding, status) pairs, status-aware (stating "no effusion" where the real
one says "effusion" is wrong), per report (1 when both state nothing), with a t interval, and
paired randomization tests between the conditions.
"""

from __future__ import annotations

import json
import random
import time
from dataclasses import dataclass
from importlib.resources import files
from pathlib import Path
from typing import Sequence

from radsift.errors import ConfigError
from radsift.evaluation.protocols.base import Log, ProtocolResult, Table, mean_ci, no_log, paired_comparisons, percent, pvalue, skipped, with_ci
from radsift.evaluation.protocols.findings_impression import impression_key
from radsift.evaluation.stats import bonferroni, mcnemar, wilson_interval
from radsift.rag.answer import answer_from_reports
from radsift.rag.llm.base import LLMError
from radsift.splits import is_held_out
from radsift.text.sentences import split_sentences

KEY = "rag"
TITLE = "Retrieval-augmented diagnosis and impression drafts (RadSearch)"
CASES_FILE = "rag_findings.yaml"
#: Statuses that count as naming a diagnosis (a differential's "possible pneumonia" names it).
NAMING = ("present", "uncertain")
ALONE = "LLM alone"


@dataclass(frozen=True)
class Case:
    """A finding description and its reference diagnosis (lexicon concepts)."""

    id: str
    findings: str
    diagnosis: str
    also: tuple[str, ...] = ()

    @property
    def accepted(self) -> frozenset[str]:
        return frozenset((self.diagnosis, *self.also))


def load_cases(path: str | Path | None = None, lexicon=None) -> list[Case]:
    """The finding descriptions (default: the packaged file), checked against the lexicon.

    Raises:
        ConfigError: A malformed file, a repeated id, or a diagnosis the lexicon does not know.
    """
    import yaml

    source = str(path) if path is not None else f"radsift/evaluation/data/{CASES_FILE}"
    try:
        text = Path(path).read_text(encoding="utf-8") if path is not None else \
            (files("radsift.evaluation") / "data" / CASES_FILE).read_text(encoding="utf-8")
        raw = yaml.safe_load(text)
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        raise ConfigError(f"{source}: cannot read it ({exc})") from None
    if not isinstance(raw, dict) or not isinstance(raw.get("cases"), list):
        raise ConfigError(f"{source}: needs a 'cases' list")
    cases, seen = [], set()
    for i, c in enumerate(raw["cases"], 1):
        if not isinstance(c, dict) or not all(isinstance(c.get(k), str) and c[k].strip()
                                              for k in ("id", "findings", "diagnosis")):
            raise ConfigError(f"{source}: case {i} needs id, findings and diagnosis (text)")
        if c["id"] in seen:
            raise ConfigError(f"{source}: case {i}: id {c['id']!r} is repeated")
        seen.add(c["id"])
        case = Case(c["id"], " ".join(c["findings"].split()), c["diagnosis"], tuple(c.get("also") or ()))
        if lexicon is not None:
            unknown = [n for n in case.accepted if n not in lexicon]
            if unknown:
                raise ConfigError(f"{source}: case {case.id}: {unknown[0]!r} is not a concept of the lexicon")
        cases.append(case)
    return cases


def stated(text: str, labeler) -> set[tuple[str, str]]:
    """(finding, status) pairs the labeler reads in ``text``, sentence by sentence."""
    spans = split_sentences(text) or [(0, len(text))]
    sentences = [text[a:b] for a, b in spans if text[a:b].strip()]
    return {(m.finding, m.status) for mentions in labeler.label_many(sentences) for m in mentions}


def names_diagnosis(text: str, accepted: frozenset[str], labeler) -> bool:
    """True when ``text`` states one of the ``accepted`` concepts as present or uncertain."""
    return any(f in accepted and s in NAMING for f, s in stated(text, labeler))


def finding_f1(predicted: set, reference: set) -> tuple[float, float, float]:
    """(precision, recall, F1) of two sets of (finding, status) pairs; 1, 1, 1 when both are empty."""
    if not predicted and not reference:
        return 1.0, 1.0, 1.0
    tp = len(predicted & reference)
    p = tp / len(predicted) if predicted else 0.0
    r = tp / len(reference) if reference else 0.0
    return p, r, (2 * p * r / (p + r) if p + r else 0.0)


class _Answers:
    """The LLM's answers, each prompt generated once (two retrievers often find the same report)."""

    def __init__(self, llm, max_tokens: int, timeout: float, log: Log) -> None:
        self.llm, self.max_tokens, self.timeout, self.log = llm, max_tokens, timeout, log
        self.cache: dict[str, object] = {}
        self.calls = self.failures = 0
        self.seconds = 0.0

    def __call__(self, question: str, reports: list, task: str, sections=None, max_tokens: int | None = None):
        key = json.dumps([question, [(r[0], dict(r[1])) for r in reports], task, max_tokens], sort_keys=True)
        if key not in self.cache:
            t0 = time.perf_counter()
            try:
                self.cache[key] = answer_from_reports(question, reports, self.llm, task=task, sections=sections,
                                                      max_tokens=max_tokens or self.max_tokens, timeout=self.timeout)
            except LLMError as exc:  # one failed call is a wrong answer, counted; not the end of the run
                self.failures += 1
                self.log(f"  LLM error: {exc}")
                self.cache[key] = None
            self.calls += 1
            self.seconds += time.perf_counter() - t0
        return self.cache[key]


def _distinct_impressions(reports: Sequence, findings_section: str, impression_section: str):
    """Reports with both sections, and their distinct impressions -> the first report that wrote each."""
    pairs = [r for r in reports if r.sections.get(findings_section, "").strip()
             and r.sections.get(impression_section, "").strip()]
    texts, owner, seen = [], [], {}
    for r in pairs:
        key = impression_key(r.sections[impression_section])
        if key not in seen:
            seen[key] = len(texts)
            texts.append(r.sections[impression_section].strip())
            owner.append(r)
    return pairs, texts, owner


def run_rag(reports: Sequence, systems: Sequence, llm, *, labeler, holdout_fraction: float, seed: int,
            cases: Sequence[Case] | None = None, max_queries: int | None = None, draft_reports: int = 30,
            max_tokens: int = 16, draft_max_tokens: int = 32, timeout: float = 120.0,
            findings_section: str = "findings", impression_section: str = "impression",
            log: Log = no_log) -> ProtocolResult:
    """Diagnosis accuracy with and without retrieval, and impression-draft F1 (see the module).

    Args:
        reports: The corpus's reports (retrieval pool; held-out ones are the drafting queries).
        systems: Retrievers (bench systems); the last one also retrieves for drafting.
        llm: The back-end (:class:`radsift.rag.llm.LLM`).
        labeler: The labeler that judges answers and impressions.
        cases: Finding descriptions (default: the packaged ones).
        max_queries: Answer a seeded sample of at most this many descriptions.
        draft_reports: Held-out reports to draft impressions for (a seeded sample; 0 = skip).
        max_tokens: New tokens of a diagnosis answer (the diagnosis comes first).
        draft_max_tokens: New tokens of a drafted impression.
        timeout: Seconds per generation.
    """
    t0 = time.perf_counter()
    pairs, impressions, owner = _distinct_impressions(reports, findings_section, impression_section)
    if not impressions:
        return skipped(KEY, TITLE, f"no report has both a {findings_section!r} and an {impression_section!r} section")
    cases = list(cases) if cases is not None else load_cases(lexicon=labeler.lexicon)
    if max_queries is not None and len(cases) > max_queries:
        cases = sorted(random.Random(seed).sample(cases, max_queries), key=lambda c: c.id)
    answers = _Answers(llm, max_tokens, timeout, log)

    # -- diagnosis --------------------------------------------------------------------------------
    right, per_case = _diagnose(cases, systems, impressions, owner, answers, labeler, findings_section,
                                impression_section, log)
    n = len(cases)
    acc_rows, summary = [], {}
    for name, hits in right.items():
        s = sum(hits)
        low, high = wilson_interval(s, n)
        summary[name] = {"right": s, "n": n, "accuracy": s / n, "low": low, "high": high}
        acc_rows.append([name, f"{s}/{n}", f"{percent(s / n)} [{percent(low)}, {percent(high)}]"])
    others = [name for name in right if name != ALONE]
    tests = [mcnemar(right[ALONE], right[o]) for o in others]
    adjusted = bonferroni([t.p_value for t in tests], m=len(tests)) if tests else []
    test_rows = [[ALONE, o, t.b, t.c, t.method, pvalue(t.p_value), pvalue(p)]
                 for o, t, p in zip(others, tests, adjusted)]
    backend = f"{getattr(llm, 'backend', '?')}: {getattr(llm, 'model', '?')}"
    tables = [
        Table(title=f"Diagnosis from a finding description: accuracy [Wilson 95% CI] ({backend})",
              columns=["condition", "right", "accuracy"], rows=acc_rows,
              note="Right: the labeler reads the reference diagnosis (its lexicon name or a synonym, or a concept "
                   "accepted as the same diagnosis) as present or uncertain in the answer. 'LLM + S': the top report "
                   "retrieved by S (findings to impression) in the prompt; 'retrieval only: S': that report's "
                   "impression read by the labeler."),
        Table(title=f"McNemar tests against the LLM alone (Bonferroni, m = {len(tests)})",
              columns=["A", "B", "A only", "B only", "test", "p", "p (Bonferroni)"], rows=test_rows,
              note="'A only': descriptions answered right by A and not by B."),
    ]

    # -- impression drafting ------------------------------------------------------------------------
    draft = {}
    if draft_reports and systems:
        draft = _drafting(pairs, systems[-1], answers, labeler, holdout_fraction=holdout_fraction, seed=seed,
                          n=draft_reports, max_tokens=draft_max_tokens, findings_section=findings_section,
                          impression_section=impression_section, log=log)
        tables.extend(draft.pop("tables", []))
    result = ProtocolResult(
        key=KEY, title=TITLE,
        description=(f"{n} finding descriptions written for radsift (reference diagnosis = a lexicon concept), "
                     f"answered by {backend} alone, with the top report retrieved by each system among "
                     f"{len(impressions)} distinct impressions, and by retrieval alone. "
                     + (f"Impressions drafted for {draft.get('reports', 0)} held-out reports (holdout fraction "
                        f"{holdout_fraction}, seed {seed}), retrieving with {systems[-1].name}." if draft else "")),
        tables=tables,
    )
    result.notes.append(f"LLM: {answers.calls} generations ({answers.seconds:.0f} s), {answers.failures} failed "
                        f"(counted wrong); max {max_tokens} new tokens for a diagnosis, {draft_max_tokens} for an "
                        "impression; greedy decoding.")
    result.data = {"backend": getattr(llm, "backend", None), "model": getattr(llm, "model", None),
                   "cases": n, "candidates": len(impressions), "diagnosis": summary,
                   "mcnemar": [{"a": ALONE, "b": o, "a_only": t.b, "b_only": t.c, "p": t.p_value, "p_bonferroni": p,
                                "method": t.method} for o, t, p in zip(others, tests, adjusted)],
                   "per_case": per_case, "drafting": draft, "llm_calls": answers.calls,
                   "llm_failures": answers.failures, "llm_seconds": round(answers.seconds, 1)}
    result.seconds = time.perf_counter() - t0
    return result


def _diagnose(cases: Sequence[Case], systems: Sequence, impressions: list[str], owner: list, answers: _Answers,
              labeler, findings_section: str, impression_section: str, log: Log) -> tuple[dict, dict]:
    """Each description answered by the LLM alone, then with the top report of each system, and by that
    report's impression alone: ``(condition -> one right flag per case, case id -> its answers)``."""
    full = lambda r: {findings_section: r.sections[findings_section], impression_section: r.sections[impression_section]}  # noqa: E731
    right: dict[str, list[bool]] = {}
    per_case: dict[str, dict] = {c.id: {"diagnosis": c.diagnosis} for c in cases}
    log(f"  {ALONE}: {len(cases)} finding descriptions")
    right[ALONE] = []
    for c in cases:
        a = answers(c.findings, [], "ask")
        ok = a is not None and names_diagnosis(a.text, c.accepted, labeler)
        right[ALONE].append(ok)
        per_case[c.id][ALONE] = {"answer": None if a is None else a.text, "right": ok}
    for system in systems:
        log(f"  {system.name}: top impression of {len(impressions)} for each description, then the LLM")
        top = [r[0][0] if r else None for r in system.rank([c.findings for c in cases], impressions, k=1)]
        with_llm, alone = f"LLM + {system.name}", f"retrieval only: {system.name}"
        right[with_llm], right[alone] = [], []
        for c, i in zip(cases, top):
            rep = owner[i] if i is not None else None
            a = answers(c.findings, [(rep.id, full(rep), None)] if rep is not None else [], "ask")
            ok = a is not None and names_diagnosis(a.text, c.accepted, labeler)
            right[with_llm].append(ok)
            ret_ok = rep is not None and names_diagnosis(rep.sections[impression_section], c.accepted, labeler)
            right[alone].append(ret_ok)
            per_case[c.id][with_llm] = {"report_id": None if rep is None else rep.id,
                                        "answer": None if a is None else a.text, "right": ok}
            per_case[c.id][alone] = {"report_id": None if rep is None else rep.id, "right": ret_ok}
    return right, per_case


def _drafting(pairs, system, answers: _Answers, labeler, *, holdout_fraction, seed, n, max_tokens, findings_section,
              impression_section, log) -> dict:
    """Impression drafts for a sample of held-out reports: F1 of each condition against the real one."""
    test = [r for r in pairs if is_held_out(r.id, holdout_fraction, seed)]
    pool = [r for r in pairs if not is_held_out(r.id, holdout_fraction, seed)]
    if not test or not pool:
        return {}
    if len(test) > n:
        test = sorted(random.Random(seed).sample(test, n), key=lambda r: r.id)
    texts, owner, seen = [], [], set()
    for r in pool:
        key = impression_key(r.sections[impression_section])
        if key not in seen:
            seen.add(key)
            texts.append(r.sections[impression_section].strip())
            owner.append(r)
    log(f"  drafting: {len(test)} held-out reports, {system.name} over {len(texts)} prior impressions")
    ranked = system.rank([r.sections[findings_section] for r in test], texts, k=3)
    conditions = ("retrieval only", "LLM alone", "LLM + retrieval")
    scores: dict[str, list[float]] = {c: [] for c in conditions}
    micro = {c: [0, 0, 0] for c in conditions}  # true positives, predicted, reference
    rows = []
    for r, ranking in zip(test, ranked):
        findings = " ".join(r.sections[findings_section].split())
        priors = [(owner[i].id, {impression_section: texts[i]}, s) for i, s in ranking]
        reference = stated(r.sections[impression_section], labeler)
        outs = {"retrieval only": texts[ranking[0][0]] if ranking else ""}
        for cond, reps in (("LLM alone", []), ("LLM + retrieval", priors)):
            a = answers(findings, reps, "draft", sections=(impression_section,), max_tokens=max_tokens)
            outs[cond] = a.text if a is not None else ""
        row = {"report_id": r.id}
        for cond in conditions:
            predicted = stated(outs[cond], labeler) if outs[cond] else set()
            p, rec, f1 = finding_f1(predicted, reference)
            scores[cond].append(f1)
            m = micro[cond]
            m[0] += len(predicted & reference)
            m[1] += len(predicted)
            m[2] += len(reference)
            row[cond] = {"text": outs[cond], "f1": f1}
        rows.append(row)
    summary, table_rows = {}, []
    for cond in conditions:
        ci = mean_ci(scores[cond])
        tp, npred, nref = micro[cond]
        p = tp / npred if npred else 0.0
        rec = tp / nref if nref else 0.0
        f1 = 2 * p * rec / (p + rec) if p + rec else 0.0
        summary[cond] = {"mean_f1": ci, "micro": {"precision": p, "recall": rec, "f1": f1}}
        table_rows.append([cond, with_ci(ci["mean"], ci["low"], ci["high"]), f"{p:.3f}", f"{rec:.3f}", f"{f1:.3f}"])
    tables = [Table(title=f"Impression drafts on {len(test)} held-out reports: finding-level F1 against the real "
                          "impression (status-aware)",
                    columns=["condition", "mean F1 [95% CI]", "micro P", "micro R", "micro F1"], rows=table_rows,
                    note="Both impressions read by the labeler into (finding, status) pairs; a report where both state "
                         "no finding scores 1. 'retrieval only': the top retrieved impression, unchanged.")]
    comp_table, comps = paired_comparisons(scores, "F1", seed=seed)
    if comp_table is not None:
        tables.append(comp_table)
    return {"reports": len(test), "retriever": system.name, "prior_impressions": len(texts), "summary": summary,
            "tests": comps, "per_report": rows, "tables": tables}
