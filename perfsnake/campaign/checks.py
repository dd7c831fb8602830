"""The checks across a campaign's fields, once its records are known: every
name a part of the campaign uses (a plot's axis, a pretty label, a compared
pair, a source's placeholder, a derived metric's operand, a reference) names
a variable, a value or a metric that exists; and no number is absurd."""

from __future__ import annotations

import ast
import math
import re
import sys
from pathlib import Path
from typing import Any

import jsonschema

from perfsnake import expressions, gates, versions
from perfsnake.benchmarks.base import Benchmark
from perfsnake.errors import CampaignError, did_you_mean
from perfsnake.escape import record_path, value_text
from perfsnake.instruments import Instruments
from perfsnake.machine import requirements
from perfsnake.machine.sysinfo import parse_cpu_list
from perfsnake.schema import load_schema

#: Columns of the aggregated CSV that variables and metrics may not shadow.
RESERVED = ("campaign", "benchmark", "run", "status", "exit_code", "wall_s", "start", "end")

#: Longest time a campaign may give anything (timeout_s, duration_s, hook
#: times): 10^7 s, about 115 days. Beyond that a number is a typo.
MAX_SECONDS = 1e7
#: Most repetitions of a record (as precision.max_runs allows).
MAX_RUNS = 100_000


def _is_seconds(key: str) -> bool:
    return key.endswith("_s") or key == "seconds"


def _number_error(data: Any, origin: str, path: str = "") -> CampaignError | None:
    """The first non-finite number anywhere in the campaign, or an absurd
    time or repetition count, as one line naming its key."""
    if isinstance(data, dict):
        for key, value in data.items():
            error = _number_error(value, origin, f"{path}.{key}" if path else str(key))
            if error:
                return error
    elif isinstance(data, list):
        for i, value in enumerate(data):
            error = _number_error(value, origin, f"{path}[{i}]")
            if error:
                return error
    elif isinstance(data, float) and not math.isfinite(data):
        return CampaignError(origin, path, f"{data!r} is not a finite number")
    elif isinstance(data, (int, float)) and not isinstance(data, bool) and "[" not in path.rsplit(".", 1)[-1]:
        key = path.rsplit(".", 1)[-1]
        if _is_seconds(key) and not path.startswith("variables.") and not 0 <= data <= MAX_SECONDS:
            return CampaignError(origin, path, f"{data!r} seconds is out of range (0 to {MAX_SECONDS:.0e})")
        if key in ("nb_runs", "min_runs", "max_runs") and data > MAX_RUNS:
            return CampaignError(origin, path, f"{data!r} repetitions is more than {MAX_RUNS}")
    return None


def _check_names(order: list[str], metrics: list[str], origin: str) -> None:
    for var in order:
        if var in RESERVED:
            raise CampaignError(origin, f"variables.{var}", f"reserved column name (reserved: {', '.join(RESERVED)})")
    for metric in metrics:
        if metric in RESERVED or metric in order:
            raise CampaignError(origin, f"benchmark.metrics.{metric}", "clashes with a variable or a reserved column")


def _numeric(value: object) -> float | None:
    """A pretty key's or a value's number (None for a boolean or a text that is none)."""
    if isinstance(value, bool):
        return None
    try:
        return float(str(value))
    except ValueError:
        return None


def _check_pretty(pretty: dict, order: list[str], recs: list[dict], origin: str) -> dict[str, dict[str, str]]:
    """Pretty labels are for values of variables: each key names a value by its
    text or its number (YAML reads `100000:` as an int, `1000.0:` as a float).
    Returns the labels keyed by their value's text, as the plots and tables look them up."""
    out: dict[str, dict[str, str]] = {}
    for var, labels in pretty.items():
        if var not in order:
            raise CampaignError(origin, f"pretty.{var}", f"not a variable (variables: {', '.join(order) or 'none'})")
        known = list(dict.fromkeys(value_text(r[var]) for r in recs))
        out[var] = {}
        for value, label in labels.items():
            number = _numeric(value)
            # The value spelled so first, else one equal as a number.
            matches = [value_text(value)] if value_text(value) in known else []
            matches += [k for k in known if number is not None and _numeric(k) == number]
            if not matches:
                raise CampaignError(origin, f"pretty.{var}.{value}", f"not a value of {var}")
            out[var][matches[0]] = label
    return out


