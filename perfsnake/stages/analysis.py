"""Per-record summaries and pairwise comparisons of a campaign's results.

summary.csv: one row per record and metric (n, mean, median, std, cv, min,
max, interval of the mean on subsession means, exact order-statistic
interval of the median with its achieved level, lag-1 autocorrelation,
subsession size, samples dropped as warm-up or cool-down, stability flags,
the two modes when the runs fall into two groups: perfsnake.statistics.modes).

comparisons.csv: Welch's test for every pair of records that differ in
exactly one variable (or, with a baseline, each record against the record
that differs from it only by carrying the baseline value), with raw and
multiplicity-adjusted p-values (Holm, Benjamini-Hochberg or none, over all
of the campaign's comparisons); `significant` is decided on the adjusted one.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping
from pathlib import Path

import numpy as np

from perfsnake import gates, layout, noise_floor, profile_differences
from perfsnake.contract import FLEET_VARIABLE, CampaignInfo
from perfsnake.escape import record_path, value_text
from perfsnake.machine.monitor import THRESHOLD
from perfsnake.machine.usage import usage_flags
from perfsnake.pages import html as html_render
from perfsnake.pages import markdown as md_render
from perfsnake.pages.model import BulletList, Document, Heading, Paragraph
from perfsnake.statistics.modes import two_modes
from perfsnake.statistics.records import (
    STAT_PREFIX,
    numeric_metrics,
    pairs,
    record_key,
    record_row,
    samples_by_record,
    stat_column,
    write_csv,
)
from perfsnake.statistics.summaries import spread_flags, summarise, trend
from perfsnake.statistics.tests import adjust, welch_on_subsessions
from perfsnake.values import number

#: Machine-state drift: other processes busy with more than this many CPUs on
#: average during a record's runs, or a 1-minute load at its runs' start this
#: much above the campaign's first runs.
BUSY_CPUS = 0.5
LOAD_DRIFT = 1.0
#: Keys of a significant.md warning row that do not name the record.
SUMMARY_FIELDS = {"metric", "flags"}


def summary_rows(results: list[dict], info: CampaignInfo) -> list[dict[str, object]]:
    stats = info.statistics
    variables = list(info.variables)
    dropped: dict[tuple[str, ...], int] = {}
    reached: dict[tuple[str, ...], dict[str, object]] = {}
    runs: dict[tuple[str, ...], list[dict]] = {}
    for res in results:
        key = record_key(res, variables)
        runs.setdefault(key, []).append(res)
        if res.get("precision"):
            reached[key] = res["precision"]
        steady = res.get("steady") or {}
        dropped[key] = dropped.get(key, 0) + int(steady.get("removed", 0))
    # Machine-state drift and the monitor's bottlenecks, per record.
    machine = {key: machine_drift_flags(r, results) for key, r in runs.items()}
    # The statistics' fields per record, joined to its variables last (record_row).
    keys: list[tuple[str, ...]] = []
    rows: list[dict[str, object]] = []
    for metric in numeric_metrics(results):
        for key, x in samples_by_record(results, variables, metric).items():
            s = summarise(x, float(stats.confidence), float(stats.autocorrelation_threshold))
            tau, p = trend(x)
            modes = two_modes(x)
            warnings = [*spread_flags(x, float(stats.unstable_cv), float(stats.unstable_max_min)), *machine[key]]
            if modes:
                warnings.append(f"two modes: {modes.describe()} (its mean describes neither)")
            row = {"metric": metric, **s.as_dict(), "warmup_samples_dropped": dropped.get(key, 0),
                   "trend_tau": tau, "trend_p": p, "modes": modes.describe() if modes else "", "flags": warnings}  # fmt: skip
            if key in reached:
                row["precision_target_met"] = reached[key]["met"]
                row["precision_rel_ci"] = reached[key]["rel_ci"]
                row["precision_runs_ok"] = reached[key]["ok"]
            keys.append(key)
            rows.append(row)
    adjusted = adjust([number(r["trend_p"]) for r in rows], stats.correction)
    for row, p_adj in zip(rows, adjusted, strict=True):
        flags: list[str] = list(row["flags"])  # type: ignore[call-overload]
        row["trend_p_adjusted"] = p_adj
        if p_adj < float(stats.alpha):
            flags.append(f"trend over run order: tau {number(row['trend_tau']):+.2f}, adjusted p {p_adj:.2g}")
        row["flags"] = "; ".join(flags)
    return [record_row(dict(zip(variables, key, strict=True)), row) for key, row in zip(keys, rows, strict=True)]


def machine_drift_flags(record_runs: list[dict], campaign_runs: list[dict]) -> list[str]:
    """Hook for machine-state warnings of one record: its runs (result dicts
    in any order) and all of the campaign's runs, each possibly carrying the
    machine state recorded around it under the key "machine". Returns the
    warnings to add to the record's `flags` (none until machine state is
    recorded)."""
    flags = [*bottleneck_flags(record_runs), *state_drift_flags(record_runs), *usage_flags(record_runs)]
    states = [(r["machine"], r) for r in record_runs if r.get("machine")]
    if not states:
        return flags
    busy = [m["other_cpu_s"] / r["wall_s"] for m, r in states if m.get("other_cpu_s") is not None and r.get("wall_s")]
    if busy and float(np.median(busy)) > BUSY_CPUS:
        flags.append(f"busy machine: other processes used {float(np.median(busy)):.1f} CPUs during its runs (median)")
    first = sorted(
        (r for r in campaign_runs if (r.get("machine") or {}).get("load1") is not None),
        key=lambda r: r.get("start_epoch", 0),
    )
    reference = [r["machine"]["load1"] for r in first[: max(3, len(first) // 10)]]
    loads = [m["load1"] for m, _ in states if m.get("load1") is not None]
    if reference and loads and float(np.median(loads)) - float(np.median(reference)) > LOAD_DRIFT:
        flags.append(
            f"machine drift: load {float(np.median(loads)):.1f} at its runs' start vs {float(np.median(reference)):.1f} at the campaign's first runs"
        )
    return flags


def state_drift_flags(record_runs: list[dict]) -> list[str]:
    """Runs of the record measured in another machine state than the
    campaign's first run (collect's `state_drift`): one flag naming each
    change and in how many of its runs."""
    checked = [r for r in record_runs if "state_drift" in r]
    drifted = [r["state_drift"] for r in checked if r["state_drift"]]
    if not drifted:
        return []
    changes: dict[str, list[str]] = {}
    for found in drifted:
        for key, values in found.items():
            change = f"{values['first']} -> {values['this']}"
            if change not in changes.setdefault(key, []):
                changes[key].append(change)
    # ", " and " / " within the flag: "; " separates the flags of summary.csv
    what = ", ".join(f"{key} {' / '.join(seen)}" for key, seen in changes.items())
    return [f"machine state drift in {len(drifted)} of {len(checked)} runs (vs the campaign's first run): {what}"]


def bottleneck_flags(record_runs: list[dict]) -> list[str]:
    """The bottleneck monitor's verdicts on one record's runs: each component
    it found busy (and not under test) in any of them, with how many."""
    watched = [r for r in record_runs if "bottlenecks" in r]
    counts = Counter(str(b) for r in watched for b in r["bottlenecks"] or [])
    return [
        f"bottleneck: {name} above {THRESHOLD:.0%} busy in {n} of {len(watched)} runs (the monitor; not under test)"
        for name, n in sorted(counts.items())
    ]


def comparison_rows(results: list[dict], info: CampaignInfo) -> list[dict[str, object]]:
    """Welch's tests between records one variable apart, limited to
    statistics.test_variables and statistics.metrics when given, with
    p-values adjusted over all of them (statistics.correction)."""
    stats = info.statistics
    variables = list(info.variables)
    compared = stats.test_variables or variables
    rows = []
    for metric in numeric_metrics(results):
        if stats.metrics and metric not in stats.metrics:
            continue
        samples = samples_by_record(results, variables, metric)
        keys = [k for k, x in samples.items() if len(x) >= 2]
        for a, b, var in pairs(keys, variables, stats.baseline, info.values):
            if var not in compared:
                continue
            comp, size = welch_on_subsessions(
                samples[a],
                samples[b],
                float(stats.confidence),
                float(stats.alpha),
                float(stats.autocorrelation_threshold),
            )
            fixed = {v: a[j] for j, v in enumerate(variables) if v != var}
            rows.append({
                "metric": metric, "variable": var, "a": a[variables.index(var)], "b": b[variables.index(var)],
                "fixed": ", ".join(f"{k}={v}" for k, v in fixed.items()),
                # where each side's runs are (runs/<record>/), for tools that follow a difference up
                "record_a": record_path(dict(zip(variables, a, strict=True)), variables),
                "record_b": record_path(dict(zip(variables, b, strict=True)), variables),
                "n_a": len(samples[a]), "n_b": len(samples[b]), "subsession_size": size,
                **comp.__dict__, "alpha": stats.alpha, "confidence": stats.confidence,
                # a fleet's records one host apart: two machines compared, never pooled
                **({"between_machines": var == FLEET_VARIABLE} if info.hosts else {}),
            })  # fmt: skip
    return detectable(corrected(rows, stats.correction, float(stats.alpha)), float(stats.alpha))


def detectable(rows: list[dict[str, object]], alpha: float) -> list[dict[str, object]]:
    """Each comparison's error: `false_alarm_rate`, the chance it is called
    significant with no true difference (alpha over the family's size for a
    corrected family: Bonferroni's bound, which Holm and Benjamini-Hochberg
    do not exceed per test), and `detectable_change`, the smallest relative
    difference it finds with power 0.8 at the runs' noise
    (perfsnake.statistics.gate_errors)."""
    from perfsnake.statistics.gate_errors import detectable_difference

    family = sum(math.isfinite(number(r["welch_t"])) for r in rows) or 1
    for row in rows:
        rate = alpha if row["correction"] == "none" else alpha / family
        row["false_alarm_rate"] = rate
        row["detectable_change"] = detectable_difference(
            number(row["diff_ci_low"]), number(row["diff_ci_high"]), number(row["df"]), number(row["confidence"]),
            rate, number(row["mean_a"]),
        )  # fmt: skip
    return rows


def corrected(rows: list[dict[str, object]], correction: str, alpha: float) -> list[dict[str, object]]:
    """Add p_adjusted and correction to each row (one family) and decide
    `significant` on the adjusted p-value."""
    # A pair without variance is no test (p is 0 or 1 by construction): it
    # keeps its verdict and does not enlarge the family.
    tests = [number(r["p_value"]) if math.isfinite(number(r["welch_t"])) else math.nan for r in rows]
    adjusted = adjust(tests, correction)
    for row, p_adj in zip(rows, adjusted, strict=True):
        row["correction"] = correction
        if math.isfinite(p_adj):
            row["p_adjusted"] = p_adj
            row["significant"] = bool(p_adj < alpha)
        else:
            row["p_adjusted"] = row["p_value"]
    return rows


def write_significant(
    path: Path,
    rows: list[dict[str, object]],
    campaign: str,
    summary: list[dict[str, object]] | None = None,
    verdicts: list[dict[str, object]] | None = None,
    adjacent: list[dict[str, object]] | None = None,
    page: Path | None = None,
) -> None:
    """significant.md (and its report page): the significant differences,
    largest first (those `profile_differences` explains say where), then the
    records with stability warnings."""
    doc = significant_document(rows, campaign, summary, verdicts, adjacent)
    md_render.write(doc, path)
    if page is not None:
        html_render.write(doc, page)


def significant_document(
    rows: list[dict[str, object]],
    campaign: str,
    summary: list[dict[str, object]] | None = None,
    verdicts: list[dict[str, object]] | None = None,
    adjacent: list[dict[str, object]] | None = None,
) -> Document:
    sig = sorted(
        (r for r in rows if r["significant"]),
        key=lambda r: (
            -abs(number(r["relative_difference"]) if r["relative_difference"] == r["relative_difference"] else 0)
        ),
    )
    doc = Document(f"{campaign}: significant differences")
    if not rows:
        doc.add(Paragraph("No pair of records could be compared (each needs at least two ok runs)."))
    else:
        correction = str(rows[0].get("correction", "none"))
        how = {
            "holm": "Holm-adjusted (family-wise error)",
            "bh": "Benjamini-Hochberg-adjusted (false-discovery rate)",
        }.get(correction, "uncorrected")
        raw = sum(number(r["p_value"]) < number(r["alpha"]) for r in rows)
        noise = sum(r.get("layout_noise") == noise_floor.WITHIN for r in sig)
        doc.add(Paragraph(
            f"{len(sig)} of {len(rows)} comparisons significant on {how} p-values ({raw} before correction)"
            + (f"; {noise} of them {noise_floor.WITHIN}." if noise else ".")
        ))  # fmt: skip
    items = [
        ("between machines: " if str(r.get("between_machines")) == "True" else "")
        + f"{r['metric']}: {r['variable']} {r['b']} vs {r['a']} ({r['fixed'] or 'no other variable'}): "
        f"{number(r['relative_difference']):+.2%}, p = {number(r['p_value']):.3g}, adjusted p = {number(r.get('p_adjusted', r['p_value'])):.3g}, "
        f"difference CI [{number(r['diff_ci_low']):.4g}, {number(r['diff_ci_high']):.4g}]"
        + (
            f", detects {number(r['detectable_change']):.1%} with power 80%"
            if r.get("detectable_change") not in (None, "")
            else ""
        )
        + (" - why: differential profile in why/why.md" if r.get("profile") else "")
        + (
            f" - {noise_floor.WITHIN} (floors {number(r['floor_a']):.2%} and {number(r['floor_b']):.2%})"
            if r.get("layout_noise") == noise_floor.WITHIN
            else ""
        )
        for r in sig
    ]
    if items:
        doc.add(BulletList(items))
    if adjacent:
        doc.add(Heading("Adjacent versions"), Paragraph("Each version against the one before it (range order):"))
        doc.add(BulletList([
            f"{r['metric']}: {r['a']} -> {r['b']} ({r['fixed'] or 'no other variable'}): "
            f"{number(r['relative_difference']):+.2%}, difference CI [{number(r['diff_ci_low']):.4g}, "
            f"{number(r['diff_ci_high']):.4g}], adjusted p = {number(r.get('p_adjusted', r['p_value'])):.3g} "
            f"({'significant' if r['significant'] else 'not significant'})"
            for r in adjacent
        ]))  # fmt: skip
    if verdicts:
        said = [str(gates.own(g)[1]["verdict"]) for g in verdicts]
        counts = {v: said.count(v) for v in gates.VERDICTS}
        doc.add(Heading("Reference gates"), Paragraph(", ".join(f"{n} {v}" for v, n in counts.items()) + "."))
        ordered = sorted(zip(said, verdicts, strict=True), key=lambda sg: -gates.VERDICTS.index(sg[0]))
        doc.add(BulletList([f"{v.upper()}: {gates.gate_line(g)}" for v, g in ordered]))
    # A summary row's own fields, prefixed where a variable has their name (record_row).
    own = [{f: STAT_PREFIX + f if STAT_PREFIX + f in r else f for f in SUMMARY_FIELDS} for r in summary or []]
    flagged = [(r, f) for r, f in zip(summary or [], own, strict=True) if r.get(f["flags"])]
    if flagged:
        doc.add(Heading("Stability warnings"))
        doc.add(BulletList([
            f"{r[f['metric']]} ({', '.join(f'{k}={v}' for k, v in r.items() if k not in f.values()) or 'the campaign'}): {r[f['flags']]}"
            for r, f in flagged
        ]))  # fmt: skip
    return doc


def gate_rows(
    results: list[dict], info: CampaignInfo, baselines: Mapping[str, list[dict]] | None = None
) -> list[dict[str, object]]:
    """The verdicts of the campaign's reference gates (perfsnake.gates)."""
    refs = list(info.references)
    if not refs:
        return []
    variables = list(info.variables)
    metrics = {str(r["metric"]) for r in refs}
    samples = {m: samples_by_record(results, variables, m) for m in metrics}
    earlier = {d: {m: samples_by_record(rows, variables, m) for m in metrics} for d, rows in (baselines or {}).items()}
    return gates.evaluate(refs, samples, variables, info.statistics.as_dict(), earlier)


