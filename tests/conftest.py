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
