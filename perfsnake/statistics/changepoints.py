"""Change points: where a series of runs or samples changes level, and the
warm-up and cool-down cut that Pilot's rule makes from them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from perfsnake.statistics.subsessions import PHI_HIGH, ar1_mean_factor


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
