"""A record's summary (one row of summary.csv) and its stability checks:
the intervals of its mean and median, its autocorrelation, pyperf-style
spread warnings, the trend over run order, and Pilot's work-per-second
regression of a run's readings.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np

from perfsnake.statistics.intervals import mean_interval_note, mean_intervals, median_interval, t_interval
from perfsnake.statistics.subsessions import lag1_autocorrelation


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
    x = np.asarray(x, dtype=float)
    if len(x) < 4 or np.allclose(x, x[0]):
        return float("nan"), float("nan")
    from scipy import stats  # here: a campaign of few runs never pays for importing scipy.stats (~1 s)

    res = stats.kendalltau(np.arange(len(x)), x)
    return float(res.statistic), float(res.pvalue)


def work_per_second(durations: np.ndarray, work: np.ndarray) -> tuple[float, float, float]:
    """Pilot's WPS regression t = alpha + w / v: (v, alpha, r^2) by least squares.

    For readings-only workloads: each reading is (work done, time taken); the
    slope of time over work is 1/v, the intercept the fixed overhead.
    """
    from scipy import stats

    res = stats.linregress(np.asarray(work, dtype=float), np.asarray(durations, dtype=float))
    v = 1.0 / res.slope if res.slope else float("nan")
    return float(v), float(res.intercept), float(res.rvalue**2)
