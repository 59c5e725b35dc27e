"""Encoding on a Ray cluster (``radsift index build|add --ray ADDRESS``), by Ray Data ``map_batches``.

:class:`RayEncoder` has the encoder interface a build uses. The texts go to the cluster as a Ray
Dataset (longest first, each with its row number), a pool of actors encodes them batch by batch
(each actor loads the model once, as :func:`radsift.models.parallel.worker_loader` loads it in a
local worker), and the vectors come back to their rows: the build then writes its segment and
commits it here, as without Ray. Every node needs radsift installed and the model folder (and an ONNX
export, for ``--encoder onnx``) at the same path as on this machine; a shared file system or the same
installation does it.

Addresses: ``host:port`` (the head node's GCS, default port 6379), ``ray://host:port`` (Ray Client,
default port 10001), ``auto`` (the cluster ``ray start`` runs on this machine) and ``local`` (a Ray
started here for this build: how the tests run it). :func:`check_ray_address` refuses an address
that does not answer before anything is written. Needs the ``ray`` extra (``pip install
'radsift[ray]'``): without it the error names the command.
"""

from __future__ import annotations

import logging
import os
import socket
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from radsift.errors import ConfigError
from radsift.models.parallel import CHUNK_BATCHES, EncodeWorkerError, length_chunks, worker_loader, worker_threads
from radsift.progress import progress_bar

INSTALL_HINT = "pip install 'radsift[ray]' (or: pip install 'ray[data]')"
#: Default ports: the head node's GCS (``ray start --head``) and the Ray Client server.
GCS_PORT, CLIENT_PORT = 6379, 10001
#: Seconds to wait for an address to accept a connection.
CONNECT_TIMEOUT_S = 5.0


class RayUnavailable(ConfigError):
    """``--ray`` without the ``ray`` package (the message names the pip command)."""


def require_ray():
    """The ``ray`` module with Ray Data, or :class:`RayUnavailable` naming what to install."""
    try:
        import ray
        import ray.data  # noqa: F401 - map_batches lives there
    except ImportError as exc:
        raise RayUnavailable(f"--ray needs the package ray with Ray Data, which is not installed ({exc}): "
                             f"{INSTALL_HINT}; or encode on this machine with --workers N") from None
    return ray


def _host_port(address: str) -> tuple[str, int]:
    client = address.startswith("ray://")
    rest = address[len("ray://"):] if client else address
    host, _, port = rest.rpartition(":") if ":" in rest else (rest, "", "")
    if not host:
        raise ConfigError(f"--ray {address!r}: expected host:port, ray://host:port, auto or local")
    try:
        number = int(port) if port else (CLIENT_PORT if client else GCS_PORT)
    except ValueError:
        raise ConfigError(f"--ray {address!r}: the port {port!r} is not a number") from None
    return host.strip("[]"), number


def check_ray_address(address: str) -> None:
    """Refuse ``address`` unless Ray is installed and a cluster answers there (one line naming the address).

    ``local`` starts a Ray here at encoding time (nothing to check but the package); ``auto`` needs a
    cluster started on this machine (``RAY_ADDRESS`` or ``ray start``'s address file).

    Raises:
        RayUnavailable: ray is not installed.
        ConfigError: A malformed address, or no cluster answers there within :data:`CONNECT_TIMEOUT_S`.
    """
    require_ray()
    if address == "local":
        return
    target = address
    if address == "auto":
        target = os.environ.get("RAY_ADDRESS", "")
        current = Path(os.environ.get("RAY_TMPDIR", "/tmp")) / "ray" / "ray_current_cluster"
        if not target and current.is_file():
            target = current.read_text(encoding="utf-8").strip()
        if not target or target == "auto":
            raise ConfigError("--ray auto: no Ray cluster runs on this machine (start one with `ray start --head`, "
                              "or give its address); nothing was written")
    host, port = _host_port(target)
    try:
        with socket.create_connection((host, port), timeout=CONNECT_TIMEOUT_S):
            pass
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        raise ConfigError(f"--ray {address}: no Ray cluster answers at {host}:{port} ({reason}); start one with "
                          "`ray start --head` or check the address; nothing was written") from None


