"""``POST /api/ask``: an answer to a finding description or question from the most similar reports, citing
them (``task=draft``: an impression drafted from findings, with the retrieval-only baseline).

The LLM back-end is the one the app was created with (default: the offline model, loaded on the
first question); every LLM call is audited (sizes and outcome, never text), and so is the question
(a draft's findings as their size and SHA-256: they are report text).
"""

from __future__ import annotations

from fastapi import APIRouter, Request

from radsift.rag import ask, draft_impression
from radsift.rag.llm import AuditedLLM
from radsift.serve.audit import text_summary
from radsift.serve.schemas import AskIn
from radsift.serve.service import Service, api_router, client_of


def ask_router(service: Service) -> APIRouter:
    """The ask endpoint over ``service``."""
    router = api_router(service)

    @router.post("/ask", responses={502: {"description": "The LLM back-end failed (unreachable, timed out, garbage)."}})
    def ask_endpoint(request: Request, body: AskIn) -> dict:
        """Answer from the most similar reports, citing them; the answer, its citations and sources, the
        exact prompt and what was cut to fit come back (see :class:`radsift.rag.Answer`)."""
        backend = service.llm
        if service.audit is not None:
            backend = AuditedLLM(backend, service.audit, client=client_of(request), token_id=service.token_id,
                                 purpose=body.task)
        common = {"llm": backend, "k": body.k, "retrieval": body.retrieval, "mode": body.mode,
                  "max_tokens": body.max_tokens, "timeout": service.llm_timeout}
        if body.task == "draft":
            draft = draft_impression(service.index, body.question, **common)
            out = {**draft.draft.to_dict(), "baseline": draft.baseline}
        else:
            out = {**ask(service.index, body.question, target=body.target, **common).to_dict(), "baseline": None}
        asked = text_summary(out["question"]) if body.task == "draft" else out["question"]  # findings: report text
        service.audit_write(request, "ask", query=asked, params={
            "task": body.task, "k": body.k, "retrieval": body.retrieval, "target": body.target, "mode": body.mode,
            "max_tokens": body.max_tokens}, result_ids=[s["report_id"] for s in out["sources"]], status=out["status"])
        return out

    return router
