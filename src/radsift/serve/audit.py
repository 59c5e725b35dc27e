"""The append-only JSON-lines audit trail of who searched for what and which reports they saw."""

from __future__ import annotations

import json
import logging
import os
import threading
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from radsift.errors import ConfigError, RadsiftError

log = logging.getLogger("radsift.serve")


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

    Each line holds ``time`` (UTC, ISO 8601), ``event`` (``search`` or ``report``), ``client``
    (remote address), ``token_id`` (a hash prefix, never the token) and the event's details:
    the query, its parameters and the result ids for a search, the report id for a report view.
    The file is opened in append mode for every line, so rotating it needs no restart.

    When a line cannot be written (disk full, permission removed, the path replaced by a
    directory ...) :meth:`write` raises :class:`AuditLogError`, logs that once at ERROR on
    ``radsift.serve`` (not once per refused request), and logs a WARNING when a later line is
    written again.

    Args:
        path: The audit file.

    Raises:
        ConfigError: The file cannot be opened for appending.
    """

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
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
                  "client": client, "token_id": token_id, **details}
        data = (json.dumps(record, ensure_ascii=False, separators=(",", ":")) + "\n").encode("utf-8")
        with self._lock:
            try:
                self._append(data)
            except OSError as exc:
                error = AuditLogError(self.path, exc.strerror or str(exc))
                if not self._failing:
                    self._failing = True
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
