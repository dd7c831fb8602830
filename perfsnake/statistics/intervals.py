"""Confidence intervals: of the mean (a t interval over subsession means,
AR(1)-corrected: perfsnake.statistics.subsessions) and of the median (the
exact order-statistic interval, distribution-free).

Each interval function reports the method it used, and INTERVAL_METHODS
says each method in the words captions and report pages use, so what
readers are told cannot drift from what was computed.
"""

from __future__ import annotations

import math

import numpy as np

from perfsnake.statistics.subsessions import RELIABLE_SUBSESSIONS, MeanVariance, mean_variance, subsessions

#: The method median_interval names in its result (summary.csv's median_ci_method).
ORDER_STATISTIC = "order-statistic"
#: How each statistic's interval is computed, as figure captions and report
#: pages say it: kept here, beside the functions that compute them, so what
#: readers are told cannot drift from what was done.
INTERVAL_METHODS = {
    "mean": "t interval over independent subsessions",
    "median": f"exact {ORDER_STATISTIC} interval, distribution-free",
}


def interval_method(statistic: str) -> str:
    """How the interval of `statistic` ("mean" or "median") is computed, in words."""
    return INTERVAL_METHODS[statistic]


def t_quantile(confidence: float, df: float | np.ndarray) -> np.ndarray:
    from scipy import stats

    return stats.t.ppf((1 + confidence) / 2, df)


def t_intervals(x: np.ndarray, confidence: float) -> tuple[np.ndarray, np.ndarray]:
    """Student-t intervals of the mean along the last axis (vectorised, independent samples)."""
    x = np.asarray(x, dtype=float)
    n = x.shape[-1]
    mean = x.mean(axis=-1)
    half = t_quantile(confidence, n - 1) * x.std(axis=-1, ddof=1) / math.sqrt(n)
    return mean - half, mean + half


def t_interval(x: np.ndarray, confidence: float) -> tuple[float, float]:
    """Student-t interval of the mean; (nan, nan) with fewer than 2 samples."""
    x = np.asarray(x, dtype=float)
    if len(x) < 2:
        return float("nan"), float("nan")
    lo, hi = t_intervals(x, confidence)
    return float(lo), float(hi)


def mean_intervals(
    x: np.ndarray, confidence: float, threshold: float = 0.1
) -> tuple[np.ndarray, np.ndarray, MeanVariance]:
    """Intervals of the mean of each row (subsessions + AR(1) correction)."""
    mv = mean_variance(x, threshold)
    half = t_quantile(confidence, mv.df) * np.sqrt(mv.variance)
    return mv.mean - half, mv.mean + half, mv


def mean_interval(
    x: np.ndarray, confidence: float, threshold: float = 0.1
) -> tuple[tuple[float, float], int, float, np.ndarray]:
    """((low, high), subsession size, residual lag-1 r, subsession means)."""
    x = np.asarray(x, dtype=float)
    if len(x) < 2:
        return (float("nan"), float("nan")), 1, float("nan"), x
    if len(x) < 3:  # no autocorrelation to speak of: the plain t-interval
        return t_interval(x, confidence), 1, float("nan"), x
    lo, hi, mv = mean_intervals(x[None, :], confidence, threshold)
    size = int(mv.size[0])
    return (float(lo[0]), float(hi[0])), size, float(mv.residual_r[0]), subsessions(x, size)


def mean_interval_note(mv: MeanVariance, row: int = 0) -> str:
    """Why an interval of the mean is only approximate ('' when it is not)."""
    m, df = int(mv.n_subsessions[row]), float(mv.df[row])
    if m < RELIABLE_SUBSESSIONS:
        return f"approximate: {m} subsessions are too few to estimate their autocorrelation"
    if df < 4:
        return (
            f"approximate: about {df + 1:.0f} independent samples (residual autocorrelation {float(mv.phi[row]):.2f})"
        )
    return ""


def order_statistic_levels(n: int) -> np.ndarray:
    """levels[j-1] = exact coverage of [x_(j), x_(n+1-j)] for the median of
    n independent samples of a continuous distribution (j = 1 .. n//2)."""
    from scipy import stats

    j = np.arange(1, n // 2 + 1)
    return 1 - 2 * stats.binom.cdf(j - 1, n, 0.5)


def median_interval(x: np.ndarray, confidence: float, seed: int = 0) -> tuple[float, float, str, float]:
    """(low, high, method, achieved level) of the median: the narrowest
    symmetric order-statistic interval whose exact coverage reaches the
    confidence. When even [min, max] falls short (n <= 5 at 95 %), that is
    reported with its true level (0.75 at n = 3), never as the one asked for.
    Distribution-free, and inside the data's range (so positive for positive
    data). `seed` is unused (kept for callers of the bootstrap version)."""
    x = np.sort(np.asarray(x, dtype=float))
    n = len(x)
    if n < 2:
        return float("nan"), float("nan"), "none", float("nan")
    if np.allclose(x, x[0]):
        return float(x[0]), float(x[0]), "degenerate", 1.0
    levels = order_statistic_levels(n)
    reach = np.nonzero(levels >= confidence - 1e-12)[0]
    j = int(reach[-1]) if len(reach) else 0  # 0-based: x[j] and x[n-1-j]
    method = ORDER_STATISTIC if len(reach) else f"{ORDER_STATISTIC}, below the requested level"
    return float(x[j]), float(x[n - 1 - j]), method, float(levels[j])
