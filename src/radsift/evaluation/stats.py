"""Confidence intervals and significance tests for comparing retrieval systems.

- :func:`wilson_interval`: Wilson score interval for a proportion (a top-k match rate, P@10).
- :func:`mcnemar` / :func:`mcnemar_counts`: McNemar's test on paired binary outcomes (did
  system A and system B each get query i right), exact or chi-square (see below).
- :func:`bonferroni`: Bonferroni-adjusted p-values for m comparisons.
- :func:`mean_interval`: t-based confidence interval for a mean (mAP over queries).
- :func:`paired_randomization_test`: two-sided paired randomization (sign-flip permutation)
  test on per-query metric differences, with a fixed seed; :func:`paired_t_test` as the
  parametric companion.

Distributions come from :mod:`scipy.stats` (imported on first use: it takes most of a second, and
the modules that import this one need not pay it until a test runs); only the short closed forms are
written here.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

import numpy as np

# Below this many discordant pairs McNemar's test is exact (binomial); at or above it the
# continuity-corrected chi-square is used. 25 is the usual textbook threshold: the
# chi-square approximation is poor for few discordant pairs, while above ~25 the corrected
# statistic tracks the exact p-value closely and is what most papers report.
MCNEMAR_EXACT_BELOW = 25


def _scipy_stats():
    """:mod:`scipy.stats`, imported on first use."""
    from scipy import stats

    return stats


def _z(confidence: float) -> float:
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be in (0, 1), got {confidence!r}")
    return float(_scipy_stats().norm.ppf(0.5 + confidence / 2.0))


def wilson_interval(successes: int, n: int, confidence: float = 0.95) -> tuple[float, float]:
    """Wilson score interval for a binomial proportion.

    Better behaved than the normal ("Wald") interval near 0 and 1 and for small n
    (Newcombe 1998): it never leaves [0, 1] and is not degenerate at 0 or n successes.

    Args:
        successes: Number of successes (0 <= successes <= n).
        n: Number of trials (>= 1).
        confidence: Coverage, 0.95 by default.

    Returns:
        ``(low, high)``.
    """
    if n < 1 or not 0 <= successes <= n:
        raise ValueError(f"need 0 <= successes <= n and n >= 1, got successes={successes}, n={n}")
    z = _z(confidence)
    p = successes / n
    z2 = z * z
    denom = 1.0 + z2 / n
    centre = (p + z2 / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z2 / (4 * n * n)) / denom
    # At 0 and n successes the exact bounds are 0 and 1: do not let float noise move them.
    low = 0.0 if successes == 0 else max(0.0, centre - half)
    high = 1.0 if successes == n else min(1.0, centre + half)
    return low, high


@dataclass(frozen=True)
class McNemarResult:
    """Outcome of McNemar's test.

    Attributes:
        b: Pairs where the first system is right and the second wrong.
        c: Pairs where the first system is wrong and the second right.
        statistic: ``min(b, c)`` for the exact test, the corrected chi-square otherwise.
        p_value: Two-sided p-value.
        method: ``"exact"`` (binomial) or ``"chi2-cc"`` (chi-square, continuity-corrected).
    """

    b: int
    c: int
    statistic: float
    p_value: float
    method: str


def mcnemar_counts(b: int, c: int, exact: bool | None = None) -> McNemarResult:
    """McNemar's test from the two discordant counts.

    Only discordant pairs carry information. Under the null each is equally likely to favour
    either system, so ``b ~ Binomial(b + c, 1/2)``:

    - exact (default when ``b + c < MCNEMAR_EXACT_BELOW``): two-sided binomial test,
      ``scipy.stats.binomtest(b, b + c, 0.5)``;
    - otherwise Edwards' continuity-corrected statistic
      ``(max(|b - c| - 1, 0))^2 / (b + c)`` against chi-square with 1 degree of freedom.
      (The ``max`` keeps the correction from overshooting when b == c.)

    Args:
        b: First system right, second wrong.
        c: First system wrong, second right.
        exact: Force the exact (True) or chi-square (False) form; None picks by ``b + c``.

    Returns:
        A :class:`McNemarResult`; p is 1 when there is no discordant pair.
    """
    if b < 0 or c < 0:
        raise ValueError(f"discordant counts must be >= 0, got b={b}, c={c}")
    b, c = int(b), int(c)
    n = b + c
    use_exact = n < MCNEMAR_EXACT_BELOW if exact is None else exact
    if n == 0:
        return McNemarResult(b, c, 0.0, 1.0, "exact" if use_exact else "chi2-cc")
    if use_exact:
        p = _scipy_stats().binomtest(b, n, 0.5, alternative="two-sided").pvalue
        return McNemarResult(b, c, float(min(b, c)), float(min(1.0, p)), "exact")
    stat = max(abs(b - c) - 1, 0) ** 2 / n
    return McNemarResult(b, c, float(stat), float(_scipy_stats().chi2.sf(stat, df=1)), "chi2-cc")


def mcnemar(first: Sequence[bool], second: Sequence[bool], exact: bool | None = None) -> McNemarResult:
    """McNemar's test on paired binary outcomes (e.g. top-5 hit per query for two systems).

    Args:
        first: Outcome of the first system per item (truthy = success).
        second: Outcome of the second system on the same items, same order.
        exact: See :func:`mcnemar_counts`.
    """
    a = np.asarray(first, dtype=bool)
    s = np.asarray(second, dtype=bool)
    if a.shape != s.shape or a.ndim != 1:
        raise ValueError(f"paired outcomes must be two 1-d sequences of equal length, got {a.shape} and {s.shape}")
    return mcnemar_counts(int(np.count_nonzero(a & ~s)), int(np.count_nonzero(~a & s)), exact)


def bonferroni(p_values: Sequence[float], m: int | None = None) -> list[float]:
    """Bonferroni-adjusted p-values: ``min(1, p * m)``.

    Compare the adjusted values with the family-wise level (0.05), or equivalently the raw
    ones with ``0.05 / m``.

    Args:
        p_values: Raw p-values.
        m: Number of comparisons in the family; defaults to ``len(p_values)``.
    """
    m = len(p_values) if m is None else m
    if m < 1 or m < len(p_values):
        raise ValueError(f"m must be >= the number of p-values ({len(p_values)}), got {m}")
    for p in p_values:
        if not 0.0 <= p <= 1.0:
            raise ValueError(f"p-value {p!r} is not in [0, 1]")
    return [min(1.0, float(p) * m) for p in p_values]


@dataclass(frozen=True)
class MeanInterval:
    """A mean with its t-based confidence interval.

    Attributes:
        mean: The sample mean.
        low: Lower bound (NaN when n < 2).
        high: Upper bound (NaN when n < 2).
        n: Sample size.
        confidence: Coverage of the interval.
    """

    mean: float
    low: float
    high: float
    n: int
    confidence: float = 0.95

    @property
    def half_width(self) -> float:
        """Half the interval's width (the "±" part)."""
        return (self.high - self.low) / 2.0


