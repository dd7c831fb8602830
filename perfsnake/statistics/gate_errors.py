"""How often an interval gate is wrong, and the smallest change it can see.

A gate fails only when its whole interval (confidence c) lies beyond its
bound: beyond the allowed regression for a baseline or history gate,
outside `lower`/`upper` for an absolute one. So:

- its **false-alarm rate** is (1 - c) / 2: the chance that it fails when
  the truth sits exactly at its bound (less when the truth is inside).
  A baseline gate with max_regression 0 fails an A/A pair that often.
- its **detectable change** is the smallest true change beyond zero (for
  an absolute gate: beyond the bound) that it fails with probability
  POWER, at the noise its runs measured: the allowance plus
  (t_c + t_power) standard errors, the standard error read off the
  interval itself (so subsessions and the AR(1) correction count, as they
  do in the verdict).
- when that resolution (t_c + t_power) x se exceeds the allowance, the
  gate cannot tell a change of its own size from none: `runs_needed` says
  about how many runs a side would bring it there (the standard error
  falling as 1 / sqrt(n)).

Tested on seeded simulations (tests/test_gate_errors.py): the A/A
false-alarm rate holds within its binomial interval at CV 2 % and 20 % and
under AR(1) noise, and a regression of the quoted size fails about POWER
of the time.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

#: the power at which the detectable change is quoted
POWER = 0.8


@dataclass(frozen=True)
class GateError:
    false_alarm_rate: float
    #: as a fraction of the reference (the baseline's mean, or an absolute gate's estimate)
    detectable_change: float
    #: runs a side for a resolution within the allowance, when more than it has (else None)
    runs_needed: int | None


def _quantile(p: float, df: float) -> float:
    from scipy import stats

    return float(stats.t.ppf(p, df)) if math.isfinite(df) and df > 0 else float(stats.norm.ppf(p))


def gate_error(
    ci_low: float, ci_high: float, df: float, confidence: float, allowance: float, reference: float, runs: int
) -> GateError | None:
    """The error of one interval gate: its interval and degrees of freedom,
    its allowance (in the metric's unit; 0 for an absolute bound) and what
    the change is relative to. None when the interval says nothing (nan)."""
    if not all(math.isfinite(v) for v in (ci_low, ci_high, reference)) or reference == 0:
        return None
    t_c = _quantile((1 + confidence) / 2, df)
    se = (ci_high - ci_low) / (2 * t_c)
    resolution = (t_c + _quantile(POWER, df)) * se
    needed = None
    if allowance > 0 and resolution > allowance and runs > 0:
        needed = math.ceil(runs * (resolution / allowance) ** 2)
    return GateError((1 - confidence) / 2, (allowance + resolution) / abs(reference), needed)


def auto_allowance(ci_low: float, ci_high: float, df: float, confidence: float, rate: float) -> float:
    """`max_regression: auto`: the smallest allowance (in the metric's unit)
    whose false-alarm rate at no change is at most `rate`. A gate fails when
    the interval's near end is beyond the allowance a: with no true change,
    P(estimate > a + t_c se) = rate gives a = (t_(1-rate) - t_c) se, and 0
    when (1 - c) / 2 is already at most `rate`."""
    t_c = _quantile((1 + confidence) / 2, df)
    se = (ci_high - ci_low) / (2 * t_c)
    return max(0.0, (_quantile(1 - rate, df) - t_c) * se)


def detectable_difference(
    ci_low: float, ci_high: float, df: float, confidence: float, alpha: float, reference: float
) -> float:
    """A two-sided test at `alpha`'s smallest difference found with
    probability POWER, relative to `reference`: (t_(1-alpha/2) + t_power)
    standard errors, the standard error read off the interval (nan when it
    says nothing)."""
    if not all(math.isfinite(v) for v in (ci_low, ci_high, reference)) or reference == 0:
        return math.nan
    se = (ci_high - ci_low) / (2 * _quantile((1 + confidence) / 2, df))
    return (_quantile(1 - alpha / 2, df) + _quantile(POWER, df)) * se / abs(reference)


def undecidable(err: GateError, allowed_fraction: float, runs: int) -> str:
    """The reason's clause for a gate that cannot resolve its own allowance ("" when it can)."""
    if err.runs_needed is None:
        return ""
    return (
        f"cannot decide a {allowed_fraction:.1%} change with {runs} runs at this noise: needs about {err.runs_needed}"
    )
