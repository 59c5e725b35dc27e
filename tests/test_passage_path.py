"""Issue 31, item 5: one passage path. Passage search (``radsift search --unit passage``, /api/passages)
and the passages benchmark's systems rank the same query's candidates in the same order: the same
windows (a long section as overlapping windows, scored by its best window) and the
same rerank (the reranker's weight, through radsift.models.reranker.rerank_head)."""

from __future__ import annotations

import numpy as np
import pytest

from radsift.evaluation.systems.passage_systems import BM25Passages, CrossPassages, DensePassages, HybridPassages
from radsift.index import build_index
from radsift.models.hashing import HashingEncoder
from radsift.models.reranker import DEFAULT_WEIGHT
from radsift.ranking import fuse, top_k
from radsift.records import Report
from radsift.search import Index
from radsift.search.passages import parse_passage_query, search_passages
from radsift.text import split_sections
from radsift.text.aspects import WINDOW_WORDS, aspect_of, section_windows

_FILLER = " ".join(f"filler{i % 53}" for i in range(WINDOW_WORDS))  # a whole first window
_NOTES = [
    ("n1", "HISTORY OF PRESENT ILLNESS: Pneumonia last winter, treated at home.\nPLAN: Start antibiotics for "
           "pneumonia today. Recheck in a week.\nALLERGIES: None."),
    ("n2", "ASSESSMENT: Gout flare of the left toe.\nPLAN: Colchicine for gout. Ice and rest."),
    ("n3", "The patient is well and has no complaints today."),
    # a PLAN past one window: what it says about asthma is in its second window only
    ("n4", "HISTORY: Asthma since childhood.\nPLAN: " + _FILLER + " Inhaled steroids for asthma twice a day, "
           "albuterol inhaler as needed for wheezing, asthma action plan reviewed."),
    ("n5", "ASSESSMENT: Type 2 diabetes, poorly controlled.\nPLAN: Metformin for diabetes and a diet review."),
    ("n6", "ASSESSMENT: Asthma, mild, and gout.\nPLAN: Albuterol for asthma; colchicine for gout flares."),
]
QUERIES = ["asthma | treatment", "gout | treatment", "how is asthma treated?", "pneumonia antibiotics"]


class LengthReranker:
    """A stand-in cross-encoder (longer passages score higher) with a cross-encoder's default weight."""

    weight = DEFAULT_WEIGHT

    def score(self, query, texts):
        return np.array([len(t) for t in texts], dtype=np.float32)


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("passage-path")
    enc = HashingEncoder(tmp / "model")
    reports = [Report(i, dict(split_sections(t))) for i, t in _NOTES]
    build_index(tmp / "idx", reports, encoder=enc, progress=False)
    # the index's section units, in their row order (the benchmark's candidate order)
    sections = [(r.id, heading, text) for r in reports for heading, text in r.sections.items() if text.strip()]
    return Index.open(tmp / "idx", encoder=enc), enc, sections


def _candidates(sections, query: str) -> list[int]:
    """The passages a search of ``query`` ranks: those of its aspect, or all of them."""
    aspect = parse_passage_query(query).aspect
    return [i for i, (_, heading, _) in enumerate(sections) if aspect is None or aspect_of(heading) == aspect]


def _bench_order(system, sections, query: str) -> list[tuple[str, str]]:
    system.prepare([text for _, _, text in sections])
    cands = _candidates(sections, query)
    scores = system.score([parse_passage_query(query).text], [cands])[0]
    rows, _ = top_k(np.asarray(scores), None)  # the protocol's order: ties by candidate position
    return [sections[cands[r]][:2] for r in rows]


def _search_order(index, query: str, **kw) -> list[tuple[str, str]]:
    return [(h.report_id, h.heading) for h in search_passages(index, query, k=50, **kw)]