class _RayActor:
    """A Ray Data actor: loads the model once, encodes batches of ``{"row", "text"}`` into ``{"row", "vector"}``."""

    def __init__(self, loader, threads: int, batch_size: int) -> None:
        from radsift.models.encoder import set_threads

        set_threads(threads)
        self.encoder = loader()
        self.batch_size = batch_size

    def __call__(self, batch: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        texts = [str(t) for t in batch["text"]]
        return {"row": batch["row"], "vector": self.encoder.encode(texts, batch_size=self.batch_size)}


class RayEncoder:
    """``encoder``'s work handed to a Ray cluster (a context manager: it connects, and disconnects after).

    Args:
        encoder: The loaded encoder (``dim``, ``name``, ``path`` are this one's; see
            :func:`radsift.models.parallel.worker_loader`).
        address: The cluster (see the module's docstring).
        workers: Ray actors (None = as many as the cluster's CPUs allow at ``threads`` each).
        threads: CPUs (and torch threads) of each actor (None: 1 with no ``workers``, else an equal share).
    """

    def __init__(self, encoder: Any, address: str, *, workers: int | None = None, threads: int | None = None) -> None:
        self.encoder, self.address, self.workers = encoder, address, workers
        self.threads = worker_threads(workers or os.cpu_count() or 1, threads)
        self.name, self.path, self.dim = encoder.name, Path(encoder.path), int(encoder.dim)
        self._started = False

    def __enter__(self) -> "RayEncoder":
        ray = require_ray()
        if not ray.is_initialized():
            kwargs = {"log_to_driver": False, "include_dashboard": False, "logging_level": logging.ERROR,
                      "configure_logging": False}
            try:
                ray.init(**kwargs) if self.address == "local" else ray.init(address=self.address, **kwargs)
            except Exception as exc:  # noqa: BLE001 - Ray raises ConnectionError, RuntimeError, ...
                raise ConfigError(f"--ray {self.address}: cannot connect ({type(exc).__name__}: "
                                  f"{_first_line(exc)}); nothing was written") from None
            self._started = True
        ray.data.DataContext.get_current().enable_progress_bars = False  # radsift shows its own
        return self

    def __exit__(self, *exc: object) -> None:
        if self._started:
            require_ray().shutdown()
            self._started = False

    def _actors(self, ray) -> int:
        if self.workers:
            return int(self.workers)
        cpus = float(ray.cluster_resources().get("CPU", 1))
        return max(1, int(cpus // self.threads))

    def encode(self, texts: Sequence[str], *, batch_size: int = 64, progress: bool = False,
               desc: str = "encoding") -> np.ndarray:
        """Encode texts into an ``(n, dim)`` float32 matrix of unit vectors, in the order given."""
        ray = require_ray()
        texts = list(texts)
        out = np.empty((len(texts), self.dim), dtype=np.float32)
        if not texts:
            return out
        order = np.concatenate(length_chunks(texts, batch_size))  # longest first: batches pad little
        items = [{"row": int(i), "text": texts[i]} for i in order]
        try:
            ds = ray.data.from_items(items).map_batches(
                _RayActor, fn_constructor_args=(worker_loader(self.encoder, self.threads), self.threads, batch_size),
                batch_size=batch_size * CHUNK_BATCHES, batch_format="numpy", concurrency=self._actors(ray),
                num_cpus=self.threads)
            with progress_bar(disable=None if progress else True) as bar:
                task = bar.add_task(f"{desc} (Ray {self.address})", total=len(texts))
                for batch in ds.iter_batches(batch_size=None, batch_format="numpy"):
                    out[np.asarray(batch["row"], dtype=np.int64)] = np.asarray(batch["vector"], dtype=np.float32)
                    bar.advance(task, len(batch["row"]))
        except Exception as exc:  # noqa: BLE001 - Ray wraps a worker's error in its own exception types
            cause = getattr(exc, "cause", None) or exc
            raise EncodeWorkerError(f"the Ray encoding failed ({type(cause).__name__}: {_first_line(cause)}): the "
                                    "build stopped and wrote nothing; the index is as it was") from None
        return out


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return (text.splitlines() or [""])[0][:300]


__all__ = ["INSTALL_HINT", "RayEncoder", "RayUnavailable", "check_ray_address", "require_ray"]
