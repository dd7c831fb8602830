"""Tests between two records: Welch's t-test on each side's mean, with the
variance and degrees of freedom of its interval (subsession means, AR(1)
correction: perfsnake.statistics.subsessions), and the interval of the
difference of means; and the one multiplicity adjustment every family of
tests goes through (`adjust`: comparisons, trends, regression steps,
`perfsnake compare`, bisection steps).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from perfsnake.statistics.subsessions import mean_variance

#: statistics.correction -> statsmodels' multipletests method.
CORRECTIONS = {"holm": "holm", "bh": "fdr_bh"}


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


def adjust(p_values: list[float], correction: str) -> list[float]:
    """Multiplicity-adjusted p-values (statsmodels' multipletests) over one
    family; `correction` is "holm", "bh" or "none" (statistics.correction).
    nan entries stay nan and do not count as tests."""
    p = np.asarray(p_values, dtype=float)
    out = p.copy()
    tested = np.isfinite(p)
    if correction != "none" and tested.any():
        from statsmodels.stats.multitest import multipletests

        out[tested] = multipletests(p[tested], method=CORRECTIONS[correction])[1]
    return [float(v) for v in out]
