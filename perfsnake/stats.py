"""Statistics in the spirit of Pilot (Li et al.): intervals, autocorrelation,
warm-up removal and Welch comparisons, on top of numpy and scipy (imported
only by the functions that need it: start-up cost).

The unit of a per-record summary is one run's metric. Before any interval or
test, adjacent samples are merged into subsessions (means of k consecutive
samples) with k grown until the lag-1 autocorrelation of the subsession
means is within the threshold, since the usual formulas assume independent
samples. Correlation left between subsessions (few of them make the merging
stop early) is then accounted for by an AR(1) model of the subsession means:
the variance of their mean is scaled by the exact finite-sample AR(1) factor
(with the small-sample bias of the sample variance removed) and the degrees
of freedom shrink to the effective number of subsessions. Intervals of the
mean and Welch's comparisons use this same variance, so they agree.

Most functions work on a 2-D array of series (one per row) as well as on
one series, so seeded simulations of thousands of series are fast.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import numpy as np

#: Fewest subsessions an interval is computed from.
MIN_SUBSESSIONS = 4
#: Below this many subsessions the residual autocorrelation cannot be told
#: from noise; intervals are flagged as approximate.
RELIABLE_SUBSESSIONS = 20
#: Fewest unmerged samples whose autocorrelation is corrected for (below, its
#: estimate is mostly noise and would only blur the interval of independent
#: samples); merged subsessions are always corrected.
MIN_CORRECTED = RELIABLE_SUBSESSIONS
#: Bounds of the residual AR(1) coefficient used for the variance factor.
PHI_LOW, PHI_HIGH = -0.5, 0.95


def lag1_autocorrelation(x: np.ndarray) -> float:
    """Lag-1 autocorrelation (the estimator of statsmodels' acf); nan when undefined."""
    x = np.asarray(x, dtype=float)
    if len(x) < 3 or np.allclose(x, x[0]):
        return float("nan")
    return float(lag1_rows(x))


def lag1_rows(x: np.ndarray) -> np.ndarray:
    """Lag-1 autocorrelation along the last axis; nan for constant rows."""
    xo = x - x.mean(axis=-1, keepdims=True)
    den = np.einsum("...i,...i->...", xo, xo)
    num = np.einsum("...i,...i->...", xo[..., :-1], xo[..., 1:])
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(den > 1e-300, num / np.where(den > 1e-300, den, 1.0), np.nan)


def subsessions(x: np.ndarray, size: int) -> np.ndarray:
    """Means of consecutive blocks of `size` samples along the last axis (a partial tail is dropped)."""
    x = np.asarray(x, dtype=float)
    n = x.shape[-1] // size
    return x[..., : n * size].reshape(*x.shape[:-1], n, size).mean(axis=-1)


def independent_enough(r: float | np.ndarray, n: int, threshold: float) -> bool | np.ndarray:
    """Pilot's |r| <= threshold, on the bias-corrected estimate; or r not
    distinguishable from 0 at the 95 % level (few samples make |r| noisy, and
    merging them further only loses information)."""
    out = np.isnan(r) | (np.abs(debiased(r, n)) <= threshold) | (np.abs(r) <= 1.96 / math.sqrt(n))
    return bool(out) if np.ndim(out) == 0 else out


def debiased(r: float | np.ndarray, n: int) -> float | np.ndarray:
    """Lag-1 autocorrelation corrected for its small-sample bias (Kendall:
    E[r] ~ rho - (1 + 4 rho) / n), so merging does not stop too early when
    few subsessions make the estimate look small."""
    return r + (1 + 4 * r) / n


def ar1_coefficient(r: float | np.ndarray, n: int) -> float | np.ndarray:
    """AR(1) coefficient from the lag-1 autocorrelation of n samples: solves
    r = rho - (1 + 4 rho) / n for rho (nearly unbiased from n = 20 on, where
    `debiased` still falls short by 0.03-0.05 at rho = 0.7-0.9), clipped to
    [PHI_LOW, PHI_HIGH]; 0 where undefined."""
    with np.errstate(invalid="ignore", divide="ignore"):
        rho = (
            (np.asarray(r, dtype=float) + 1.0 / n) / (1.0 - 4.0 / n)
            if n > 5
            else np.asarray(debiased(r, n), dtype=float)
        )
    return np.nan_to_num(np.clip(rho, PHI_LOW, PHI_HIGH), nan=0.0)


def ar1_mean_factor(phi: float | np.ndarray, n: int | np.ndarray) -> np.ndarray:
    """n * Var(mean of n samples) / Var(sample) for a stationary AR(1) process."""
    phi = np.asarray(phi, dtype=float)
    safe = np.where(phi == 0, 0.5, phi)
    f = (1 + safe) / (1 - safe) - 2 * safe * (1 - safe**n) / (n * (1 - safe) ** 2)
    return np.where(phi == 0, 1.0, f)


def merge_sizes(x: np.ndarray, threshold: float = 0.1) -> tuple[np.ndarray, np.ndarray]:
    """Per row of x (series of equal length): (subsession size, lag-1 r of the subsession means).

    The size grows until the merged series is independent enough, or until
    fewer than MIN_SUBSESSIONS subsessions would remain.
    """
    x = np.atleast_2d(np.asarray(x, dtype=float))
    n = x.shape[-1]
    r = lag1_rows(x)
    size = np.ones(len(x), dtype=int)
    done = np.asarray(independent_enough(r, n, threshold), dtype=bool) if n >= 3 else np.ones(len(x), dtype=bool)
    k = 1
    while not done.all() and n // (k + 1) >= MIN_SUBSESSIONS:
        k += 1
        rk = lag1_rows(subsessions(x, k))
        open_rows = ~done
        size[open_rows], r[open_rows] = k, rk[open_rows]
        done = done | independent_enough(rk, n // k, threshold)
    return size, r


def merge_until_independent(x: np.ndarray, threshold: float = 0.1) -> tuple[np.ndarray, int, float]:
    """(subsession means, subsession size, their lag-1 autocorrelation)."""
    x = np.asarray(x, dtype=float)
    if len(x) < 3:
        return x, 1, float("nan")
    size, r = merge_sizes(x[None, :], threshold)
    return subsessions(x, int(size[0])), int(size[0]), float(r[0])


@dataclass
class MeanVariance:
    """Per row: the variance of the mean estimated on subsession means."""

    mean: np.ndarray  # mean of the samples the subsessions cover
    variance: np.ndarray  # estimated variance of that mean
    df: np.ndarray  # degrees of freedom of the t reference distribution
    size: np.ndarray  # subsession size
    n_subsessions: np.ndarray
    residual_r: np.ndarray  # lag-1 autocorrelation of the subsession means
    phi: np.ndarray  # AR(1) coefficient used for the correction


def mean_variance(x: np.ndarray, threshold: float = 0.1, min_corrected: int = MIN_CORRECTED) -> MeanVariance:
    """Variance of the mean of each row, on subsession means with the AR(1)
    correction for the correlation they keep (see the module's docstring);
    unmerged series shorter than min_corrected are taken as independent."""
    x = np.atleast_2d(np.asarray(x, dtype=float))
    n = x.shape[-1]
    size, r = merge_sizes(x, threshold)
    fields = {k: np.empty(len(x)) for k in ("mean", "variance", "df", "phi")}
    for k in np.unique(size):
        rows = size == k
        merged = subsessions(x[rows], int(k))
        m = merged.shape[-1]
        # Merged series showed correlation: correct what is left even when few subsessions remain.
        phi = ar1_coefficient(r[rows], m) if m >= min_corrected or (k > 1 and m >= 3) else np.zeros(int(rows.sum()))
        f = ar1_mean_factor(phi, m)
        # E[s^2] = sigma^2 (m - f) / (m - 1) under AR(1): undo that bias, then scale by f.
        fields["variance"][rows] = merged.var(axis=-1, ddof=1) / m * f * (m - 1) / np.maximum(m - f, 1.0)
        fields["df"][rows] = np.clip(m / f - 1, 1.0, m - 1)
        fields["mean"][rows] = merged.mean(axis=-1)
        fields["phi"][rows] = phi
    return MeanVariance(size=size, n_subsessions=n // size, residual_r=r, **fields)


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
    mean_ci_note: str
    median_ci_low: float
    median_ci_high: float
    median_ci_method: str
    median_ci_level: float
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
    nan = float("nan")
    if n == 0:
        return Summary(
            0, nan, nan, nan, nan, nan, nan, confidence, nan, nan, "no samples", nan, nan, "none", nan, nan, 1, nan, 0
        )
    lo, hi, note, size, r_merged = _mean_ci(x, confidence, threshold)
    mlo, mhi, method, level = median_interval(x, confidence)
    mean = float(x.mean())
    std = float(x.std(ddof=1)) if n > 1 else nan
    return Summary(
        n=n, mean=mean, median=float(np.median(x)), std=std,
        cv=std / mean if n > 1 and mean else nan,
        min=float(x.min()), max=float(x.max()), confidence=confidence,
        mean_ci_low=lo, mean_ci_high=hi, mean_ci_note=note,
        median_ci_low=mlo, median_ci_high=mhi, median_ci_method=method, median_ci_level=level,
        lag1_autocorrelation=lag1_autocorrelation(x), subsession_size=size,
        subsession_autocorrelation=r_merged, n_subsessions=n // size,
    )  # fmt: skip


def _mean_ci(x: np.ndarray, confidence: float, threshold: float) -> tuple[float, float, str, int, float]:
    """(low, high, note, subsession size, residual r) of the mean; a positive
    metric's interval is cut at 0, and the note says so."""
    if len(x) < 2:
        return float("nan"), float("nan"), "fewer than 2 samples", 1, float("nan")
    if len(x) < 3:
        lo, hi = t_interval(x, confidence)
        size, r, note = 1, float("nan"), "approximate: 2 samples, autocorrelation unknown"
    else:
        los, his, mv = mean_intervals(x[None, :], confidence, threshold)
        lo, hi, size, r, note = (
            float(los[0]),
            float(his[0]),
            int(mv.size[0]),
            float(mv.residual_r[0]),
            mean_interval_note(mv),
        )
    if lo < 0 and (x > 0).all():
        lo = 0.0
        note = "; ".join(filter(None, [note, "truncated at 0 (positive metric)"]))
    return lo, hi, note, size, r


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


def _comparison(
    ma: float, mb: float, va: float, vb: float, da: float, db: float, confidence: float, alpha: float
) -> Comparison:
    """Welch's test and interval of mb - ma from each mean's variance and degrees of freedom."""
    from scipy import stats

    rel = (mb - ma) / ma if ma else float("nan")
    se = math.sqrt(va + vb)
    if se == 0:
        same = ma == mb
        return Comparison(
            ma, mb, mb - ma, rel, float("nan"), float("nan"), 1.0 if same else 0.0, mb - ma, mb - ma, not same
        )
    t = (mb - ma) / se
    df = (va + vb) ** 2 / (va**2 / da + vb**2 / db)  # Welch-Satterthwaite
    p = float(2 * stats.t.sf(abs(t), df))
    half = float(stats.t.ppf((1 + confidence) / 2, df) * se)
    return Comparison(ma, mb, mb - ma, rel, float(t), float(df), p, mb - ma - half, mb - ma + half, p < alpha)


def welch(a: np.ndarray, b: np.ndarray, confidence: float = 0.95, alpha: float = 0.05) -> Comparison:
    """Welch's t-test of b against a (independent samples), with the interval of the difference of means."""
    a = np.asarray(a, dtype=float)
    b = np.asarray(b, dtype=float)
    va, vb = a.var(ddof=1) / len(a), b.var(ddof=1) / len(b)
    return _comparison(
        float(a.mean()), float(b.mean()), float(va), float(vb), len(a) - 1, len(b) - 1, confidence, alpha
    )


def welch_on_subsessions(
    a: np.ndarray, b: np.ndarray, confidence: float, alpha: float, threshold: float = 0.1
) -> tuple[Comparison, int]:
    """Welch's test of b against a when the samples may be autocorrelated:
    each side's mean has the variance and degrees of freedom of its interval
    (subsession means, AR(1) correction of what correlation remains). Returns
    the comparison and the larger of the two subsession sizes."""
    a = np.asarray(a, dtype=float)
    b = np.asarray(b, dtype=float)
    if len(a) < 3 or len(b) < 3:
        return welch(a, b, confidence, alpha), 1
    va, vb = mean_variance(a[None, :], threshold), mean_variance(b[None, :], threshold)
    comp = _comparison(float(va.mean[0]), float(vb.mean[0]), float(va.variance[0]), float(vb.variance[0]),
                       float(va.df[0]), float(vb.df[0]), confidence, alpha)  # fmt: skip
    return comp, int(max(va.size[0], vb.size[0]))


def welch_p_values(a: np.ndarray, b: np.ndarray, threshold: float = 0.1, correct: bool = True) -> np.ndarray:
    """Vectorised p-values of welch_on_subsessions for rows of a and b (the
    same arithmetic; for simulations). With correct=False: plain Welch."""
    from scipy import stats

    if correct:
        ma, mb = mean_variance(a, threshold), mean_variance(b, threshold)
        va, vb, da, db, diff = ma.variance, mb.variance, ma.df, mb.df, mb.mean - ma.mean
    else:
        na, nb = a.shape[-1], b.shape[-1]
        va, vb = a.var(axis=-1, ddof=1) / na, b.var(axis=-1, ddof=1) / nb
        da, db, diff = na - 1, nb - 1, b.mean(axis=-1) - a.mean(axis=-1)
    t = diff / np.sqrt(va + vb)
    df = (va + vb) ** 2 / (va**2 / da + vb**2 / db)
    return 2 * stats.t.sf(np.abs(t), df)


# ---- stability warnings ----------------------------------------------------------


def spread_flags(x: np.ndarray, max_cv: float = 0.1, max_ratio: float = 1.5) -> list[str]:
    """pyperf-style "result may be unstable": the coefficient of variation
    above max_cv, or (positive samples) max/min above max_ratio."""
    x = np.asarray(x, dtype=float)
    if len(x) < 2:
        return []
    out = []
    mean = float(x.mean())
    cv = float(x.std(ddof=1)) / abs(mean) if mean else float("nan")
    if cv > max_cv:
        out.append(f"unstable: cv {cv:.1%} > {max_cv:.0%}")
    if (x > 0).all() and x.max() / x.min() > max_ratio:
        out.append(f"unstable: max/min {x.max() / x.min():.2f} > {max_ratio:g}")
    return out


def trend(x: np.ndarray) -> tuple[float, float]:
    """(Kendall's tau, two-sided p) of the values against their run order:
    the Mann-Kendall trend test; (nan, nan) below 4 values or when constant."""
    from scipy import stats

    x = np.asarray(x, dtype=float)
    if len(x) < 4 or np.allclose(x, x[0]):
        return float("nan"), float("nan")
    res = stats.kendalltau(np.arange(len(x)), x)
    return float(res.statistic), float(res.pvalue)


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


def steady_segment(
    series: np.ndarray, penalty: float | None = None, min_size: int = 2, separation: float = 5.0
) -> SteadyState:
    """Pilot's rule on change points: the stable phase is the longest segment,
    and only if it holds more than half of the samples; otherwise the whole
    series is kept.

    Positive series are segmented on the log scale (noise that grows with
    the level becomes even). Change points are located by binary
    segmentation (least squares) on the series scaled by its short-range
    noise, which places them precisely but also splits slow wander; adjacent
    segments are then merged while their means differ by less than
    `separation` standard errors of an AR(1) noise model (fitted to the first
    differences, so level shifts barely move it). `penalty` (default
    3 log n) is the cost a split must save in the first step.
    """
    y = np.asarray(series, dtype=float)
    n = len(y)
    if n < 2 * min_size + 1 or np.allclose(y, y[0]):
        return SteadyState(0, n, n, "none")
    if (y > 0).all():
        y = np.log(y)
    sigma, phi = _difference_noise(y)
    local = sigma * math.sqrt(1 - phi) or 1.0  # sd of first differences / sqrt(2)
    segments = _binary_segmentation((y - y.mean()) / local, 3.0 * math.log(n) if penalty is None else penalty, min_size)
    segments = _refine(y, _merge_close(y, segments, sigma, phi, separation), min_size)
    start, end = max(segments, key=lambda s: s[1] - s[0])
    if end - start <= n / 2:
        return SteadyState(0, n, n, "no-dominant-segment")
    return SteadyState(start, end, n, "changepoint")


def _difference_noise(y: np.ndarray) -> tuple[float, float]:
    """(marginal sd, AR(1) coefficient) of the noise, fitted to a robust
    variogram: for AR(1), Var(y[t+k] - y[t]) = 2 sigma^2 (1 - phi^k). Each
    lag's variance is a MAD of the lag-k differences, so the few differences
    spanning the jumps of a warm-up or cool-down do not count as noise."""
    lags = np.arange(1, max(2, min(12, len(y) // 4)) + 1)
    v = np.array([(1.4826 * float(np.median(np.abs((d := y[k:] - y[:-k]) - np.median(d))))) ** 2 for k in lags])
    if not (v > 0).all():
        scale = float(np.std(np.diff(y))) / math.sqrt(2) or 1.0
        return scale, 0.0
    phis = np.linspace(0.0, PHI_HIGH, 96)[:, None]
    shape = np.log(2 * (1 - phis**lags))  # log variogram per unit sigma^2
    log_s2 = (np.log(v) - shape).mean(axis=1, keepdims=True)
    best = int(np.argmin(((np.log(v) - shape - log_s2) ** 2).sum(axis=1)))
    return math.sqrt(math.exp(float(log_s2[best, 0]))), float(phis[best, 0])


def _binary_segmentation(z: np.ndarray, penalty: float, min_size: int) -> list[tuple[int, int]]:
    """Segments (start, end) of z by recursive least-squares mean splits,
    each saving more than `penalty` in squared error."""
    done, todo = [], [(0, len(z))]
    while todo:
        s, e = todo.pop()
        gain, k = _best_split(z[s:e], min_size)
        if k and gain > penalty:
            todo += [(s, s + k), (s + k, e)]
        else:
            done.append((s, e))
    return sorted(done)


def _best_split(z: np.ndarray, min_size: int) -> tuple[float, int]:
    """(squared error saved, position) of the best split of z into two means."""
    m = len(z)
    if m < 2 * min_size:
        return 0.0, 0
    c = np.cumsum(z - z.mean())
    k = np.arange(min_size, m - min_size + 1)
    gain = c[k - 1] ** 2 / k + c[k - 1] ** 2 / (m - k)
    best = int(np.argmax(gain))
    return float(gain[best]), int(k[best])


def _refine(y: np.ndarray, segments: list[tuple[int, int]], min_size: int) -> list[tuple[int, int]]:
    """Re-place each boundary at the best split of its two neighbouring
    segments (merging moves boundaries to where pieces of slow wander ended)."""
    segments = list(segments)
    for i in range(len(segments) - 1):
        (s1, _), (_, e2) = segments[i], segments[i + 1]
        _, k = _best_split(y[s1:e2], min_size)
        if k:
            segments[i], segments[i + 1] = (s1, s1 + k), (s1 + k, e2)
    return segments


def _merge_close(
    y: np.ndarray, segments: list[tuple[int, int]], sigma: float, phi: float, separation: float
) -> list[tuple[int, int]]:
    """Merge the adjacent pair of segments whose means are closest (in
    standard errors of the AR(1) noise), until every pair is `separation` apart."""
    starts = [s for s, _ in segments]
    ends = [e for _, e in segments]
    sums = [float(y[s:e].sum()) for s, e in segments]
    while len(starts) > 1:
        size = np.subtract(ends, starts)
        mean = np.asarray(sums) / size
        var = sigma**2 * ar1_mean_factor(phi, size) / size if phi else sigma**2 / size
        se = np.sqrt(var[:-1] + var[1:])
        with np.errstate(divide="ignore", invalid="ignore"):
            z = np.where(se > 0, np.abs(np.diff(mean)) / se, np.inf)
        i = int(np.argmin(z))
        if z[i] >= separation:
            break
        ends[i], sums[i] = ends[i + 1], sums[i] + sums[i + 1]
        del starts[i + 1], ends[i + 1], sums[i + 1]
    return list(zip(starts, ends, strict=True))


def work_per_second(durations: np.ndarray, work: np.ndarray) -> tuple[float, float, float]:
    """Pilot's WPS regression t = alpha + w / v: (v, alpha, r^2) by least squares.

    For readings-only workloads: each reading is (work done, time taken); the
    slope of time over work is 1/v, the intercept the fixed overhead.
    """
    from scipy import stats

    res = stats.linregress(np.asarray(work, dtype=float), np.asarray(durations, dtype=float))
    v = 1.0 / res.slope if res.slope else float("nan")
    return float(v), float(res.intercept), float(res.rvalue**2)
