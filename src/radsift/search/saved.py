"""Saved searches: a query and its options kept by name, run again later, reporting what is new.

A saved search lives in a folder beside the index's generations (``INDEX/saved/`` by default, or
a folder the user names), never inside a generation, so a rebuild or an ``index add`` keeps it.
Each search is one JSON file (``NAME.json``: the query, its options, the model it was saved with
and its last run) and, once run, the ids of the reports the index held at that run
(``NAME.seen.json``), so that ``radsift saved run NAME --new`` lists only the matching reports
added since (RADIS calls this a subscription). Files are written atomically; a name is one plain
path component (letters, digits, ``.``, ``_``, ``-``).

A run is recorded only once its results are delivered: the CLI and the web service run with
``mark=False`` and call :meth:`SavedSearches.record` after the rows are printed, written and audited
(the API: after the answer is sent), so a run that fails records nothing and the next ``--new`` still
lists the reports it never showed. The ids recorded are those of the generation the run searched,
taken before it searched: a report added meanwhile stays new.
"""

from __future__ import annotations

import json
import re
import threading
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Mapping

from radsift.errors import ConfigError
from radsift.search.cohort import (COHORT_OPTIONS, DEFAULT_MAX_ROWS, INCLUDE, Cohort, _atomic_write, collect_cohort,
                                   plain_options)
from radsift.search.query import normalize_query

#: The folder of saved searches inside an index folder.
SAVED_DIR = "saved"
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
#: Search options a saved search may keep (those of a cohort: a report-level walk of the list).
OPTIONS = COHORT_OPTIONS


def check_name(name: str) -> str:
    """A saved search's name: 1 to 64 letters, digits, ``.``, ``_`` or ``-``, starting with a letter or digit.

    Raises:
        ConfigError: Naming what is wrong (a path separator, a control character, too long ...).
    """
    if not isinstance(name, str):
        raise ConfigError(f"saved search name must be text, not {type(name).__name__}")
    if "/" in name or "\\" in name:
        raise ConfigError(f"saved search name {name[:80]!r}: no path separators (/ or \\) allowed")
    if any(ord(c) < 32 or ord(c) == 127 for c in name):
        raise ConfigError(f"saved search name {name[:80]!r}: no control characters allowed")
    if not _NAME.fullmatch(name):
        raise ConfigError(f"saved search name {name[:80]!r}: use 1 to 64 letters, digits, '.', '_' or '-', "
                          "starting with a letter or digit")
    return name


@dataclass
class SavedSearch:
    """One saved search."""

    name: str
    query: str
    options: dict[str, Any] = field(default_factory=dict)
    include: str | None = None
    created: str = ""
    model: str = ""
    model_fingerprint: str = ""
    last_run: dict[str, Any] | None = None  # time, generation, model_fingerprint, rows, reports

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], source: str) -> "SavedSearch":
        try:
            out = cls(**{k: data[k] for k in ("name", "query")},
                      **{k: data[k] for k in ("options", "include", "created", "model", "model_fingerprint",
                                              "last_run") if k in data})
        except (KeyError, TypeError) as exc:
            raise ConfigError(f"{source}: not a saved search ({exc})") from None
        if not isinstance(out.query, str) or not isinstance(out.options, dict):
            raise ConfigError(f"{source}: not a saved search (query must be text, options a mapping)")
        return out


@dataclass
class SavedRun:
    """The result of running a saved search."""

    search: SavedSearch
    cohort: Cohort
    rows: list  # the cohort's rows, or only the new ones with ``new``
    new_only: bool
    first_run: bool
    warnings: list[str]
    #: What :meth:`SavedSearches.record` writes for this run (the ids the index held when it ran, ...).
    pending: dict[str, Any] | None = field(default=None, repr=False)


#: A run is recorded after its answer is sent (the web service's background task), so a remove or a replace may
#: come between the run and its record: in one process, the two take turns.
_RECORDING = threading.Lock()


