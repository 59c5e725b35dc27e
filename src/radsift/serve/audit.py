"""The append-only JSON-lines audit trail of who searched for what and which reports they saw.

No report text goes into it: free text longer than :data:`TEXT_CHARS` (a pasted findings paragraph,
a long query) is written as its size and SHA-256 (:func:`text_summary`), and so is a draft's
findings text whatever its length; report ids are listed (up to :data:`ID_LIST_MAX`) beside the
SHA-256 of their sorted list and their count (:func:`id_summary`), so an export's line says which
reports left. The CLI writes into the index's own ``audit/`` folder by default (:func:`index_audit_log`).
"""

from __future__ import annotations

import getpass
import hashlib
import json
import logging
import os
import threading
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from radsift.errors import ConfigError, RadsiftError

log = logging.getLogger("radsift.serve")

#: Free text longer than this is written as its size and hash (a query is short; report text is not).
TEXT_CHARS = 200
#: Report ids an audit line lists at most (beyond it: their count and the hash of their sorted list).
ID_LIST_MAX = 1000


def text_summary(text: str) -> dict[str, Any]:
    """``text`` as its size and SHA-256, for an audit line that must not hold it (report text)."""
    return {"chars": len(text), "sha256": hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()}


def id_summary(ids, key: str = "report_ids") -> dict[str, Any]:
    """Which reports: ``{key}_count``, ``{key}_sha256`` (of the sorted ids joined by newlines) and, up to
    :data:`ID_LIST_MAX` of them, the ids themselves (``key``)."""
    ids = [str(i) for i in ids]
    digest = hashlib.sha256("\n".join(sorted(ids)).encode("utf-8", "surrogatepass")).hexdigest()
    out: dict[str, Any] = {f"{key}_count": len(ids), f"{key}_sha256": digest}
    if len(ids) <= ID_LIST_MAX:
        out[key] = ids
    return out


def _summarise_long_text(value: Any) -> Any:
    """``value`` with every string longer than :data:`TEXT_CHARS` replaced by :func:`text_summary`."""
    if isinstance(value, str):
        return text_summary(value) if len(value) > TEXT_CHARS else value
    if isinstance(value, dict):
        return {k: _summarise_long_text(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_summarise_long_text(v) for v in value]
    return value


def local_user() -> str:
    """Who runs this process (the CLI's audit lines have no token to name them)."""
    try:
        return getpass.getuser()
    except (KeyError, OSError):  # no passwd entry (containers)
        return str(os.getuid()) if hasattr(os, "getuid") else ""


class AuditLogError(RadsiftError):
    """An audit line could not be written: the request it was for must not be answered.

    The web service answers it with 503 and this message (``detail``).

    Args:
        path: The audit file.
        reason: Why writing failed (the OS error's text).
    """

    def __init__(self, path: Path, reason: str) -> None:
        self.path = path
        self.reason = reason
        super().__init__(f"audit log {path} cannot be written ({reason}): searches are refused until it can")


class AuditLog:
    """Appends one JSON object per line to ``path`` (created with owner-only permissions).

    Each line holds ``time`` (UTC, ISO 8601), ``event`` (``search``, ``report``, ``export`` ...), ``client``
    (remote address, or ``cli``), ``token_id`` (a hash prefix, never the token) and the event's details:
    the query, its parameters and the result ids for a search, the report id for a report view, the
    ids (or their hash and count) for an export. Any string detail longer than :data:`TEXT_CHARS` is
    written as its size and hash (:func:`text_summary`).
    The file is opened in append mode for every line, so rotating it needs no restart.

    When a line cannot be written (disk full, permission removed, the path replaced by a
    directory ...) :meth:`write` raises :class:`AuditLogError`, logs that once at ERROR on
    ``radsift.serve`` (not once per refused request), and logs a WARNING when a later line is
    written again.

    Args:
        path: The audit file.
        log_failures: Log a failed write on ``radsift.serve`` (the server's way); the CLI says it once, as
            its error line, instead.

    Raises:
        ConfigError: The file cannot be opened for appending.
    """

    def __init__(self, path: str | Path, *, log_failures: bool = True) -> None:
        self.path = Path(path)
        self.log_failures = log_failures
        self._lock = threading.Lock()
        self._failing = False  # the last write failed: log the next failure quietly, a success loudly
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            os.close(os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600))
        except OSError as exc:
            raise ConfigError(f"--audit-log {self.path}: cannot append to it ({exc.strerror or exc})") from None

    def write(self, event: str, *, client: str | None, token_id: str | None, **details: Any) -> None:
        """Append one audit line (flushed and fsynced before returning).

        Raises:
            AuditLogError: The line could not be written (whole and synced).
        """
        record = {"time": datetime.now(timezone.utc).isoformat(timespec="milliseconds"), "event": event,
                  "client": client, "token_id": token_id, **_summarise_long_text(details)}
        data = (json.dumps(record, ensure_ascii=False, separators=(",", ":")) + "\n").encode("utf-8")
        with self._lock:
            try:
                self._append(data)
            except OSError as exc:
                error = AuditLogError(self.path, exc.strerror or str(exc))
                if not self._failing:
                    self._failing = True
                    if self.log_failures:
                        log.error("%s", error)
                raise error from None
            if self._failing:
                self._failing = False
                log.warning("audit log %s writable again: searches are answered again", self.path)

    def _append(self, data: bytes) -> None:
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            written = os.write(fd, data)
            if written != len(data):  # a full disk can cut a line short instead of refusing it
                raise OSError(f"short write: {written} of {len(data)} bytes")
            os.fsync(fd)
        finally:
            os.close(fd)


def index_audit_log(index_dir: str | Path, name: str, path: str | Path | None = None, *,
                    off_hint: str = "") -> AuditLog:
    """The CLI's audit log: ``path``, else ``INDEX_DIR/audit/NAME``.

    An index folder that cannot be written (read-only media, another user's index) is refused, not
    skipped: a search or export that leaves no line would go unseen. The message says how to choose:
    an audit file elsewhere (``--audit-log``), or, where ``off_hint`` names it, no audit at all.

    Raises:
        ConfigError: The file cannot be appended to (one line, naming it and the way out).
    """
    if path is not None:
        return AuditLog(path, log_failures=False)
    default = Path(index_dir) / "audit" / name
    try:
        return AuditLog(default, log_failures=False)
    except ConfigError as exc:
        reason = str(exc).split(": cannot append to it ", 1)[-1]
        raise ConfigError(f"audit log {default} cannot be written {reason}: pass --audit-log FILE "
                          f"(somewhere writable){off_hint}") from None
