"""Search endpoints of the web service: ``GET /api/search``, ``/api/passages`` and ``/api/reports/{id}``.

Their search options are query parameters derived from :class:`radsift.search.options.SearchOptions`
(:func:`radsift.serve.params.search_params`). Each answer is an audit line (with the query) when
the app has an audit log; one whose line cannot be written is answered 503.
"""

from __future__ import annotations

import time
from typing import Annotated

from fastapi import APIRouter, Depends, HTTPException, Query, Request

from radsift.errors import ConfigError
from radsift.search.options import SearchOptions
from radsift.search.passages import parse_passage_query, rerank_summary, search_passages
from radsift.search.query import MAX_QUERY_CHARS, normalize_query, parse_where
from radsift.search.reading import parse_override
from radsift.serve.params import only_params, param_names, parse_fields, search_params
from radsift.serve.schemas import ReportOut, SearchOut
from radsift.serve.service import Service, api_router

#: The passage endpoint's search options (the rest of a passage search is set by it).
PASSAGE_OPTIONS = ("k", "mode", "rerank", "where")
#: The report endpoint's: what reads its query.
REPORT_OPTIONS = ("negation", "reading", "mode")
SEARCH_PARAMS = frozenset({"q", "fields"} | param_names())
PASSAGE_PARAMS = frozenset({"q", "aspect"} | param_names(PASSAGE_OPTIONS))
REPORT_PARAMS = frozenset({"q"} | param_names(REPORT_OPTIONS))
#: q has no bounds of its own: normalize_query checks it (the input policy), as for the CLI and Python.
QUERY_HELP = f"(1 to {MAX_QUERY_CHARS} characters once cleaned; radsift.search.options.POLICY) "


def overrides_of(reading) -> list[str]:
    """The ``reading`` overrides as ``finding=status`` strings (ConfigError for a malformed one)."""
    return [f"{finding}={status}" for finding, status in parse_override(reading).items()]


def search_router(service: Service) -> APIRouter:
    """``GET /search``: ranked hits, how the query was read, the page's counts (see :mod:`radsift.serve.app`)."""
    router = api_router(service)

    @router.get("/search", response_model=SearchOut, dependencies=[only_params(SEARCH_PARAMS)])
    def search(
        request: Request,
        q: Annotated[str, Query(description=QUERY_HELP + "Free text, e.g. a findings description.")],
        options: Annotated[SearchOptions, Depends(search_params())],
        fields: Annotated[list[str] | None, Query(description="Parts of the report to return: section names, "
                                                              "`sections`, `metadata` or `none` (default all).")] = None,
    ) -> dict:
        idx = service.index
        filters = parse_where(options.where)  # Index.search checks the keys (and the target) against the index
        picked = parse_fields(fields, idx.manifest.sections)
        overrides = overrides_of(options.reading)  # Index.search checks the findings against the query's reading
        start = time.perf_counter()
        hits = idx.search(q, options, where=filters, reading=overrides, fields=picked.sections,
                          include_report=picked.include_report)
        took = (time.perf_counter() - start) * 1000
        read = hits.reading.to_dict()
        read_as = idx.read(q, options.negation, mode=options.mode, concepts=options.concepts,
                           read_as=options.read_as).to_dict() \
            if overrides else read
        out = []
        for hit in hits:
            d = hit.to_dict()
            if not picked.metadata:
                d["metadata"] = {}
            out.append(d)
        query = normalize_query(q)  # as searched (Index.search refused it above if it were bad)
        echo = {"k": options.k, "mode": options.mode, "level": options.level, "target": options.target,
                "unit": options.unit}
        service.audit_write(request, "search", query=query, params={
            **echo, "where": [str(f) for f in filters], "rerank": options.rerank, "negation": options.negation,
            "reading": overrides, "alpha": options.alpha, "concepts": options.concepts, "read_as": options.read_as,
            "prf": options.prf,
            "offset": options.offset}, result_ids=[h.report_id for h in hits])
        return {"query": query, **echo, "where": [str(f) for f in filters], "negation": options.negation,
                "overrides": overrides, "reading": read, "read_as": read_as, "count": len(out), **hits.page_dict(),
                "took_ms": round(took, 2), "hits": out}

    return router


