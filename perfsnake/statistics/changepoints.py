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
