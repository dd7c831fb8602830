"""Reference gates: is a result still within its reference? (ReFrame-style)

A campaign's `references:` list pins a metric of the records a selector
(`where`) matches, either to absolute bounds (`lower`, `upper`, or `value`
with a `tolerance`) or to a baseline: another record of the campaign (the
selected record with the `baseline` values) or the same record in an earlier
result directory, with the largest regression allowed (`max_regression`).
Each gate gets a verdict from the campaign's statistics, never from a point
estimate alone:

- absolute: the statistic's interval (mean or median, as `statistics:`
  says) inside the bounds: pass; wholly outside: fail; straddling a bound:
  inconclusive;
- baseline: the interval of the difference (Welch on subsessions, as the
  comparisons) against the allowed regression, in the metric's `better`
  direction: the whole interval within the allowance: pass; the whole
  interval beyond it: fail; else inconclusive.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence

import numpy as np

from perfsnake.benchmarks.base import metric_unit
from perfsnake.errors import CampaignError, did_you_mean
from perfsnake.escape import value_text
from perfsnake.statistics.gate_errors import POWER, GateError, auto_allowance, gate_error, undecidable
from perfsnake.statistics.records import STAT_PREFIX, record_row, stat_column
from perfsnake.statistics.summaries import summarise
from perfsnake.statistics.tests import Comparison, welch_on_subsessions
from perfsnake.values import number

VERDICTS = ("pass", "inconclusive", "fail")  # worst last


def percent(value: object, origin: str, key: str) -> float:
    """`5%` or 0.05 as a fraction."""
    text = str(value).strip()
    try:
        number = float(text[:-1]) / 100 if text.endswith("%") else float(text)
    except ValueError:
        raise CampaignError(origin, key, f"{value!r} is not a percentage (e.g. 5%)") from None
    if not 0 <= number < 10:
        raise CampaignError(origin, key, f"{value!r} is out of range (0% to 1000%)")
    return number


def better_of(metric: str, given: object, origin: str, key: str) -> str:
    """Which way is better: given, or read from the unit (a rate: higher; a time: lower)."""
    if given in ("higher", "lower"):
        return str(given)
    unit = metric_unit(metric) or ""
    if unit.endswith("/s"):
        return "higher"
    if unit in ("s", "ms", "us", "ns", "us/op"):
        return "lower"
    raise CampaignError(
        origin, f"{key}.better", f"say whether higher or lower {metric} is better (better: higher|lower)"
    )


def matches(values: Mapping[str, object], where: Mapping[str, object]) -> bool:
    """The record has the values a selector (`where`) names, compared as text."""
    return all(value_text(values.get(k)) == value_text(v) for k, v in where.items())


def parse_references(
    entries: Sequence[Mapping[str, object]],
    variables: list[str],
    records: list[dict[str, object]],
    metrics: list[str],
    origin: str,
) -> list[dict[str, object]]:
    """The `references:` of a campaign, checked before any run and normalised."""
    out = []
    for i, entry in enumerate(entries):
        key = f"references[{i}]"
        metric = str(entry["metric"])
        if metric not in [*metrics, "wall_s"]:
            raise CampaignError(origin, f"{key}.metric", f"{metric!r} is not a metric{did_you_mean(metric, metrics)}")
        where = dict(entry.get("where") or {})  # type: ignore[call-overload]
        base = entry.get("baseline")
        for var in [*where, *(base if isinstance(base, dict) else {})]:
            if var not in variables:
                raise CampaignError(origin, key, f"{var!r} is not a variable{did_you_mean(var, variables)}")
        selected = [r for r in records if matches(r, where)]
        if not selected:
            raise CampaignError(origin, f"{key}.where", f"selects no record ({where})")
        ref: dict[str, object] = {"index": i, "metric": metric, "where": {k: value_text(v) for k, v in where.items()}}
        if "history" in entry:
            if "baseline" in entry or any(k in entry for k in ("lower", "upper", "value")):
                raise CampaignError(origin, f"{key}.history", "a history gate has no other baseline or bounds")
            if "max_regression" not in entry:
                raise CampaignError(origin, f"{key}.max_regression", "a history gate needs the regression it allows (e.g. 5%)")  # fmt: skip
            ref.update(kind="history", last=int(entry["history"]["last"]),  # type: ignore[index]
                       max_regression=_allowance(entry, origin, key),
                       better=better_of(metric, entry.get("better"), origin, key))  # fmt: skip
        elif "baseline" in entry:
            if "max_regression" not in entry:
                raise CampaignError(
                    origin, f"{key}.max_regression", "a baseline needs the regression it allows (e.g. 5%)"
                )
            ref.update(kind="baseline", max_regression=_allowance(entry, origin, key),
                       better=better_of(metric, entry.get("better"), origin, key))  # fmt: skip
            baseline = entry["baseline"]
            if isinstance(baseline, dict):
                ref["baseline"] = {k: value_text(v) for k, v in baseline.items()}
                for rec in selected:
                    if not any(matches(r, {**rec, **baseline}) for r in records):
                        raise CampaignError(origin, f"{key}.baseline", f"no record { ({**rec, **baseline}) }")
            else:
                ref["baseline"] = str(baseline)  # an earlier result directory, checked when analysed
        else:
            if "false_alarm" in entry or "max_regression" in entry:
                bad = "false_alarm" if "false_alarm" in entry else "max_regression"
                raise CampaignError(origin, f"{key}.{bad}", "is for a gate with a baseline or history")
            bounds = {k: entry.get(k) for k in ("lower", "upper")}
            if "value" in entry:
                tol = percent(entry.get("tolerance", "0%"), origin, f"{key}.tolerance")
                value = number(entry["value"])
                bounds = {"lower": value * (1 - tol), "upper": value * (1 + tol)}
            if bounds["lower"] is None and bounds["upper"] is None:
                raise CampaignError(origin, key, "set lower and/or upper, value with tolerance, or a baseline")
            ref.update(kind="absolute", **{k: None if v is None else number(v) for k, v in bounds.items()})
        if ref.get("max_regression") == "auto":
            ref["false_alarm"] = percent(entry.get("false_alarm", AUTO_FALSE_ALARM), origin, f"{key}.false_alarm")
        out.append(ref)
    return out


#: `max_regression: auto`'s default false-alarm rate
AUTO_FALSE_ALARM = 0.01


def _allowance(entry: Mapping[str, object], origin: str, key: str) -> float | str:
    """A gate's max_regression as a fraction, or "auto" (its `false_alarm` checked)."""
    if str(entry["max_regression"]).strip() == "auto":
        rate = percent(entry.get("false_alarm", AUTO_FALSE_ALARM), origin, f"{key}.false_alarm")
        if not 0 < rate < 0.5:
            raise CampaignError(origin, f"{key}.false_alarm", f"{entry.get('false_alarm')!r}: give a rate between 0% and 50%")  # fmt: skip
        return "auto"
    if "false_alarm" in entry:
        raise CampaignError(origin, f"{key}.false_alarm", "is for max_regression: auto (a threshold from the noise)")
    return percent(entry["max_regression"], origin, f"{key}.max_regression")


