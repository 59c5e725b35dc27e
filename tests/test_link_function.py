"""``Index.link_function``: the concept linker a search of a mode reads queries with, for reading a query against
another index's words (``bench_links.literal_kept``); none where a mode never links, an error naming a mode that is
none."""

from __future__ import annotations

import pytest

from radsift.errors import ConfigError
from radsift.records import Report


@pytest.fixture(scope="module")
def index(hashing_index_of):
    return hashing_index_of("link_function", [Report("a", {"findings": "Small left pleural effusion."})])


def test_bm25_never_links(index):
    assert index.link_function("bm25") is None


def test_the_linker_is_the_one_a_search_uses(index):
    ours = index.link_function("hybrid")
    theirs = index._link_function("hybrid", "", None)
    assert (ours is None) == (theirs is None)
    if ours is not None:
        assert ours("fluid around the lungs") == theirs("fluid around the lungs")


def test_an_unknown_mode_is_named(index):
    with pytest.raises(ConfigError, match="mode must be one of .*'semantic'"):
        index.link_function("semantic")
