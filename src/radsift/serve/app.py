"""The radsift web service: a JSON API over one index, and the search page.

Endpoints (all under ``/api`` need ``Authorization: Bearer <token>`` when the app has a token):

* ``GET /api/passages`` section passages for ``"entity | aspect"`` or a question, with heading,
  aspect and the matched sentences (:mod:`radsift.search.passages`; first stage: the index's
  bi-encoder, or the poly-encoder the app was created with, ``passage_first_stage``);
* ``GET /api/search`` ranked hits with the matched sentence, its highlight offsets and the report,
  how the query was read (``reading``: each finding with its status and side) and what each hit's
  sentence states about those findings (``hits[].reading``); ``negation=ignore`` ranks by similarity
  only, ``reading=FINDING=STATUS`` (repeatable) overrides the reading finding by finding;
* ``GET /api/reports/{id}`` one report (404 when the id is not indexed); with ``q`` (and
  ``negation``, ``reading``) also every mention of the query's findings in it, by section;
* ``GET /api/export``, ``/api/saved`` a search's cohort with evidence and provenance, and saved
  searches (:mod:`radsift.serve.cohorts`);
* ``POST /api/ask`` an answer to a finding description or question from the most similar reports,
  citing them (``task=draft``: an impression drafted from findings, with the retrieval-only
  baseline); the LLM back-end is the one the app was created with (default: the offline model,
  loaded on the first question); every LLM call is audited (sizes and outcome, never text);
* ``GET /api/timeline/{patient}`` a patient's reports in date order with each finding's status per report
  (:mod:`.patient_routes`; 404 for a patient the index does not name, 422 for an index without patients);
* ``GET /api/health`` index counts, model and version;
* ``POST /api/reload`` switch to the newest index generation (after ``radsift index add``);
* ``GET /openapi.json`` the OpenAPI document; ``GET /`` the search page.

A server worker that cannot open the index after a crash serves :func:`unavailable_app` instead: 503 to
everything, naming the damage, until the index opens again.

The endpoints are grouped in routers over one :class:`~radsift.serve.service.Service`:
:mod:`.search_routes` (search, passages, reports), :mod:`.cohorts` (export, saved searches),
:mod:`.ask_routes` (ask) and :mod:`.index_routes` (health, reload); the search options' query
parameters come from their one declaration (:mod:`radsift.search.options`, :mod:`.params`).

Before any of this, :class:`radsift.serve.guard.RequestGuard` checks the request head's size, the
token, the query string's encoding and the body's size and pace, before the body is read.

Logs name the method, the route template, the status and the time only: never a query, a report
id or report text. Queries go to the audit log alone, when one is configured; a search or report
view whose audit line cannot be written is answered 503 (no audit line, no result).
"""

from __future__ import annotations

import logging
import time
from importlib.resources import files
from pathlib import Path

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import FileResponse, JSONResponse
from fastapi.staticfiles import StaticFiles

from radsift.errors import ConfigError, IndexStoreError, RadsiftError
from radsift.rag.llm import LLMError
from radsift.search import Index
from radsift.search.passages import PolyFirstStage
from radsift.serve.ask_routes import ask_router
from radsift.serve.audit import AuditLog, AuditLogError
from radsift.serve.cohorts import cohort_router
from radsift.serve.guard import DEFAULT_BODY_TIMEOUT, DEFAULT_MAX_BODY, SECURITY_HEADERS, RequestGuard
from radsift.serve.index_routes import index_router
from radsift.serve.patient_routes import patient_router
from radsift.serve.search_routes import passage_router, report_router, search_router
from radsift.serve.service import Service
from radsift.version import __version__

log = logging.getLogger("radsift.serve")
STATIC_DIR = Path(str(files("radsift.serve") / "static"))

#: Errors answered with ``{"detail": message}`` and this status. The handler is found by the error's
#: class hierarchy (its MRO), not by this order. AuditLogError is answered here, inside the middleware,
#: so the answer carries the security headers (an unhandled error would be a bare text/plain 500 from
#: outside it); ImportError: the offline model's extra is not installed, said instead of a bare 500.
ERROR_STATUS = ((ConfigError, 422), (IndexStoreError, 503), (AuditLogError, 503), (LLMError, 502),
                (ImportError, 503), (RadsiftError, 400))