def _absolute(ref: Mapping[str, object], lo: float, hi: float) -> tuple[str, str]:
    lower, upper = ref.get("lower"), ref.get("upper")
    if (lower is not None and hi < lower) or (upper is not None and lo > upper):  # type: ignore[operator]
        return "fail", "interval outside the bounds"
    if (lower is None or lo >= lower) and (upper is None or hi <= upper):  # type: ignore[operator]
        return "pass", "interval within the bounds"
    return "inconclusive", "interval straddles a bound"


def _relative(ref: Mapping[str, object], comp: Comparison, allowed: float) -> tuple[str, str]:
    """The verdict of a difference against `allowed` (the regression allowed, in the metric's unit)."""
    # Regression is a lower value for higher-is-better, a higher one otherwise.
    sign = 1.0 if ref["better"] == "higher" else -1.0
    worst, best = sorted((sign * comp.diff_ci_low, sign * comp.diff_ci_high))
    if best < -allowed:
        return "fail", "regression beyond the allowance"
    if worst >= -allowed:
        return "pass", "within the allowed regression"
    return "inconclusive", "interval straddles the allowed regression"


def evaluate(
    refs: Sequence[Mapping[str, object]],
    samples: Mapping[str, Mapping[tuple[str, ...], np.ndarray]],
    variables: list[str],
    opts: Mapping[str, object],
    baseline_samples: Mapping[str, Mapping[str, Mapping[tuple[str, ...], np.ndarray]]] | None = None,
) -> list[dict[str, object]]:
    """One row per gate and record: the statistic or difference with its
    interval, the bound, the verdict and why. `samples`: metric -> record key
    -> ok runs in order; `baseline_samples`: directory -> the same."""
    confidence, threshold = number(opts["confidence"]), number(opts["autocorrelation_threshold"])
    alpha, statistic = number(opts["alpha"]), str(opts.get("statistic", "mean"))
    rows: list[dict[str, object]] = []
    for ref in refs:
        metric = str(ref["metric"])
        for key, x in (samples.get(metric) or {}).items():
            values = dict(zip(variables, key, strict=True))
            if not matches(values, ref["where"]):  # type: ignore[arg-type]
                continue
            row: dict[str, object] = {"gate": ref["index"], "metric": metric, "kind": ref["kind"]}
            if ref["kind"] == "absolute":
                s = summarise(x, confidence, threshold)
                lo, hi = (
                    (s.median_ci_low, s.median_ci_high) if statistic == "median" else (s.mean_ci_low, s.mean_ci_high)
                )
                row.update(statistic=statistic, value=s.median if statistic == "median" else s.mean, ci_low=lo, ci_high=hi,
                           lower=ref.get("lower"), upper=ref.get("upper"))  # fmt: skip
                verdict, why = ("inconclusive", "fewer than 2 ok runs") if s.n < 2 else _absolute(ref, lo, hi)
                df = s.n_subsessions - 1 if statistic == "mean" else math.inf  # the median's interval: order statistics
                _errors(row, gate_error(lo, hi, df, confidence, 0.0, number(row["value"]), s.n))
            else:
                baseline = ref.get("baseline") if ref["kind"] == "baseline" else history_key(ref)
                if isinstance(baseline, dict):
                    base_key = tuple(value_text({**values, **baseline}[v]) for v in variables)
                    base = samples[metric].get(base_key, np.array([]))
                    row["baseline"] = ", ".join(f"{k}={v}" for k, v in baseline.items())
                else:
                    base = ((baseline_samples or {}).get(str(baseline)) or {}).get(metric, {}).get(key, np.array([]))
                    row["baseline"] = str(baseline)
                if len(base) < 2 or len(x) < 2:
                    verdict, why = "inconclusive", "fewer than 2 ok runs on a side"
                    row.update(max_regression=ref["max_regression"], better=ref["better"])
                else:
                    comp, _ = welch_on_subsessions(base, x, confidence, alpha, threshold)
                    auto = ref["max_regression"] == "auto"
                    if auto:  # the smallest allowance of at most the stated false-alarm rate, at this noise
                        rate = float(ref.get("false_alarm", AUTO_FALSE_ALARM))  # type: ignore[arg-type]
                        allowed = auto_allowance(comp.diff_ci_low, comp.diff_ci_high, comp.df, confidence, rate)
                    else:
                        allowed = number(ref["max_regression"]) * abs(comp.mean_a)
                    fraction = allowed / abs(comp.mean_a) if comp.mean_a else math.nan
                    verdict, why = _relative(ref, comp, allowed)
                    runs = min(len(base), len(x))
                    err = gate_error(
                        comp.diff_ci_low, comp.diff_ci_high, comp.df, confidence, allowed, comp.mean_a, runs
                    )
                    if auto and err is not None:
                        err = dataclasses.replace(
                            err, false_alarm_rate=min(err.false_alarm_rate, rate), runs_needed=None
                        )
                        why = f"{why}; threshold from the noise: {fraction:.2%} for a false-alarm rate of {rate:.1%}"
                    _errors(row, err)
                    if not auto and err is not None and (note := undecidable(err, fraction, runs)):
                        why = f"{why}; {note}"
                    row.update(baseline_mean=comp.mean_a, value=comp.mean_b, difference=comp.difference,
                               ci_low=comp.diff_ci_low, ci_high=comp.diff_ci_high, allowed_change=allowed,
                               max_regression=fraction, better=ref["better"])  # fmt: skip
            row.update(verdict=verdict, reason=why)
            rows.append(record_row(values, row))
    return rows


