"""Decided in the fewest runs: a sequential three-outcome comparison of two records.

Rounds of interleaved runs give paired differences d_i = b_i - a_i (run i of
each side, adjacent in time). After a round, each comparison still open is
either "different" (the difference is not zero), "equivalent" (it lies
within +-m, m = min_effect x the mean of a, by two one-sided tests), or goes
on; it ends "undecided" when its maximum information is reached, or (at
power 0.8) early when the difference is confidently not zero yet confidently
smaller than m (a real but unimportant change: more runs would not make it
either).

The design is a group-sequential test with information-based monitoring: the
two tests run side by side, each with a power-family boundary (Wang and
Tsiatis 1987; Pampallona and Tsiatis 1994), looks whenever the estimated
information fraction tau = n / (R n_fixed) passes the next k/K (Lan and
DeMets 1983; Jennison and Turnbull 2000, ch. 7), t statistics taken to the
normal scale by the probability integral transform (Jennison and Turnbull
2000, ch. 14). Its constants C_d and C_e are the 95 % points of the largest
standardised statistic over all looks, found by seeded simulation over a
grid of m / sigma and two noise models (`bench/sequential.py --calibrate`).
They hold for alpha 0.05 and the powers in POWERS (0.8, 0.9, 0.95), each with
its own shape (R, K, first look) and boundaries: the fixed design of the same
power (`n_fixed_factor`) grows with the power, and so do the savings of the
looks, since a real difference or a real equivalence is then seen well before
the fixed design's runs (`bench/sequential.py`: pairs used over the fixed
design's, averaged over differences 0 and m, about 0.86 at power 0.8, 0.75 at
0.9 and 0.67 at 0.95 with the "iid" estimate; the fewest any sequential design
could use, `bench/sequential_bound.py`: 0.72 at 0.8, 0.57 at 0.95). Above 0.8
the boundaries stop earlier (larger power-family exponents) and there is no
early "undecided": its zone would cost more power than the larger maximum
information that wins it back. The "ar1" estimate's fewest effective degrees
of freedom dominate when m / sigma is large: it then uses more runs than the
fixed design of known variance at every power.

Two estimates of the variance of the mean: "iid" (the sample variance of the
differences, n - 1 degrees of freedom) is right when runs are independent and
also when the machine drifts along the run sequence, since the two runs of a
round are neighbours in random order; "ar1" (an AR(1) long-run variance with
the lag-1 autocorrelation's first-order bias removed) when each side drifts
on its own, at the price of a later first look and more runs.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

#: The calibrated error rate, the powers a design exists for, and the default.
ALPHA, POWERS, POWER = 0.05, (0.8, 0.9, 0.95), 0.8
#: (C_d, C_e) per (variance estimate, power), for the shape and boundaries below.
CONSTANTS = {
    ("iid", 0.8): (2.48, 2.17),
    ("ar1", 0.8): (2.65, 2.25),
    ("iid", 0.9): (2.58, 2.37),
    ("ar1", 0.9): (2.77, 2.54),
    ("iid", 0.95): (2.58, 2.47),
    ("ar1", 0.95): (2.76, 2.62),
}
#: Per (variance estimate, power): maximum information over the fixed design's
#: (R), looks (K), first look (pairs), fewest effective degrees of freedom of a look.
SHAPES = {
    ("iid", 0.8): (1.4, 20, 15, 0.0),
    ("ar1", 0.8): (1.6, 10, 40, 20.0),
    ("iid", 0.9): (1.5, 20, 15, 0.0),
    ("ar1", 0.9): (1.9, 20, 40, 20.0),
    ("iid", 0.95): (1.8, 20, 15, 0.0),
    ("ar1", 0.95): (2.1, 20, 40, 20.0),
}
#: Per power: the power-family exponents of the two boundaries (Delta_d, Delta_e;
#: the bound is C t^(Delta - 1/2)), and the futility zone (none above 0.8: there it
#: stops too many paths at 0 and m, and a larger R to win that power back costs
#: more runs than it saves).
BOUNDARIES = {0.8: (0.4, 0.5, 1.5), 0.9: (0.45, 0.6, math.inf), 0.95: (0.45, 0.6, math.inf)}
#: Largest lag-1 autocorrelation the "ar1" estimate uses.
AR1_MAX = 0.9

OUTCOMES = ("different", "equivalent", "undecided", "continue")


def n_fixed_factor(alpha: float = ALPHA, power: float = POWER) -> float:
    """n_fixed x (m / sigma)^2 of the fixed design of the same alpha and power: the
    larger of the TOST at difference 0 and the two-sided test at difference m."""
    from scipy.special import ndtri

    tost = (ndtri(1 - alpha) + ndtri((1 + power) / 2)) ** 2
    two_sided = (ndtri(1 - alpha / 2) + ndtri(power)) ** 2
    return float(max(tost, two_sided))


@dataclass(frozen=True)
class Spec:
    min_effect: float  # relative to the mean of a
    variance: str = "iid"
    power: float = POWER

    def __post_init__(self) -> None:
        if (self.variance, self.power) not in SHAPES:
            raise ValueError(f"no design for variance {self.variance!r} at power {self.power!r} (powers: {POWERS})")

    @property
    def shape(self) -> tuple[float, int, int, float]:
        return SHAPES[self.variance, self.power]

    @property
    def constants(self) -> tuple[float, float]:
        return CONSTANTS[self.variance, self.power]

    @property
    def boundaries(self) -> tuple[float, float, float]:
        return BOUNDARIES[self.power]

    @property
    def first_look(self) -> int:
        return self.shape[2]


@dataclass
class Decision:
    """One evaluation. `look` is passed back as `last_look` next time."""

    outcome: str
    n: int
    look: int = -1
    estimate: float = math.nan  # mean of b - a
    se: float = math.nan
    df: float = math.nan
    margin: float = math.nan  # m
    tau: float = math.nan  # information fraction
    z_different: float = math.nan
    z_equivalent: float = math.nan
    bound_different: float = math.nan
    bound_equivalent: float = math.nan
    low: float = math.nan  # 90 % t interval of the difference (the TOST's)
    high: float = math.nan

    def pairs_to_next_look(self, spec: Spec) -> int:
        """Pairs until the information fraction is expected to reach the next look."""
        _, looks, first, _ = spec.shape
        if self.n < first:
            return first - self.n
        if not self.tau > 0 or not math.isfinite(self.tau):
            return 1
        wanted = self.n * ((max(self.look, 0) + 1) / looks) / self.tau
        return max(1, math.ceil(wanted) - self.n)


def running(d: np.ndarray, variance: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Mean, variance of the mean and degrees of freedom of every prefix of each row of d."""
    d = np.atleast_2d(np.asarray(d, dtype=float))
    n = np.arange(1, d.shape[1] + 1, dtype=float)
    s1, s2 = np.cumsum(d, axis=1), np.cumsum(d * d, axis=1)
    mean = s1 / n
    with np.errstate(invalid="ignore", divide="ignore"):
        ss = np.maximum(s2 - n * mean**2, 0.0)
        var = ss / (n - 1)
        df = np.broadcast_to(n - 1, mean.shape)
        if variance == "ar1":
            lagged = np.concatenate([np.zeros((len(d), 1)), np.cumsum(d[:, 1:] * d[:, :-1], axis=1)], axis=1)
            head, tail = s1 - d, s1 - d[:, :1]  # d_1..d_{n-1} and d_2..d_n
            r = (lagged - mean * (head + tail) + (n - 1) * mean**2) / ss
            r = np.clip(r + (1 + 4 * r) / n, 0.0, AR1_MAX)  # Marriott and Pope's bias correction
            factor = (1 + r) / (1 - r)
            var, df = var * factor, np.maximum(n / factor - 1, 1.0)
        elif variance != "iid":
            raise ValueError(f"unknown variance estimate {variance!r}")
    return mean, var / n, np.asarray(df)


