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
* ``GET /api/health`` index counts, model and version;
* ``POST /api/reload`` switch to the newest index generation (after ``radsift index add``);
* ``GET /openapi.json`` the OpenAPI document; ``GET /`` the search page.

Logs name the method, the route template, the status and the time only: never a query, a report
id or report text. Queries go to the audit log alone, when one is configured; a search or report
view whose audit line cannot be written is answered 503 (no audit line, no result).
"""

from __future__ import annotations

import logging
import time
from importlib.resources import files
from pathlib import Path
from typing import Annotated, Literal

from fastapi import APIRouter, Depends, FastAPI, HTTPException, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import FileResponse, JSONResponse
from fastapi.staticfiles import StaticFiles
from pydantic import BaseModel, Field

from radsift.version import __version__
from radsift.errors import ConfigError, IndexStoreError, RadsiftError
from radsift.search import Index
from radsift.search.query import MAX_OFFSET, MAX_QUERY_CHARS, parse_where
from radsift.search.reading import parse_override
from radsift.serve.audit import AuditLog, AuditLogError
from radsift.serve.auth import bearer_matches, token_id
from radsift.serve.params import parse_fields

log = logging.getLogger("radsift.serve")
STATIC_DIR = Path(str(files("radsift.serve") / "static"))

SEARCH_PARAMS = frozenset({"q", "k", "mode", "level", "target", "where", "fields", "unit", "rerank", "negation",
                           "reading", "alpha", "concepts", "prf", "offset"})
REPORT_PARAMS = frozenset({"q", "negation", "reading", "mode"})

# The page and the API never need anything from elsewhere; say so to the browser.
SECURITY_HEADERS = {
    "Content-Security-Policy": "default-src 'self'; img-src 'self' data:; object-src 'none'; base-uri 'none'; "
                               "form-action 'self'; frame-ancestors 'none'",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "X-Frame-Options": "DENY",
}


# -- response models (they document the API in /openapi.json) ---------------------------------
class SentenceOut(BaseModel):
    section: str
    index: int = Field(description="Position of the sentence in its section (-1 for a whole-section unit).")
    start: int = Field(description="Character offset of the sentence in its section's text.")
    end: int
    text: str


class MentionOut(BaseModel):
    finding: str = Field(description="The query's finding (lexicon name, or the phrase read outside the lexicon).")
    status: str = Field(description="What the text states about it: present, absent or uncertain.")
    cue: str | None = Field(description="The words that decided the status (\"No evidence of\"), if any.")
    start: int = Field(description="Character offset of the mention in its text (the hit's sentence.text, or "
                                   "the report section's text).")
    end: int
    source: str = Field(description="lexicon, or open (the open-vocabulary reader).")


class ReadFindingOut(BaseModel):
    finding: str
    status: str = Field(description="What the query asks for: present, absent or uncertain.")
    source: str = Field(description="lexicon (the query names it), linked (the query describes it: understood "
                                    "as this concept) or open (the open-vocabulary reader).")
    via: str | None = Field(None, description="linked: the concept's name, synonym or description the query matched.")
    score: float | None = Field(None, description="linked: the cosine of that match.")
    cue: str | None = Field(description="The query words that decided the status (\"no\", \"possible\").")
    side: str | None = Field(description="The query's side: left, right, bilateral, or null.")


class ReadingOut(BaseModel):
    findings: list[ReadFindingOut] = Field(description="One per finding the query names, in query order.")
    side: str | None
    negation: str = Field(description="aware (ranked by the reading) or ignore (plain similarity).")
    note: str = Field(description="Why something was left out (too many findings, no finding ...).")


READING_PARAM = ("Override how the query was read, finding by finding: FINDING=STATUS with STATUS present, absent, "
                 "uncertain or ignore (repeatable; `side=ignore` drops the side). The finding must be one the "
                 "query was read to name.")
NEGATION_PARAM = "aware: rank by what each report states about the query's findings; ignore: plain similarity."


class HitOut(BaseModel):
    report_id: str
    score: float = Field(description="Retrieval score; comparable within one query only.")
    rank: int
    section: str | None = Field(description="Section the matched sentence comes from.")
    sentence: SentenceOut | None
    highlights: list[list[int]] = Field(description="[start, end] ranges of matched words within sentence.text.")
    sections: dict[str, str] = Field(description="The report's sections (those selected by `fields`).")
    metadata: dict[str, str] = Field(description="The report's metadata (empty unless selected by `fields`).")
    reading: list[MentionOut] = Field(default_factory=list,
                                      description="What the matched sentence states about the query's findings "
                                                  "(offsets within sentence.text).")
    band: str | None = Field(None, description="states (the report states the query's reading), related or unlikely: "
                                               "where the relevant reports end.")
    relevance: float | None = Field(None, description="Calibrated estimate that the report states what the query "
                                                      "asks for (the band comes from it).")


class SearchOut(BaseModel):
    query: str
    k: int
    mode: str
    level: str
    target: str
    unit: str
    where: list[str]  # the filters as read: key=value (exact) or key~value (case-insensitive substring)
    negation: str
    overrides: list[str] = Field(description="The `reading` overrides as read: finding=status.")
    reading: ReadingOut = Field(description="How the query was read (after the overrides); the ranking uses it "
                                            "when negation is aware.")
    read_as: ReadingOut = Field(description="How the query itself was read, before the overrides (what to flip from).")
    count: int = Field(description="Hits on this page.")
    offset: int = Field(description="Hits of the ranked list skipped before this page.")
    total: int = Field(description="Reports (sentences at sentence level) in the whole ranked list.")
    matching: int | None = Field(description="How many of them state the query's reading (the states band); null "
                                             "when nothing is read.")
    matching_is_lower_bound: bool = Field(description="True when matching may be short (a phrase outside the lexicon "
                                                      "had more candidate sentences than are read).")
    more: bool = Field(description="Whether the ranked list goes on after this page (next: offset + count).")
    took_ms: float
    hits: list[HitOut]


class ReportOut(BaseModel):
    id: str
    sections: dict[str, str]
    metadata: dict[str, str]
    reading: ReadingOut | None = Field(None, description="With `q`: how the query was read.")
    mentions: dict[str, list[MentionOut]] | None = Field(
        None, description="With `q`: every mention of the query's findings, by section, with its status "
                          "(offsets within that section's text).")


class IndexInfo(BaseModel):
    generation: int | None = None
    format_version: int | None = None
    model: str | None = None
    dim: int | None = None
    counts: dict[str, int]
    sections: list[str]
    metadata_keys: list[str]
    created: str | None = None
    updated: str | None = None


class HealthOut(BaseModel):
    status: str
    version: str
    auth: bool = Field(description="True when API calls need a bearer token.")
    audit: bool = Field(description="True when queries are written to an audit log.")
    index: IndexInfo


class AskIn(BaseModel):
    question: str = Field(min_length=1, max_length=20000, description="A finding description or a question "
                                                                      "(task=draft: the findings).")
    task: Literal["ask", "draft"] = Field("ask", description="ask: an answer; draft: an impression for the findings.")
    k: int = Field(3, ge=1, le=20, description="Reports in the prompt.")
    retrieval: bool = Field(True, description="False: the model alone (no reports, nothing to cite).")
    target: str = Field("auto", description="auto (impressions for findings, whole reports for a question), report, "
                                            "or a section (task=ask).")
    mode: Literal["dense", "bm25", "hybrid", "hybrid-rrf"] = "hybrid"
    max_tokens: int = Field(256, ge=1, le=4096, description="New tokens the answer may have at most.")

    model_config = {"extra": "forbid"}


class ReloadOut(BaseModel):
    reloaded: bool = Field(description="True when a newer index generation was switched to.")
    index: IndexInfo


# -- helpers -----------------------------------------------------------------------------------
def _client(request: Request) -> str | None:
    return request.client.host if request.client else None


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


def _overrides(reading: list[str] | None) -> list[str]:
    """The ``reading`` overrides as ``finding=status`` strings (ConfigError for a malformed one)."""
    return [f"{finding}={status}" for finding, status in parse_override(reading).items()]


def only_params(allowed: frozenset[str]):
    """A dependency that answers 422 for query parameters the endpoint does not know."""

    def check(request: Request) -> None:
        unknown = sorted({k for k in request.query_params.keys() if k not in allowed})
        if unknown:
            known = ", ".join(sorted(allowed)) or "none"
            raise HTTPException(422, f"unknown parameter(s): {', '.join(u[:40] for u in unknown)}; "
                                     f"this endpoint takes: {known}")

    return Depends(check)


class _Service:
    """The index plus what the endpoints share.

    The endpoints take no lock of their own. ``Index.search``, ``get_report`` and ``stats`` each
    read the index's current store once and work on that store to the end; ``Index.reload``
    swaps in the new generation under the index's own lock and does not close the store it
    replaces (a request still using it keeps it open until it drops it). So a request that
    overlaps a reload answers from the generation it started on, and two reloads do not interleave.
    """

    def __init__(self, index: Index, token: str | None, audit: AuditLog | None, saved_dir: str | Path | None = None) -> None:
        from radsift.serve.cohorts import saved_searches

        self.index = index
        self.token = token
        self.token_id = token_id(token)
        self.audit = audit
        self.saved = saved_searches(index, saved_dir)

    def info(self) -> IndexInfo:
        s = self.index.stats()
        return IndexInfo(**{k: s.get(k) for k in IndexInfo.model_fields})


def create_app(index: Index | str | Path, *, token: str | None = None, audit_log: str | Path | None = None,
               saved_dir: str | Path | None = None, llm=None, llm_timeout: float = 120.0,
               passage_first_stage=None) -> "FastAPI":
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

    Returns:
        The app (run it with uvicorn, or test it with ``fastapi.testclient.TestClient``).
    """
    if not isinstance(index, Index):
        index = Index.open(index)
    if isinstance(passage_first_stage, (str, Path)):
        from radsift.search.passages import PolyFirstStage

        passage_first_stage = PolyFirstStage(passage_first_stage)
    service = _Service(index, token, AuditLog(audit_log) if audit_log is not None else None, saved_dir)

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
    llm_box: dict = {"llm": llm if llm is not None and not isinstance(llm, dict) else None,
                     "options": llm if isinstance(llm, dict) else {}}
    if llm_box["llm"] is None and llm_box["options"].get("url"):
        from radsift.rag.llm import make_llm

        llm_box["llm"] = make_llm(**llm_box["options"])  # a remote or bad URL is refused at start, not on a question

    def require_token(request: Request) -> None:
        if service.token is not None and not bearer_matches(request.headers.get("authorization"), service.token):
            raise HTTPException(401, "missing or wrong API token: send Authorization: Bearer <token>",
                                headers={"WWW-Authenticate": "Bearer"})

    api = APIRouter(prefix="/api", dependencies=[Depends(require_token)])

    @api.get("/search", response_model=SearchOut, dependencies=[only_params(SEARCH_PARAMS)])
    def search(
        request: Request,
        q: Annotated[str, Query(min_length=1, max_length=MAX_QUERY_CHARS,
                                description="Free text, e.g. a findings description.")],
        k: Annotated[int, Query(ge=1, le=1000, description="Number of hits.")] = 10,
        mode: Annotated[Literal["dense", "bm25", "hybrid", "hybrid-rrf"], Query(
            description="Retrieval mode: hybrid (convex combination of dense and BM25), dense, bm25, or hybrid-rrf "
                        "(reciprocal rank fusion).")] = "hybrid",
        level: Annotated[Literal["report", "sentence"],
                         Query(description="One hit per report, or every matching sentence.")] = "report",
        target: Annotated[str, Query(description="findings, impression (the diagnoses that go with a findings "
                                                 "description) or report (every section).")] = "report",
        where: Annotated[list[str] | None, Query(description="Metadata filter: key=value (or key:value) exact, "
                                                              "key~value case-insensitive substring (repeatable; "
                                                              "one key: any; several keys: all).")] = None,
        fields: Annotated[list[str] | None, Query(description="Parts of the report to return: section names, "
                                                              "`sections`, `metadata` or `none` (default all).")] = None,
        unit: Annotated[Literal["sentence", "section"],
                        Query(description="Rank sentences, or whole sections.")] = "sentence",
        rerank: Annotated[int, Query(ge=0, le=1000, description="Rerank the top N hits with the cross-encoder "
                                                                "the server was started with (0 = off).")] = 0,
        negation: Annotated[Literal["aware", "ignore"], Query(description=NEGATION_PARAM)] = "aware",
        reading: Annotated[list[str] | None, Query(description=READING_PARAM)] = None,
        alpha: Annotated[float | None, Query(ge=0, le=1, description="The dense share of hybrid (0 to 1); default: "
                                                                     "the model's own.")] = None,
        concepts: Annotated[bool, Query(description="Link a query that describes a lexicon finding without naming "
                                                    "it to that finding (source linked in the reading).")] = True,
        prf: Annotated[bool, Query(description="Pseudo-relevance feedback: expand the query from its first-pass "
                                               "top hits (RM3 on BM25, Rocchio on the dense side).")] = False,
        offset: Annotated[int, Query(ge=0, le=MAX_OFFSET, description="Hits of the ranked list to skip (paging); "
                                                                     "past the end: an empty page.")] = 0,
    ) -> dict:
        idx = service.index
        manifest = idx.manifest
        filters = parse_where(where)  # Index.search checks the keys (and the target) against the index
        picked = parse_fields(fields, manifest.sections)
        overrides = _overrides(reading)  # Index.search checks the findings against the query's reading
        start = time.perf_counter()
        hits = idx.search(q, k=k, mode=mode, level=level, target=target, where=filters, unit=unit,
                          fields=picked.sections, include_report=picked.include_report, rerank=rerank,
                          negation=negation, reading=overrides, alpha=alpha, concepts=concepts, prf=prf,
                          offset=offset)
        took = (time.perf_counter() - start) * 1000
        read = hits.reading.to_dict()
        read_as = idx.read(q, negation, mode=mode, concepts=concepts).to_dict() if overrides else read
        out = []
        for hit in hits:
            d = hit.to_dict()
            if not picked.metadata:
                d["metadata"] = {}
            out.append(d)
        query = " ".join(q.split())
        if service.audit is not None:
            service.audit.write(
                "search", client=_client(request), token_id=service.token_id, query=query,
                params={"k": k, "mode": mode, "level": level, "target": target, "unit": unit,
                        "where": [str(f) for f in filters], "rerank": rerank, "negation": negation,
                        "reading": overrides, "alpha": alpha, "concepts": concepts, "prf": prf, "offset": offset},
                result_ids=[h.report_id for h in hits],
            )
        return {"query": query, "k": k, "mode": mode, "level": level, "target": target, "unit": unit,
                "where": [str(f) for f in filters], "negation": negation, "overrides": overrides, "reading": read,
                "read_as": read_as, "count": len(out), **hits.page_dict(), "took_ms": round(took, 2), "hits": out}

    @api.get("/passages", dependencies=[only_params(frozenset({"q", "aspect", "k", "mode", "rerank", "where"}))])
    def passages(
        request: Request,
        q: Annotated[str, Query(min_length=1, max_length=MAX_QUERY_CHARS,
                                description="\"ENTITY | ASPECT\" (e.g. \"pneumonia | treatment\") or a question.")],
        aspect: Annotated[str | None, Query(description="The aspect, when not written in q (history, treatment, "
                                                        "assessment, ...; an unknown one is a 422 listing them).")] = None,
        k: Annotated[int, Query(ge=1, le=1000, description="Number of passages.")] = 10,
        mode: Annotated[Literal["dense", "bm25", "hybrid", "hybrid-rrf"], Query(description="First stage.")] = "hybrid",
        rerank: Annotated[int, Query(ge=0, le=1000, description="Re-score the top N passages with the server's "
                                                                "cross-encoder (0 = off).")] = 0,
        where: Annotated[list[str] | None, Query(description="Metadata filters, as /api/search.")] = None,
    ) -> dict:
        """Section passages with heading, aspect, matched sentences and words (radsift.search.passages)."""
        from radsift.search.passages import parse_passage_query, search_passages

        idx = service.index
        parsed = parse_passage_query(q, aspect)
        start = time.perf_counter()
        hits = search_passages(idx, q, k=k, aspect=aspect, mode=mode, where=parse_where(where), rerank=rerank,
                               reranker=idx.reranker if rerank else None, first_stage=passage_first_stage)
        first = passage_first_stage.name if passage_first_stage is not None else "index"
        if service.audit is not None:
            service.audit.write("passages", client=_client(request), token_id=service.token_id, query=q,
                                params={"aspect": parsed.aspect, "k": k, "mode": mode, "rerank": rerank,
                                        "first_stage": first},
                                result_ids=[h.report_id for h in hits])
        return {"query": q, "entity": parsed.entity, "aspect": parsed.aspect, "text": parsed.text, "first_stage": first,
                "took_ms": round((time.perf_counter() - start) * 1000, 2), "hits": [h.to_dict() for h in hits]}

    @api.get("/reports/{report_id:path}", response_model=ReportOut, response_model_exclude_unset=True,
             dependencies=[only_params(REPORT_PARAMS)],
             responses={404: {"description": "No report with that id in the index."}})
    def report(
        request: Request,
        report_id: str,
        q: Annotated[str | None, Query(min_length=1, max_length=MAX_QUERY_CHARS,
                                       description="A query: the answer then marks every mention of its findings "
                                                   "(`mentions`) and says how it was read (`reading`).")] = None,
        negation: Annotated[Literal["aware", "ignore"], Query(description=NEGATION_PARAM)] = "aware",
        reading: Annotated[list[str] | None, Query(description=READING_PARAM)] = None,
        mode: Annotated[Literal["dense", "bm25", "hybrid", "hybrid-rrf"], Query(
            description="The search's mode (with q): bm25 never links a query to a concept.")] = "hybrid",
    ) -> dict:
        idx = service.index
        read = None
        overrides = _overrides(reading)
        if q is not None:
            read = idx.read(q, negation, overrides, mode=mode)  # a bad override is refused before the report is looked up
        elif overrides:
            raise ConfigError("reading: needs q (the query whose reading it overrides)")
        found = idx.get_report(report_id)
        if service.audit is not None:
            extra = {} if q is None else {"query": " ".join(q.split()),
                                          "params": {"negation": negation, "reading": overrides}}
            service.audit.write("report", client=_client(request), token_id=service.token_id,
                                report_id=report_id, found=found is not None, **extra)
        if found is None:
            raise HTTPException(404, f"no report with id {report_id[:200]!r} in this index")
        out = found.to_dict()
        if read is not None:
            # The report found above, read here: one generation even when a reload lands in between.
            out["reading"] = read.to_dict()
            out["mentions"] = {name: [m.to_dict() for m in idx.mentions_in(text, read)]
                               for name, text in found.sections.items()}
        return out

    @api.get("/health", response_model=HealthOut, dependencies=[only_params(frozenset())])
    def health() -> dict:
        info = service.info()
        return {"status": "ok", "version": __version__, "auth": service.token is not None,
                "audit": service.audit is not None, "index": info}

    @api.post("/reload", response_model=ReloadOut, dependencies=[only_params(frozenset())])
    def reload() -> dict:
        changed = service.index.reload()
        info = service.info()
        log.info("reload: %s (generation %s)", "switched" if changed else "already current", info.generation)
        return {"reloaded": changed, "index": info}

    @api.post("/ask", responses={502: {"description": "The LLM back-end failed (unreachable, timed out, garbage)."}})
    def ask_endpoint(request: Request, body: AskIn) -> dict:
        """Answer from the most similar reports, citing them; the answer, its citations and sources, the
        exact prompt and what was cut to fit come back (see :class:`radsift.rag.Answer`)."""
        from radsift.rag import ask, draft_impression
        from radsift.rag.llm import AuditedLLM, make_llm

        if llm_box["llm"] is None:
            llm_box["llm"] = make_llm(**llm_box["options"])
        backend = llm_box["llm"]
        if service.audit is not None:
            backend = AuditedLLM(backend, service.audit, client=_client(request), token_id=service.token_id,
                                 purpose=body.task)
        common = {"llm": backend, "k": body.k, "retrieval": body.retrieval, "mode": body.mode,
                  "max_tokens": body.max_tokens, "timeout": llm_timeout}
        if body.task == "draft":
            draft = draft_impression(service.index, body.question, **common)
            out = {**draft.draft.to_dict(), "baseline": draft.baseline}
        else:
            out = {**ask(service.index, body.question, target=body.target, **common).to_dict(), "baseline": None}
        if service.audit is not None:
            service.audit.write("ask", client=_client(request), token_id=service.token_id, query=out["question"],
                                params={"task": body.task, "k": body.k, "retrieval": body.retrieval,
                                        "target": body.target, "mode": body.mode, "max_tokens": body.max_tokens},
                                result_ids=[s["report_id"] for s in out["sources"]], status=out["status"])
        return out

    from radsift.serve.cohorts import cohort_router

    api.include_router(cohort_router(service, only_params, _client))
    app.include_router(api)

    @app.get("/", include_in_schema=False)
    def page() -> FileResponse:
        return FileResponse(STATIC_DIR / "index.html", media_type="text/html")

    app.mount("/static", StaticFiles(directory=STATIC_DIR), name="static")

    # -- errors: one readable message under "detail" -------------------------------------------
    @app.exception_handler(RequestValidationError)
    async def on_validation(request: Request, exc: RequestValidationError) -> JSONResponse:
        return JSONResponse({"detail": _validation_message(exc)}, status_code=422)

    from radsift.rag.llm import LLMError

    # The handler is found by the error's class hierarchy (its MRO), not by the order below.
    # AuditLogError is answered here, inside the middleware below, so the answer carries the
    # security headers (an unhandled error would be a bare text/plain 500 from outside it);
    # ImportError: the offline model's extra is not installed, said instead of a bare 500.
    for error, status in ((ConfigError, 422), (IndexStoreError, 503), (AuditLogError, 503), (LLMError, 502),
                          (ImportError, 503), (RadsiftError, 400)):
        app.add_exception_handler(error, _detail_answer(status))

    # -- access log without query strings, security headers, no caching of API answers ----------
    @app.middleware("http")
    async def access_log(request: Request, call_next):
        start = time.perf_counter()
        response = await call_next(request)
        route = request.scope.get("route")
        # The route template, not the path: a report id or a typo'd URL never reaches the log.
        where = getattr(route, "path", None) or "<unmatched>"
        log.info("%s %s %d %.1fms", request.method, where, response.status_code,
                 (time.perf_counter() - start) * 1000)
        for name, value in SECURITY_HEADERS.items():
            response.headers.setdefault(name, value)
        if request.url.path.startswith("/api/"):
            response.headers["Cache-Control"] = "no-store"
        return response

    return app