def check_plots(
    plots: list[dict], order: list[str], metrics: list[str], origin: str, recs: list[dict] | None = None
) -> list[dict]:
    """Plot entries with their names; every axis names a variable or metric,
    and every variable that varies is mapped (else the plot would silently
    average across it)."""
    columns = set(order) | {"run"}
    numeric = set(metrics) | {"wall_s"}
    varying = [v for v in order if len({value_text(r[v]) for r in recs or []}) > 1]
    named: list[dict] = []
    names: set[str] = set()
    for i, plot in enumerate(plots):
        if plot["kind"] == "speedup_stack":
            plot = _speedup_stack(plot, i, order, numeric, origin, recs or [])
        for axis in ("x", "color", "row", "column", "facet"):
            if axis in plot and plot[axis] not in columns | numeric:
                raise CampaignError(
                    origin,
                    f"plots[{i}].{axis}",
                    f"{plot[axis]!r} is not a variable or metric (variables: {', '.join(sorted(columns))}; metrics: {', '.join(sorted(numeric))})",
                )
        if "facet" in plot and "column" in plot:
            raise CampaignError(origin, f"plots[{i}].facet", "facet is another name for column: set only one")
        ys = plot["y"] if isinstance(plot["y"], list) else [plot["y"]]
        ys = [*ys, *(m for m in plot.get("metrics", []) if m not in ys)]
        for y in ys:
            if y not in numeric:
                key = (
                    f"plots[{i}].y"
                    if y in (plot["y"] if isinstance(plot["y"], list) else [plot["y"]])
                    else f"plots[{i}].metrics"
                )
                raise CampaignError(origin, key, f"{y!r} is not a metric (metrics: {', '.join(sorted(numeric))})")
        if len(ys) > 1 and "row" in plot and ("column" in plot or "facet" in plot):
            raise CampaignError(
                origin, f"plots[{i}].y", "several metrics take the rows or the columns: drop row or column"
            )
        if plot["kind"] == "breakdown":
            if "color" in plot or len(ys) < 2:
                raise CampaignError(
                    origin,
                    f"plots[{i}]",
                    "a breakdown stacks two or more y metrics (its colours): set y to a list and no color",
                )
            if plot["x"] not in order:
                raise CampaignError(
                    origin, f"plots[{i}].x", f"a breakdown's x must be a variable (a thread count), not {plot['x']!r}"
                )
            xs = [r[plot["x"]] for r in recs or []]
            if not all(isinstance(v, (int, float)) and not isinstance(v, bool) and v > 0 for v in xs):
                raise CampaignError(
                    origin, f"plots[{i}].x", f"a breakdown's x must be a positive thread count ({plot['x']!r} is not)"
                )
        mapped = {plot.get(a) for a in ("x", "color", "row", "column", "facet")}
        loose = [v for v in varying if v not in mapped]
        if loose:
            raise CampaignError(
                origin,
                f"plots[{i}]",
                f"{loose[0]!r} varies but is not mapped: set it as x, color, row or column (or fix it with records:)",
            )
        for var in plot.get("labels", {}):
            if var not in columns | numeric:
                raise CampaignError(origin, f"plots[{i}].labels.{var}", "not a variable or metric")
        name = plot.get("name") or f"{plot['kind']}-{'-'.join(ys)}-by-{plot['x']}"
        name = re.sub(r"[^A-Za-z0-9_.-]", "_", name)
        if name in names:
            raise CampaignError(origin, f"plots[{i}].name", f"duplicate plot name {name!r}")
        names.add(name)
        named.append({"log_x": False, "log_y": False, **plot, "name": name})
    return named