def passage_router(service: Service) -> APIRouter:
    """``GET /passages``: section passages for ``"entity | aspect"`` or a question (:mod:`radsift.search.passages`)."""
    router = api_router(service)

    @router.get("/passages", dependencies=[only_params(PASSAGE_PARAMS)])
    def passages(
        request: Request,
        q: Annotated[str, Query(description=QUERY_HELP + "\"ENTITY | ASPECT\" (e.g. \"pneumonia | treatment\") or a "
                                                                "question.")],
        options: Annotated[SearchOptions, Depends(search_params(PASSAGE_OPTIONS))],
        aspect: Annotated[str | None, Query(description="The aspect, when not written in q (history, treatment, "
                                                        "assessment, ...; an unknown one is a 422 listing them).")] = None,
    ) -> dict:
        """Section passages with heading, aspect, matched sentences and words (radsift.search.passages)."""
        idx, stage = service.index, service.passage_first_stage
        q = normalize_query(q)  # the input policy's sentence for a bad query, before the passage parse
        parsed = parse_passage_query(q, aspect)
        start = time.perf_counter()
        hits = search_passages(idx, q, k=options.k, aspect=aspect, mode=options.mode, where=parse_where(options.where),
                               rerank=options.rerank, reranker=idx.reranker if options.rerank else None,
                               first_stage=stage)
        first = stage.name if stage is not None else "index"
        service.audit_write(request, "passages", query=q, params={
            "aspect": parsed.aspect, "k": options.k, "mode": options.mode, "rerank": options.rerank,
            "first_stage": first}, result_ids=[h.report_id for h in hits])
        rr = {"reranker": rerank_summary(idx.reranker, options.rerank)} if options.rerank else {}
        return {"query": q, "entity": parsed.entity, "aspect": parsed.aspect, "text": parsed.text, "first_stage": first,
                **rr, "took_ms": round((time.perf_counter() - start) * 1000, 2), "hits": [h.to_dict() for h in hits]}

    return router


def report_router(service: Service) -> APIRouter:
    """``GET /reports/{id}``: one report; with ``q``, every mention of the query's findings in it."""
    router = api_router(service)

    @router.get("/reports/{report_id:path}", response_model=ReportOut, response_model_exclude_unset=True,
                dependencies=[only_params(REPORT_PARAMS)],
                responses={404: {"description": "No report with that id in the index."}})
    def report(
        request: Request,
        report_id: str,
        options: Annotated[SearchOptions, Depends(search_params(REPORT_OPTIONS))],
        q: Annotated[str | None, Query(description=QUERY_HELP + "A query: the answer then marks every mention of its "
                                       "findings (`mentions`) and says how it was read (`reading`).")] = None,
    ) -> dict:
        idx = service.index
        read = None
        overrides = overrides_of(options.reading)
        if q is not None:  # a bad override (or query: the sentence Index.search gives) is refused before the lookup
            q = normalize_query(q)
            read = idx.read(q, options.negation, overrides, mode=options.mode)
        elif overrides:
            raise ConfigError("reading: needs q (the query whose reading it overrides)")
        found = idx.get_report(report_id)
        extra = {} if q is None else {"query": " ".join(q.split()),
                                      "params": {"negation": options.negation, "reading": overrides}}
        service.audit_write(request, "report", report_id=report_id, found=found is not None, **extra)
        if found is None:
            raise HTTPException(404, f"no report with id {report_id[:200]!r} in this index")
        out = found.to_dict()
        if read is not None:
            # The report found above, read here: one generation even when a reload lands in between.
            out["reading"] = read.to_dict()
            out["mentions"] = {name: [m.to_dict() for m in found_]
                               for name, found_ in idx.sections_mentions(found.sections, read).items()}
        return out

    return router
