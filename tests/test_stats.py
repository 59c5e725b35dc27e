"""Intervals and significance tests against scipy, textbook tables and exact enumeration."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from scipy import stats as st

from radsift.evaluation.stats import (
    MCNEMAR_EXACT_BELOW,
    bonferroni,
    mcnemar,
    mcnemar_counts,
    mean_interval,
    paired_randomization_test,
    paired_t_test,
    wilson_interval,
)


# ---------------------------------------------------------------------------------------------
# Wilson score interval
# ---------------------------------------------------------------------------------------------
def test_wilson_81_of_263_matches_newcombe():
    # Newcombe (1998), Stat Med 17:857, example 81/263: Wilson score interval 0.2553 to 0.3662.
    low, high = wilson_interval(81, 263)
    assert low == pytest.approx(0.2553, abs=5e-5)
    assert high == pytest.approx(0.3662, abs=5e-5)


@pytest.mark.parametrize("k, n", [(81, 263), (0, 10), (10, 10), (1, 1), (3, 7), (50, 100), (999, 1000)])
@pytest.mark.parametrize("confidence", [0.95, 0.90, 0.99])
def test_wilson_matches_scipy(k, n, confidence):
    ci = st.binomtest(k, n).proportion_ci(confidence_level=confidence, method="wilson")
    low, high = wilson_interval(k, n, confidence)
    assert low == pytest.approx(ci.low, abs=1e-12)
    assert high == pytest.approx(ci.high, abs=1e-12)
    assert 0.0 <= low <= k / n <= high <= 1.0


def test_wilson_by_hand_formula():
    k, n, z = 7, 20, 1.959963984540054
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z / (1 + z * z / n) * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    assert wilson_interval(k, n) == pytest.approx((centre - half, centre + half), abs=1e-12)


@pytest.mark.parametrize("k, n", [(-1, 10), (11, 10), (0, 0)])
def test_wilson_rejects_impossible_counts(k, n):
    with pytest.raises(ValueError):
        wilson_interval(k, n)


# ---------------------------------------------------------------------------------------------
# McNemar
# ---------------------------------------------------------------------------------------------
def test_mcnemar_exact_small_table_by_hand():
    # b=1, c=7: two-sided exact p = 2 * P(X <= 1), X ~ Bin(8, 1/2) = 2 * (1 + 8) / 256.
    res = mcnemar_counts(1, 7)
    assert res.method == "exact"
    assert res.p_value == pytest.approx(2 * 9 / 256, abs=1e-15)
    assert res.p_value == pytest.approx(st.binomtest(1, 8, 0.5).pvalue, abs=1e-15)
    assert mcnemar_counts(7, 1).p_value == pytest.approx(res.p_value, abs=1e-15)  # symmetric


def test_mcnemar_chi_square_on_agresti_table():
    # Agresti, An Introduction to Categorical Data Analysis: approval ratings in two surveys
    # (794 approve/approve, 150 approve/disapprove, 86 disapprove/approve, 570 disapprove/disapprove).
    res = mcnemar_counts(150, 86)
    assert res.method == "chi2-cc"
    assert res.statistic == pytest.approx((abs(150 - 86) - 1) ** 2 / (150 + 86), abs=1e-12)  # 16.82
    assert res.statistic == pytest.approx(16.82, abs=5e-3)
    assert res.p_value == pytest.approx(st.chi2.sf(3969 / 236, 1), rel=1e-12)
    assert 1e-5 < res.p_value < 1e-4
    # The uncorrected statistic of the book, 17.36, is larger: the correction is applied.
    assert res.statistic < (150 - 86) ** 2 / 236


def test_mcnemar_switches_from_exact_to_chi_square_at_the_threshold():
    below = mcnemar_counts(5, MCNEMAR_EXACT_BELOW - 6)
    at = mcnemar_counts(5, MCNEMAR_EXACT_BELOW - 5)
    assert below.method == "exact" and at.method == "chi2-cc"
    # The two forms agree roughly where they meet, and either can be forced.
    forced = mcnemar_counts(5, MCNEMAR_EXACT_BELOW - 5, exact=True)
    assert forced.method == "exact"
    assert forced.p_value == pytest.approx(at.p_value, abs=0.01)
    assert mcnemar_counts(1, 7, exact=False).method == "chi2-cc"


def test_mcnemar_without_disagreement_is_not_significant():
    assert mcnemar_counts(0, 0).p_value == 1.0
    assert mcnemar_counts(12, 12).p_value == 1.0  # exact
    assert mcnemar_counts(20, 20).p_value == 1.0  # corrected chi-square, |b - c| - 1 floored at 0


def test_mcnemar_counts_discordant_pairs_of_paired_outcomes():
    a = [True, True, False, False, True, True, False, True]
    b = [True, False, True, False, False, False, False, True]
    res = mcnemar(a, b)
    assert (res.b, res.c) == (3, 1)  # a right & b wrong on 3 items, the reverse on 1
    assert res.p_value == pytest.approx(st.binomtest(3, 4, 0.5).pvalue)
    with pytest.raises(ValueError):
        mcnemar([True], [True, False])


# ---------------------------------------------------------------------------------------------
# Bonferroni
# ---------------------------------------------------------------------------------------------
def test_bonferroni():
    assert bonferroni([0.01, 0.04, 0.5]) == pytest.approx([0.03, 0.12, 1.0])
    assert bonferroni([0.01], m=6) == pytest.approx([0.06])
    with pytest.raises(ValueError):
        bonferroni([0.01, 0.02], m=1)
    with pytest.raises(ValueError):
        bonferroni([1.5])


# ---------------------------------------------------------------------------------------------
# t interval for a mean
# ---------------------------------------------------------------------------------------------
def test_mean_interval_textbook_and_scipy():
    values = list(range(1, 11))  # mean 5.5, s = 3.02765, t(0.975, 9) = 2.262
    res = mean_interval(values)
    half = 2.262157162740992 * math.sqrt(sum((v - 5.5) ** 2 for v in values) / 9) / math.sqrt(10)
    assert (res.mean, res.n) == (5.5, 10)
    assert (res.low, res.high) == pytest.approx((5.5 - half, 5.5 + half), abs=1e-9)
    assert res.half_width == pytest.approx(2.16585, abs=1e-5)
    rng = np.random.default_rng(1)
    sample = rng.normal(0.4, 0.2, size=37)
    expected = st.t.interval(0.9, df=36, loc=sample.mean(), scale=st.sem(sample))
    got = mean_interval(sample, confidence=0.9)
    assert (got.low, got.high) == pytest.approx(expected, abs=1e-12)


def test_mean_interval_of_one_value_has_no_width():
    res = mean_interval([0.7])
    assert res.mean == 0.7 and math.isnan(res.low) and math.isnan(res.high)
    with pytest.raises(ValueError):
        mean_interval([])


# ---------------------------------------------------------------------------------------------
# Paired tests on per-query scores
# ---------------------------------------------------------------------------------------------
def _exact_sign_flip_p(diff: np.ndarray) -> float:
    observed = abs(diff.mean())
    null = [abs((diff * np.array(signs)).mean()) for signs in itertools.product([1, -1], repeat=diff.size)]
    return float(np.mean(np.array(null) >= observed - 1e-12))


def test_randomization_test_matches_exact_enumeration():
    # Dyadic values keep the float comparisons exact.
    a = np.array([0.75, 0.5, 0.25, 1.0, 0.5, 0.125, 0.875, 0.5, 0.25])
    b = np.array([0.5, 0.5, 0.5, 0.25, 0.25, 0.0, 0.5, 0.375, 0.5])
    res = paired_randomization_test(a, b)  # 2**9 = 512 <= n_resamples: scipy enumerates all
    assert res.method == "randomization" and res.n == 9
    assert res.mean_difference == pytest.approx((a - b).mean())
    assert res.p_value == pytest.approx(_exact_sign_flip_p(a - b), abs=1e-12)


def test_randomization_test_is_seeded_and_sensible():
    rng = np.random.default_rng(7)
    base = rng.uniform(size=200)
    better = np.clip(base + rng.normal(0.05, 0.1, size=200), 0, 1)
    first = paired_randomization_test(better, base, n_resamples=2000, seed=3)
    again = paired_randomization_test(better, base, n_resamples=2000, seed=3)
    assert first == again
    assert first.p_value < 0.01  # a clear improvement
    assert paired_t_test(better, base).p_value < 0.01
    # A small effect, not significant at 0.05; on 200 queries the randomization p-value is
    # close to the t-test's (central limit theorem).
    slight = base + np.random.default_rng(103).normal(0.01, 0.1, size=200)
    p_rand = paired_randomization_test(slight, base, n_resamples=5000).p_value
    p_t = st.ttest_rel(slight, base).pvalue
    assert 0.05 < p_rand < 0.2
    assert p_rand == pytest.approx(p_t, abs=0.03)


def test_identical_systems_are_not_different():
    x = [0.1, 0.5, 0.9]
    assert paired_randomization_test(x, x).p_value == 1.0
    assert paired_t_test(x, x).p_value == 1.0


def test_paired_t_test_matches_scipy_and_handles_edges():
    rng = np.random.default_rng(11)
    a, b = rng.uniform(size=30), rng.uniform(size=30)
    res = paired_t_test(a, b)
    assert res.p_value == pytest.approx(st.ttest_rel(a, b).pvalue, abs=1e-12)
    assert res.method == "t" and res.n == 30
    assert paired_t_test([0.5, 0.6], [0.4, 0.5]).p_value == 0.0  # constant non-zero difference
    assert math.isnan(paired_t_test([0.5], [0.4]).p_value)
    with pytest.raises(ValueError):
        paired_t_test([0.5, 0.6], [0.4])
