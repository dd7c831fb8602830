"""Two modes are not one result: runs of a record that fall into two groups.

A connect that sometimes pays for a port search (29 us or 270 us), a thread
placed on either of two sockets: the record's mean and interval then describe
neither group. Hartigan's dip test looks for a dip in the density, but two
groups whose centres are 3 standard deviations apart, the smaller holding 10 %
of the runs, make no dip at all (the density only has a shoulder): measured
on seeded mixtures, the dip test flags 0-15 % of them at n = 20-100. What we
test instead is the question users ask, "do the runs come from two groups?",
with Engelman and Hartigan's test for clusters ("Percentage points of a test
for clusters", JASA 1969): the best split of the sorted runs into two groups
(the likelihood ratio of one normal against two normals with a common
variance, when each run is assigned to a group) explains a share of the
variance that one normal group would explain only by chance. The statistic is
location- and scale-invariant, so its null distribution depends on n alone:
the critical value is simulated once per n (seeded, so the decision is
repeatable). Skewness alone looks like a second group, so a positive metric
(times, rates) must show two groups on both the linear and the log scale: a
lognormal is one normal group on the log scale, a normal one on the linear.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

import numpy as np

#: Fewer runs than this are not tested (no power, and a flag would be noise).
MIN_RUNS = 10
#: Size of the simulated null distribution per n.
NULL_SIMULATIONS = 20000
#: Above this n the critical value of n = MAX_SIMULATED_N is used (it varies
#: little there; simulating larger samples would only cost time).
MAX_SIMULATED_N = 500


@dataclass(frozen=True)
class Modes:
    """Two groups found: their centres (medians, metric units), shares and the test's explained share."""

    centres: tuple[float, float]
    shares: tuple[float, float]
    statistic: float
    critical: float

    def describe(self) -> str:
        (a, b), (wa, wb) = self.centres, self.shares
        return f"{a:.4g} ({wa:.0%}) | {b:.4g} ({wb:.0%})"


def best_split(y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per row: the classification log-likelihood ratio of the best split of the
    sorted values into two normal groups with a common variance and their
    shares as weights (n/2 log(total / within) + sum of n_g log(n_g / n)),
    and the size of the lower group. The weights' term keeps a small group
    from being a free parameter: without it, balanced splits always win and a
    10 % group goes unseen."""
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


@cache
def critical_value(n: int, alpha: float = 0.05) -> float:
    """The statistic's 1 - alpha quantile for n draws from one normal (seeded simulation)."""
    size = min(n, MAX_SIMULATED_N)
    rng = np.random.default_rng(20261125 + size)
    shares = np.concatenate([best_split(rng.standard_normal((NULL_SIMULATIONS // 10, size)))[0] for _ in range(10)])
    return float(np.quantile(shares, 1 - alpha))


def two_modes(samples: np.ndarray, alpha: float = 0.05) -> Modes | None:
    """The two groups of a record's runs when they are two (None: one, or too few runs to tell)."""
    x = np.sort(np.asarray(samples, dtype=float))
    x = x[np.isfinite(x)]
    if len(x) < MIN_RUNS or not x.std() > 0:
        return None
    critical = critical_value(len(x), alpha)
    score, lower = best_split(x[None, :])
    if float(score[0]) <= critical:
        return None
    if (x > 0).all():
        # Skewness alone looks like a second group on one scale: a positive
        # metric must show two groups on the log scale too (a lognormal is
        # one group there, a normal one group on the linear scale).
        log_score, _ = best_split(np.log(x)[None, :])
        if float(log_score[0]) <= critical:
            return None
    k = int(lower[0])
    return Modes(
        (float(np.median(x[:k])), float(np.median(x[k:]))), (k / len(x), 1 - k / len(x)), float(score[0]), critical
    )
