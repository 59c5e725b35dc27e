"""spaCy and medspaCy's ConText, imported without the libraries radsift never calls through them.

radsift uses spaCy's blank English tokenizer and medspaCy's ConText component only, but importing them
drags in much more: thinc (under spaCy) imports torch whenever it is installed, and ``medspacy``'s
package imports QuickUMLS, which imports NLTK, scikit-learn and pandas. On a cold shell that was most
of a BM25 search's time (2-core machine under load: 5.8 s for these imports, 1.0 s without;
``benchmarks/bench_cli.py``). So the two are hidden while spaCy and ConText import:

- torch, when nothing has imported it yet: thinc then records that torch is absent (its torch
  wrappers are unused here; spaCy's pipelines of radsift have no neural component), and a later
  ``import torch`` (a dense search's encoder) imports it as usual;
- ``quickumls``, whose spaCy component medspaCy registers on import and radsift never loads: a stub
  stands in while medspaCy imports, then is removed, so a later ``import quickumls`` is the real one.

Nothing is hidden when the process runs other threads (one of them could import torch in the meantime),
or with ``RADSIFT_FULL_SPACY_IMPORT=1``: spaCy then imports as its packages do.
"""

from __future__ import annotations

import os
import sys
import threading
import types
import warnings
from contextlib import contextmanager
from typing import Iterator

#: The modules hidden while spaCy and ConText import (see the module's docstring).
HIDDEN = ("torch", "quickumls")


@contextmanager
def hidden_modules(names: tuple[str, ...] = HIDDEN) -> Iterator[None]:
    """Hide ``names`` from imports for the duration (each only when nothing has imported it yet).

    ``torch`` reads as not installed (an ImportError, which thinc handles); ``quickumls`` is a stub
    package with an empty ``spacy_component`` (what medspaCy imports from it). Both are removed after.
    """
    placed: dict[str, object] = {}
    if os.environ.get("RADSIFT_FULL_SPACY_IMPORT", "") not in ("", "0") or threading.active_count() > 1:
        # Another thread could import torch (a reranker loading in a server) while it reads as absent:
        # with other threads about, spaCy imports as its packages do (a server starts once; a CLI has one thread).
        names = ()
    for name in names:
        if name in sys.modules:
            continue
        if name == "quickumls":
            stub = types.ModuleType("quickumls")
            stub.__path__ = []  # a package, so that ``from quickumls import spacy_component`` finds its part
            stub.spacy_component = types.ModuleType("quickumls.spacy_component")
            placed["quickumls.spacy_component"] = stub.spacy_component
            placed[name] = stub
        else:
            placed[name] = None  # ``import torch`` raises ImportError
    sys.modules.update(placed)
    try:
        yield
    finally:
        for name, stub in placed.items():
            if sys.modules.get(name, stub) is stub:
                sys.modules.pop(name, None)


with hidden_modules(), warnings.catch_warnings():
    warnings.simplefilter("ignore")
    import spacy
    from medspacy.context import ConText, ConTextRule
    from spacy.tokens import Doc

__all__ = ["ConText", "ConTextRule", "Doc", "spacy"]
