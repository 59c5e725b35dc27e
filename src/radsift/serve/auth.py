"""API tokens: where the server's token comes from, how a request proves it, how it is named in logs."""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import os
from pathlib import Path

from radsift.errors import ConfigError

TOKEN_ENV = "RADSIFT_TOKEN"
MIN_TOKEN_CHARS = 16


def resolve_token(token: str | None = None, token_file: str | Path | None = None) -> str | None:
    """The API token: ``token`` itself, else the first line of ``token_file``, else ``$RADSIFT_TOKEN``.

    Raises:
        ConfigError: The token file is missing or empty, or the token is shorter than 16 characters.
    """
    source = "the token"
    if token is None and token_file is not None:
        path = Path(token_file)
        try:
            token = path.read_text(encoding="utf-8").strip()
        except OSError as exc:
            raise ConfigError(f"--token-file {path}: cannot read it ({exc.strerror or exc})") from None
        if not token:
            raise ConfigError(f"--token-file {path} is empty: put the API token on its first line")
        source = f"the token in {path}"
    if token is None:
        token = os.environ.get(TOKEN_ENV) or None
        source = f"${TOKEN_ENV}"
    if token is None:
        return None
    token = token.strip()
    if len(token) < MIN_TOKEN_CHARS:
        raise ConfigError(
            f"{source} is {len(token)} characters long; use at least {MIN_TOKEN_CHARS} random characters "
            "(e.g. `python -c \"import secrets; print(secrets.token_hex(24))\"`)"
        )
    return token


def token_id(token: str | None) -> str | None:
    """A short, non-secret name for a token (first 8 hex digits of its SHA-256) for audit lines."""
    if token is None:
        return None
    return hashlib.sha256(token.encode("utf-8")).hexdigest()[:8]


def bearer_matches(header: str | None, token: str) -> bool:
    """True when an ``Authorization`` header carries ``Bearer <token>`` (compared in constant time)."""
    if not header:
        return False
    scheme, _, given = header.partition(" ")
    if scheme.lower() != "bearer":
        return False
    return hmac.compare_digest(given.strip().encode("utf-8"), token.encode("utf-8"))


def is_loopback(host: str) -> bool:
    """True for addresses only this machine can reach (127.0.0.0/8, ::1, ``localhost``)."""
    if host.strip().lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False  # a host name other than localhost may resolve to anything
