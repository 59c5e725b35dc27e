"""A fast build-time encoder: the same sentence-transformers model run by ONNX Runtime.

:class:`OnnxEncoder` has the interface of :class:`radsift.models.encoder.Encoder` (``load``,
``encode``, ``encode_query``, ``dim``, ``name``, ``path``; unit-normalised float32 rows) and
runs an ONNX export of the model folder's transformer. Tokenization (the model's own fast
tokenizer and truncation length), pooling and normalisation are done here in numpy exactly as
sentence-transformers does them; batches are formed from texts sorted by token count so that
they pad little. Variants:

- ``fp32`` (the default): the same arithmetic as torch, vectors within 1e-6 in cosine of the
  torch encoder's, about 2.4x its sentences/s on 2 idle cores (far more under load: torch's
  spinning OpenMP threads collapse when other jobs share the cores), Open-i weak-label mAP
  unchanged;
- ``int8``: linear layers dynamically quantised to int8 with per-output-channel weight scales
  (per-tensor scales cost 0.02 mAP on MiniLM), about 4.4x; cosine to torch 0.992 on average,
  Open-i weak-label mAP within 0.004 over all queries but 0.007 on the positive ones.

``benchmarks/bench_encode.py`` measures all of it.

The ONNX files are produced locally from the model folder (nothing is downloaded) by
:func:`export_onnx`, once: they are cached in a folder named after the model's fingerprint and
the variant, written to a temporary folder first and renamed into place, so a crash or two
concurrent exports never leave a half-written cache that looks finished. Running needs
``onnxruntime`` (and the ``tokenizers`` package transformers brings) but neither torch nor
transformers; exporting also needs ``onnx`` and torch/sentence-transformers (which radsift has
anyway). Without them a :class:`FastEncoderUnavailable` error names what to install.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from radsift.errors import ConfigError
from radsift.models.encoder import (Encoder, encode_threads, model_display_name, model_fingerprint, resolve_model_path,
                                    usable_cores)
from radsift.progress import progress_bar

#: What ``pip install`` brings what this module needs.
INSTALL_HINT = "pip install 'radsift[fast]' (or: pip install onnxruntime onnx 'numpy<2')"
#: Bumped whenever the export recipe changes: older cache folders are then not reused.
EXPORT_FORMAT = 1
#: Variants: ``fp32`` (default: no quantization, torch's vectors), ``int8`` (per-channel dynamic
#: quantization: faster, slightly different vectors); ``int8-per-tensor`` and ``int8-reduce-range``
#: exist for the benchmark's comparison.
VARIANTS = ("fp32", "int8", "int8-per-tensor", "int8-reduce-range")
DEFAULT_VARIANT = "fp32"
MARKER = "radsift_onnx.json"
MODEL_FILE = "model.onnx"
TOKENIZER_FILE = "tokenizer.json"
_INPUTS = ("input_ids", "attention_mask", "token_type_ids")
# Probe sentences of the export's self-check (written for it: no report text).
_PROBE = [
    "There is no pneumothorax.",
    "Small left pleural effusion with adjacent atelectasis.",
    "The cardiomediastinal silhouette is within normal limits for size and contour.",
    "Interval placement of a right internal jugular central venous catheter, tip in the distal SVC.",
    "no acute cardiopulmonary process",
    "Mild degenerative changes of the thoracic spine.",
]
# The fp32 export must reproduce the torch model; below this the export is wrong, not imprecise.
_FP32_MIN_COSINE = 0.9999
# An int8 model this far off the torch model is not used (the benchmark measures about 0.98 minimum).
_INT8_MIN_COSINE = 0.9


class FastEncoderUnavailable(ConfigError):
    """The fast encoder's packages are missing (the message names them and the pip command)."""


def _require(module: str, purpose: str):
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise FastEncoderUnavailable(
            f"the fast ONNX encoder needs the package {module} for {purpose}, which is not installed: "
            f"{INSTALL_HINT}; or build with the default torch encoder") from exc


def require_runtime():
    """``onnxruntime``, or :class:`FastEncoderUnavailable` naming it."""
    return _require("onnxruntime", "running the model")


