"""What the web service's endpoints share: the index, the token, the audit log, the saved searches, the LLM.

:class:`Service` is built once by :func:`radsift.serve.app.create_app`; each group of endpoints
(:mod:`.search_routes`, :mod:`.ask_routes`, :mod:`.index_routes`, :mod:`.cohorts`) is an
``APIRouter`` over it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from fastapi import APIRouter, Depends, HTTPException, Request

from radsift.rag.llm import make_llm
from radsift.search import Index
from radsift.search.saved import SavedSearches
from radsift.serve.audit import AuditLog
from radsift.serve.auth import bearer_matches, token_id
from radsift.serve.schemas import IndexInfo


def client_of(request: Request) -> str | None:
    """The client's address (for the audit log)."""
    return request.client.host if request.client else None


class Service:
    """The index plus what the endpoints share.

    The endpoints take no lock of their own. ``Index.search``, ``get_report`` and ``stats`` each
    read the index's current store once and work on that store to the end; ``Index.reload``
    swaps in the new generation under the index's own lock and does not close the store it
    replaces (a request still using it keeps it open until it drops it). So a request that
    overlaps a reload answers from the generation it started on, and two reloads do not interleave.

    Args:
        index: The opened index.
        token: The API token (None: no token needed).
        audit: The audit log (None: none).
        saved_dir: The folder of saved searches (default ``INDEX/saved``).
        llm: The back-end of ``/api/ask``: an :class:`~radsift.rag.llm.LLM`, the keyword arguments of
            :func:`~radsift.rag.llm.make_llm`, or None (the offline model, loaded on the first question).
        llm_timeout: Seconds one generation may take.
        passage_first_stage: A :class:`~radsift.search.passages.PolyFirstStage` scoring ``/api/passages``.
    """

    def __init__(self, index: Index, token: str | None, audit: AuditLog | None, saved_dir: str | Path | None = None,
                 *, llm=None, llm_timeout: float = 120.0, passage_first_stage=None) -> None:
        self.index = index
        self.token = token
        self.token_id = token_id(token)
        self.audit = audit
        self.saved = SavedSearches.of_index(index.path, saved_dir)
        self.llm_timeout = llm_timeout
        self.passage_first_stage = passage_first_stage
        self._llm = llm if llm is not None and not isinstance(llm, dict) else None
        self._llm_options = llm if isinstance(llm, dict) else {}
        if self._llm is None and self._llm_options.get("url"):
            self._llm = make_llm(**self._llm_options)  # a remote or bad URL is refused at start, not on a question

    def info(self) -> IndexInfo:
        s = self.index.stats()
        return IndexInfo(**{k: s.get(k) for k in IndexInfo.model_fields})

    @property
    def llm(self):
        """The LLM back-end (the offline model is loaded on the first question)."""
        if self._llm is None:
            self._llm = make_llm(**self._llm_options)
        return self._llm

    def audit_write(self, request: Request, event: str, **details: Any) -> None:
        """One audit line for ``request`` (when the app has an audit log)."""
        if self.audit is not None:
            self.audit.write(event, client=client_of(request), token_id=self.token_id, **details)


def api_router(service: Service) -> APIRouter:
    """A router for endpoints under ``/api``: each call needs the app's token, when it has one (else 401)."""

    def require_token(request: Request) -> None:
        if service.token is not None and not bearer_matches(request.headers.get("authorization"), service.token):
            raise HTTPException(401, "missing or wrong API token: send Authorization: Bearer <token>",
                                headers={"WWW-Authenticate": "Bearer"})

    return APIRouter(prefix="/api", dependencies=[Depends(require_token)])
