"""Shared pytest fixtures (keep this file small and generic)."""

from __future__ import annotations

from pathlib import Path

import pytest

#: Real clinical data beside the project: ../shared/data from the repository root.
SHARED_DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"


#: The test files that take longest (`pytest --durations` in one process, beside the data) run first, so that `make
#: test`'s two workers (pytest-xdist, a file each at a time) do not end with one waiting for the README's Open-i
#: build (2 to 3 minutes): the rest follow in file order. Order only: every file still runs, and alone runs the same.
LONGEST_FIRST = ("test_readme.py",)


def pytest_collection_modifyitems(config, items):
    """Move the longest test files to the front, keeping the order within each file (a stable sort)."""
    rank = {name: i for i, name in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))


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


@pytest.fixture(scope="session")
def hashing_index_of(tmp_path_factory):
    """A function indexing a few reports under the hashing encoder in a fresh folder named after ``name`` and
    opening the index: the small fixed corpora of the reading and ranking tests."""
    from radsift.index import build_index
    from radsift.models.hashing import HashingEncoder
    from radsift.search import Index

    def build(name: str, reports):
        root = tmp_path_factory.mktemp(name)
        enc = HashingEncoder(root / "model")
        build_index(root / "idx", reports, encoder=enc, progress=False)
        return Index.open(root / "idx", encoder=enc)

    return build


@pytest.fixture(scope="session")
def sited_demo_index_at():
    """A function building, in a given folder, the demo's 300 reports (seed 3) with a ``site`` field (north for
    two of three, south for the rest) under the hashing encoder, and opening it: the candidate engine's tests."""
    from radsift.demo import generate_reports
    from radsift.index import build_index
    from radsift.models.hashing import HashingEncoder
    from radsift.search import Index

    def build(root: Path):
        enc = HashingEncoder(root / "model")
        reports = [d.report for d in generate_reports(n=300, seed=3)]
        reports = [r.__class__(r.id, r.sections, {**r.metadata, "site": "north" if i % 3 else "south"})
                   for i, r in enumerate(reports)]
        build_index(root / "idx", reports, encoder=enc, progress=False)
        return Index.open(root / "idx", encoder=enc)

    return build
