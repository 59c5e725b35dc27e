"""Shared pytest fixtures (keep this file small and generic)."""

from __future__ import annotations

from pathlib import Path

import pytest

#: Real clinical data beside the project: ../shared/data from the repository root.
SHARED_DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """The folder of real data (``../shared/data``); skips the test when it is absent."""
    if not SHARED_DATA.is_dir():
        pytest.skip(f"../shared/data absent: real-data tests need {SHARED_DATA}")
    return SHARED_DATA


@pytest.fixture()
def hashing_model(monkeypatch, tmp_path) -> Path:
    """A model folder of the hashing test encoder (no torch), which ``Encoder.load`` returns for any folder."""
    from radsift.models.hashing import HashingEncoder

    folder = tmp_path / "hash-model"
    HashingEncoder(folder)
    monkeypatch.setattr("radsift.models.encoder.Encoder.load",
                        classmethod(lambda cls, model=None, **kw: HashingEncoder(model or folder)))
    return folder
