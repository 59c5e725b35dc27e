"""The index's own endpoints: ``GET /api/health`` (counts, model, version) and ``POST /api/reload``
(switch to the newest generation, after ``radsift index add``)."""

from __future__ import annotations

import logging

from fastapi import APIRouter


from radsift.serve.params import only_params
from radsift.serve.schemas import HealthOut, ReloadOut
from radsift.serve.service import Service, api_router
from radsift.version import __version__

log = logging.getLogger("radsift.serve")


def index_router(service: Service) -> APIRouter:
    """Health and reload over ``service``."""
    router = api_router(service)

    @router.get("/health", response_model=HealthOut, dependencies=[only_params(frozenset())])
    def health() -> dict:
        info = service.info()
        return {"status": "ok", "version": __version__, "auth": service.token is not None,
                "audit": service.audit is not None, "index": info}

    @router.post("/reload", response_model=ReloadOut, dependencies=[only_params(frozenset())])
    def reload() -> dict:
        changed = service.index.reload()
        info = service.info()
        log.info("reload: %s (generation %s)", "switched" if changed else "already current", info.generation)
        return {"reloaded": changed, "index": info}

    return router
