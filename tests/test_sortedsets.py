"""The sorted-set helpers of the candidate engine give numpy's arrays (values and dtypes) without sorting."""

from __future__ import annotations

import numpy as np
import pytest

from radsift.search import sortedsets as ss


def _cases():
    rng = np.random.default_rng(7)
    out = [np.zeros(0, dtype=np.int64), np.array([5], dtype=np.int64), np.array([3, 3, 3], dtype=np.int64)]
    for n in (10, 1000, 5000):
        a = rng.integers(0, n, n).astype(np.int64)
        out += [a, np.sort(a), np.unique(a)]
    return out


def _same(got, want):
    assert got.dtype == want.dtype and got.shape == want.shape and np.array_equal(got, want)


@pytest.mark.parametrize("a", _cases())
def test_unique_and_run_counts_are_numpys(a):
    _same(ss.unique(a), np.unique(a))
    for got, want in zip(ss.run_counts(a), np.unique(a, return_counts=True)):
        _same(got, want)


def test_union_merges_sorted_and_unsorted_arrays():
    cases = _cases()
    for a in cases:
        for b in cases[:6]:
            _same(ss.union([a, b]), np.union1d(a, b))
    a, b, c = cases[4], cases[7], cases[-1]
    _same(ss.union([a, b, c]), np.unique(np.concatenate([a, b, c])))


@pytest.mark.parametrize("a", _cases())
def test_value_counts_is_unique_with_inverse_and_counts(a):
    for values in (a, a % 7, a + 10**9):
        for got, want in zip(ss.value_counts(values), np.unique(values, return_inverse=True, return_counts=True)):
            _same(got, want)


def test_value_counts_of_a_wide_span_and_of_floats():
    wide = np.array([0, ss.COUNT_SPAN * 3, 5, 5], dtype=np.int64)
    for v in (wide, np.array([0.5, 0.25, 0.5])):
        for got, want in zip(ss.value_counts(v), np.unique(v, return_inverse=True, return_counts=True)):
            _same(got, want)


def test_best_by_keeps_the_lowest_tier_of_each_key():
    keys = np.array([4, 1, 4, 2, 1, 1], dtype=np.int64)
    tiers = np.array([3, 2, 0, 1, 3, 1], dtype=np.int8)
    for k, t in ((keys, tiers), (keys[np.argsort(keys, kind="stable")], tiers[np.argsort(keys, kind="stable")])):
        got_k, got_t = ss.best_by(k, t)
        _same(got_k, np.array([1, 2, 4], dtype=np.int64))
        _same(got_t, np.array([1, 1, 0], dtype=np.int8))
    distinct = np.array([1, 5, 9], dtype=np.int64)
    _same(ss.best_by(distinct, np.array([2, 0, 3], np.int8))[1], np.array([2, 0, 3], np.int8))
    assert ss.best_by(np.zeros(0, np.int64), np.zeros(0, np.int8))[0].size == 0


@pytest.mark.parametrize("size", [None, 50])
def test_lookup_by_search_and_by_table(size):
    keys = np.array([2, 7, 11, 40], dtype=np.int64)
    values = np.array([0, 3, 1, 2], dtype=np.int8)
    few = np.array([40, 3, 7], dtype=np.int64)
    many = np.arange(50, dtype=np.int64)[::-1]
    for wanted in (few, many):
        want = np.full(wanted.size, 9, dtype=np.int64)
        for k, v in zip(keys, values):
            want[wanted == k] = v
        _same(ss.lookup(keys, values, wanted, 9, size, np.int64), want)
    _same(ss.lookup(keys[:0], values[:0], few, 9, size), np.full(3, 9, dtype=np.int8))


def test_is_sorted():
    assert ss.is_sorted(np.zeros(0)) and ss.is_sorted(np.array([1, 1, 2]))
    assert not ss.is_sorted(np.array([2, 1]))
