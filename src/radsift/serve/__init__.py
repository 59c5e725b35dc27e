"""Serve an index: a JSON API and a search page (``radsift serve``), safe by default.

``create_app`` builds the FastAPI app (for tests, or to mount elsewhere); ``run_server`` runs it
with uvicorn on 127.0.0.1, refusing other addresses without an API token.
"""

from __future__ import annotations

__all__ = ["create_app", "run_server"]


def __getattr__(name: str):
    # Lazy, so `import radsift.serve` stays light for the CLI until the server really starts.
    if name == "create_app":
        from radsift.serve.app import create_app

        return create_app
    if name == "run_server":
        from radsift.serve.server import run_server

        return run_server
    raise AttributeError(name)