#: A speedup stack's parts come from the sched_timeline wrapper's parallel region (perfsnake.instruments.sched).
STACK_TIMES = ("sched.par.region_ms", "sched.par.running_ms", "sched.par.wait_ms", "sched.par.blocked_ms",
               "sched.par.imbalance_ms")  # fmt: skip


def _speedup_stack(plot: dict, i: int, order: list[str], numeric: set[str], origin: str, recs: list[dict]) -> dict:
    """A speedup stack's entry with its y filled in: the speedup's metric and the timeline's times it reads."""
    key = f"plots[{i}]"
    if "y" in plot or "color" in plot:
        raise CampaignError(
            origin, key, "a speedup stack takes its metrics from speedup_of and the timeline: drop y and color"
        )
    metric = plot["speedup_of"]["metric"]
    if metric not in numeric:
        raise CampaignError(
            origin, f"{key}.speedup_of.metric", f"{metric!r} is not a metric (metrics: {', '.join(sorted(numeric))})"
        )
    if not set(STACK_TIMES) <= numeric:
        raise CampaignError(origin, key, "a speedup stack needs the sched_timeline wrapper (its threads' times)")
    if plot["x"] not in order:
        raise CampaignError(
            origin, f"{key}.x", f"a speedup stack's x must be a variable (a thread count), not {plot['x']!r}"
        )
    xs = [r[plot["x"]] for r in recs]
    if not all(isinstance(v, int) and not isinstance(v, bool) and v > 0 for v in xs) or 1 not in xs:
        raise CampaignError(
            origin,
            f"{key}.x",
            f"a speedup stack's x must be a thread count with 1 among its values ({plot['x']!r} is not)",
        )
    spin = ["perf_record.spin_share"] if "perf_record.spin_share" in numeric else []
    name = plot.get("name") or f"speedup_stack-{metric}-by-{plot['x']}"
    return {**plot, "name": name, "y": [metric, *STACK_TIMES, *spin]}


def _check_statistics(data: dict, benchmark: Benchmark, order: list[str], recs: list[dict], origin: str) -> None:
    """The statistics section names variables and values that exist, and wps
    warm-up has the unit readings it needs."""
    for var in data["statistics"].get("baseline") or {}:
        if var not in order:
            raise CampaignError(origin, f"statistics.baseline.{var}", f"not a variable (variables: {', '.join(order)})")
        if value_text(data["statistics"]["baseline"][var]) not in {value_text(r[var]) for r in recs}:
            raise CampaignError(
                origin,
                f"statistics.baseline.{var}",
                f"{value_text(data['statistics']['baseline'][var])!r} is not a value of {var}",
            )
    if (
        data["statistics"]["warmup"] == "wps"
        and benchmark.readings("") is None
        and not (isinstance(data["benchmark"], dict) and data["benchmark"].get("readings"))
    ):
        raise CampaignError(
            origin,
            "statistics.warmup",
            "wps needs unit readings: set benchmark.readings (a regex with work and seconds groups)",
        )
    for var in data["statistics"].get("test_variables") or []:
        if var not in order:
            raise CampaignError(
                origin, "statistics.test_variables", f"{var!r} is not a variable (variables: {', '.join(order)})"
            )


def _flamegraph_pairs(
    entries: list[dict], recs: list[dict], order: list[str], instruments: Instruments, origin: str
) -> list[tuple[str, str]]:
    """The record pairs of `flamegraph_pairs`, which draws differential flame graphs:
    so it needs a profiling wrapper."""
    pairs = _compare_pairs(entries, recs, order, origin)
    if pairs and not (instruments.uses("perf_record") or instruments.uses("offcpu")):
        raise CampaignError(
            origin, "flamegraph_pairs", "differential flame graphs need the perf_record or offcpu wrapper"
        )
    return pairs