def _z(mean, var_mean, df, m):
    """Both statistics on the normal scale (probability integral transform of t)."""
    from scipy.special import ndtri, stdtr

    se = np.sqrt(var_mean)
    with np.errstate(invalid="ignore", divide="ignore"):
        z_diff = ndtri(stdtr(df, np.abs(mean) / se))
        z_equiv = ndtri(stdtr(df, np.minimum(m + mean, m - mean) / se))
    return se, z_diff, z_equiv


def decide(d: np.ndarray, reference: float, spec: Spec, last_look: int = -1) -> Decision:
    """The decision after the pairs in `d` (time order); `reference` is a's mean."""
    from scipy.special import stdtrit

    d = np.asarray(d, dtype=float).ravel()
    n = len(d)
    r_max, looks, first, min_df = spec.shape
    m = spec.min_effect * abs(reference)
    if n < max(first, 3):
        return Decision("continue", n, last_look, margin=m)
    mean, var_mean, df = (float(x[0, -1]) for x in running(d[None, :], spec.variance))
    tau = m**2 / (r_max * n_fixed_factor(power=spec.power) * var_mean) if var_mean > 0 else math.inf
    k = int(min(looks * tau, 1e9))  # tau is infinite when the differences do not vary
    se, z_diff, z_equiv = (float(v) for v in _z(mean, var_mean, df, m))
    t90 = float(-stdtrit(df, ALPHA))
    out = Decision("continue", n, last_look, mean, se, df, m, tau, z_diff, z_equiv,
                   low=mean - t90 * se, high=mean + t90 * se)  # fmt: skip
    if df < min_df or (last_look >= 0 and k <= last_look):
        return out  # not a look: the information has not reached the next k / K
    out.look = k
    t = min(max(tau, 1e-9), 1.0)
    (c_diff, c_equiv), (d_diff, d_equiv, futility) = spec.constants, spec.boundaries
    out.bound_different = c_diff * t ** (d_diff - 0.5)
    out.bound_equivalent = c_equiv * t ** (d_equiv - 0.5)
    if z_diff >= out.bound_different:
        out.outcome = "different"
    elif z_equiv >= out.bound_equivalent:
        out.outcome = "equivalent"
    elif tau >= 1 or (z_diff >= futility and z_equiv >= futility):
        out.outcome = "undecided"
    return out