def _errors(row: dict[str, object], err: GateError | None) -> None:
    """The gate's error rates in its row (perfsnake.statistics.gate_errors)."""
    if err is not None:
        row.update(false_alarm_rate=err.false_alarm_rate, detectable_change=err.detectable_change,
                   runs_needed=err.runs_needed)  # fmt: skip


def mark_states(rows: list[dict[str, object]], states: Mapping[str, Sequence[str]]) -> None:
    """A gate against an earlier directory measured in another machine state
    (`states`: directory -> the state keys that differ, as compare finds
    them) says so in its row and its reason: the verdict may be the
    machine's, not the change's. A history gate left without a recent past
    by a change of state (`states`: its baseline name -> what changed)
    names the change."""
    for row in rows:
        variables, g = own(row)
        differs = states.get(str(g.get("baseline"))) if g.get("kind") in ("baseline", "history") else None
        if differs:
            reason = stat_column("reason", variables)
            row[stat_column("state_differs", variables)] = ", ".join(differs)
            if g["kind"] == "history":  # no recent past: every stored invocation here was in another state
                row[reason] = (
                    f"{row[reason]}; no recent past in this machine state, which changed: {', '.join(differs)}"
                )
            else:
                row[reason] = f"{row[reason]}; machine state differs from the baseline's: {', '.join(differs)}"