def analyse(
    results: list[dict],
    info: CampaignInfo,
    summary: Path,
    comparisons: Path,
    significant: Path,
    gates_out: Path | None = None,
    baselines: Mapping[str, list[dict]] | None = None,
    floors: Mapping[tuple[str, str], float] | None = None,
    significant_page: Path | None = None,
    states: Mapping[str, list[str]] | None = None,
) -> None:
    """`floors`: the layout noise floor per (record path, metric) (noise_floor.csv);
    `significant_page`: significant.md's report page; `states`: per earlier
    directory a gate compares with, what of the machine state differs."""
    variables = list(info.variables)
    rows = summary_rows(results, info)
    metric_col, flags_col = stat_column("metric", variables), stat_column("flags", variables)
    verdicts = gate_rows(results, info, baselines)
    gates.mark_states(verdicts, states or {})
    if floors is not None:
        noise_floor.mark_gates(verdicts, floors, variables)
    if verdicts:
        # The worst verdict of a record's gates on a metric, beside its statistics.
        own = [gates.own(g) for g in verdicts]
        for row in rows:
            mine = [
                str(f["verdict"])
                for record, f in own
                if f["metric"] == row[metric_col]
                and all(value_text(record[v]) == value_text(row[v]) for v in variables)
            ]
            row[stat_column("verdict", variables)] = gates.worst(mine)
    write_csv(summary, rows, [*variables, metric_col])
    if gates_out is not None:
        first = [stat_column(c, variables) for c in ("gate", "metric", "kind", "verdict", "reason")]
        write_csv(gates_out, verdicts, [first[0], *variables, *first[1:]])
    comps = comparison_rows(results, info)
    spec = info.profile_differences
    # The comparisons profile_differences explains point at their profile
    # (pick returns copies: mark the rows themselves).
    name = info.name
    for picked in profile_differences.pick(comps, int(spec["top"])) if spec else []:
        row = next(r for r in comps if all(r[k] == picked[k] for k in ("metric", "record_a", "record_b")))
        table = layout.why_symbols(name, layout.flat(str(row["record_a"])), layout.flat(str(row["record_b"])))
        row["profile"] = str(Path(table).relative_to(layout.campaign_dir(name)))
    if floors is not None:
        noise_floor.mark_comparisons(comps, floors)
    write_csv(comparisons, comps, ["metric", "variable", "a", "b", "fixed"])
    write_significant(
        significant,
        comps,
        info.name,
        [record_row({v: r[v] for v in variables}, {"metric": r[metric_col], "flags": r[flags_col]}) for r in rows],
        verdicts,
        adjacent_versions(comps, info),
        significant_page,
    )