def fast_encoding_available() -> bool:
    """True when ``onnxruntime`` and ``onnx`` import (run and export)."""
    try:
        _require("onnxruntime", "running")
        _require("onnx", "exporting")
    except FastEncoderUnavailable:
        return False
    return True


def default_cache_dir() -> Path:
    """``$RADSIFT_CACHE_DIR/onnx``, else ``$XDG_CACHE_HOME/radsift/onnx``, else ``~/.cache/radsift/onnx``."""
    if os.environ.get("RADSIFT_CACHE_DIR"):
        return Path(os.environ["RADSIFT_CACHE_DIR"]).expanduser() / "onnx"
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base).expanduser() / "radsift" / "onnx"


def _has_vnni() -> bool:
    """Whether this CPU has VNNI (int8 dot products without the u8*s8 saturation of plain AVX2)."""
    try:
        flags = Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return False
    return bool(re.search(r"\b(avx512_vnni|avx_vnni|avx512vnni)\b", flags))


def _quant_settings(variant: str) -> dict[str, Any] | None:
    """Dynamic quantization settings of a variant (None = fp32)."""
    if variant == "fp32":
        return None
    if variant == "int8":
        # Without VNNI, ORT's u8s8 kernels can saturate: 7-bit weights avoid it (ORT's advice).
        return {"per_channel": True, "reduce_range": not _has_vnni()}
    if variant == "int8-per-tensor":
        return {"per_channel": False, "reduce_range": False}
    if variant == "int8-reduce-range":
        return {"per_channel": True, "reduce_range": True}
    raise ConfigError(f"unknown fast encoder variant {variant!r}; known: {', '.join(VARIANTS)}")


def _check_variant(variant: str) -> str:
    if variant not in VARIANTS:
        raise ConfigError(f"unknown fast encoder variant {variant!r}; known: {', '.join(VARIANTS)}")
    return variant


def _folder_tag(variant: str) -> str:
    q = _quant_settings(variant)
    if q is None:
        return "fp32"
    return "int8-" + ("pc" if q["per_channel"] else "pt") + ("-rr" if q["reduce_range"] else "")


def cache_folder(model: str | Path | None = None, variant: str = DEFAULT_VARIANT,
                 cache_dir: str | Path | None = None) -> Path:
    """Where :func:`export_onnx` keeps the export of ``model`` (it may not exist yet).

    Named after the model's display name, its fingerprint (changes when it is retrained), the
    variant's settings and :data:`EXPORT_FORMAT`.
    """
    _check_variant(variant)
    path = resolve_model_path(model)
    safe = re.sub(r"[^A-Za-z0-9._-]+", "_", model_display_name(path))[:60] or "model"
    root = Path(cache_dir).expanduser() if cache_dir is not None else default_cache_dir()
    return root / f"{safe}-{model_fingerprint(path)}-{_folder_tag(variant)}-v{EXPORT_FORMAT}"


def read_marker(folder: str | Path) -> dict[str, Any] | None:
    """The export's metadata when ``folder`` is a finished export (None otherwise)."""
    folder = Path(folder)
    try:
        info = json.loads((folder / MARKER).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(info, dict) or info.get("format") != EXPORT_FORMAT:
        return None
    if not (folder / MODEL_FILE).is_file() or not (folder / TOKENIZER_FILE).is_file():
        return None
    return info


def export_onnx(model: str | Path | None = None, cache_dir: str | Path | None = None, *,
                variant: str = DEFAULT_VARIANT, force: bool = False, log=None) -> Path:
    """Export (and quantize) a sentence-transformers model folder to ONNX, once; returns its folder.

    Idempotent: a finished export in the cache is returned as is (no torch import). Atomic: the
    files are written into a temporary folder beside the target, then renamed into place; a
    concurrent export that finished first wins and this one's files are discarded.

    Args:
        model: Model folder (None = the packaged all-MiniLM-L6-v2).
        cache_dir: Folder of the caches (None = :func:`default_cache_dir`).
        variant: One of :data:`VARIANTS`.
        force: Export again even when a finished export exists.
        log: Receives one line when an export starts (e.g. ``print``).

    Raises:
        FastEncoderUnavailable: onnxruntime or onnx is not installed.
        ConfigError: The model is not a Transformer + Pooling (+ Normalize) model, or its export
            does not reproduce the torch model.
    """
    target = cache_folder(model, variant, cache_dir)
    if not force and read_marker(target) is not None:
        return target
    _require("onnx", "exporting and quantizing the model")
    _require("onnxruntime", "running the exported model")
    if log is not None:
        log(f"exporting {model_display_name(resolve_model_path(model))} to ONNX ({variant}) into {target} ...")
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.tmp-", dir=target.parent))
    try:
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o777 & ~umask)  # mkdtemp's 0700 would hide a shared cache from other users
        info = _export_into(resolve_model_path(model), tmp, variant)
        (tmp / MARKER).write_text(json.dumps(info, indent=2) + "\n", encoding="utf-8")
        _publish(tmp, target, replace=force)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return target


