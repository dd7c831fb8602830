"""Change points: where a series of runs or samples changes level, and the
warm-up and cool-down cut that Pilot's rule makes from them.

One method finds them, for a run's samples (`steady_segment`) as for a
campaign's runs along a commit range (perfsnake.stages.regression): ruptures'
binary segmentation on the least-squares cost, splitting while a split saves
more than a penalty. Its segments are those of the recursive splitting the
warm-up cut had in-house before (the same partitions on every series of
tests/test_stats.py); ruptures' own "l2" cost recomputes a variance per
candidate split, so the cost here takes it from cumulative sums (a
10,000-sample run: 0.25 s instead of 9 s).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from typing import Any

import numpy as np

from perfsnake.statistics.subsessions import PHI_HIGH, ar1_mean_factor
from perfsnake.statistics.tests import welch_on_subsessions


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
    cuts = change_points((y - y.mean()) / local, 3.0 * math.log(n) if penalty is None else penalty, min_size)
    edges = [0, *cuts, n]
    segments = list(zip(edges[:-1], edges[1:], strict=True))
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
    return _fit_ar1(lags, v)


def _fit_ar1(lags: np.ndarray, v: Sequence[float] | np.ndarray) -> tuple[float, float]:
    """(marginal sd, AR(1) coefficient) whose variogram, 2 sigma^2 (1 - phi^k),
    fits the variances `v` of the lag-k differences best on the log scale."""
    phis = np.linspace(0.0, PHI_HIGH, 96)[:, None]
    shape = np.log(2 * (1 - phis**lags))  # log variogram per unit sigma^2
    log_s2 = (np.log(v) - shape).mean(axis=1, keepdims=True)
    best = int(np.argmin(((np.log(v) - shape - log_s2) ** 2).sum(axis=1)))
    return math.sqrt(math.exp(float(log_s2[best, 0]))), float(phis[best, 0])


def change_points(z: np.ndarray, penalty: float, min_size: int = 2) -> list[int]:
    """Where z changes its mean: the first index of every segment but the
    first, by binary segmentation (least squares), each split saving more
    than `penalty` in squared error; segments of at least min_size values."""
    if len(z) < 2 * min_size:
        return []
    return [int(c) for c in _binseg(z, min_size).predict(pen=penalty)[:-1]]


def best_split(z: np.ndarray, min_size: int) -> int:
    """The position of the best split of z into two means (0: too short to split)."""
    if len(z) < 2 * min_size:
        return 0
    return int(_binseg(z, min_size).predict(n_bkps=1)[0])


def _binseg(z: np.ndarray, min_size: int) -> Any:
    """ruptures' binary segmentation fitted to z, on the cumulative-sum cost."""
    import ruptures

    cost = _squared_error_cost()()
    return ruptures.Binseg(custom_cost=cost, min_size=min_size, jump=1).fit(np.asarray(z, dtype=float))


@cache
def _squared_error_cost() -> type:
    """ruptures' "l2" cost, the squared error about a segment's mean, in O(1)
    per segment (a class made on first use: ruptures and scipy cost seconds
    of start-up, which a run without samples never pays)."""
    from ruptures.base import BaseCost

    class SquaredError(BaseCost):
        model = "l2"
        min_size = 1

        def fit(self, signal: np.ndarray) -> SquaredError:
            self.signal = np.asarray(signal, dtype=float).reshape(len(signal), -1)  # ruptures reads its shape
            x = self.signal[:, 0]
            x = x - x.mean()  # centred: the difference of sums below loses no precision to the level
            self.sums = np.concatenate([[0.0], np.cumsum(x)])
            self.squares = np.concatenate([[0.0], np.cumsum(x * x)])
            return self

        def error(self, start: int, end: int) -> float:
            total = self.sums[end] - self.sums[start]
            return float(self.squares[end] - self.squares[start] - total * total / (end - start))

    return SquaredError


def _refine(y: np.ndarray, segments: list[tuple[int, int]], min_size: int) -> list[tuple[int, int]]:
    """Re-place each boundary at the best split of its two neighbouring
    segments (merging moves boundaries to where pieces of slow wander ended)."""
    segments = list(segments)
    for i in range(len(segments) - 1):
        (s1, _), (_, e2) = segments[i], segments[i + 1]
        k = best_split(y[s1:e2], min_size)
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