def _compare_pairs(entries: list[dict], recs: list[dict], order: list[str], origin: str) -> list[tuple[str, str]]:
    """Record-path pairs (a, b) and (b, a) for every `compare` entry.

    `a` and `b` are partial records naming the same variables; each record
    matching `a` is paired with the record that equals it but for b's values.
    """
    by_sig = {tuple(value_text(r[v]) for v in order): r for r in recs}
    pairs: list[tuple[str, str]] = []
    for i, entry in enumerate(entries):
        a, b = entry["a"], entry["b"]
        for side, part in (("a", a), ("b", b)):
            unknown = sorted(set(part) - set(order))
            if unknown:
                raise CampaignError(
                    origin, f"compare[{i}].{side}.{unknown[0]}", f"not a variable (variables: {', '.join(order)})"
                )
        if set(a) != set(b):
            raise CampaignError(origin, f"compare[{i}]", "a and b must set the same variables")
        found = 0
        for rec in recs:
            if any(value_text(rec[k]) != value_text(v) for k, v in a.items()):
                continue
            other = {**rec, **b}
            match = by_sig.get(tuple(value_text(other[v]) for v in order))
            if match is None:
                continue
            pa, pb = record_path(rec, order), record_path(match, order)
            pairs += [(pa, pb), (pb, pa)]
            found += 1
        if not found:
            raise CampaignError(origin, f"compare[{i}]", "no pair of records matches a and b")
    return list(dict.fromkeys(pairs))


def _references(
    data: dict, order: list[str], recs: list[dict], metrics: list[str], origin: str
) -> list[dict[str, object]]:
    """The reference gates, checked and normalised (perfsnake.gates)."""
    return gates.parse_references(_with_commits(data["references"], data["variables"]), order, recs, metrics, origin)


def _with_commits(references: list[dict], variables: dict) -> list[dict]:
    """References naming a version by a tag or branch (`baseline: {version: v1}`)
    name it by the commit id the range gives it."""
    ranges = {v: spec for v, spec in variables.items() if isinstance(spec, dict)}
    if not ranges:
        return references
    out = []
    for ref in references:
        ref = dict(ref)
        for part in ("where", "baseline"):
            if isinstance(ref.get(part), dict):
                ref[part] = {k: versions.resolve(ranges[k], v) if k in ranges else v for k, v in ref[part].items()}
        out.append(ref)
    return out


def _compare_with(paths: list[str], origin: str) -> list[str]:
    """Earlier results to compare with: each a result directory holding its
    campaign's CSV, or an artifact zip (read when the comparison is made)."""
    import zipfile

    for i, raw in enumerate(paths):
        path = Path(raw)
        if path.is_dir():
            if not (path / f"{path.name}.csv").exists():
                raise CampaignError(
                    origin, f"compare_with[{i}]", f"{raw}: no {path.name}.csv (not a results/<campaign>/ directory)"
                )
        elif not (path.is_file() and zipfile.is_zipfile(path)):
            raise CampaignError(origin, f"compare_with[{i}]", f"{raw}: no such result directory or artifact zip")
    return list(paths)