def _publish(tmp: Path, target: Path, replace: bool) -> None:
    """Rename ``tmp`` to ``target``; a finished ``target`` (another process) wins unless ``replace``."""
    if target.exists():
        if read_marker(target) is not None and not replace:
            return  # someone else finished the same export first: theirs is as good
        old = target.with_name(f".{target.name}.old-{os.getpid()}-{time.monotonic_ns()}")
        try:
            os.replace(target, old)  # an unfinished or replaced export: moved aside, then removed
        except FileNotFoundError:
            old = None
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)
    try:
        os.replace(tmp, target)
    except OSError:
        if read_marker(target) is None:  # not a concurrent winner: a real failure
            raise


def _st_layout(st) -> dict[str, Any]:
    """Pooling, truncation and casing of a loaded SentenceTransformer (refusing what is not supported)."""
    kinds = [type(m).__name__ for m in st]
    if not kinds or kinds[0] != "Transformer" or any(k not in ("Transformer", "Pooling", "Normalize") for k in kinds) \
            or kinds.count("Pooling") != 1 or kinds.count("Transformer") != 1:
        raise ConfigError(f"the fast ONNX encoder supports Transformer + Pooling (+ Normalize) models; this one has "
                          f"{' + '.join(kinds)}: use the default torch encoder")
    pooling = st[kinds.index("Pooling")]
    conf = pooling.get_config_dict() if hasattr(pooling, "get_config_dict") else {}
    mode = conf.get("pooling_mode")
    if mode is None:  # the sentence-transformers 2.x/3.x config keys
        modes = [m for m in ("cls", "mean", "max") if conf.get(f"pooling_mode_{m}_tokens" if m != "cls" else
                                                              "pooling_mode_cls_token")]
        mode = modes[0] if len(modes) == 1 and not conf.get("pooling_mode_mean_sqrt_len_tokens") else None
    if mode not in ("mean", "cls", "max"):
        raise ConfigError(f"the fast ONNX encoder supports mean, cls or max pooling; this model pools by {conf}: "
                          "use the default torch encoder")
    tokenizer = st.tokenizer
    if not getattr(tokenizer, "is_fast", False):
        raise ConfigError("the fast ONNX encoder needs a fast (Rust) tokenizer; this model's is not: "
                          "use the default torch encoder")
    inputs = [n for n in _INPUTS if n in getattr(tokenizer, "model_input_names", _INPUTS)]
    if "input_ids" not in inputs or "attention_mask" not in inputs:
        raise ConfigError(f"the fast ONNX encoder needs input_ids and attention_mask; the tokenizer gives {inputs}")
    return {"pooling": mode, "max_seq_length": int(st.max_seq_length), "inputs": inputs,
            "do_lower_case": bool(getattr(st[0], "do_lower_case", False)),
            "dim": int(st.get_embedding_dimension()), "pad_id": int(tokenizer.pad_token_id or 0)}


