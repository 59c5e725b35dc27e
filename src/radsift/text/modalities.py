"""Imaging modalities: the one table that reads an exam's modality from words, as DICOM codes.

Used by the feed readers (an exam's name when no DICOM coding says it: ``"CT CHEST W CONTRAST"`` -> ``CT``),
the follow-up extractor (the exam a recommendation names: ``"PET/CT could be obtained"`` -> ``PT``) and the
follow-up tracker, which asks whether a later exam is of the recommended modality (:func:`same_modality`).
"""

from __future__ import annotations

import re
from functools import lru_cache

#: DICOM modality codes radsift reads and writes.
MODALITIES = ("CT", "MR", "US", "XR", "CR", "DX", "NM", "PT", "MG", "RF", "XA")

# In this order the first that matches wins: "PET/CT" is a PET exam, "CT" inside it is not the answer.
# Word boundaries: "CT" is not found in "SECT", "US" not in "BUS".
_WORDS = [(re.compile(p, re.I), m) for p, m in (
    (r"\b(pet(?:/ct|-ct)?|positron)\b", "PT"),
    (r"\b(ct|cta|computed tomography|low[- ]dose ct|ldct)\b", "CT"),
    (r"\b(mri?|mra|mrcp|magnetic resonance)\b", "MR"),
    (r"\b(ultrasound|sonograph\w*|us|doppler)\b", "US"),
    (r"\b(mammogra\w*|mammo)\b", "MG"),
    (r"\b(nm|nuclear(?: medicine)?|bone scan|scintigraph\w*)\b", "NM"),
    (r"\b(chest x-?rays?|x-?rays?|xr|xray|radiograph\w*|cxr|chest films?|pa and lateral)\b", "XR"))]

# Codes that name the same kind of exam for follow-up: computed and digital radiography are X-rays.
_SAME = {"CR": "XR", "DX": "XR"}


@lru_cache(maxsize=4096)  # a feed names a few hundred exams over and over, each read by seven patterns
def modality_in(text: str | None) -> str | None:
    """The modality ``text`` names (an exam's name or a sentence), as a DICOM code, or None.

    The first in the order PT, CT, MR, US, MG, NM, XR wins.
    """
    if not text:
        return None
    return next((code for pattern, code in _WORDS if pattern.search(text)), None)


def same_modality(code: str | None) -> str | None:
    """``code`` with the codes of one kind of exam made one (``CR`` and ``DX`` -> ``XR``)."""
    return _SAME.get(code, code) if code is not None else None


__all__ = ["MODALITIES", "modality_in", "same_modality"]