def own(g: Mapping[str, object]) -> tuple[dict[str, object], dict[str, object]]:
    """A gate row's (record, fields), in memory or read from gates.csv: its
    variables, and its GATE_FIELDS by their plain names (record_row wrote a
    field named like a variable as STAT_PREFIX + name; a variable has no dot)."""
    record = {k: v for k, v in g.items() if "." not in k and (k not in GATE_FIELDS or STAT_PREFIX + k in g)}
    return record, {k.removeprefix(STAT_PREFIX): v for k, v in g.items() if k not in record}


def worst(verdicts: Sequence[str]) -> str:
    return max(verdicts, key=VERDICTS.index) if verdicts else ""


def history_key(ref: Mapping[str, object]) -> str:
    """The baseline name of a history gate (the store's recent past), as `baseline_samples` holds it."""
    return f"history: {ref['metric']} over the last {ref['last']} invocations since its latest step"


def history_baselines(refs: Sequence[Mapping[str, object]]) -> dict[str, tuple[int, str]]:
    """Each history gate's baseline name -> (how many past invocations, the metric)."""
    return {history_key(r): (int(r["last"]), str(r["metric"])) for r in refs if r.get("kind") == "history"}  # type: ignore[call-overload]


def baseline_dirs(refs: Sequence[Mapping[str, object]]) -> list[str]:
    return sorted({str(r["baseline"]) for r in refs if r.get("kind") == "baseline" and isinstance(r["baseline"], str)})


def gate_line(g: Mapping[str, object]) -> str:
    """One gate's verdict in words (significant.md, `perfsnake check`)."""
    variables, g = own(g)
    record = ", ".join(f"{k}={v}" for k, v in variables.items()) or "every record"
    if g["kind"] == "absolute":
        bounds = " and ".join(f"{k} {number(g[k]):.4g}" for k in ("lower", "upper") if g.get(k) not in (None, ""))
        detail = f"{g['statistic']} {number(g['value']):.4g}, CI [{number(g['ci_low']):.4g}, {number(g['ci_high']):.4g}] vs {bounds}"
    elif "difference" in g:
        detail = (
            f"{number(g['value']):.4g} vs baseline {g['baseline']} {number(g['baseline_mean']):.4g}: difference CI "
            f"[{number(g['ci_low']):.4g}, {number(g['ci_high']):.4g}], {g['better']} is better, "
            f"allowed regression {number(g['max_regression']):.1%}"
        )
    else:
        detail = f"baseline {g['baseline']}"
    if g.get("false_alarm_rate") not in (None, ""):
        detail += (f"; false alarm {number(g['false_alarm_rate']):.1%}, detects {number(g['detectable_change']):.1%}"
                   f" with power {POWER:.0%}")  # fmt: skip
    return f"gate {g['gate']}, {g['metric']} ({record}): {detail} ({g['reason']})"


GATE_FIELDS = {
    "gate", "metric", "kind", "statistic", "value", "ci_low", "ci_high", "lower", "upper", "verdict", "reason",
    "baseline", "baseline_mean", "difference", "allowed_change", "max_regression", "better", "state_differs",
    "false_alarm_rate", "detectable_change", "runs_needed",
}  # fmt: skip
