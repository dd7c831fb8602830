"""The layout noise floor's statistics: how far apart two builds of the same
source can measure, from one record's runs grouped by build (the campaign
side, builds and marking comparisons: perfsnake.noise_floor, stages.noise_floor).

Model: one-way random effects, x_ij = mu + L_i + e_ij, with layout effects
L_i ~ N(0, s_L^2) and run noise e_ij ~ N(0, s_e^2). s_L^2 is estimated by
the ANOVA (method of moments) estimator, (MSB - MSW) / n0, truncated at 0
(Searle, Casella and McCulloch, "Variance Components", 1992, ch. 3). The
floor is the difference two random layouts show with probability
`confidence`, relative to the mean: z * sqrt(2) * s_L / |mu|. Its interval
comes from the modified large-sample interval for s_L^2 (Graybill and Wang
1980; Burdick and Graybill, "Confidence Intervals on Variance Components",
1992, section 3.2), with n0 for unequal run counts.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy import stats as st


@dataclass(frozen=True)
class Floor:
    layouts: int
    runs: int  # all runs, over every layout
    mean: float
    between_sd: float  # s_L, in the metric's unit
    within_sd: float  # s_e
    f_statistic: float  # MSB / MSW (inf when runs do not vary within a layout)
    floor: float  # relative: the difference two layouts show with probability `confidence`
    low: float
    high: float
    layout_means: tuple[float, ...]


def _mean_squares(groups: Sequence[np.ndarray]) -> tuple[float, float, float, float]:
    """(grand mean, MSB, MSW, n0) of the one-way layout."""
    k = len(groups)
    sizes = np.array([len(g) for g in groups], dtype=float)
    total = sizes.sum()
    means = np.array([g.mean() for g in groups])
    grand = float(np.concatenate(groups).mean())
    msb = float((sizes * (means - grand) ** 2).sum() / (k - 1))
    within = float(sum(((g - g.mean()) ** 2).sum() for g in groups))
    msw = within / (total - k) if total > k else 0.0
    n0 = float((total - (sizes**2).sum() / total) / (k - 1))
    return grand, msb, msw, n0


def between_interval(msb: float, msw: float, n0: float, df_b: int, df_w: int, confidence: float) -> tuple[float, float]:
    """The modified large-sample interval for s_L^2 = (MSB - MSW) / n0."""
    a = (1 - confidence) / 2
    chi = st.chi2.ppf
    g1, h1 = 1 - df_b / chi(1 - a, df_b), df_b / chi(a, df_b) - 1
    if df_w > 0:
        g2, h2 = 1 - df_w / chi(1 - a, df_w), df_w / chi(a, df_w) - 1
        f_hi, f_lo = st.f.ppf(1 - a, df_b, df_w), st.f.ppf(a, df_b, df_w)
        g12 = ((f_hi - 1) ** 2 - g1**2 * f_hi**2 - h2**2) / f_hi
        h12 = ((1 - f_lo) ** 2 - h1**2 * f_lo**2 - g2**2) / f_lo
    else:  # no run noise (a count the program prints): a chi-square interval on MSB
        g2 = h2 = g12 = h12 = 0.0
    low = msb - msw - math.sqrt(max(0.0, g1**2 * msb**2 + h2**2 * msw**2 + g12 * msb * msw))
    high = msb - msw + math.sqrt(max(0.0, h1**2 * msb**2 + g2**2 * msw**2 + h12 * msb * msw))
    return max(0.0, low / n0), max(0.0, high / n0)


def _relative(grand: float, between: float, z: float) -> float:
    return z * math.sqrt(2.0 * between) / abs(grand) if grand else math.nan


def layout_floor(groups: Sequence[Sequence[float]], confidence: float = 0.95) -> Floor | None:
    """The floor of one record's metric from its runs grouped by layout
    (None with fewer than two layouts of at least one run each)."""
    arrays = [np.asarray(g, dtype=float) for g in groups]
    arrays = [a[np.isfinite(a)] for a in arrays]
    arrays = [a for a in arrays if len(a)]
    if len(arrays) < 2:
        return None
    z = float(st.norm.ppf(0.5 + confidence / 2))
    grand, msb, msw, n0 = _mean_squares(arrays)
    runs = int(sum(len(a) for a in arrays))
    between = max(0.0, (msb - msw) / n0)
    low, high = between_interval(msb, msw, n0, len(arrays) - 1, runs - len(arrays), confidence)
    return Floor(
        layouts=len(arrays), runs=runs, mean=grand, between_sd=math.sqrt(between), within_sd=math.sqrt(msw),
        f_statistic=msb / msw if msw > 0 else (math.inf if msb > 0 else math.nan),
        floor=_relative(grand, between, z), low=_relative(grand, low, z), high=_relative(grand, high, z),
        layout_means=tuple(float(a.mean()) for a in arrays),
    )  # fmt: skip
