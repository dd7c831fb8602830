"""Two modes are not one result: runs of a record that fall into two groups.

A connect that sometimes pays for a port search (29 us or 270 us), a thread
placed on either of two sockets: the record's mean and interval then describe
neither group. Hartigan's dip test looks for a dip in the density, but two
groups whose centres are 3 standard deviations apart, the smaller holding 10 %
of the runs, make no dip at all (the density only has a shoulder): measured
on seeded mixtures, the dip test flags 0-15 % of them at n = 20-100. What we
test instead is the question users ask, "do the runs come from two groups?",
with one of two likelihood ratios of two normal groups with a common variance
against one normal. Below FULL_LIKELIHOOD_FROM runs, Engelman and Hartigan's
test for clusters (JASA 1969): the best split of the sorted runs, each run
assigned to a group, the groups' shares weighted in; the sharper test for
well-separated groups in small samples. From FULL_LIKELIHOOD_FROM runs on,
the full mixture likelihood (McLachlan, Applied Statistics 1987), fitted by
EM from that best split: it sees a 10 % group 3 standard deviations away
(a shoulder, not a second peak) in 93 % of 200-run samples, where the split
sees 60 % even at 300. Both statistics are location- and scale-invariant,
so their null distributions depend on n alone: the split's critical value is
simulated once per n (seeded, so the decision is repeatable), the mixture's
95 % points are tabled from a seeded simulation (`bench/modes.py --table`
prints them again: EM on 20,000 samples per n is too slow for a job). Skewness alone
looks like a second group, so a positive metric (times, rates) must show two
groups on both the linear and the log scale: a lognormal is one normal group
on the log scale, a normal one on the linear.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cache

import numpy as np

#: Fewer runs than this are not tested (no power, and a flag would be noise).
MIN_RUNS = 10
#: From this many runs on, the full mixture likelihood decides (see above).
FULL_LIKELIHOOD_FROM = 100
#: Size of the split statistic's simulated null distribution per n.
NULL_SIMULATIONS = 20000
#: Above this n the critical values of n = MAX_SIMULATED_N are used (they vary
#: little there).
MAX_SIMULATED_N = 500
#: EM steps per start (the likelihood has settled well before on the data of
#: the tests and the table).
EM_STEPS = 200
#: The smallest variance a group may have, in units of the whole sample's:
#: keeps EM off a degenerate group of equal runs.
MIN_VARIANCE = 1e-3
#: 95 % points of the mixture statistic for n draws from one normal: 20,000
#: seeded draws per n (`bench/modes.py --table`); interpolated in log n,
#: constant beyond the last.
MIXTURE_95 = {100: 6.397, 150: 6.322, 200: 6.375, 300: 6.195, 500: 6.29}


@dataclass(frozen=True)
class Modes:
    """Two groups found: their centres (medians, metric units), shares and the test's statistic."""

    centres: tuple[float, float]
    shares: tuple[float, float]
    statistic: float
    critical: float

    def describe(self) -> str:
        (a, b), (wa, wb) = self.centres, self.shares
        return f"{a:.4g} ({wa:.0%}) | {b:.4g} ({wb:.0%})"


