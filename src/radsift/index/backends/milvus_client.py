"""Milvus: the connection, and where an index's vectors are (URIs, side files, collection names).

The radsift index folder stays the source of records, labels, BM25 and ranking; Milvus holds a copy
of the live generation's unit vectors, one collection per unit kind (``sentence``, ``section``)
named after the index and the generation (``radsift_<name>_<hash>_gen_000003_sentence``,
:func:`collection_name`), so a new generation never reads stale vectors. Where a generation's
vectors are is recorded in ``INDEX/cache/milvus/<generation>.json`` (:func:`side_file`), written by
:func:`radsift.index.backends.milvus_push.push_generation` and read by
:class:`radsift.index.backends.milvus.MilvusBackend`.

milvus-lite (a ``.db`` path) is served in-process and locks its folder: one process at a time
(a running ``radsift serve`` holds it; an ``index add`` in another process is refused with a
clear error, :func:`connect`). A Milvus server (``http://host:19530``) has no such limit.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from pathlib import Path

from radsift.errors import ConfigError, IndexDamagedError
from radsift.index.backends.base import MissingExtraError, extra_module

EXTRA = "pip install 'radsift[milvus]'"
#: Side files (where each generation's vectors live) and the default milvus-lite file, under the index folder.
SIDE_DIR = Path("cache") / "milvus"
DEFAULT_LITE = SIDE_DIR / "vectors.db"
ENV_URI = "RADSIFT_MILVUS_URI"
#: The token of a Milvus server with authentication (``user:password`` or an API key); never written to disk.
ENV_TOKEN = "RADSIFT_MILVUS_TOKEN"
#: The partition holding the copies of bit-identical vectors (the first of each group stays in ``_default``).
COPIES = "copies"
DISTINCT = "_default"
FORMAT = 1
_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")


class MilvusUnavailableError(ConfigError):
    """The Milvus URI does not answer (or a milvus-lite file is held by another process)."""


def pymilvus_module():
    """The ``pymilvus`` module, or :class:`MissingExtraError` naming the extra that installs it."""
    return extra_module("pymilvus", "milvus", "pymilvus", EXTRA)


def available() -> bool:
    """True when pymilvus can be imported (milvus-lite is checked when a ``.db`` URI is opened)."""
    try:
        pymilvus_module()
    except MissingExtraError:
        return False
    return True


def ascii_lower(text: str) -> str:
    """Lower-case ASCII letters only, as SQLite's ``lower()`` (the metadata filters' reference)."""
    return text.translate(_ASCII_LOWER)


# -- where the vectors are -------------------------------------------------------------------------


def is_local(uri: str) -> bool:
    """A milvus-lite file (a path ending in ``.db``) rather than a server URI."""
    return "://" not in uri and not uri.startswith("unix:")


def resolve_uri(index_dir: str | Path, uri: str | None) -> str:
    """The URI to use: ``uri``, else ``$RADSIFT_MILVUS_URI``, else ``INDEX/cache/milvus/vectors.db``
    (milvus-lite). A local path is made absolute (relative to the working folder)."""
    uri = (uri or os.environ.get(ENV_URI, "").strip() or str(Path(index_dir) / DEFAULT_LITE)).strip()
    if is_local(uri):
        if not uri.endswith(".db"):
            raise ConfigError(f"--milvus-uri {uri!r}: a milvus-lite file must end in .db; a Milvus server is "
                              "http://HOST:19530 (or https://...)")
        return str(Path(uri).expanduser().resolve())
    return uri


def side_file(index_dir: str | Path, gen_dir: str | Path) -> Path:
    """Where generation ``gen_dir`` records its Milvus collections (``INDEX/cache/milvus/<gen>.json``)."""
    return Path(index_dir) / SIDE_DIR / f"{Path(gen_dir).name}.json"


def read_side(index_dir: str | Path, gen_dir: str | Path) -> dict | None:
    """The side file of a generation, or None when its vectors were never pushed to Milvus."""
    path = side_file(index_dir, gen_dir)
    if not path.exists():
        return None
    try:
        info = json.loads(path.read_text())
        if info.get("format") != FORMAT or not isinstance(info.get("collections"), dict):
            raise ValueError("unknown format")
    except (OSError, ValueError) as exc:
        raise IndexDamagedError(f"{path}: unreadable Milvus side file ({exc}); copy the vectors again with "
                                f"`radsift index push {index_dir}`") from exc
    return info


def pushed_before(index_dir: str | Path) -> dict | None:
    """The newest side file of any generation of this index (an index once pushed to Milvus), or None."""
    folder = Path(index_dir) / SIDE_DIR
    files = sorted(folder.glob("gen-*.json")) if folder.is_dir() else []
    for path in reversed(files):
        try:
            return json.loads(path.read_text())
        except (OSError, ValueError):
            continue
    return None


def collection_prefix(index_dir: str | Path) -> str:
    """``radsift_<folder name>_<hash of its absolute path>_``: one index's collections on a shared server."""
    path = Path(index_dir).resolve()
    slug = re.sub(r"[^A-Za-z0-9]+", "_", path.name).strip("_")[:40] or "index"
    return f"radsift_{slug}_{hashlib.sha1(str(path).encode()).hexdigest()[:8]}_"


