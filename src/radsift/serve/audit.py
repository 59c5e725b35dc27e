"""The append-only JSON-lines audit trail of who searched for what and which reports they saw."""

from __future__ import annotations

import json
import os
import threading
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from radsift.errors import ConfigError


class AuditLog:
    """Appends one JSON object per line to ``path`` (created with owner-only permissions).

    Each line holds ``time`` (UTC, ISO 8601), ``event`` (``search`` or ``report``), ``client``
    (remote address), ``token_id`` (a hash prefix, never the token) and the event's details:
    the query, its parameters and the result ids for a search, the report id for a report view.
    The file is opened in append mode for every line, so rotating it needs no restart.

    Args:
        path: The audit file.

    Raises:
        ConfigError: The file cannot be opened for appending.
    """

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._lock = threading.Lock()
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            os.close(os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600))
        except OSError as exc:
            raise ConfigError(f"--audit-log {self.path}: cannot append to it ({exc.strerror or exc})") from None

    def write(self, event: str, *, client: str | None, token_id: str | None, **details: Any) -> None:
        """Append one audit line (flushed and fsynced before returning)."""
        record = {"time": datetime.now(timezone.utc).isoformat(timespec="milliseconds"), "event": event,
                  "client": client, "token_id": token_id, **details}
        line = json.dumps(record, ensure_ascii=False, separators=(",", ":")) + "\n"
        with self._lock:
            fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
            try:
                os.write(fd, line.encode("utf-8"))
                os.fsync(fd)
            finally:
                os.close(fd)