def find_steps(versions: Sequence[tuple[str, np.ndarray]], opts: Mapping[str, Any]) -> list[dict[str, object]]:
    """Candidate steps along one series of labelled groups of runs (versions
    of a commit range, invocations of a campaign over time), each tested by
    Welch's test on subsessions (not yet corrected): change points of the runs
    in order, scaled by the pooled within-group noise with a BIC-like
    penalty, moved to the nearest group boundary."""
    kept = [(v, x) for v, x in versions if len(x) >= 2]
    if len(kept) < 2:
        return []
    runs = np.concatenate([x for _, x in kept])
    bounds = np.cumsum([len(x) for _, x in kept])  # end of each version's runs
    noise = np.sqrt(np.mean([x.var(ddof=1) for _, x in kept]))
    scale = noise if noise > 0 else (np.std(runs) or 1.0)
    z = (runs - runs.mean()) / scale
    penalty = 3.0 * np.log(len(z))
    cuts = change_points(z, penalty, min_size=2)
    # Every version boundary a cut falls nearest to; identical versions (no
    # noise at all) are cut wherever the value changes.
    boundaries = sorted({int(np.argmin(np.abs(bounds[:-1] - c))) for c in cuts})
    if noise == 0:
        boundaries = [i for i in range(len(kept) - 1) if kept[i][1].mean() != kept[i + 1][1].mean()]
    edges = [-1, *boundaries, len(kept) - 1]
    steps = []
    for j, b in enumerate(boundaries):
        before = np.concatenate([x for _, x in kept[edges[j] + 1 : b + 1]])
        after = np.concatenate([x for _, x in kept[b + 1 : edges[j + 2] + 1]])
        comp, _ = welch_on_subsessions(before, after, float(opts["confidence"]), float(opts["alpha"]),
                                       float(opts["autocorrelation_threshold"]))  # fmt: skip
        steps.append({"version": kept[b + 1][0], "previous": kept[b][0], "mean_before": comp.mean_a,
                      "mean_after": comp.mean_b, "relative_change": comp.relative_difference,
                      "diff_ci_low": comp.diff_ci_low, "diff_ci_high": comp.diff_ci_high, "p_value": comp.p_value})  # fmt: skip
    return steps


#: find_invocation_steps' first cut: this many times the final threshold
PILOT = 2.0
#: fewer invocations than this: their means' AR(1) coefficient is not fitted (0)
MIN_AR_POINTS = 16


def find_invocation_steps(
    invocations: Sequence[tuple[str, np.ndarray]], opts: Mapping[str, Any]
) -> list[dict[str, object]]:
    """Steps along a campaign's invocations over time, each invocation one
    point (the mean of its ok runs, one run is enough): what varies between
    invocations (the machine's state moving between them, autocorrelated or
    not) is the noise, not only the runs' spread within one.

    The noise of an invocation's mean is fitted to the robust variogram of
    the means (an AR(1) model: marginal sd and coefficient, so a few jumps do
    not count as noise, and wander is told from a step), floored by the
    runs' own standard error where invocations have two runs or more. Binary
    segmentation on the scaled means proposes boundaries; adjacent segments
    are merged until every boundary's difference is beyond a
    Bonferroni-corrected t threshold (alpha over the k - 1 places a step
    could be) in standard errors of the AR(1) noise. A lone invocation between
    two others is an outlier, not a level: merged; the newest may stand alone
    (a step at the latest invocation). Each step's p-value is Bonferroni-
    adjusted, so `p_value < alpha` keeps the false-positive rate per series
    at about alpha."""
    from scipy import stats

    points = [(v, x[np.isfinite(x)]) for v, x in invocations]
    points = [(v, x) for v, x in points if len(x)]
    k = len(points)
    if k < 3:
        return []
    means = np.array([x.mean() for _, x in points])
    within = [x.var(ddof=1) / len(x) for _, x in points if len(x) >= 2]
    floor = math.sqrt(float(np.mean(within))) if within else 0.0
    alpha = float(opts["alpha"])
    separation = float(stats.t.ppf(1 - alpha / (2 * (k - 1)), max(1, k - 2)))
    # The noise: first of neighbours alone (one difference spans a step),
    # which cuts where the level plainly jumps (PILOT times the threshold:
    # wander must not be cut here), then the AR(1) noise within the pieces.
    sigma, phi = _invocation_noise(means)
    lag1 = float(np.median(np.abs(np.diff(means) - np.median(np.diff(means))))) * 1.4826 / math.sqrt(2)
    rough = max(lag1, floor)
    if rough > 0:
        cuts = change_points((means - means.mean()) / rough, 3.0 * math.log(k), min_size=1)
        edges = [0, *cuts, k]
        pieces = _merge_close(means, list(zip(edges[:-1], edges[1:], strict=True)), rough, 0.0, PILOT * separation)
        sigma, phi = _invocation_noise(means, pieces)
    sigma = max(sigma, floor)
    if within and floor == 0:
        sigma = 0.0  # every invocation's runs agree exactly (counted work): a change of level is no noise
    # Autocorrelated means say less of their noise: the t threshold on the
    # effective number of independent invocations.
    df = max(2.0, (k - 2) * (1 - phi) / (1 + phi))
    separation = float(stats.t.ppf(1 - alpha / (2 * (k - 1)), df))
    if sigma == 0:  # no noise at all: wherever the level changes
        edges = [0, *[i + 1 for i in range(k - 1) if means[i] != means[i + 1]], k]
        segments = list(zip(edges[:-1], edges[1:], strict=True))
    else:
        local = sigma * math.sqrt(1 - phi)
        cuts = change_points((means - means.mean()) / local, 3.0 * math.log(k), min_size=1)
        edges = [0, *cuts, k]
        segments = _merge_close(means, list(zip(edges[:-1], edges[1:], strict=True)), sigma, phi, separation)
        segments = _merge_outliers(means, segments, sigma, phi, separation)
        segments = _merge_close(means, segments, sigma, phi, separation)
    steps = []
    for (s1, e1), (s2, e2) in itertools.pairwise(segments):
        before, after = means[s1:e1], means[s2:e2]
        diff = float(after.mean() - before.mean())
        var = [sigma**2 * float(ar1_mean_factor(phi, len(seg))) / len(seg) for seg in (before, after)]
        se = math.sqrt(sum(var))
        z = abs(diff) / se if se > 0 else math.inf
        p = min(1.0, 2 * float(stats.t.sf(z, df)) * (k - 1)) if se > 0 else 0.0
        half = float(stats.t.ppf((1 + float(opts["confidence"])) / 2, df)) * se
        mean_a = float(before.mean())
        steps.append({"version": points[s2][0], "previous": points[e1 - 1][0], "mean_before": mean_a,
                      "mean_after": float(after.mean()), "relative_change": diff / mean_a if mean_a else math.nan,
                      "diff_ci_low": diff - half, "diff_ci_high": diff + half, "p_value": p})  # fmt: skip
    return steps


