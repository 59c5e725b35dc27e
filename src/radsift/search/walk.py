"""A search's walk down, once: read the query, plan, score, rank, cut the page.

:func:`walk` takes a checked request (:func:`radsift.search.options.check_search`) through the
jobs of this package in order:

1. read the query (:func:`~radsift.search.reading.read_query`: its findings, their status, its side;
   a query that describes a concept is linked to it);
2. plan (:mod:`.plan`: the eligible units, every unit's reading and side tier);
3. score (:mod:`.scoring`: BM25 and the dense backend, only what the mode uses; pseudo-relevance
   feedback);
4. rank (:mod:`.rank`: the ranking core, then the cross-encoder over the head);
5. cut the page and turn it into hits with the whole list's counts and bands (:mod:`.results`).
"""

from __future__ import annotations

from radsift.errors import ConfigError
from radsift.index.reader import IndexStore
from radsift.ranking import NEEDS_DENSE
from radsift.search.options import SearchRequest
from radsift.search.plan import literal_check, plan_search
from radsift.search.rank import rank_units, rerank_head
from radsift.search.reading import read_query
from radsift.search.results import SearchResult, result_page
from radsift.search.candidates import engine_name, exact_reason
from radsift.search.scoring import feedback, first_pass
from radsift.search.shortlist import candidate_page
from radsift.search.units import unit_texts


def walk(index, store: IndexStore, request: SearchRequest) -> SearchResult:
    """Run ``request`` on ``store`` with the models of ``index`` (a :class:`radsift.Index`).

    Raises:
        ConfigError: ``rerank`` without a reranker; a first stage with ``bm25`` or ``prf``.
    """
    opts = request.options
    query_vector = _query_vector(index, request)
    linked = opts.concepts and opts.first_stage is None
    reading = read_query(request.query, index.labeler, negation=opts.negation, override=dict(opts.reading),
                         lexicon=store.manifest.lexicon is not None,
                         link=index._link_function(opts.mode, request.query, query_vector) if linked else None,
                         read_as=opts.read_as if opts.concepts else "literal", literal=literal_check(store))
    sources = {"query_vector": query_vector, "backends": lambda kind: index._backend(store, kind),
               "expansion": lambda finding: index.linker.expansion(finding)}
    if engine_name() == "candidates" and exact_reason(request, reading, index.tier_gap, store=store) is None \
            and exact_reason(request, reading, None, backend=_dense_backend(index, store, opts)) is None:
        return candidate_page(index, store, request, reading, query_vector, sources["expansion"])
    plan = plan_search(store, request, reading, index.labeler, index.tier_gap)
    scores = first_pass(store, request, plan, reading, settings=index.settings, **sources)
    if opts.prf:
        scores = feedback(store, request, scores, plan.tiers, reading, gap=index.tier_gap, **sources)
    if plan.keep is not None:
        scores["keep"] = plan.keep
    picked = rank_units(store, request, scores, plan.tiers, index.tier_gap)
    units = unit_texts(store, opts.unit, [u for _, u, _ in picked])
    if opts.rerank:
        picked = rerank_head(request, picked, units, plan.tiers, index.reranker)
    return result_page(store, request, picked, units, scores, plan, reading, index.mentions_in)


def _dense_backend(index, store: IndexStore, opts):
    return index._backend(store, opts.unit) if NEEDS_DENSE[opts.mode] and opts.first_stage is None else None


def _query_vector(index, request: SearchRequest):
    """The query's embedding when its mode uses the bi-encoder (encoded here unless given); refuses a
    rerank without a reranker and a first stage its mode or ``prf`` cannot use."""
    opts = request.options
    if opts.rerank and index.reranker is None:
        raise ConfigError("rerank needs a reranker: pass --reranker DIR (a folder written by "
                          "'radsift train --recipe rerank') or set RADSIFT_RERANKER")
    if opts.first_stage is not None:
        if not NEEDS_DENSE[opts.mode]:
            raise ConfigError(f"a first stage takes the bi-encoder's place: mode {opts.mode} does not use it "
                              "(use dense for the first stage alone, hybrid or hybrid-rrf to fuse it with BM25)")
        if opts.prf:
            raise ConfigError("prf expands the bi-encoder's query vector: it does not apply to another first stage")
    elif NEEDS_DENSE[opts.mode] and opts.query_vector is None:
        return index.encoder.encode_query(request.query)
    return opts.query_vector