def _check_sources(benchmark: Benchmark, recs: list[dict], order: list[str], origin: str) -> None:
    """A source naming variables (`rev: "{version}"`): every name is a
    variable, a checksum mapping has one variable and an entry for each of its
    values, and every source it resolves to is a valid source."""
    names = benchmark.source_variables()
    if not names:
        return
    for name in names:
        if name not in order:
            raise CampaignError(
                origin,
                "benchmark.source",
                f"names {{{name}}}, which is not a variable{did_you_mean(name, order)} (variables: {', '.join(order) or 'none'})",
            )
    checksums = (benchmark.source or {}).get("sha256")
    if isinstance(checksums, dict) and len(names) != 1:
        raise CampaignError(
            origin,
            "benchmark.source.sha256",
            f"a checksum per value needs one variable in the source, not {len(names)}",
        )
    schema = {
        "$defs": load_schema("campaign.schema.yaml")["$defs"],
        **load_schema("campaign.schema.yaml")["$defs"]["resolved_source"],
    }
    validator = jsonschema.Draft202012Validator(schema)
    for rec in recs:
        params = {**benchmark.build_defaults, **benchmark.run_defaults, **rec}
        if isinstance(checksums, dict) and value_text(params[names[0]]) not in checksums:
            raise CampaignError(
                origin, "benchmark.source.sha256", f"no checksum for {names[0]} {value_text(params[names[0]])!r}"
            )
        resolved = benchmark.source_for(params)
        error = jsonschema.exceptions.best_match(validator.iter_errors(resolved))
        if error is not None:
            where = ".".join(str(p) for p in error.absolute_path)
            raise CampaignError(
                origin, f"benchmark.source.{where}" if where else "benchmark.source", f"{error.message} (for {rec})"
            )


def _derived(spec: dict[str, str], variables: list[str], metrics: list[str], origin: str) -> dict[str, ast.Expression]:
    """Derived metrics, checked before any run: each expression parses and
    reads only metrics, variables and the derived metrics declared before it."""
    out: dict[str, ast.Expression] = {}
    for name, text in spec.items():
        key = f"derived.{name}"
        if name in metrics or name in variables:
            raise CampaignError(origin, key, f"{name!r} is already a {'metric' if name in metrics else 'variable'}")
        try:
            tree = expressions.parse(text)
        except expressions.ExpressionError as exc:
            raise CampaignError(origin, key, str(exc)) from None
        known = [*metrics, "wall_s", *variables, *out]
        for used in sorted(expressions.names(tree)):
            if used not in known:
                raise CampaignError(
                    origin,
                    key,
                    f"unknown name {used!r}{did_you_mean(used, known)} (metrics, variables and earlier derived metrics)",
                )
        out[name] = tree
    return out


def check_requires(data: dict, imported: bool, origin: str) -> None:
    """The machine state `requires:` asks for, against this machine: every
    unmet item is one line naming what the machine has and the fix; they
    stop the campaign, or with `on_unmet: warn` are printed and it runs."""
    requires = data["requires"]
    if not requires:
        return
    if imported:
        raise CampaignError(origin, "requires", "imported results were measured elsewhere: no state of this machine to require")  # fmt: skip
    if data.get("hosts"):
        raise CampaignError(
            origin,
            "requires",
            f"checks this machine, but a fleet's runs execute on its hosts ({', '.join(map(str, data['hosts']))}): "
            "check each with `perfsnake tune --show` there and drop requires",
        )
    if data["platform"]["type"] == "ssh":
        # As the hooks that act on this machine, a state of this machine says nothing of the remote one.
        raise CampaignError(
            origin,
            "requires",
            f"checks this machine, but the runs execute on {data['platform']['host']} (platform ssh): "
            f"check that host with `perfsnake tune --show` there and drop requires",
        )
    for key in ("isolated", "nohz_full", "rcu_nocbs", "irqs_away_from"):
        if key in requires and not parse_cpu_list(str(requires[key])):
            raise CampaignError(origin, f"requires.{key}", f"{requires[key]!r} names no CPU (a range is low-high)")
    problems = [(f"requires.{k}", f"{state}; {fix}") for k, (state, fix) in requirements.unmet(requires)]
    if not problems:
        return
    if data["on_unmet"] == "warn":
        for key, problem in problems:
            print(f"perfsnake: warning: {origin}: {key}: {problem} (on_unmet: warn, running anyway)", file=sys.stderr)
        return
    # One line per item: the first is the error's, each next names the file and key again.
    (key, problem), rest = problems[0], problems[1:]
    raise CampaignError(origin, key, problem + "".join(f"\n{origin}: {k}: {p}" for k, p in rest))
