"""Pausing the cyclic garbage collector during bulk work.

Reading or scoring a run of millions of (docid, score) tuples triggers many full collections
that walk every one of them, for nothing: the objects built here hold no reference cycles.
Pausing collection roughly halves the time of :func:`~radsift.evaluation.read_run` and
:func:`~radsift.evaluation.evaluate` on large runs. Reference counting still frees memory.
"""

from __future__ import annotations

import gc
from contextlib import contextmanager
from typing import Iterator


@contextmanager
def gc_paused() -> Iterator[None]:
    """Disable the cyclic collector inside the block, restoring its previous state after."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()