def adjacent_versions(comps: list[dict[str, object]], info: CampaignInfo) -> list[dict[str, object]]:
    """The comparisons of each version with the one before it in the range, for the gated or plotted metrics."""
    out = []
    for var in info.versions:
        order = [value_text(v) for v in info.values[var]]
        metrics = set(info.regression_metrics)
        for r in comps:
            if r["variable"] == var and r["metric"] in metrics and str(r["a"]) in order and str(r["b"]) in order:
                if order.index(str(r["b"])) == order.index(str(r["a"])) + 1:
                    out.append(r)
    return out


def overhead_rows(main: list[dict], controls: Mapping[str, list[dict]], info: CampaignInfo) -> list[dict[str, object]]:
    """The observer effect (Pilot III-C): each instrumented variant against the
    uninstrumented control, per record and metric, with Welch's test.

    `controls` maps a variant (`control`, `only-<instrument>`) to its results;
    `all` compares the campaign itself with `control`.
    """
    stats = info.statistics
    variables = list(info.variables)
    base = controls.get("control", [])
    variants = [("all", main)] + [(v.removeprefix("only-"), res) for v, res in controls.items() if v != "control"]
    # Each row's fields, joined to its record's variables once corrected (record_row).
    keys: list[tuple[str, ...]] = []
    rows: list[dict[str, object]] = []
    for label, results in variants:
        common = [m for m in numeric_metrics(results) if m in numeric_metrics(base)]
        for metric in common:
            measured = samples_by_record(results, variables, metric)
            reference = samples_by_record(base, variables, metric)
            for key, x in measured.items():
                y = reference.get(key, np.asarray([]))
                if len(x) < 2 or len(y) < 2:
                    continue
                comp, size = welch_on_subsessions(
                    y, x, float(stats.confidence), float(stats.alpha), float(stats.autocorrelation_threshold)
                )
                keys.append(key)
                rows.append({
                    "instruments": label, "metric": metric,
                    "instrumented_mean": comp.mean_b, "control_mean": comp.mean_a,
                    "overhead": comp.relative_difference, "difference": comp.difference,
                    "diff_ci_low": comp.diff_ci_low, "diff_ci_high": comp.diff_ci_high,
                    "welch_t": comp.welch_t, "df": comp.df, "p_value": comp.p_value,
                    "significant": comp.significant, "n_instrumented": len(x), "n_control": len(y),
                })  # fmt: skip
    rows = corrected(rows, stats.correction, float(stats.alpha))
    return [record_row(dict(zip(variables, key, strict=True)), row) for key, row in zip(keys, rows, strict=True)]