class SavedSearches:
    """The saved searches of one index (``INDEX/saved``) or of a folder the user chose."""

    def __init__(self, folder: str | Path) -> None:
        self.folder = Path(folder)

    @classmethod
    def of_index(cls, index_dir: str | Path, folder: str | Path | None = None) -> "SavedSearches":
        return cls(folder if folder is not None else Path(index_dir) / SAVED_DIR)

    def _path(self, name: str, suffix: str = ".json") -> Path:
        return self.folder / (check_name(name) + suffix)

    def names(self) -> list[str]:
        if not self.folder.is_dir():
            return []
        return sorted(p.name[:-5] for p in self.folder.glob("*.json")
                      if not p.name.endswith(".seen.json") and _NAME.fullmatch(p.name[:-5]))

    def list(self) -> list[SavedSearch]:
        return [self.get(n) for n in self.names()]

    def get(self, name: str) -> SavedSearch:
        path = self._path(name)
        if not path.is_file():
            known = ", ".join(self.names()) or "none saved"
            raise ConfigError(f"no saved search {name!r} (saved: {known})")
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise ConfigError(f"{path}: cannot be read as a saved search ({exc})") from None
        return SavedSearch.from_dict(data, str(path))

    def add(self, index, name: str, query: str, *, include: str | None = None, replace: bool = False,
            **options: Any) -> SavedSearch:
        """Save a search (checked first: a query the index would refuse is not saved).

        Raises:
            ConfigError: A bad name or option, or the name is taken and ``replace`` is false.
        """
        name = check_name(name)
        unknown = sorted(set(options) - set(OPTIONS))
        if unknown:
            raise ConfigError(f"saved search: unknown option {unknown[0]!r}; allowed: {', '.join(OPTIONS)}")
        if include is not None and include not in INCLUDE:
            raise ConfigError(f"include must be one of {', '.join(INCLUDE)}, not {str(include)[:40]!r}")
        options = {k: v for k, v in options.items() if v is not None}
        index.search(query, k=1, mentions=False, include_report=False, **options)  # refuses what it would refuse
        path = self._path(name)
        if path.exists() and not replace:
            raise ConfigError(f"a saved search named {name!r} exists (remove it first, or replace it)")
        m = index.manifest
        saved = SavedSearch(name=name, query=normalize_query(query), options=plain_options(options), include=include,
                            created=_now(), model=m.model_name, model_fingerprint=m.model_fingerprint)
        self.folder.mkdir(parents=True, exist_ok=True)
        with _RECORDING:
            _atomic_write(path, json.dumps(saved.to_dict(), indent=1, ensure_ascii=False) + "\n")
            self._path(name, ".seen.json").unlink(missing_ok=True)
        return saved

    def remove(self, name: str) -> None:
        path = self._path(name)
        with _RECORDING:
            if not path.exists():
                raise ConfigError(f"no saved search {name!r}")
            path.unlink()
            self._path(name, ".seen.json").unlink(missing_ok=True)

    def run(self, index, name: str, *, new: bool = False, mark: bool = True,
            max_rows: int | None = None) -> SavedRun:
        """Run a saved search: its cohort, or with ``new`` only the reports added since its last run.

        Args:
            index: The :class:`radsift.Index` to run it on.
            name: The saved search.
            new: Keep only reports that were not in the index at the last run (all, on a first run).
            mark: Record this run (its time and the index's report ids) for the next ``new`` before
                returning (a Python caller has the results once this returns). A caller that delivers
                them later (the CLI, the web service) passes False and calls :meth:`record` once it has.
            max_rows: The export limit (default :data:`~radsift.search.cohort.DEFAULT_MAX_ROWS`).
        """
        saved = self.get(name)
        warnings = []
        m = index.manifest
        then = (saved.last_run or {}).get("model_fingerprint") or saved.model_fingerprint
        if then and then != m.model_fingerprint:
            warnings.append(f"the index was rebuilt with another model since this search was "
                            f"{'last run' if saved.last_run else 'saved'} ({saved.model or 'unknown'} -> {m.model_name}): "
                            "the results may differ")
        store = index.live_store()  # before the search: a report added while it runs stays new
        pending = {"ids": list(store.report_ids), "generation": store.manifest.generation,
                   "model": m.model_name, "model_fingerprint": m.model_fingerprint}
        cohort = collect_cohort(index, saved.query, include=saved.include,
                                max_rows=DEFAULT_MAX_ROWS if max_rows is None else max_rows, **saved.options)
        seen_path = self._path(name, ".seen.json")
        seen = None
        if seen_path.is_file():
            try:
                seen = set(json.loads(seen_path.read_text(encoding="utf-8")))
            except (OSError, ValueError) as exc:
                raise ConfigError(f"{seen_path}: cannot be read ({exc}); remove it to start over") from None
        rows = cohort.rows
        if new and seen is not None:
            rows = [r for r in rows if r.hit.report_id not in seen]
        run = SavedRun(saved, cohort, rows, new, seen is None, warnings, pending)
        if mark:
            self.record(run)
        return run

    def record(self, run: SavedRun) -> None:
        """Record ``run`` for the next ``new`` (its time, generation and the report ids the index held):
        call it once the run's results are delivered. Recording a run twice is a no-op."""
        if run.pending is None:
            return
        pending, run.pending = run.pending, None
        saved, ids = run.search, pending["ids"]
        with _RECORDING:
            if not self._is_current(saved):  # removed or replaced since the run: writing would bring it back
                return
            _atomic_write(self._path(saved.name, ".seen.json"), json.dumps(ids, ensure_ascii=False))
            saved.last_run = {"time": _now(), "generation": pending["generation"],
                              "model_fingerprint": pending["model_fingerprint"], "reports": len(ids),
                              "rows": len(run.cohort.rows)}
            saved.model, saved.model_fingerprint = pending["model"], pending["model_fingerprint"]
            _atomic_write(self._path(saved.name), json.dumps(saved.to_dict(), indent=1, ensure_ascii=False) + "\n")

    def _is_current(self, saved: SavedSearch) -> bool:
        """Whether ``saved`` is still the search stored under its name (the same one saved, not a replacement)."""
        try:
            stored = self.get(saved.name)
        except ConfigError:
            return False
        return (stored.created, stored.query, stored.options, stored.include) == (
            saved.created, saved.query, saved.options, saved.include)


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")
