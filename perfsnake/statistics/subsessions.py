"""Subsessions in the spirit of Pilot (Li et al.): autocorrelation, merging
and the variance of a mean, on top of numpy.

The unit of a per-record summary is one run's metric. Before any interval or
test, adjacent samples are merged into subsessions (means of k consecutive
samples) with k grown until the lag-1 autocorrelation of the subsession
means is within the threshold, since the usual formulas assume independent
samples. Correlation left between subsessions (few of them make the merging
stop early) is then accounted for by an AR(1) model of the subsession means:
the variance of their mean is scaled by the exact finite-sample AR(1) factor
(with the small-sample bias of the sample variance removed) and the degrees
of freedom shrink to the effective number of subsessions. Intervals of the
mean (perfsnake.statistics.intervals) and Welch's comparisons
(perfsnake.statistics.tests) use this same variance, so they agree.

Most functions work on a 2-D array of series (one per row) as well as on
one series, so seeded simulations of thousands of series are fast.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

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
