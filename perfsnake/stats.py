"""Statistics in the spirit of Pilot (Li et al.): intervals, autocorrelation,
warm-up removal and Welch comparisons, on top of scipy, statsmodels and
ruptures.

The unit of a per-record summary is one run's metric. Before any interval or
test, adjacent samples are merged into subsessions (means of k consecutive
samples) with k grown until the lag-1 autocorrelation of the subsession
means is within the threshold, since the usual formulas assume independent
samples.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import numpy as np
from scipy import stats

#: Fewest subsessions an interval is computed from.
MIN_SUBSESSIONS = 4


def lag1_autocorrelation(x: np.ndarray) -> float:
    """Lag-1 autocorrelation (statsmodels' estimator); nan when undefined."""
    from statsmodels.tsa.stattools import acf

    x = np.asarray(x, dtype=float)
    if len(x) < 3 or np.allclose(x, x[0]):
        return float("nan")
    return float(acf(x, nlags=1, fft=False)[1])


def subsessions(x: np.ndarray, size: int) -> np.ndarray:
    """Means of consecutive blocks of `size` samples (a partial tail is dropped)."""
    x = np.asarray(x, dtype=float)
    n = len(x) // size
    return x[: n * size].reshape(n, size).mean(axis=1)


def merge_until_independent(x: np.ndarray, threshold: float = 0.1) -> tuple[np.ndarray, int, float]:
    """(subsession means, subsession size, their lag-1 autocorrelation).

    The size grows until |r1| <= threshold, or until fewer than
    MIN_SUBSESSIONS subsessions would remain.
    """
    x = np.asarray(x, dtype=float)
    size = 1
    merged = x
    r = lag1_autocorrelation(merged)
    while not independent_enough(r, len(merged), threshold) and len(x) // (size + 1) >= MIN_SUBSESSIONS:
        size += 1
        merged = subsessions(x, size)
        r = lag1_autocorrelation(merged)
    return merged, size, r


def independent_enough(r: float, n: int, threshold: float) -> bool:
    """Pilot's |r| <= threshold, on the bias-corrected estimate; or r not
    distinguishable from 0 at the 95 % level (few samples make |r| noisy, and
    merging them further only loses information)."""
    return math.isnan(r) or abs(debiased(r, n)) <= threshold or abs(r) <= 1.96 / math.sqrt(n)


def debiased(r: float, n: int) -> float:
    """Lag-1 autocorrelation corrected for its small-sample bias (Kendall:
    E[r] ~ rho - (1 + 4 rho) / n), so merging does not stop too early when
    few subsessions make the estimate look small."""
    return r + (1 + 4 * r) / n


def t_intervals(x: np.ndarray, confidence: float) -> tuple[np.ndarray, np.ndarray]:
    """Student-t intervals of the mean along the last axis (vectorised)."""
    x = np.asarray(x, dtype=float)
    n = x.shape[-1]
    mean = x.mean(axis=-1)
    half = stats.t.ppf((1 + confidence) / 2, n - 1) * x.std(axis=-1, ddof=1) / math.sqrt(n)
    return mean - half, mean + half


def t_interval(x: np.ndarray, confidence: float) -> tuple[float, float]:
    """Student-t interval of the mean; (nan, nan) with fewer than 2 samples."""
    x = np.asarray(x, dtype=float)
    if len(x) < 2:
        return float("nan"), float("nan")
    lo, hi = t_intervals(x, confidence)
    return float(lo), float(hi)


def median_interval(x: np.ndarray, confidence: float, seed: int = 0) -> tuple[float, float, str]:
    """BCa bootstrap interval of the median, or the percentile one where BCa is undefined."""
    x = np.asarray(x, dtype=float)
    if len(x) < 3:
        return float("nan"), float("nan"), "none"
    if np.allclose(x, x[0]):
        return float(x[0]), float(x[0]), "degenerate"
    for method in ("BCa", "percentile"):
        with np.errstate(all="ignore"):
            try:
                res = stats.bootstrap((x,), np.median, confidence_level=confidence, method=method, n_resamples=2000, random_state=seed)
            except (ValueError, RuntimeWarning):
                continue
        lo, hi = res.confidence_interval
        if np.isfinite(lo) and np.isfinite(hi):
            return float(lo), float(hi), method
    return float("nan"), float("nan"), "none"


def mean_interval(x: np.ndarray, confidence: float, threshold: float = 0.1) -> tuple[tuple[float, float], int, float, np.ndarray]:
    """((low, high), subsession size, residual lag-1 r, subsession means).

    The t-interval on subsession means. When the samples had to be merged and
    correlation above the threshold is left between subsessions, the interval
    is widened by the AR(1) variance factor (1 + r) / (1 - r); never narrowed.
    """
    merged, size, r = merge_until_independent(x, threshold)
    lo, hi = t_interval(merged, confidence)
    if size > 1 and len(merged) > 2 and not math.isnan(r) and debiased(r, len(merged)) > threshold:
        rr = min(debiased(r, len(merged)), 0.9)
        centre, half = (lo + hi) / 2, (hi - lo) / 2 * math.sqrt((1 + rr) / (1 - rr))
        lo, hi = centre - half, centre + half
    return (lo, hi), size, r, merged


@dataclass
class Summary:
    n: int
    mean: float
    median: float
    std: float
    cv: float
    min: float
    max: float
    confidence: float
    mean_ci_low: float
    mean_ci_high: float
    median_ci_low: float
    median_ci_high: float
    median_ci_method: str
    lag1_autocorrelation: float
    subsession_size: int
    subsession_autocorrelation: float
    n_subsessions: int

    def as_dict(self) -> dict[str, object]:
        return asdict(self)


def summarise(samples: np.ndarray, confidence: float = 0.95, threshold: float = 0.1) -> Summary:
    """Pilot-style summary of a sample sequence (in execution order)."""
    x = np.asarray(samples, dtype=float)
    x = x[np.isfinite(x)]
    n = len(x)
    if n == 0:
        nan = float("nan")
        return Summary(0, nan, nan, nan, nan, nan, nan, confidence, nan, nan, nan, nan, "none", nan, 1, nan, 0)
    (lo, hi), size, r_merged, merged = mean_interval(x, confidence, threshold)
    mlo, mhi, method = median_interval(x, confidence)
    mean = float(x.mean())
    std = float(x.std(ddof=1)) if n > 1 else float("nan")
    return Summary(
        n=n, mean=mean, median=float(np.median(x)), std=std,
        cv=std / mean if n > 1 and mean else float("nan"),
        min=float(x.min()), max=float(x.max()), confidence=confidence,
        mean_ci_low=lo, mean_ci_high=hi, median_ci_low=mlo, median_ci_high=mhi, median_ci_method=method,
        lag1_autocorrelation=lag1_autocorrelation(x), subsession_size=size,
        subsession_autocorrelation=r_merged, n_subsessions=len(merged),
    )  # fmt: skip


@dataclass
class Comparison:
    mean_a: float
    mean_b: float
    difference: float  # mean_b - mean_a
    relative_difference: float  # (mean_b - mean_a) / mean_a
    welch_t: float
    df: float
    p_value: float
    diff_ci_low: float
    diff_ci_high: float
    significant: bool


def welch(a: np.ndarray, b: np.ndarray, confidence: float = 0.95, alpha: float = 0.05) -> Comparison:
    """Welch's t-test of b against a, with the interval of the difference of means."""
    a = np.asarray(a, dtype=float)
    b = np.asarray(b, dtype=float)
    ma, mb = float(a.mean()), float(b.mean())
    va, vb = a.var(ddof=1) / len(a), b.var(ddof=1) / len(b)
    se = math.sqrt(va + vb)
    if se == 0:
        same = ma == mb
        return Comparison(ma, mb, mb - ma, (mb - ma) / ma if ma else float("nan"), float("nan"), float("nan"),
                          1.0 if same else 0.0, mb - ma, mb - ma, not same)  # fmt: skip
    res = stats.ttest_ind(b, a, equal_var=False)
    df = float((va + vb) ** 2 / (va**2 / (len(a) - 1) + vb**2 / (len(b) - 1)))
    half = float(stats.t.ppf((1 + confidence) / 2, df) * se)
    return Comparison(
        mean_a=ma, mean_b=mb, difference=mb - ma, relative_difference=(mb - ma) / ma if ma else float("nan"),
        welch_t=float(res.statistic), df=df, p_value=float(res.pvalue),
        diff_ci_low=mb - ma - half, diff_ci_high=mb - ma + half, significant=bool(res.pvalue < alpha),
    )  # fmt: skip


def welch_on_subsessions(a: np.ndarray, b: np.ndarray, confidence: float, alpha: float, threshold: float = 0.1) -> tuple[Comparison, int]:
    """Welch's test after merging each side into independent subsessions (common size)."""
    _, size_a, _ = merge_until_independent(a, threshold)
    _, size_b, _ = merge_until_independent(b, threshold)
    size = max(size_a, size_b)
    return welch(subsessions(a, size), subsessions(b, size), confidence, alpha), size


# ---- warm-up and cool-down -------------------------------------------------------


@dataclass
class SteadyState:
    start: int  # first index of the stable segment
    end: int  # one past its last index
    n: int  # samples in the series
    method: str

    @property
    def removed(self) -> int:
        return self.n - (self.end - self.start)


def steady_segment(series: np.ndarray, penalty: float | None = None, min_size: int = 2) -> SteadyState:
    """Pilot's rule on change points (ruptures): the stable phase is the longest
    segment, and only if it holds more than half of the samples; otherwise the
    whole series is kept."""
    import ruptures

    y = np.asarray(series, dtype=float)
    n = len(y)
    if n < 2 * min_size + 1 or np.allclose(y, y[0]):
        return SteadyState(0, n, n, "none")
    # Noise scale from first differences (robust: level shifts barely move it).
    diffs = np.diff(y)
    scale = float(np.median(np.abs(diffs - np.median(diffs)))) * 1.4826 / math.sqrt(2) or float(np.std(y)) or 1.0
    z = (y - y.mean()) / scale
    if penalty is None:
        # BIC-like penalty on a standardised series: robust default.
        penalty = 3.0 * math.log(n)
    breaks = ruptures.Pelt(model="l2", min_size=min_size, jump=1).fit(z).predict(pen=penalty)
    bounds = [0, *breaks]
    segments = [(bounds[i], bounds[i + 1]) for i in range(len(bounds) - 1)]
    start, end = max(segments, key=lambda s: s[1] - s[0])
    if end - start <= n / 2:
        return SteadyState(0, n, n, "no-dominant-segment")
    return SteadyState(start, end, n, "changepoint")


def work_per_second(durations: np.ndarray, work: np.ndarray) -> tuple[float, float, float]:
    """Pilot's WPS regression t = alpha + w / v: (v, alpha, r^2) by least squares.

    For readings-only workloads: each reading is (work done, time taken); the
    slope of time over work is 1/v, the intercept the fixed overhead.
    """
    res = stats.linregress(np.asarray(work, dtype=float), np.asarray(durations, dtype=float))
    v = 1.0 / res.slope if res.slope else float("nan")
    return float(v), float(res.intercept), float(res.rvalue**2)