def _invocation_noise(means: np.ndarray, segments: Sequence[tuple[int, int]] | None = None) -> tuple[float, float]:
    """(marginal sd, AR(1) coefficient) of invocation means from their robust
    variogram, counting only differences within `segments` (a step between
    two would pass for wander at every lag that spans it); (0, 0) when the
    means do not move besides their steps."""
    bounds = segments or [(0, len(means))]
    lags = np.arange(1, max(2, min(12, len(means) // 4)) + 1)
    v = []
    for lag in lags:
        d = np.concatenate(
            [means[s + lag : e] - means[s : e - lag] for s, e in bounds if e - s > lag] or [np.array([])]
        )
        if len(d) < 2:
            break
        v.append((1.4826 * float(np.median(np.abs(d - np.median(d))))) ** 2)
    lags = lags[: len(v)]
    if not v or not (np.asarray(v) > 0).all():
        return 0.0, 0.0
    if len(v) == 1 or len(means) < MIN_AR_POINTS:  # too few points to tell wander from chance
        return math.sqrt(v[0] / 2), 0.0
    return _fit_ar1(lags, v)


def _merge_outliers(
    means: np.ndarray, segments: list[tuple[int, int]], sigma: float, phi: float, separation: float
) -> list[tuple[int, int]]:
    """A one-invocation segment is an outlier, not a level (the last may
    stand alone: a step at the latest invocation). Between two segments whose
    means, without it, are not `separation` standard errors apart, it joins
    both; next to a real step it joins the neighbour nearest its mean; the
    first joins the next."""

    def apart(a: tuple[int, int], b: tuple[int, int]) -> bool:
        sizes = np.array([a[1] - a[0], b[1] - b[0]])
        var = sigma**2 * ar1_mean_factor(phi, sizes) / sizes
        diff = abs(means[b[0] : b[1]].mean() - means[a[0] : a[1]].mean())
        return bool(diff >= separation * math.sqrt(float(var.sum())))

    segments = list(segments)
    if len(segments) > 1 and segments[0][1] - segments[0][0] == 1:
        segments[0:2] = [(segments[0][0], segments[1][1])]
    i = 1
    while i < len(segments) - 1:
        (s, e), left, right = segments[i], segments[i - 1], segments[i + 1]
        if e - s > 1:
            i += 1
        elif not apart(left, right):
            segments[i - 1 : i + 2] = [(left[0], right[1])]
        elif abs(means[s] - means[left[0] : left[1]].mean()) <= abs(means[s] - means[right[0] : right[1]].mean()):
            segments[i - 1 : i + 1] = [(left[0], e)]
        else:
            segments[i : i + 2] = [(s, right[1])]
    return segments
