"""Cohort endpoints of the web service: export a search's reports with evidence, and saved searches.

* ``GET /api/export`` every report stating the query's reading (or the bands ``include`` names) with
  its evidence, as CSV or JSON lines to download (``format``); the provenance (query, reading,
  options, model fingerprint, index generation, version, time) comes in the ``X-Radsift-Provenance``
  header, and whole with the rows for ``format=json``. Each export is an audit line (query, rows, the report
  ids or their hash and count), written before the file is sent: no line, no file (503).
* ``GET /api/saved`` the saved searches; ``POST /api/saved`` save one (JSON body);
  ``POST /api/saved/{name}/run`` run one and record the run once the answer is sent (``new=true``:
  only reports added since the last recorded run, from the page or ``radsift saved run``; an answer
  that fails, a 503, records nothing); ``GET /api/saved/{name}``
  the same without recording it; ``DELETE /api/saved/{name}`` remove one.
"""

from __future__ import annotations

import json
from typing import Annotated, Literal

from fastapi import APIRouter, Depends, Query, Request
from fastapi.encoders import jsonable_encoder
from fastapi.responses import JSONResponse, Response
from starlette.background import BackgroundTask
from pydantic import BaseModel, Field

from radsift.search.cohort import (COHORT_OPTIONS, DEFAULT_MAX_ROWS, MAX_ROWS_LIMIT, cohort_ids, collect_cohort,
                                   render_cohort)
from radsift.search.options import SearchOptions
from radsift.search.query import MAX_QUERY_CHARS, parse_where
from radsift.serve.audit import id_summary
from radsift.serve.params import only_params, param_names, search_params
from radsift.serve.service import Service, api_router, client_of

EXPORT_PARAMS = frozenset({"q", "include", "max_rows", "format"} | param_names(COHORT_OPTIONS))
MEDIA = {"csv": "text/csv; charset=utf-8", "jsonl": "application/x-ndjson; charset=utf-8"}


class SavedIn(BaseModel):
    name: str = Field(description="Letters, digits, '.', '_' or '-' (1 to 64), starting with a letter or digit.")
    q: str = Field(description=f"1 to {MAX_QUERY_CHARS} characters once cleaned (checked as by the CLI and Python).")
    mode: Literal["dense", "bm25", "hybrid", "hybrid-rrf"] = "hybrid"
    target: str | None = None
    where: list[str] | None = None
    negation: Literal["aware", "ignore"] = "aware"
    reading: list[str] | None = None
    alpha: float | None = Field(None, ge=0, le=1)
    concepts: bool = True
    read_as: Literal["both", "literal", "linked"] = "both"
    include: Literal["states", "related", "all"] | None = None
    replace: bool = False


def cohort_router(service: Service) -> APIRouter:
    """The export and saved-search endpoints over ``service``."""
    router = api_router(service)
    audit = service.audit_write

    @router.get("/export", dependencies=[only_params(EXPORT_PARAMS)],
                responses={200: {"description": "The cohort: CSV, JSON lines, or JSON with its provenance.",
                                 "content": {"text/csv": {}, "application/x-ndjson": {}, "application/json": {}}}})
    def export(
        request: Request,
        q: Annotated[str, Query(description=f"1 to {MAX_QUERY_CHARS} characters once cleaned (the input policy).")],
        options: Annotated[SearchOptions, Depends(search_params(COHORT_OPTIONS))],
        include: Annotated[Literal["states", "related", "all"] | None, Query(
            description="states (reports stating the reading; default when the query names a finding), related, all.")] = None,
        max_rows: Annotated[int, Query(ge=1, le=MAX_ROWS_LIMIT, description="Refuse a larger cohort.")] = DEFAULT_MAX_ROWS,
        format: Literal["csv", "jsonl", "json"] = "csv",
    ) -> Response:
        chosen = {**options.pick(COHORT_OPTIONS), "where": parse_where(options.where)}
        cohort = collect_cohort(service.index, q, include=include, max_rows=max_rows, **chosen)
        provenance = cohort.provenance(format=format, via="GET /api/export", client=client_of(request),
                                       token_id=service.token_id)
        audit(request, "export", query=cohort.query, params=cohort.options, include=cohort.include,
              rows=len(cohort.rows), generation=cohort.index.get("generation"),
              **id_summary(cohort_ids(cohort.rows)))
        if format == "json":
            return Response(json.dumps({"provenance": provenance, "rows": [r.to_dict() for r in cohort.rows]},
                                       ensure_ascii=False), media_type="application/json")
        name = f"cohort.{format}"
        return Response(render_cohort(cohort, format), media_type=MEDIA[format], headers={
            "Content-Disposition": f'attachment; filename="{name}"',
            # ASCII JSON: a header carries no raw UTF-8
            "X-Radsift-Provenance": json.dumps(provenance, ensure_ascii=True, separators=(",", ":"))})

    @router.get("/saved", dependencies=[only_params(frozenset())])
    def saved_list() -> dict:
        return {"saved": [s.to_dict() for s in service.saved.list()]}

    @router.post("/saved", dependencies=[only_params(frozenset())])
    def saved_add(request: Request, body: SavedIn) -> dict:
        options = body.model_dump(exclude={"name", "q", "include", "replace"})
        saved = service.saved.add(service.index, body.name, body.q, include=body.include, replace=body.replace,
                                  **options)
        audit(request, "saved-add", name=saved.name, query=saved.query, params=saved.options)
        return saved.to_dict()

    def run_saved(request: Request, name: str, new: bool, max_rows: int, mark: bool) -> JSONResponse:
        # Recorded after the answer is sent (a background task): a run answered 503, or not delivered, records nothing.
        run = service.saved.run(service.index, name, new=new, mark=False, max_rows=max_rows)
        audit(request, "saved-run", name=name, query=run.search.query, new_only=new, rows=len(run.rows), marked=mark,
              **id_summary(cohort_ids(run.rows)))
        out = {"name": run.search.name, "query": run.search.query, "options": run.search.options,
                "new_only": new, "first_run": run.first_run, "warnings": run.warnings,
                "matching": run.cohort.matching, "total": run.cohort.total, "last_run": run.search.last_run,
                "include": run.search.include, "rows": [r.to_dict() for r in run.rows]}
        # last_run: the run before this one (the one "new" is counted from).
        return JSONResponse(jsonable_encoder(out), background=BackgroundTask(service.saved.record, run) if mark else None)

    @router.get("/saved/{name}", dependencies=[only_params(frozenset({"new", "max_rows"}))])
    def saved_peek(request: Request, name: str, new: bool = False,
                   max_rows: Annotated[int, Query(ge=1, le=MAX_ROWS_LIMIT)] = DEFAULT_MAX_ROWS) -> JSONResponse:
        """Run a saved search without recording the run (``new``: since the last recorded run)."""
        return run_saved(request, name, new, max_rows, mark=False)

    @router.post("/saved/{name}/run", dependencies=[only_params(frozenset({"new", "max_rows"}))])
    def saved_run(request: Request, name: str, new: bool = False,
                  max_rows: Annotated[int, Query(ge=1, le=MAX_ROWS_LIMIT)] = DEFAULT_MAX_ROWS) -> JSONResponse:
        """Run a saved search and record the run: the next ``new`` lists only reports added after it."""
        return run_saved(request, name, new, max_rows, mark=True)

    @router.delete("/saved/{name}", dependencies=[only_params(frozenset())])
    def saved_rm(request: Request, name: str) -> dict:
        service.saved.remove(name)
        audit(request, "saved-rm", name=name)
        return {"removed": name}

    return router