def _export_into(path: Path, out: Path, variant: str) -> dict[str, Any]:
    """Write ``model.onnx``, ``tokenizer.json`` into ``out``; returns the marker's metadata."""
    import warnings

    import torch

    quant = _quant_settings(variant)
    base = Encoder.load(path)
    st = base.model
    layout = _st_layout(st)
    st[0].tokenizer.backend_tokenizer.save(str(out / TOKENIZER_FILE))
    hf = st[0].model if hasattr(st[0], "model") else st[0].auto_model
    hf = hf.eval()
    if hasattr(hf, "set_attn_implementation"):
        try:  # eager attention exports to plain MatMul/Softmax, which ONNX Runtime fuses
            hf.set_attn_implementation("eager")
        except Exception:  # noqa: BLE001 - keep the model's own attention then
            pass
    names = layout["inputs"]

    class _Wrapper(torch.nn.Module):
        def __init__(self, model):
            super().__init__()
            self.model = model

        def forward(self, *args):
            return self.model(**dict(zip(names, args))).last_hidden_state

    dummy = tuple(torch.ones((2, 8), dtype=torch.long) if n != "token_type_ids" else torch.zeros((2, 8), dtype=torch.long)
                  for n in names)
    fp32 = out / ("model_fp32.onnx" if quant else MODEL_FILE)
    with warnings.catch_warnings(), torch.no_grad():
        warnings.simplefilter("ignore")
        # The TorchScript exporter: dynamic batch and sequence axes, no onnxscript needed.
        torch.onnx.export(_Wrapper(hf), dummy, str(fp32), dynamo=False, opset_version=17, input_names=names,
                          output_names=["last_hidden_state"], do_constant_folding=True,
                          dynamic_axes={n: {0: "batch", 1: "sequence"} for n in names + ["last_hidden_state"]})
    if quant:
        import logging

        import onnx
        from onnxruntime.quantization import QuantType, quantize_dynamic

        root = logging.getLogger()
        level = root.level
        root.setLevel(max(level, logging.ERROR))  # quiet ORT's advice to pre-process (it logs on the root logger)
        try:
            quantize_dynamic(str(fp32), str(out / MODEL_FILE), weight_type=QuantType.QInt8,
                             op_types_to_quantize=["MatMul"], per_channel=quant["per_channel"],
                             reduce_range=quant["reduce_range"], extra_options={"DefaultTensorType": onnx.TensorProto.FLOAT})
        finally:
            root.setLevel(level)
        fp32.unlink()
    # Self-check against the torch model on a few sentences.
    import onnxruntime

    info: dict[str, Any] = {
        "format": EXPORT_FORMAT, "variant": variant, "quantization": quant, "source": str(path),
        "model_name": model_display_name(path), "model_fingerprint": model_fingerprint(path), **layout,
        "onnxruntime": onnxruntime.__version__, "torch": torch.__version__,
        "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    runner = _Runner(out, info, threads=None)
    want = base.encode(_PROBE, batch_size=len(_PROBE))
    got = runner.encode(_PROBE, batch_size=len(_PROBE))
    cos = np.einsum("ij,ij->i", want, got)
    info["probe_cosine_min"] = round(float(cos.min()), 6)
    floor = _FP32_MIN_COSINE if quant is None else _INT8_MIN_COSINE
    if cos.min() < floor:
        raise ConfigError(f"the ONNX export of {path} ({variant}) does not reproduce the torch model (cosine "
                          f"{cos.min():.4f} < {floor}): use the default torch encoder")
    return info


class _Runner:
    """Tokenize, run the ONNX graph, pool and normalise (no torch, no transformers)."""

    def __init__(self, folder: Path, info: dict[str, Any], threads: int | None) -> None:
        from tokenizers import Tokenizer

        self.folder, self.threads = folder, int(threads) if threads else None
        self._sessions: dict[int, Any] = {}
        self.session = self._session(self.threads or usable_cores())
        self.inputs = [i.name for i in self.session.get_inputs()]
        tok = Tokenizer.from_file(str(folder / TOKENIZER_FILE))
        tok.no_padding()
        tok.enable_truncation(max_length=int(info["max_seq_length"]))
        self.tokenizer = tok
        self.pooling = info["pooling"]
        self.lower = bool(info.get("do_lower_case"))
        self.dim = int(info["dim"])
        self.pad_id = int(info.get("pad_id", 0))

    def _session(self, threads: int):
        """The session running on ``threads`` intra-op threads (made once per count: a session's pool is fixed)."""
        if threads in self._sessions:
            return self._sessions[threads]
        ort = require_runtime()
        options = ort.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        options.log_severity_level = 3
        # Idle worker threads sleep instead of spinning: on a shared 2-core machine spinning threads
        # steal the cores from each other and from other jobs (measured: 559 vs 406 sentences/s at
        # load 3.3 on 2 cores, the same speed on an idle machine).
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        session = ort.InferenceSession(str(self.folder / MODEL_FILE), options, providers=["CPUExecutionProvider"])
        self._sessions[threads] = session
        return session

    def _batch_session(self):
        """The session for the next chunk of a batch encoding: the caller's threads, else the cores other
        jobs leave free now, rounded down to a power of two (at most a few sessions are ever made)."""
        if self.threads:
            return self.session
        free = encode_threads(None)
        return self._session(1 << (free.bit_length() - 1))

    def tokenize(self, texts: Sequence[str]) -> list[list[int]]:
        texts = [t.lower() for t in texts] if self.lower else list(texts)
        return [e.ids for e in self.tokenizer.encode_batch(texts)]

    def run(self, ids: Sequence[Sequence[int]], session=None) -> np.ndarray:
        """Unit vectors of already tokenized texts (one batch, padded to its longest)."""
        lengths = np.fromiter((len(x) for x in ids), dtype=np.int64, count=len(ids))
        width = int(lengths.max())
        input_ids = np.full((len(ids), width), self.pad_id, dtype=np.int64)
        mask = np.zeros((len(ids), width), dtype=np.int64)
        for r, row in enumerate(ids):
            input_ids[r, :len(row)] = row
            mask[r, :len(row)] = 1
        feeds = {"input_ids": input_ids, "attention_mask": mask, "token_type_ids": np.zeros_like(input_ids)}
        hidden = (session or self.session).run(None, {n: feeds[n] for n in self.inputs})[0]
        if self.pooling == "cls":
            vecs = hidden[:, 0, :]
        elif self.pooling == "max":
            vecs = np.where(mask[:, :, None] > 0, hidden, -1e9).max(axis=1)
        else:
            m = mask[:, :, None].astype(np.float32)
            vecs = (hidden * m).sum(axis=1) / np.maximum(m.sum(axis=1), 1e-9)
        norms = np.linalg.norm(vecs, axis=1, keepdims=True)
        return (vecs / np.maximum(norms, 1e-12)).astype(np.float32, copy=False)

    def encode(self, texts: Sequence[str], batch_size: int, on_batch=None) -> np.ndarray:
        ids = self.tokenize(texts)
        # Longest first, by token count: batches pad little and the peak memory comes first.
        order = np.argsort(-np.fromiter((len(x) for x in ids), dtype=np.int64, count=len(ids)), kind="stable")
        out = np.empty((len(texts), self.dim), dtype=np.float32)
        step = max(1, int(batch_size))
        session = self.session
        for start in range(0, len(order), step):
            if start % (8 * step) == 0:  # every 8 batches: the thread count that fits the machine now
                session = self._batch_session()
            idx = order[start:start + step]
            out[idx] = self.run([ids[i] for i in idx], session)
            if on_batch is not None:
                on_batch(len(idx))
        return out


@dataclass
class OnnxEncoder:
    """The ONNX Runtime twin of :class:`radsift.models.encoder.Encoder`.

    Attributes:
        path: The source model folder (the index's model fingerprint is computed from it).
        name: Its display name (as :class:`~radsift.models.encoder.Encoder` names it).
        onnx_path: The cache folder holding ``model.onnx`` and ``tokenizer.json``.
        variant: ``fp32`` or ``int8`` (or a benchmark variant).
        info: The export's metadata (:data:`MARKER`).
    """

    path: Path
    name: str
    onnx_path: Path
    variant: str
    info: dict[str, Any]
    runner: Any = field(repr=False, default=None)

    @classmethod
    def load(cls, model: str | Path | None = None, *, variant: str = DEFAULT_VARIANT, threads: int | None = None,
             cache_dir: str | Path | None = None, export: bool = True, log=None) -> "OnnxEncoder":
        """Load the fast encoder of ``model``, exporting it first when its cache is missing.

        Args:
            model: Model folder (None = the packaged all-MiniLM-L6-v2).
            variant: One of :data:`VARIANTS` (default ``fp32``).
            threads: ONNX Runtime intra-op threads (None = its default: the physical cores).
            cache_dir: Folder of the exports (None = :func:`default_cache_dir`).
            export: Export when missing (False: raise ConfigError instead).
            log: Receives a line when an export starts.

        Raises:
            FastEncoderUnavailable: onnxruntime (or, to export, onnx) is not installed.
        """
        require_runtime()
        path = resolve_model_path(model)
        folder = cache_folder(path, variant, cache_dir)
        if read_marker(folder) is None:
            if not export:
                raise ConfigError(f"no ONNX export of {model_display_name(path)} ({variant}) in {folder.parent}")
            folder = export_onnx(path, cache_dir, variant=variant, log=log)
        info = read_marker(folder)
        if info is None:  # pragma: no cover - export_onnx leaves a finished folder or raises
            raise ConfigError(f"{folder}: not a finished ONNX export")
        return cls(path=path, name=model_display_name(path), onnx_path=folder, variant=variant, info=info,
                   runner=_Runner(folder, info, threads))

    @property
    def backend(self) -> str:
        """``onnx-int8`` / ``onnx-fp32``: what an index manifest should record as its build encoder."""
        return f"onnx-{self.variant}"

    @property
    def dim(self) -> int:
        return int(self.info["dim"])

    def encode(
        self, texts: Sequence[str], *, batch_size: int = 64, progress: bool = False, desc: str = "encoding"
    ) -> np.ndarray:
        """Encode texts into an ``(n, dim)`` float32 matrix of unit vectors."""
        if len(texts) == 0:
            return np.zeros((0, self.dim), dtype=np.float32)
        if not progress:
            return self.runner.encode(list(texts), batch_size)

        with progress_bar() as bar:
            task = bar.add_task(desc, total=len(texts))
            return self.runner.encode(list(texts), batch_size, on_batch=lambda n: bar.advance(task, n))

    def encode_query(self, text: str) -> np.ndarray:
        """Encode one query: a ``(dim,)`` unit vector."""
        return self.runner.run(self.runner.tokenize([text]))[0]


#: Build-time encoders ``radsift index build|add --encoder`` names: torch (the reference), ONNX
#: Runtime fp32 (same vectors, ~2.6x faster on 2 cores), ONNX Runtime int8 (~5x, vectors within
#: 0.008 in cosine) and torch on a GPU in float16 (``cuda``; benchmarks/bench_gpu_build.py). Queries are
#: always encoded by torch on CPU: the stored vectors are what changes.
BUILD_ENCODERS = {"torch": None, "onnx": "fp32", "onnx-int8": "int8", "cuda": None}


def load_build_encoder(kind: str = "torch", model: str | Path | None = None, *, threads: int | None = None,
                       cache_dir: str | Path | None = None, log=None):
    """The encoder a build or add encodes reports with.

    Args:
        kind: A key of :data:`BUILD_ENCODERS`.
        model: Model folder (None = the packaged all-MiniLM-L6-v2).
        threads: torch threads, or ONNX Runtime intra-op threads.
        cache_dir: Where ONNX exports are cached (None = :func:`default_cache_dir`).
        log: Receives a line when an ONNX export starts (once per model and variant).

    Raises:
        ConfigError: An unknown kind (naming the known ones).
        FastEncoderUnavailable: ``onnx``/``onnx-int8`` without the ``fast`` extra installed.
    """
    if kind not in BUILD_ENCODERS:
        raise ConfigError(f"--encoder {kind!r}: unknown encoder; choose one of {', '.join(BUILD_ENCODERS)}")
    variant = BUILD_ENCODERS[kind]
    if variant is None:
        return Encoder.load(model, threads=threads, device="cuda" if kind == "cuda" else "cpu")
    return OnnxEncoder.load(model, variant=variant, threads=threads, cache_dir=cache_dir, log=log)


def encoder_kind(encoder) -> str:
    """The :data:`BUILD_ENCODERS` key of a loaded encoder (``torch`` for anything not ONNX or on a GPU)."""
    if getattr(encoder, "device", "cpu") == "cuda":
        return "cuda"
    if isinstance(encoder, OnnxEncoder):
        return {v: k for k, v in BUILD_ENCODERS.items()}.get(encoder.variant, encoder.backend)
    return "torch"