def simulate(d: np.ndarray, reference: np.ndarray, spec: Spec, calibrate: bool = False):
    """`decide` after every pair of complete simulated paths (rows of d; reference:
    a's running mean), vectorised. Returns per row the outcome's index in
    OUTCOMES (3: the path ended first) and the pairs used; with `calibrate`,
    the largest standardised statistics over the looks up to the end of the
    information, every other stop ignored (what C_d and C_e are the 95 % points of)."""
    mean, var_mean, df = running(d, spec.variance)
    rows, length = mean.shape
    r_max, looks, first, min_df = spec.shape
    n = np.arange(1, length + 1)
    m = spec.min_effect * np.abs(reference)
    with np.errstate(invalid="ignore", divide="ignore"):
        tau = m**2 / (r_max * n_fixed_factor(power=spec.power) * var_mean)
    tau = np.where(np.isfinite(tau), tau, 1e9)
    k = np.floor(looks * np.minimum(tau, 1e6))
    usable = df >= min_df
    k[:, : first - 1] = -1
    k[~usable] = -1
    before = np.concatenate([np.full((rows, 1), -1.0), np.maximum.accumulate(k, axis=1)[:, :-1]], axis=1)
    look = ((k > before) | ((n == first) & (before < 0))) & (n >= first) & usable
    look[:, -1] = True
    end = ((tau >= 1) & usable) | (n == length)
    r_, c_ = np.nonzero(look)
    _, z_diff, z_equiv = _z(mean[r_, c_], var_mean[r_, c_], df[r_, c_], m[r_, c_])
    t = np.clip(tau[r_, c_], 1e-9, 1.0)
    d_diff, d_equiv, futility = spec.boundaries
    s_diff, s_equiv = z_diff / t ** (d_diff - 0.5), z_equiv / t ** (d_equiv - 0.5)
    ends = end[r_, c_]
    never = length + 10
    if calibrate:
        first_end = np.full(rows, never)
        np.minimum.at(first_end, r_, np.where(ends, c_, never))
        keep = c_ <= first_end[r_]
        most_diff, most_equiv = np.full(rows, -np.inf), np.full(rows, -np.inf)
        np.maximum.at(most_diff, r_[keep], np.nan_to_num(s_diff[keep], nan=-np.inf))
        np.maximum.at(most_equiv, r_[keep], np.nan_to_num(s_equiv[keep], nan=-np.inf))
        return most_diff, most_equiv
    c_diff, c_equiv = spec.constants
    different = s_diff >= c_diff
    equivalent = (s_equiv >= c_equiv) & ~different
    undecided = (
        ((ends & (tau[r_, c_] >= 1)) | ((z_diff >= futility) & (z_equiv >= futility))) & ~different & ~equivalent
    )
    stop = different | equivalent | undecided | ends
    first_stop = np.full(rows, never)
    np.minimum.at(first_stop, r_, np.where(stop, c_, never))
    chosen = stop & (c_ == first_stop[r_])
    outcome = np.full(rows, 3)
    used = np.full(rows, float(length))
    outcome[r_[chosen]] = np.where(
        different[chosen], 0, np.where(equivalent[chosen], 1, np.where(undecided[chosen], 2, 3))
    )
    used[r_[chosen]] = c_[chosen] + 1
    return outcome, used