def collection_name(index_dir: str | Path, gen_dir: str | Path, kind: str) -> str:
    return f"{collection_prefix(index_dir)}{Path(gen_dir).name.replace('-', '_')}_{kind}"


def connect(uri: str, *, token: str | None = None, timeout: float = 10.0):
    """A ``MilvusClient`` on ``uri`` (a milvus-lite ``.db`` path or a server URI).

    Raises:
        MissingExtraError: pymilvus (or, for a ``.db`` path, milvus-lite) is not installed.
        MilvusUnavailableError: The server does not answer, or the milvus-lite file is held by
            another process.
    """
    pymilvus = pymilvus_module()
    token = token if token is not None else os.environ.get(ENV_TOKEN, "")
    if is_local(uri):
        try:
            import milvus_lite  # noqa: F401
        except ImportError as exc:
            raise MissingExtraError(f"--milvus-uri {uri}: a local .db file needs milvus-lite, which is not "
                                    f"installed ({exc}); install it with: {EXTRA}") from exc
        if not Path(uri).parent.is_dir():
            raise MilvusUnavailableError(f"--milvus-uri {uri}: the folder {Path(uri).parent} does not exist")
        held = _lite_lock_holder(Path(uri))
        if held:
            raise MilvusUnavailableError(
                f"--milvus-uri {uri}: the milvus-lite file is open in another process ({held}); milvus-lite serves "
                "one process at a time: stop that process (a running `radsift serve`?) or use a Milvus server "
                "(http://HOST:19530)")
    try:
        return pymilvus.MilvusClient(uri=uri, token=token, timeout=timeout)
    except Exception as exc:  # pymilvus raises its own MilvusException / ConnectionConfigException
        detail = str(getattr(exc, "message", "") or exc).strip() or type(exc).__name__
        raise MilvusUnavailableError(f"--milvus-uri {uri}: Milvus does not answer ({detail}); check the address "
                                     "and that the server is up (`docker compose ps`)") from None


def _lite_lock_holder(path: Path) -> str:
    """Non-empty when another process holds the milvus-lite folder's lock (milvus-lite's ``LOCK`` flock)."""
    lock = path / "LOCK"
    if not lock.exists():
        return ""
    try:
        import fcntl
    except ImportError:  # Windows: milvus-lite's own error stands
        return ""
    from milvus_lite.server_manager import server_manager_instance

    if os.path.abspath(path) in getattr(server_manager_instance, "_servers", {}):
        return ""  # held by this process: the client shares its server
    fd = os.open(lock, os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        fcntl.flock(fd, fcntl.LOCK_UN)
        return ""
    except OSError as exc:
        return f"lock {lock}: {exc.strerror}"
    finally:
        os.close(fd)


def dups_path(index_dir: str | Path, gen_dir: str | Path, kind: str) -> Path:
    """The duplicate groups of a generation's ``kind`` vectors (``INDEX/cache/milvus/<gen>.<kind>.dups.npz``)."""
    return Path(index_dir) / SIDE_DIR / f"{Path(gen_dir).name}.{kind}.dups.npz"


def row_count(client, name: str) -> int:
    """Rows a collection holds (-1 when Milvus cannot say)."""
    try:
        return int(client.get_collection_stats(name).get("row_count", -1))
    except Exception:
        return -1