def test_a_long_section_is_windowed_as_the_index_reads_it(setup):
    index, enc, sections = setup
    windows, owner = section_windows([text for _, _, text in sections])
    assert len(windows) == len(sections) + 1  # n4's PLAN is two windows
    dense = DensePassages("d", enc)
    dense.prepare([text for _, _, text in sections])
    dense._ensure(range(len(sections)))
    np.testing.assert_allclose(np.asarray(dense._store), enc.encode(windows), atol=1e-6)  # every window
    # the index: each section's first window as its vector, the later window beside it
    units = index.store.units("section")
    first = [i for i in range(len(windows)) if i == 0 or owner[i] != owner[i - 1]]
    np.testing.assert_allclose(np.asarray(units.vectors), enc.encode([windows[i] for i in first]), atol=1e-6)
    later = [i for i in range(len(windows)) if i not in first]
    assert units.window_owner.tolist() == [owner[i] for i in later]
    np.testing.assert_allclose(units.windows, enc.encode([windows[i] for i in later]), atol=1e-6)


def test_a_section_scores_by_its_best_window(setup):
    """n4's PLAN says what it says about asthma in its second window only: it scores by that window (the
    first window, filler alone, or the mean of both, would score lower)."""
    index, enc, sections = setup
    n4 = next(i for i, (rid, heading, _) in enumerate(sections) if rid == "n4" and heading == "plan")
    windows, owner = section_windows([sections[n4][2]])
    query = "inhaled steroids for asthma albuterol inhaler wheezing"
    hit = next(h for h in search_passages(index, query, k=50, mode="dense") if h.report_id == "n4"
               and h.heading == "plan")
    q = enc.encode([query])[0]
    best = max(float(enc.encode([w])[0] @ q) for w in windows)
    assert hit.score == pytest.approx(best, abs=1e-5)
    assert best > float(enc.encode([windows[0]])[0] @ q) + 0.05


@pytest.mark.parametrize("query", QUERIES)
def test_dense_search_and_benchmark_rank_alike(setup, query):
    index, enc, sections = setup
    assert _search_order(index, query, mode="dense") == _bench_order(DensePassages("d", enc), sections, query)


@pytest.mark.parametrize("query", QUERIES)
def test_reranked_search_and_benchmark_rank_alike(setup, query):
    index, enc, sections = setup
    got = _search_order(index, query, mode="dense", rerank=3, reranker=LengthReranker())
    system = CrossPassages("r", LengthReranker(), DensePassages("d", enc), top=3)
    assert got == _bench_order(system, sections, query)
    # the weight is the reranker's (0.3), not 1: the head is ordered by the fused score
    first = search_passages(index, query, k=3, mode="dense")
    fused = fuse([h.score for h in first], LengthReranker().score("", [h.text for h in first]), DEFAULT_WEIGHT)
    assert got[:len(first)] == [(first[i].report_id, first[i].heading) for i in np.argsort(-fused, kind="stable")]


def test_hybrid_search_and_benchmark_rank_alike_over_every_passage(setup):
    index, enc, sections = setup
    query = "how is asthma treated?"  # no aspect: the candidates are every passage, as in the index
    system = HybridPassages("h", DensePassages("d", enc), BM25Passages())
    assert _search_order(index, query, mode="hybrid") == _bench_order(system, sections, query)


def test_later_windows_survive_add_delete_and_optimize(tmp_path):
    """The later windows follow their sections through a second segment, a delete and a merge."""
    from radsift.index import add_to_index, delete_from_index, optimize_index

    enc = HashingEncoder(tmp_path / "model")
    reports = [Report(i, dict(split_sections(t))) for i, t in _NOTES]
    build_index(tmp_path / "idx", reports[:3], encoder=enc, progress=False)
    add_to_index(tmp_path / "idx", reports[3:], encoder=enc, progress=False)

    def windows_by_section():
        index = Index.open(tmp_path / "idx", encoder=enc)
        units = index.store.units("section")
        texts = index.store.sections_by_rows(units.window_owner.tolist())
        return sorted((texts[int(o)][0], texts[int(o)][1], round(float(v.sum()), 5))
                      for o, v in zip(units.window_owner, units.windows))

    before = windows_by_section()
    assert [(r, h) for r, h, _ in before] == [("n4", "plan")]
    delete_from_index(tmp_path / "idx", ["n2"])
    optimize_index(tmp_path / "idx")
    assert windows_by_section() == before
    delete_from_index(tmp_path / "idx", ["n4"])
    assert Index.open(tmp_path / "idx", encoder=enc).store.units("section").windows is None