def best_split(y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per row of sorted values: the classification log-likelihood ratio of the
    best split into two normal groups with a common variance and their shares
    as weights (n/2 log(total / within) + sum of n_g log(n_g / n)), and the size
    of the lower group. The weights' term keeps a small group from being a
    free parameter: without it, balanced splits always win."""
    order = np.sort(y, axis=1)
    n = order.shape[1]
    total = ((order - order.mean(axis=1, keepdims=True)) ** 2).sum(axis=1, keepdims=True)
    k = np.arange(2, n - 1)  # each group at least two runs
    csum, csq = np.cumsum(order, axis=1), np.cumsum(order**2, axis=1)
    low_ss = csq[:, k - 1] - csum[:, k - 1] ** 2 / k
    high_sum, high_sq = csum[:, -1:] - csum[:, k - 1], csq[:, -1:] - csq[:, k - 1]
    within = np.maximum(low_ss + high_sq - high_sum**2 / (n - k), 1e-300 * np.maximum(total, 1e-300))
    score = n / 2 * np.log(np.maximum(total, 1e-300) / within) + k * np.log(k / n) + (n - k) * np.log((n - k) / n)
    best = score.argmax(axis=1)
    return score[np.arange(len(order)), best], k[best]


@dataclass(frozen=True)
class Mixture:
    """Per row: 2 x (log-likelihood of the two-normal mixture - that of one normal),
    the lower group's weight, and each run's probability of the lower group
    (columns in sorted order)."""

    statistic: np.ndarray
    weight: np.ndarray
    lower: np.ndarray


def mixture_ratio(y: np.ndarray) -> Mixture:
    """The mixture's likelihood ratio per row of `y` (EM from four starts:
    the best split, a 10 % group below, halves, a 10 % group above; the best kept)."""
    z = np.sort(np.asarray(y, dtype=float), axis=1)
    n = z.shape[1]
    z = (z - z.mean(axis=1, keepdims=True)) / np.maximum(z.std(axis=1, keepdims=True), 1e-300)
    one = -0.5 * n * (math.log(2 * math.pi) + 1)  # one normal at its MLE, standardised data
    small = max(2, round(0.1 * n))
    starts = [best_split(z)[1], np.full(len(z), small), np.full(len(z), n // 2), np.full(len(z), n - small)]
    best = np.full(len(z), -np.inf)
    weight, lower = np.zeros(len(z)), np.zeros_like(z)
    column = np.arange(n)[None, :]
    for k in starts:
        r = (column < k[:, None]).astype(float)  # responsibilities of the lower group
        previous = np.full(len(z), np.inf)
        for step in range(EM_STEPS):
            w = np.clip(r.mean(axis=1, keepdims=True), 1e-6, 1 - 1e-6)
            m1 = (r * z).sum(axis=1, keepdims=True) / np.maximum(r.sum(axis=1, keepdims=True), 1e-12)
            m2 = ((1 - r) * z).sum(axis=1, keepdims=True) / np.maximum((1 - r).sum(axis=1, keepdims=True), 1e-12)
            v = np.maximum((r * (z - m1) ** 2 + (1 - r) * (z - m2) ** 2).mean(axis=1, keepdims=True), MIN_VARIANCE)
            a, b = w * np.exp(-0.5 * (z - m1) ** 2 / v), (1 - w) * np.exp(-0.5 * (z - m2) ** 2 / v)
            density = np.maximum(a + b, 1e-300)
            r = a / density
            if step % 20 == 19:  # settled everywhere: the remaining steps would change nothing
                loglik = (np.log(density) - 0.5 * np.log(2 * math.pi * v)).sum(axis=1)
                if np.all(np.abs(loglik - previous) < 1e-9):
                    break
                previous = loglik
        loglik = (np.log(density) - 0.5 * np.log(2 * math.pi * v)).sum(axis=1)
        better = loglik > best
        best = np.where(better, loglik, best)
        weight = np.where(better, r.mean(axis=1), weight)
        lower = np.where(better[:, None], r, lower)
    return Mixture(2 * (best - one), weight, lower)


@cache
def split_critical(n: int) -> float:
    """The split statistic's 95 % point for n runs from one normal (seeded simulation)."""
    size = min(n, MAX_SIMULATED_N)
    rng = np.random.default_rng(20261125 + size)
    scores = np.concatenate([best_split(rng.standard_normal((NULL_SIMULATIONS // 10, size)))[0] for _ in range(10)])
    return float(np.quantile(scores, 0.95))


def mixture_critical(n: int) -> float:
    """The mixture statistic's 95 % point for n runs from one normal (MIXTURE_95, interpolated in log n)."""
    sizes = sorted(MIXTURE_95)
    return float(np.interp(math.log(n), [math.log(s) for s in sizes], [MIXTURE_95[s] for s in sizes]))


def critical_value(n: int) -> float:
    """The 95 % point of the statistic that decides at n runs."""
    return mixture_critical(n) if n >= FULL_LIKELIHOOD_FROM else split_critical(n)


def statistic(y: np.ndarray) -> np.ndarray:
    """Per row: the statistic that decides at the rows' length."""
    return mixture_ratio(y).statistic if y.shape[1] >= FULL_LIKELIHOOD_FROM else best_split(y)[0]


def flagged(y: np.ndarray) -> np.ndarray:
    """Per row of runs (all finite, not all equal): two groups on the linear scale
    and, for a positive row, on the log scale too. Rows of one length, vectorised:
    a seeded simulation of thousands of records is one call."""
    y = np.asarray(y, dtype=float)
    critical = critical_value(y.shape[1])
    hit = statistic(y) > critical
    # Skewness alone looks like a second group on one scale: a positive
    # metric must show two groups on the log scale too (a lognormal is one
    # group there, a normal one group on the linear scale).
    positive = hit & (y > 0).all(axis=1)
    if positive.any():
        hit[positive] = statistic(np.log(y[positive])) > critical
    return hit


def two_modes(samples: np.ndarray) -> Modes | None:
    """The two groups of a record's runs when they are two (None: one, or too few runs to tell)."""
    x = np.sort(np.asarray(samples, dtype=float))
    x = x[np.isfinite(x)]
    if len(x) < MIN_RUNS or not x.std() > 0 or not flagged(x[None, :])[0]:
        return None
    if len(x) >= FULL_LIKELIHOOD_FROM:
        fit = mixture_ratio(x[None, :])
        r = fit.lower[0]
        if (r * x).sum() / max(r.sum(), 1e-12) > ((1 - r) * x).sum() / max((1 - r).sum(), 1e-12):
            r = 1 - r  # the first component ended above the second
        score, k = float(fit.statistic[0]), int((r >= 0.5).sum())
        if not 0 < k < len(x):
            k = int(best_split(x[None, :])[1][0])
    else:
        scores, lower = best_split(x[None, :])
        score, k = float(scores[0]), int(lower[0])
    return Modes(
        (float(np.median(x[:k])), float(np.median(x[k:]))), (k / len(x), 1 - k / len(x)), score, critical_value(len(x))
    )
