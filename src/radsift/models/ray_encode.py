"""Ray for a build (``radsift index build|add --ray ADDRESS``): the address check and the session.

The build runs Ray Data's ``map_batches`` over the shares of the reports, one share a batch, each task writing
its own segment (:mod:`radsift.index.spread`); this module refuses an address that does not answer before
anything is written (:func:`check_ray_address`), joins the cluster for the build (:func:`ray_session`), sets
Ray Data up for it (:func:`ray_data`) and says how many tasks the cluster takes (:func:`ray_tasks`). Every
node needs radsift installed, the model folder (and an ONNX export, for ``--encoder onnx``) and the index
folder at the same path as on this machine; a shared file system or the same installation does it.

Addresses: ``host:port`` (the head node's GCS, default port 6379), ``ray://host:port`` (Ray Client,
default port 10001), ``auto`` (the cluster ``ray start`` runs on this machine) and ``local`` (a Ray
started here for this build: how the tests run it). Needs the ``ray`` extra (``pip install
'radsift[ray]'``): without it the error names the command.
"""

from __future__ import annotations

import logging
import os
import socket
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from radsift.errors import ConfigError

INSTALL_HINT = "pip install 'radsift[ray]' (or: pip install 'ray[data]')"
#: Default ports: the head node's GCS (``ray start --head``) and the Ray Client server.
GCS_PORT, CLIENT_PORT = 6379, 10001
#: Seconds to wait for an address to accept a connection.
CONNECT_TIMEOUT_S = 5.0
#: Tries at starting a Ray here (``local``): Ray gives its own processes 30 s to register, which a busy
#: machine can miss once; a second try usually finds the first one's files warm.
LOCAL_START_TRIES = 2


class RayUnavailable(ConfigError):
    """``--ray`` without the ``ray`` package (the message names the pip command)."""


def require_ray():
    """The ``ray`` module, or :class:`RayUnavailable` naming what to install."""
    try:
        import ray
        import ray.data  # the build runs on Ray Data: its own dependencies (pyarrow, pandas) too
    except ImportError as exc:
        raise RayUnavailable(f"--ray needs the package ray, which is not installed ({exc}): "
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


@contextmanager
def ray_session(address: str) -> Iterator[Any]:
    """Connected to the Ray cluster at ``address`` (``local``: a Ray started here) while the block runs; the
    ``ray`` module. A Ray already initialised in this process is used as it is and left running.

    Raises:
        RayUnavailable: ray is not installed.
        ConfigError: The cluster cannot be joined (one line; nothing was written).
    """
    ray = require_ray()
    started = False
    if not ray.is_initialized():
        kwargs = {"log_to_driver": False, "include_dashboard": False, "logging_level": logging.ERROR,
                  "configure_logging": False}
        tries = LOCAL_START_TRIES if address == "local" else 1
        for attempt in range(1, tries + 1):
            try:
                ray.init(**kwargs) if address == "local" else ray.init(address=address, **kwargs)
                break
            except Exception as exc:  # noqa: BLE001 - Ray raises ConnectionError, RuntimeError, ...
                ray.shutdown()  # what the failed start left running (a no-op when nothing started)
                if attempt == tries:
                    raise ConfigError(f"--ray {address}: cannot connect ({type(exc).__name__}: "
                                      f"{first_line(exc)}); nothing was written") from None
        started = True
    try:
        yield ray
    finally:
        if started:
            ray.shutdown()


@contextmanager
def ray_data(ray) -> Iterator[Any]:
    """``ray.data`` set up for a build while the block runs, its earlier settings restored after: a block
    that fails fails the dataset (``max_errored_blocks = 0``: never a build with a share missing), and no
    progress bars or execution logs of Ray Data's own on the console (radsift shows its own). A dataset
    takes the settings when it is made: make it inside the block."""
    context = ray.data.DataContext.get_current()
    settings = {"max_errored_blocks": 0, "enable_progress_bars": False, "print_on_execution_start": False,
                "enable_auto_log_stats": False}
    settings = {name: value for name, value in settings.items() if hasattr(context, name)}  # older Rays lack some
    before = {name: getattr(context, name) for name in settings}
    log = logging.getLogger("ray.data")
    level = log.level
    for name, value in settings.items():
        setattr(context, name, value)
    log.setLevel(logging.CRITICAL)  # Ray Data logs a failed task's traceback itself: the build says one line
    try:
        yield ray.data
    finally:
        for name, value in before.items():
            setattr(context, name, value)
        log.setLevel(level)


def task_error(exc: BaseException) -> BaseException:
    """The error a Ray task itself raised, out of the wrappers Ray and Ray Data put around it (a task's
    ``cause``, an exception's ``__cause__``); ``exc`` when it wraps none. A cause with no message is a marker
    (Ray Data's ``SystemException`` under a crashed worker's error): the error above it says more."""
    seen: set[int] = set()
    while id(exc) not in seen:
        seen.add(id(exc))
        inner = getattr(exc, "cause", None)
        if not isinstance(inner, BaseException):
            inner = exc.__cause__
        if not isinstance(inner, BaseException) or not str(inner).strip():
            break
        exc = inner
    return exc


def ray_tasks(ray, workers: int | None, threads: int) -> int:
    """How many Ray tasks a build runs: ``workers`` when given (> 1), else as many as the cluster's CPUs
    allow at ``threads`` CPUs each."""
    if workers and workers > 1:
        return int(workers)
    cpus = float(ray.cluster_resources().get("CPU", 1))
    return max(1, int(cpus // max(1, threads)))


def first_line(exc: BaseException) -> str:
    """The first line of an error's message (at most 300 characters), for a one-line error."""
    text = str(exc).strip()
    return (text.splitlines() or [""])[0][:300]


__all__ = ["INSTALL_HINT", "RayUnavailable", "check_ray_address", "first_line", "ray_data", "ray_session",
           "ray_tasks", "require_ray", "task_error"]