def mean_interval(values: Sequence[float], confidence: float = 0.95) -> MeanInterval:
    """t-based confidence interval for a mean: ``mean ± t_{n-1} * s / sqrt(n)``.

    Args:
        values: The sample (e.g. per-query AP of one system).
        confidence: Coverage, 0.95 by default.
    """
    x = np.asarray(values, dtype=np.float64)
    if x.ndim != 1 or x.size == 0:
        raise ValueError("need a non-empty 1-d sample")
    _z(confidence)  # validates the level
    mean = float(x.mean())
    if x.size < 2:
        return MeanInterval(mean, math.nan, math.nan, 1, confidence)
    sem = float(x.std(ddof=1)) / math.sqrt(x.size)
    half = float(_scipy_stats().t.ppf(0.5 + confidence / 2.0, df=x.size - 1)) * sem
    return MeanInterval(mean, mean - half, mean + half, int(x.size), confidence)


@dataclass(frozen=True)
class PairedTestResult:
    """Outcome of a paired test on per-query scores.

    Attributes:
        mean_difference: Mean of ``a - b``.
        p_value: Two-sided p-value.
        n: Number of pairs.
        method: ``"randomization"`` or ``"t"``.
    """

    mean_difference: float
    p_value: float
    n: int
    method: str


def _paired(a: Sequence[float], b: Sequence[float]) -> tuple[np.ndarray, np.ndarray]:
    x = np.asarray(a, dtype=np.float64)
    y = np.asarray(b, dtype=np.float64)
    if x.shape != y.shape or x.ndim != 1 or x.size == 0:
        raise ValueError(f"paired scores must be two non-empty 1-d sequences of equal length, got {x.shape} and {y.shape}")
    return x, y


def paired_randomization_test(
    a: Sequence[float], b: Sequence[float], n_resamples: int = 10_000, seed: int = 0
) -> PairedTestResult:
    """Two-sided paired randomization test on the mean per-query difference.

    Under the null the two systems are exchangeable on every query, so each difference's sign
    is a coin flip. The p-value is the share of sign assignments whose mean difference is at
    least as extreme as the observed one (Smucker, Allan & Carterette 2007 recommend this test
    for IR). Uses :func:`scipy.stats.permutation_test` with ``permutation_type="samples"``:
    exact enumeration when ``2**n <= n_resamples``, otherwise ``n_resamples`` random sign
    flips from ``seed`` (so the p-value is reproducible).

    Args:
        a: Per-query scores of the first system.
        b: Per-query scores of the second system, same queries in the same order.
        n_resamples: Random sign assignments when not enumerating exactly.
        seed: Seed of the random sign assignments.
    """
    x, y = _paired(a, b)
    diff = x - y
    if not np.any(diff):
        return PairedTestResult(0.0, 1.0, int(x.size), "randomization")

    def mean_diff(u: np.ndarray, v: np.ndarray, axis: int = -1) -> np.ndarray:
        return np.mean(u - v, axis=axis)

    res = _scipy_stats().permutation_test(
        (x, y),
        mean_diff,
        permutation_type="samples",
        vectorized=True,
        n_resamples=n_resamples,
        alternative="two-sided",
        random_state=np.random.default_rng(seed),
        batch=max(1, min(n_resamples, 4_000_000 // max(1, x.size))),  # bound memory on long query lists
    )
    return PairedTestResult(float(diff.mean()), float(res.pvalue), int(x.size), "randomization")


def paired_t_test(a: Sequence[float], b: Sequence[float]) -> PairedTestResult:
    """Two-sided paired t-test on per-query scores (:func:`scipy.stats.ttest_rel`).

    The p-value is NaN for a single pair; with zero variance in the differences it is 1 when
    they are all 0 and 0 otherwise.
    """
    x, y = _paired(a, b)
    diff = x - y
    if x.size < 2:
        return PairedTestResult(float(diff.mean()), math.nan, int(x.size), "t")
    if not np.any(diff - diff.mean()):
        # No variance in the differences: t is infinite (p = 0) unless all differences are 0.
        return PairedTestResult(float(diff.mean()), 1.0 if not np.any(diff) else 0.0, int(x.size), "t")
    res = _scipy_stats().ttest_rel(x, y)
    return PairedTestResult(float(diff.mean()), float(res.pvalue), int(x.size), "t")