def create_app(index: Index | str | Path, *, token: str | None = None, audit_log: str | Path | None = None,
               saved_dir: str | Path | None = None, llm=None, llm_timeout: float = 120.0,
               passage_first_stage=None, max_body: int = DEFAULT_MAX_BODY,
               body_timeout: float = DEFAULT_BODY_TIMEOUT) -> "FastAPI":
    """Build the FastAPI app serving ``index``.

    Args:
        index: An opened :class:`radsift.search.Index`, or an index directory to open (read-only).
        token: When set, every ``/api`` call needs ``Authorization: Bearer <token>``.
        audit_log: A JSON-lines file to append each search, report view and export to (with the query).
        saved_dir: The folder of saved searches (default ``INDEX/saved``).
        llm: The back-end of ``/api/ask`` (a :class:`radsift.rag.llm.LLM`, or the keyword arguments of
            :func:`radsift.rag.llm.make_llm`; None = the offline model, loaded on the first question).
        llm_timeout: Seconds one generation may take.
        passage_first_stage: A poly-encoder folder or a :class:`radsift.search.passages.PolyFirstStage`
            that scores ``/api/passages`` in the place of the index's bi-encoder (a server option: a
            request cannot name a folder to load).
        max_body: The largest request body in bytes (413 past it, before the app reads it).
        body_timeout: Seconds a request body may take to arrive (408 past them).

    Returns:
        The app (run it with uvicorn, or test it with ``fastapi.testclient.TestClient``).
    """
    if not isinstance(index, Index):
        index = Index.open(index)
    if isinstance(passage_first_stage, (str, Path)):
        passage_first_stage = PolyFirstStage(passage_first_stage)
    service = Service(index, token, AuditLog(audit_log) if audit_log is not None else None, saved_dir, llm=llm,
                      llm_timeout=llm_timeout, passage_first_stage=passage_first_stage)
    app = FastAPI(
        title="radsift",
        version=__version__,
        description="Search radiology reports by meaning: dense, BM25 or hybrid; findings, impressions or "
                    "whole reports. Every /api call needs `Authorization: Bearer <token>` when the server "
                    "was started with a token.",
        docs_url=None,  # the interactive docs load scripts from a CDN; this service stays offline
        redoc_url=None,
        openapi_url="/openapi.json",
    )
    app.state.service = service
    for router in (search_router, passage_router, report_router, index_router, ask_router, cohort_router,
                   patient_router):
        app.include_router(router(service))

    @app.get("/", include_in_schema=False)
    def page() -> FileResponse:
        return FileResponse(STATIC_DIR / "index.html", media_type="text/html")

    app.mount("/static", StaticFiles(directory=STATIC_DIR), name="static")
    _answer_errors(app)
    app.middleware("http")(_access_log)
    # Added last, so outermost: the token, the head and the body limits before anything reads the body.
    app.add_middleware(RequestGuard, token=token, max_body=max_body, body_timeout=body_timeout)
    return app


def unavailable_app(reason: str, *, token: str | None = None, max_body: int = DEFAULT_MAX_BODY,
                    body_timeout: float = DEFAULT_BODY_TIMEOUT) -> "FastAPI":
    """An app that answers every request 503: what a server worker serves when it cannot open the index
    it was serving (a file truncated under it crashed it, and now fails the check at open).

    ``/api/`` requests (after the token check, as the full app makes it) are answered ``reason``, which
    names the damaged file; the page and other paths only that the index cannot be read. Each answer has
    the security headers and ``Retry-After``.

    Args:
        reason: Why the index cannot be opened (the :class:`radsift.errors.IndexStoreError`'s message).
        token, max_body, body_timeout: As :func:`create_app`.
    """
    app = FastAPI(title="radsift", version=__version__, docs_url=None, redoc_url=None, openapi_url=None)

    @app.api_route("/{path:path}", methods=["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"],
                   include_in_schema=False)
    def unavailable(request: Request, path: str) -> JSONResponse:
        detail = reason if request.url.path.startswith("/api/") else "the index cannot be read (see /api/health)"
        return JSONResponse({"detail": detail}, status_code=503, headers={"Retry-After": "5"})

    app.middleware("http")(_access_log)
    app.add_middleware(RequestGuard, token=token, max_body=max_body, body_timeout=body_timeout)
    return app


# -- errors: one readable message under "detail" -----------------------------------------------
def _answer_errors(app: FastAPI) -> None:
    async def on_validation(request: Request, exc: RequestValidationError) -> JSONResponse:
        return JSONResponse({"detail": _validation_message(exc)}, status_code=422)

    app.add_exception_handler(RequestValidationError, on_validation)
    for error, status in ERROR_STATUS:
        app.add_exception_handler(error, _detail_answer(status))


def _detail_answer(status: int):
    """An exception handler answering ``{"detail": str(error)}`` with ``status``."""
    async def answer(request: Request, exc: Exception) -> JSONResponse:
        return JSONResponse({"detail": str(exc)}, status_code=status)
    return answer


def _validation_message(exc: RequestValidationError) -> str:
    parts = []
    for err in exc.errors():
        loc = ".".join(str(p) for p in err.get("loc", ()) if p not in ("query", "path", "body"))
        parts.append(f"{loc}: {err.get('msg', 'invalid')}" if loc else str(err.get("msg", "invalid")))
    return "; ".join(parts) or "invalid request"


# -- access log without query strings, security headers, no caching of API answers --------------
async def _access_log(request: Request, call_next):
    start = time.perf_counter()
    response = await call_next(request)
    route = request.scope.get("route")
    # The route template, not the path: a report id or a typo'd URL never reaches the log.
    where = getattr(route, "path", None) or "<unmatched>"
    log.info("%s %s %d %.1fms", request.method, where, response.status_code, (time.perf_counter() - start) * 1000)
    for name, value in SECURITY_HEADERS.items():
        response.headers.setdefault(name, value)
    if request.url.path.startswith("/api/"):
        response.headers["Cache-Control"] = "no-store"
    return response
